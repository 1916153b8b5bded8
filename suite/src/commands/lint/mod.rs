//! `goalpost lint`: static checks that every scenario claims something a
//! broken host could fail, so a passing run means what it says.
//!
//! The rules read each scenario as raw JSON, after the loader has accepted
//! it, and speak only of `steps[*].expect` (the checks the runner counts),
//! `checks` and `requirements`. A step kind the lint has never heard of is
//! judged by the same generic rules as a request step: what it `expect`s is
//! what it asserts. The rules and their reasons are in docs/DESIGN.md,
//! "Vacuity lint".

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use goalpost_schemas::Schemas;
use serde_json::{Map, Value};

use crate::model::capability::applies_to;
use crate::model::{strings, Requirement, Scenario};
use crate::run::loader::{self, LoadError, REQUIREMENTS_FILE};

mod arrays;
mod attribution;
mod coverage;
mod profile;
mod required;

pub use coverage::{coverage_path, COVERAGE_FILE};
pub use profile::{profile_path, PROFILE_FILE};

use required::Shape;

/// One rule of the lint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    ScenarioInvalid,
    StepAssertsNothing,
    QuietStepLast,
    RefusalUnpinned,
    EitherStepUnchecked,
    ArrayMayBeEmpty,
    ChecksBelow,
    ChecksAbove,
    RequirementUnnamed,
    RequirementUnknown,
    RequirementUnproven,
    ClauseUnresolved,
    LevelMismatch,
    CreateWithoutNonce,
    CapabilityUnneeded,
    CapabilityUnstated,
    CoverageUnknown,
    CoverageUnmapped,
    CoverageUnaudited,
}

impl Rule {
    pub const ALL: [Rule; 19] = [
        Rule::ScenarioInvalid,
        Rule::StepAssertsNothing,
        Rule::QuietStepLast,
        Rule::RefusalUnpinned,
        Rule::EitherStepUnchecked,
        Rule::ArrayMayBeEmpty,
        Rule::ChecksBelow,
        Rule::ChecksAbove,
        Rule::RequirementUnnamed,
        Rule::RequirementUnknown,
        Rule::RequirementUnproven,
        Rule::ClauseUnresolved,
        Rule::LevelMismatch,
        Rule::CreateWithoutNonce,
        Rule::CapabilityUnneeded,
        Rule::CapabilityUnstated,
        Rule::CoverageUnknown,
        Rule::CoverageUnmapped,
        Rule::CoverageUnaudited,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Rule::ScenarioInvalid => "scenario-invalid",
            Rule::StepAssertsNothing => "step-asserts-nothing",
            Rule::QuietStepLast => "quiet-step-last",
            Rule::RefusalUnpinned => "refusal-unpinned",
            Rule::EitherStepUnchecked => "either-step-unchecked",
            Rule::ArrayMayBeEmpty => "array-may-be-empty",
            Rule::ChecksBelow => "checks-below",
            Rule::ChecksAbove => "checks-above",
            Rule::RequirementUnnamed => "requirement-unnamed",
            Rule::RequirementUnknown => "requirement-unknown",
            Rule::RequirementUnproven => "requirement-unproven",
            Rule::ClauseUnresolved => "clause-unresolved",
            Rule::LevelMismatch => "level-mismatch",
            Rule::CreateWithoutNonce => "create-without-nonce",
            Rule::CapabilityUnneeded => "capability-unneeded",
            Rule::CapabilityUnstated => "capability-unstated",
            Rule::CoverageUnknown => "coverage-unknown",
            Rule::CoverageUnmapped => "coverage-unmapped",
            Rule::CoverageUnaudited => "coverage-unaudited",
        }
    }

    /// One line for `--help` and the docs.
    pub fn summary(self) -> &'static str {
        match self {
            Rule::ScenarioInvalid => "the loader rejects the file (schema, grammar, variables)",
            Rule::StepAssertsNothing => "a step that is not a quiet wait makes no check",
            Rule::QuietStepLast => "a quiet wait that no later step checks",
            Rule::RefusalUnpinned => {
                "a refusal without `schema: error`, or an expected 5xx"
            }
            Rule::EitherStepUnchecked => {
                "a step that accepts success or refusal with no later step checking the effect"
            }
            Rule::ArrayMayBeEmpty => {
                "an assertion that holds on an empty array, with nothing showing the array has elements"
            }
            Rule::ChecksBelow => "`checks` is below what the steps make",
            Rule::ChecksAbove => "`checks` is above what the steps can make: it never passes",
            Rule::RequirementUnnamed => "a requirement no scenario names",
            Rule::RequirementUnknown => "a scenario names a requirement the registry lacks",
            Rule::RequirementUnproven => {
                "a scenario names a requirement none of its checks proves"
            }
            Rule::ClauseUnresolved => {
                "a requirement's clause is not PROFILE.md#<anchor> with an anchor PROFILE.md has"
            }
            Rule::LevelMismatch => {
                "a requirement's level is not the `**Level:**` its PROFILE.md section states"
            }
            Rule::CreateWithoutNonce => {
                "a create body whose objective lacks `goalpost {nonce}`, so its scenario cannot find it"
            }
            Rule::CapabilityUnneeded => {
                "a scenario names a requirement whose capability it does not need, so it could run where the requirement does not apply"
            }
            Rule::CapabilityUnstated => {
                "a requirement's PROFILE.md section does not state its capability in its `Applies to` line"
            }
            Rule::CoverageUnknown => {
                "a row of docs/COVERAGE.md names a requirement or a scenario file that does not exist"
            }
            Rule::CoverageUnmapped => "a requirement no row of docs/COVERAGE.md names",
            Rule::CoverageUnaudited => {
                "a MUST requirement without its audit row (first cell: its id) in docs/COVERAGE.md"
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One thing the lint rejects, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: PathBuf,
    /// JSON pointer into `file`; `""` is the whole file. In the coverage
    /// map (Markdown), `line N`.
    pub pointer: String,
    pub rule: Rule,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(
            f,
            "{} {pointer}: [{}] {}",
            self.file.display(),
            self.rule,
            self.message
        )
    }
}

/// Which scenarios name one requirement. Which mutants prove it can fail
/// is `crate::mutation`'s (scenarios/mutants.json).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    pub id: String,
    pub level: String,
    /// Trial names, `<profile>::<name>`, sorted.
    pub scenarios: Vec<String>,
}

/// What `lint_dir` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintReport {
    pub findings: Vec<Finding>,
    /// Scenario files read.
    pub scenarios: usize,
    pub coverage: Vec<Coverage>,
}

impl LintReport {
    /// 0 clean, 1 findings.
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.findings.is_empty())
    }
}

/// One line per finding, then a summary line.
pub fn write(report: &LintReport, mut out: impl std::io::Write) -> std::io::Result<()> {
    for finding in &report.findings {
        writeln!(out, "{finding}")?;
    }
    let verdict = match report.findings.len() {
        0 => "clean".to_string(),
        1 => "1 finding".to_string(),
        n => format!("{n} findings"),
    };
    writeln!(
        out,
        "lint: {} scenario files, {} requirements: {verdict}",
        report.scenarios,
        report.coverage.len()
    )?;
    out.flush()
}

/// The folder could not be linted at all (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    /// A folder or file that cannot be read, or a file that is not JSON:
    /// the loader's own error, as a run would report it.
    #[error(transparent)]
    Unreadable(LoadError),
    #[error("the requirement registry is unusable: {0}")]
    Registry(LoadError),
    #[error("no scenario files in {}", .0.display())]
    Empty(PathBuf),
}

/// Lints `dir` (the `scenarios/` folder): its registry and every
/// `<profile>/*.json`.
pub fn lint_dir(dir: &Path, schemas: &Schemas) -> Result<LintReport, LintError> {
    let registry = dir.join(REQUIREMENTS_FILE);
    let requirements = match loader::load_requirements(&registry, schemas) {
        Ok(requirements) => requirements,
        Err(error @ (LoadError::Read { .. } | LoadError::NotJson { .. })) => {
            return Err(LintError::Unreadable(error))
        }
        Err(other) => return Err(LintError::Registry(other)),
    };
    let files = loader::scenario_files(dir).map_err(LintError::Unreadable)?;
    if files.is_empty() {
        return Err(LintError::Empty(dir.to_path_buf()));
    }
    let mut findings = Vec::new();
    let mut named = Vec::with_capacity(files.len());
    for (profile, path) in &files {
        let value = loader::read_json(path).map_err(LintError::Unreadable)?;
        let stem = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        named.push(Named {
            file: path.clone(),
            trial: format!("{profile}::{stem}"),
            ids: strings(value.get("requirements")),
        });
        match loader::load_scenario(path, profile, schemas) {
            Ok(scenario) => {
                findings.extend(lint_scenario(path, &value));
                findings.extend(capability_unneeded(&scenario, &requirements));
            }
            Err(error @ LoadError::Read { .. }) => return Err(LintError::Unreadable(error)),
            Err(error) => findings.push(Finding {
                file: path.clone(),
                pointer: match &error {
                    LoadError::Invalid { pointer, .. } => pointer.clone(),
                    _ => String::new(),
                },
                rule: Rule::ScenarioInvalid,
                message: error.to_string(),
            }),
        }
    }
    let (cross, coverage) = cross_check(&registry, &requirements, &named);
    findings.extend(cross);
    findings.extend(clause_check(dir, &registry, &requirements));
    findings.extend(capability_stated(dir, &registry, &requirements));
    let files: BTreeSet<String> = files
        .iter()
        .filter_map(|(profile, path)| {
            let name = path.file_name()?.to_string_lossy();
            Some(format!("{profile}/{name}"))
        })
        .collect();
    findings.extend(coverage_check(dir, &requirements, &files));
    Ok(LintReport {
        findings,
        scenarios: files.len(),
        coverage,
    })
}

/// The requirement ids one scenario file names.
struct Named {
    file: PathBuf,
    trial: String,
    ids: Vec<String>,
}

fn cross_check(
    registry: &Path,
    requirements: &[Requirement],
    named: &[Named],
) -> (Vec<Finding>, Vec<Coverage>) {
    let known: BTreeSet<&str> = requirements.iter().map(|r| r.id.as_str()).collect();
    let mut by_id: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut findings = Vec::new();
    for scenario in named {
        for (index, id) in scenario.ids.iter().enumerate() {
            if known.contains(id.as_str()) {
                by_id.entry(id).or_default().insert(&scenario.trial);
            } else {
                findings.push(Finding {
                    file: scenario.file.clone(),
                    pointer: format!("/requirements/{index}"),
                    rule: Rule::RequirementUnknown,
                    message: format!("`{id}` is not in {REQUIREMENTS_FILE}"),
                });
            }
        }
    }
    let mut coverage = Vec::with_capacity(requirements.len());
    for (index, requirement) in requirements.iter().enumerate() {
        let scenarios: Vec<String> = by_id
            .get(requirement.id.as_str())
            .map(|trials| trials.iter().map(|t| t.to_string()).collect())
            .unwrap_or_default();
        if scenarios.is_empty() {
            findings.push(Finding {
                file: registry.to_path_buf(),
                pointer: format!("/requirements/{index}/id"),
                rule: Rule::RequirementUnnamed,
                message: format!(
                    "no scenario names `{}`: nothing would ever test it",
                    requirement.id
                ),
            });
        }
        coverage.push(Coverage {
            id: requirement.id.clone(),
            level: requirement.level.clone(),
            scenarios,
        });
    }
    (findings, coverage)
}

/// `clause-unresolved` over the registry: one finding per clause that is
/// not a PROFILE.md pointer or names a missing anchor, and one for the
/// whole registry when PROFILE.md cannot be read; `level-mismatch`: one per
/// requirement whose section states another level, or none.
fn clause_check(dir: &Path, registry: &Path, requirements: &[Requirement]) -> Vec<Finding> {
    let path = profile_path(dir);
    let text = std::fs::read_to_string(&path);
    let anchors = text.as_deref().ok().map(profile::anchors);
    let sections = text.as_deref().map(profile::sections).unwrap_or_default();
    let mut findings = Vec::new();
    if let Err(error) = &text {
        findings.push(Finding {
            file: registry.to_path_buf(),
            pointer: String::new(),
            rule: Rule::ClauseUnresolved,
            message: format!(
                "cannot read {} ({error}): no clause can resolve; {PROFILE_FILE} belongs beside the scenarios folder",
                path.display()
            ),
        });
    }
    for (index, requirement) in requirements.iter().enumerate() {
        if let Some(message) = profile::unresolved(requirement, anchors.as_ref()) {
            findings.push(Finding {
                file: registry.to_path_buf(),
                pointer: format!("/requirements/{index}/clause"),
                rule: Rule::ClauseUnresolved,
                message,
            });
        }
        if let Some(message) = profile::level_mismatch(requirement, &sections) {
            findings.push(Finding {
                file: registry.to_path_buf(),
                pointer: format!("/requirements/{index}/level"),
                rule: Rule::LevelMismatch,
                message,
            });
        }
    }
    findings
}

/// `capability-unneeded` over one loaded scenario: each requirement it
/// names must be one whose capability the scenario needs, all of it.
fn capability_unneeded(scenario: &Scenario, requirements: &[Requirement]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (index, id) in scenario.requirements.iter().enumerate() {
        let Some(requirement) = requirements.iter().find(|r| &r.id == id) else {
            continue;
        };
        let gaps = loader::capability_gaps(requirement, scenario);
        if gaps.is_empty() {
            continue;
        }
        let gaps: Vec<String> = gaps.iter().map(|c| format!("`{c}`")).collect();
        findings.push(Finding {
            file: scenario.path.clone(),
            pointer: format!("/requirements/{index}"),
            rule: Rule::CapabilityUnneeded,
            message: format!(
                "`{id}` applies only with {}, which the scenario does not need: add it to `needs`, or prove the requirement elsewhere",
                gaps.join(", ")
            ),
        });
    }
    findings
}

/// `capability-unstated` over the registry: each requirement's section
/// (from its anchor to the next one) carries the `Applies to` line its
/// capability reads as, word for word, so the section and the registry
/// never disagree about what the requirement applies to.
fn capability_stated(dir: &Path, registry: &Path, requirements: &[Requirement]) -> Vec<Finding> {
    // An unreadable PROFILE.md is `clause-unresolved`'s finding already.
    let Ok(text) = std::fs::read_to_string(profile_path(dir)) else {
        return Vec::new();
    };
    let mut findings = Vec::new();
    for (index, requirement) in requirements.iter().enumerate() {
        let Some(section) = profile::section(&text, &requirement.id) else {
            continue;
        };
        let line = applies_to(&requirement.capability);
        if !section.lines().any(|l| l.trim() == line) {
            findings.push(Finding {
                file: registry.to_path_buf(),
                pointer: format!("/requirements/{index}/capability"),
                rule: Rule::CapabilityUnstated,
                message: format!(
                    "the {PROFILE_FILE} section of `{}` must state its capability in the line `{line}`",
                    requirement.id
                ),
            });
        }
    }
    findings
}

/// The `coverage-*` rules over docs/COVERAGE.md: one finding when the map
/// cannot be read, else one per problem [`coverage::problems`] finds.
fn coverage_check(
    dir: &Path,
    requirements: &[Requirement],
    scenarios: &BTreeSet<String>,
) -> Vec<Finding> {
    let path = coverage_path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => {
            return vec![Finding {
                file: path.clone(),
                pointer: String::new(),
                rule: Rule::CoverageUnmapped,
                message: format!(
                    "cannot read {} ({error}): every requirement needs a row in the coverage map, {COVERAGE_FILE} beside the scenarios folder",
                    path.display()
                ),
            }]
        }
    };
    let map = coverage::parse(&text);
    coverage::problems(&map, requirements, scenarios)
        .into_iter()
        .map(|problem| {
            let (pointer, rule, message) = match problem {
                coverage::Problem::UnknownRequirement { line, id } => (
                    format!("line {line}"),
                    Rule::CoverageUnknown,
                    format!("the row names `{id}`, which is not in {REQUIREMENTS_FILE}"),
                ),
                coverage::Problem::UnknownScenario { line, file } => (
                    format!("line {line}"),
                    Rule::CoverageUnknown,
                    format!("the row names `{file}`, which is no scenario file"),
                ),
                coverage::Problem::Unmapped { id } => (
                    String::new(),
                    Rule::CoverageUnmapped,
                    format!("no row names `{id}`: map it to the promise it tests, or say why it stands alone"),
                ),
                coverage::Problem::Unaudited { id } => (
                    String::new(),
                    Rule::CoverageUnaudited,
                    format!("`{id}` is a MUST with no audit row: add a row whose first cell is `{id}`"),
                ),
            };
            Finding {
                file: path.clone(),
                pointer,
                rule,
                message,
            }
        })
        .collect()
}

// ---- one scenario ----------------------------------------------------------

/// Keys of `expect` whose checks the lint knows how to count.
const COUNTED_EXPECT_KEYS: &[&str] = &["status", "schema", "assert"];

/// The step and check rules over one scenario file, as parsed JSON. Pure;
/// never panics on any JSON.
pub fn lint_scenario(file: &Path, scenario: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut finding = |pointer: String, rule: Rule, message: String| {
        findings.push(Finding {
            file: file.to_path_buf(),
            pointer,
            rule,
            message,
        })
    };
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let counts: Vec<Count> = steps.iter().map(|step| count(step.get("expect"))).collect();
    // Whether any step after index i makes a check.
    let checked_later = |index: usize| counts[index + 1..].iter().any(|c| c.made > 0);
    for (index, step) in steps.iter().enumerate() {
        let at = format!("/steps/{index}");
        if step.get("quietMs").is_some() {
            if !checked_later(index) {
                finding(
                    at,
                    Rule::QuietStepLast,
                    "a quiet wait must be followed by a step that checks what the wait was for"
                        .to_string(),
                );
            }
            continue;
        }
        // A `parallel` step's `schemas` check every answer of their status:
        // a claim about the answers the host chose to give (the envelope on
        // each 4xx), which `made` cannot count.
        let per_status = step
            .pointer("/expect/schemas")
            .and_then(Value::as_object)
            .is_some_and(|schemas| !schemas.is_empty());
        if counts[index].made == 0 && !per_status {
            finding(
                at.clone(),
                Rule::StepAssertsNothing,
                "the step makes no check: give it an `expect` with a status, a schema or an assertion"
                    .to_string(),
            );
        }
        let Some(expect) = step.get("expect").and_then(Value::as_object) else {
            continue;
        };
        let expect_at = format!("{at}/expect");
        for (pointer, rule, message) in refusal_rules(expect, &expect_at) {
            finding(pointer, rule, message);
        }
        if is_either(expect) && !checked_later(index) {
            finding(
                format!("{expect_at}/status"),
                Rule::EitherStepUnchecked,
                "the step accepts both a success and a refusal, so it proves nothing by itself; \
                 a later step must check which one happened"
                    .to_string(),
            );
        }
        let shape = match (
            expect.get("schema").and_then(Value::as_str),
            step.get("mockLog"),
        ) {
            (Some(schema), _) => Shape::Schema(schema),
            (None, Some(_)) => Shape::MockLog,
            (None, None) => Shape::Unknown,
        };
        for (pointer, message) in arrays::check(expect, shape, &expect_at) {
            finding(pointer, Rule::ArrayMayBeEmpty, message);
        }
    }
    for (pointer, id) in attribution::unproven(scenario) {
        finding(
            pointer,
            Rule::RequirementUnproven,
            format!(
                "the scenario names `{id}` but no check proves it: give a step or an assertion \
                 `\"proves\": [\"{id}\"]`, or stop naming it"
            ),
        );
    }
    for pointer in attribution::objectives_without_nonce(scenario) {
        finding(
            pointer,
            Rule::CreateWithoutNonce,
            format!(
                "a create body's objective must contain `{}`: the scenario finds its own goals \
                 by it, and list checks look at no other",
                attribution::NONCE_MARK
            ),
        );
    }
    // A step with `when` runs only on some answers: its checks count
    // toward what the steps can make, not toward what every run makes.
    let made: u64 = counts
        .iter()
        .zip(steps)
        .filter(|(_, step)| step.get("when").is_none())
        .map(|(c, _)| c.made)
        .sum();
    let most: u64 = counts.iter().map(|c| c.made).sum();
    let exact = counts.iter().all(|c| c.exact);
    if let Some(declared) = scenario.get("checks").and_then(Value::as_u64) {
        if declared < made {
            finding(
                "/checks".to_string(),
                Rule::ChecksBelow,
                format!(
                    "declares {declared} checks but its steps make {made}: declare {made}, so a \
                     check that goes missing fails the run"
                ),
            );
        } else if exact && declared > most {
            finding(
                "/checks".to_string(),
                Rule::ChecksAbove,
                format!(
                    "declares {declared} checks but its steps can make only {most}: it can never pass"
                ),
            );
        }
    }
    findings
}

/// Checks one evaluation of a step's `expect` makes, as the runner counts
/// them: one for `status`, one for `schema`, one per assertion.
struct Count {
    made: u64,
    /// False when `expect` has keys the lint cannot count: `made` is then
    /// only a lower bound.
    exact: bool,
}

fn count(expect: Option<&Value>) -> Count {
    let Some(expect) = expect else {
        return Count {
            made: 0,
            exact: true,
        };
    };
    let Some(expect) = expect.as_object() else {
        return Count {
            made: 0,
            exact: false,
        };
    };
    let assertions = expect
        .get("assert")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    Count {
        made: u64::from(expect.contains_key("status"))
            + u64::from(expect.contains_key("schema"))
            + u64::try_from(assertions).unwrap_or(u64::MAX),
        exact: expect
            .keys()
            .all(|key| COUNTED_EXPECT_KEYS.contains(&key.as_str())),
    }
}

fn statuses(expect: &Map<String, Value>) -> Vec<u64> {
    match expect.get("status") {
        Some(Value::Number(one)) => one.as_u64().into_iter().collect(),
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_u64).collect(),
        _ => Vec::new(),
    }
}

/// Accepts at least one success and at least one refusal.
fn is_either(expect: &Map<String, Value>) -> bool {
    let statuses = statuses(expect);
    statuses.iter().any(|s| *s >= 400) && statuses.iter().any(|s| *s < 400)
}

fn refusal_rules(expect: &Map<String, Value>, at: &str) -> Vec<(String, Rule, String)> {
    let statuses = statuses(expect);
    let mut found = Vec::new();
    if let Some(server_error) = statuses.iter().find(|s| **s >= 500) {
        found.push((
            format!("{at}/status"),
            Rule::RefusalUnpinned,
            format!(
                "expects {server_error}: a 5xx is the host failing, never the answer a scenario wants"
            ),
        ));
    }
    let refusal = !statuses.is_empty() && statuses.iter().all(|s| *s >= 400);
    // A `parallel` step may name a schema per status instead.
    let per_status = |status: &u64| {
        expect
            .get("schemas")
            .and_then(|schemas| schemas.get(status.to_string()))
            .and_then(Value::as_str)
            == Some("error")
    };
    let enveloped = expect.get("schema").and_then(Value::as_str) == Some("error")
        || statuses.iter().all(per_status);
    if refusal && !enveloped {
        found.push((
            at.to_string(),
            Rule::RefusalUnpinned,
            "a refusal must be checked against the error envelope: add `\"schema\": \"error\"`"
                .to_string(),
        ));
    }
    found
}
