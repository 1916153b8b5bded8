//! The variant matrix: the other half of the kill matrix. Mutants prove the
//! suite fails broken hosts; variants prove it certifies correct hosts that
//! chose differently. Each conforming variant of the reference host
//! (`goalpost_host_builds::variants::REGISTRY`, a dev-dependency) makes one choice the profile allows;
//! `scenarios/variants.json` says which section allows it, which profiles
//! must certify it and which `strict` requirements pin the reference host's
//! own choice. For every variant, the whole suite (`strict` included) runs
//! through the same library path as `goalpost run`, and the matrix fails
//! when:
//!
//! - a profile in `certifies` is not certified: every MUST requirement of it
//!   that did not pass is named, with its disposition and message (it
//!   over-reached: it demands what the profile leaves open);
//! - a certified profile covers another scope than `scope` names for it
//!   (judge, modes, what the host offers and what it does not), or a
//!   profile `certifies` does not list is certified all the same;
//! - a profile in `uncertified` is not concluded as it says (the verdict
//!   and the reason: what the minimum scope needs, or what blocked it);
//! - `goalpost doctor`, run against the same host first (with
//!   `--probe-write`), predicted another verdict or scope for any profile
//!   than the run concluded (`strict` aside where the variant's pins fail
//!   it: doctor predicts a run whose checks all hold);
//! - a requirement in `pins` did not fail (strict no longer pins the
//!   choice, or the variant does not make it);
//! - any other `strict` requirement failed, errored or was not reached
//!   (strict pins more than the one choice); a skip is fine;
//! - a variant that does not offer the attention extension (every variant
//!   but the `attention-…` ones) has an attention requirement end anything
//!   but a skip: a host that does not advertise it is never judged on it.
//!
//! Each host is in-process, both tenants, signing webhooks with the secret
//! the suite checks when the variant signs at all; the suite is given the
//! secret either way, as an operator who configured one would. Variants run
//! several at a time (`GOALPOST_VARIANT_MATRIX_JOBS`, default 6: a run
//! mostly waits); one that looks wrong is run again with less going on, so
//! a timing race lost to the load is not reported as an over-reach.
//!
//! One host cannot be judged on the `cluster` profile (its scenarios need
//! several endpoints of one deployment), so the cluster half runs each
//! variant's `cluster` profile again as three in-process replicas on a
//! fresh PostgreSQL schema (`GOALPOST_TEST_POSTGRES`; without it the half
//! prints how to enable it), `GOALPOST_VARIANT_CLUSTER_JOBS` (default 3)
//! at a time, and fails when:
//!
//! - `cluster` is in `certifies` and is not certified on the replicas;
//! - a cluster requirement did not pass, unless `clusterSkips` names it,
//!   and then it must skip with the reason named there;
//! - a cluster scenario skipped on the replicas for any reason but the one
//!   it skips with on one host of the same variant (what the variant does
//!   not advertise or serve: never `needs-endpoints`).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use goalpost::commands::doctor::{self, DoctorConfig, Prediction};
use goalpost::report::RunReport;
use goalpost::run::scope::{Scope, Status};
use goalpost_host_builds::variants::{Variant, REGISTRY};
use serde_json::Value;

const DEFAULT_JOBS: usize = 6;
/// Runs at once while suspects are checked again.
const RECHECK_JOBS: usize = 1;
const SECRET: &str = "goalpost-variant-matrix-secret";
const STRICT: &str = "strict";
/// The attention extension's profile: judged only where advertised.
const ATTENTION: &str = "attention";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scenarios() -> PathBuf {
    root().join("scenarios")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()))
}

/// What `scenarios/variants.json` expects of one variant.
#[derive(Debug, Clone)]
struct Expectation {
    name: String,
    allowed_by: String,
    certifies: BTreeSet<String>,
    pins: BTreeSet<String>,
    /// `clusterSkips`: the `cluster` requirements that skip on replicas of
    /// the variant, each with its reason; every other one must pass.
    cluster_skips: BTreeMap<String, String>,
    /// `scope`: per profile in `certifies`, the scope its certification
    /// covers, as reports write it in one line.
    scope: BTreeMap<String, String>,
    /// `uncertified`: per profile, how the verdict line of a profile the
    /// variant is not certified in begins (`not attempted — needs ...`).
    uncertified: BTreeMap<String, String>,
}

fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, text)| (key.clone(), text.as_str().unwrap_or_default().to_string()))
        .collect()
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn expectations() -> Vec<Expectation> {
    let document = read_json(&scenarios().join("variants.json"));
    document["variants"]
        .as_array()
        .expect("a variants array")
        .iter()
        .map(|variant| Expectation {
            name: variant["name"].as_str().unwrap_or_default().to_string(),
            allowed_by: variant["allowedBy"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            certifies: strings(&variant["certifies"]),
            pins: strings(&variant["pins"]),
            cluster_skips: string_map(&variant["clusterSkips"]),
            scope: string_map(&variant["scope"]),
            uncertified: string_map(&variant["uncertified"]),
        })
        .collect()
}

/// Requirement id → (profile, level).
fn requirements() -> BTreeMap<String, (String, String)> {
    let document = read_json(&scenarios().join("requirements.json"));
    document["requirements"]
        .as_array()
        .expect("a requirements array")
        .iter()
        .map(|requirement| {
            let text = |key: &str| requirement[key].as_str().unwrap_or_default().to_string();
            (text("id"), (text("profile"), text("level")))
        })
        .collect()
}

/// One requirement as a run ended it.
#[derive(Debug, Clone)]
struct Ended {
    profile: String,
    level: String,
    disposition: String,
    /// The failing check's message, or the skip's reason.
    why: String,
}

/// How a run (or doctor's prediction) concluded one profile.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    status: Status,
    /// What the minimum scope needs, or what blocked it.
    reason: Option<String>,
    scope: Scope,
    /// The report's one line: `certified — judge ...`.
    line: String,
}

/// One run of the suite against `variant`.
#[derive(Debug, Clone, Default)]
struct Run {
    requirements: BTreeMap<String, Ended>,
    certified: BTreeMap<String, bool>,
    verdicts: BTreeMap<String, Verdict>,
    /// Scenario name → its outcome (`pass`, `skip`, ...) and skip reason.
    scenarios: BTreeMap<String, (String, Option<String>)>,
    /// What doctor predicted of each profile, against the same host just
    /// before the run.
    predicted: Vec<Prediction>,
    /// Doctor's printed diagnosis.
    diagnosis: String,
}

impl Run {
    fn of(report: RunReport) -> Run {
        let mut ended = Run::default();
        for (profile, summary) in &report.profiles {
            ended.certified.insert(profile.clone(), summary.certified);
            ended.verdicts.insert(
                profile.clone(),
                Verdict {
                    status: summary.status(),
                    reason: summary.reason.clone(),
                    scope: summary.scope.clone(),
                    line: summary.verdict_line(),
                },
            );
        }
        for scenario in report.scenarios {
            ended.scenarios.insert(
                scenario.name,
                (scenario.outcome.as_str().to_string(), scenario.reason),
            );
        }
        for requirement in report.requirements {
            // A skip or a requirement that does not apply is told by its
            // reason (the message says it in words); anything else by its
            // message.
            let why = match requirement.reason {
                Some(reason) => reason,
                None => requirement.message.as_deref().map(gist).unwrap_or_default(),
            };
            ended.requirements.insert(
                requirement.id,
                Ended {
                    profile: requirement.profile,
                    level: requirement.level,
                    disposition: requirement.disposition.to_string(),
                    why,
                },
            );
        }
        ended
    }
}

/// Doctor against the host at `url`, both tenants and the write probe,
/// as an operator would run it before the suite: what it predicts, and
/// what it prints.
fn diagnose(
    runtime: &tokio::runtime::Runtime,
    url: &str,
) -> Result<(Vec<Prediction>, String), String> {
    let schemas = goalpost_schemas::Schemas::embedded().map_err(|e| e.to_string())?;
    let catalog = goalpost::run::loader::load(&scenarios(), &schemas).map_err(|e| e.to_string())?;
    let config = DoctorConfig {
        base_url: url.trim_end_matches('/').to_string(),
        token_a: goalpost::bundled::DEFAULT_TOKEN_A.to_string(),
        token_b: Some(goalpost::bundled::DEFAULT_TOKEN_B.to_string()),
        base_path: None,
        probe_write: true,
        timeout_scale: 1.0,
    };
    let http = goalpost::http::Http::new(1.0, goalpost::http::DEFAULT_BODY_CAP)?;
    let diagnosis = runtime
        .block_on(doctor::diagnose(&config, &catalog, &http, &schemas))
        .map_err(|error| format!("doctor could not start: {error}"))?;
    let mut text = Vec::new();
    doctor::write(&diagnosis, &mut text).map_err(|e| e.to_string())?;
    Ok((
        diagnosis.predictions,
        String::from_utf8_lossy(&text).into_owned(),
    ))
}

fn run_suite(variant: Variant) -> Result<Run, String> {
    let callback = common::callback_listen()?;
    let config = variant.apply(common::host_config(SECRET, callback)?);
    let mut doctored = None;
    let report = common::run_suite_checked(
        config,
        SECRET,
        callback,
        "variant-matrix-host",
        |runtime, url| {
            doctored = Some(diagnose(runtime, url)?);
            Ok(())
        },
        |run| {
            run.profiles = None;
            run.strict = true;
        },
    )?;
    let mut run = Run::of(report);
    if let Some((predicted, diagnosis)) = doctored {
        (run.predicted, run.diagnosis) = (predicted, diagnosis);
    }
    Ok(run)
}

/// A failure message in two lines: which check of which step, and what the
/// host answered instead (the report has the whole exchange).
fn gist(message: &str) -> String {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default().trim();
    match lines.find(|line| line.trim_start().starts_with("actual:")) {
        Some(actual) => format!("{first}\n        {}", actual.trim()),
        None => first.to_string(),
    }
}

/// Everything `run` shows wrong with the suite, measured against `expected`.
fn problems(expected: &Expectation, run: &Run) -> Vec<String> {
    let name = &expected.name;
    let mut found = Vec::new();
    for profile in &expected.certifies {
        // One host cannot be judged on `cluster`: the cluster half is.
        if profile == CLUSTER || run.certified.get(profile).copied().unwrap_or(false) {
            continue;
        }
        let blocking: Vec<String> = run
            .requirements
            .iter()
            .filter(|(_, ended)| {
                ended.profile == *profile && ended.level == "MUST" && ended.disposition != "pass"
            })
            .map(|(id, ended)| format!("    {id}: {} {}", ended.disposition, ended.why))
            .collect();
        found.push(format!(
            "{name}: `{profile}` is not certified, yet its choice is legal there ({}); over-reached:\n{}",
            expected.allowed_by,
            if blocking.is_empty() {
                "    (no MUST requirement ran)".to_string()
            } else {
                blocking.join("\n")
            }
        ));
    }
    for (profile, verdict) in &run.verdicts {
        let certified = verdict.status == Status::Certified;
        if certified && !expected.certifies.contains(profile) && profile != STRICT {
            found.push(format!(
                "{name}: `{profile}` is certified ({}), but variants.json does not list it in `certifies`",
                verdict.line
            ));
        }
        if certified && profile != CLUSTER {
            let scope = verdict.scope.to_string();
            match expected.scope.get(profile) {
                Some(wanted) if *wanted == scope => {}
                Some(wanted) => found.push(format!(
                    "{name}: `{profile}` is certified for the scope `{scope}`, variants.json says `{wanted}`"
                )),
                None if profile == STRICT => {}
                None => found.push(format!(
                    "{name}: `{profile}` is certified for `{scope}`; variants.json names no scope for it"
                )),
            }
        }
    }
    for (profile, wanted) in &expected.uncertified {
        match run.verdicts.get(profile) {
            Some(verdict) if verdict.line.starts_with(wanted.as_str()) => {}
            Some(verdict) => found.push(format!(
                "{name}: `{profile}` ends `{}`, variants.json says it begins `{wanted}`",
                verdict.line
            )),
            None => found.push(format!("{name}: `{profile}` has no verdict")),
        }
    }
    found.extend(prediction_problems(expected, run));
    for id in &expected.pins {
        match run.requirements.get(id) {
            Some(ended) if ended.disposition == "fail" => {}
            Some(ended) => found.push(format!(
                "{name}: pin {id} is `{}`, not `fail`: strict does not pin this choice {}",
                ended.disposition, ended.why
            )),
            None => found.push(format!("{name}: pin {id} was not disposed at all")),
        }
    }
    // A host that does not advertise the attention extension is never
    // judged on it: none of its attention requirements may end anything
    // but a skip (or, under scoped certification, not-applicable).
    if !expected.certifies.contains(ATTENTION) {
        for (id, ended) in &run.requirements {
            if ended.profile == ATTENTION
                && !matches!(ended.disposition.as_str(), "skip" | "not-applicable")
            {
                found.push(format!(
                    "{name}: does not offer attention, yet {id} ended `{}`: {}",
                    ended.disposition, ended.why
                ));
            }
        }
    }
    for (id, ended) in &run.requirements {
        if ended.profile != STRICT || expected.pins.contains(id) {
            continue;
        }
        // A skip is the truth about a host that lacks what the scenario
        // needs (a seam, the verifier judge, `manual`); it pins nothing.
        if !matches!(ended.disposition.as_str(), "pass" | "advisory" | "skip") {
            found.push(format!(
                "{name}: strict over-reached: {id} is `{}` but pins no part of this choice: {}",
                ended.disposition, ended.why
            ));
        }
    }
    found
}

/// Where doctor's prediction, made against the same host just before the
/// run, differs from what the run concluded: every profile's verdict
/// (status, and the reason of one not attempted) and scope, and the line
/// doctor printed for it. `strict` is left out where the variant's pins
/// fail it: doctor predicts a run whose checks all hold, and pins are
/// checks a conforming variant fails by design.
fn prediction_problems(expected: &Expectation, run: &Run) -> Vec<String> {
    let name = &expected.name;
    if run.predicted.is_empty() {
        return vec![format!("{name}: doctor predicted nothing")];
    }
    let mut found = Vec::new();
    for prediction in &run.predicted {
        let profile = &prediction.profile;
        if profile == STRICT && !expected.pins.is_empty() {
            continue;
        }
        let Some(verdict) = run.verdicts.get(profile) else {
            found.push(format!(
                "{name}: doctor predicts `{profile}`, the run has no verdict for it"
            ));
            continue;
        };
        let summary = &prediction.summary;
        let reason_differs =
            summary.status == Status::NotAttempted && summary.reason != verdict.reason;
        if summary.status != verdict.status || summary.scope != verdict.scope || reason_differs {
            found.push(format!(
                "{name}: doctor predicts `{profile}: {}`, the run concluded `{}`",
                prediction.line(),
                verdict.line
            ));
        }
        let printed = format!("  {profile}: {}", prediction.line());
        if !run.diagnosis.contains(&printed) {
            found.push(format!(
                "{name}: doctor's output lacks `{printed}`:\n{}",
                run.diagnosis
            ));
        }
    }
    found
}

fn verdict(expected: &Expectation, run: &Result<Run, String>) -> Vec<String> {
    match run {
        Ok(run) => problems(expected, run),
        Err(error) => vec![format!("{}: {error}", expected.name)],
    }
}

fn jobs() -> usize {
    common::jobs("GOALPOST_VARIANT_MATRIX_JOBS", DEFAULT_JOBS)
}

/// The expectation for every registered variant, in registry order.
fn paired() -> Vec<(Variant, Expectation)> {
    let expectations = expectations();
    REGISTRY
        .iter()
        .map(|variant| {
            let expected = expectations
                .iter()
                .find(|expected| expected.name == variant.name())
                .unwrap_or_else(|| panic!("{variant} is not in scenarios/variants.json"))
                .clone();
            (*variant, expected)
        })
        .collect()
}

#[test]
fn every_variant_is_declared_once_with_known_requirements_and_sections() {
    let document = read_json(&scenarios().join("variants.json"));
    let schemas = goalpost_schemas::Schemas::embedded().expect("the schemas compile");
    if let Err(violations) = schemas.validate("variants", &document) {
        let violations: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!(
            "variants.json breaks its schema:\n{}",
            violations.join("\n")
        );
    }
    let expectations = expectations();
    let requirements = requirements();
    let registered: BTreeSet<&str> = REGISTRY.iter().map(|variant| variant.name()).collect();
    let declared: Vec<&str> = expectations.iter().map(|e| e.name.as_str()).collect();
    let mut problems = Vec::new();
    if declared.len() != declared.iter().collect::<BTreeSet<_>>().len() {
        problems.push(format!("a variant is declared twice: {declared:?}"));
    }
    for name in &registered {
        if !declared.contains(name) {
            problems.push(format!("{name} is registered but not in variants.json"));
        }
    }
    // The anchors are checked once the profile text exists: it is written
    // beside this matrix, section by section.
    let profile = std::fs::read_to_string(root().join("PROFILE.md")).ok();
    for expected in &expectations {
        let name = &expected.name;
        if !registered.contains(name.as_str()) {
            problems.push(format!("{name} is in variants.json but not registered"));
        }
        for id in &expected.pins {
            match requirements.get(id) {
                Some((profile, _)) if profile == STRICT => {}
                Some((profile, _)) => problems.push(format!(
                    "{name} pins {id}, a `{profile}` requirement: only strict pins a choice"
                )),
                None => problems.push(format!("{name} pins unknown requirement {id}")),
            }
        }
        let mut skips_a_must = false;
        for id in expected.cluster_skips.keys() {
            match requirements.get(id) {
                Some((profile, level)) if profile == CLUSTER => skips_a_must |= level == "MUST",
                Some((profile, _)) => problems.push(format!(
                    "{name} declares a cluster skip of {id}, a `{profile}` requirement"
                )),
                None => problems.push(format!("{name} declares a cluster skip of unknown {id}")),
            }
        }
        if skips_a_must == expected.certifies.contains(CLUSTER) {
            problems.push(format!(
                "{name}: `{CLUSTER}` must be in `certifies` exactly when clusterSkips names no MUST requirement"
            ));
        }
        let scoped: BTreeSet<String> = expected.scope.keys().cloned().collect();
        if scoped != expected.certifies {
            problems.push(format!(
                "{name}: `scope` must name exactly the profiles in `certifies`, each with the scope it covers"
            ));
        }
        if let Some(profile) = expected
            .uncertified
            .keys()
            .find(|profile| expected.certifies.contains(*profile))
        {
            problems.push(format!(
                "{name}: `{profile}` is both in `certifies` and in `uncertified`"
            ));
        }
        let anchor = expected.allowed_by.trim_start_matches("PROFILE.md#");
        if let Some(profile) = &profile {
            if !profile.contains(&format!("<a id=\"{anchor}\"></a>")) {
                problems.push(format!(
                    "{name} is allowed by {}, which is no section of PROFILE.md",
                    expected.allowed_by
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_variant_is_certified_where_its_choice_is_legal_and_fails_only_its_pins() {
    let started = Instant::now();
    let jobs = jobs();
    let results = common::in_parallel(paired(), jobs, |(variant, expected)| {
        let began = Instant::now();
        let run = run_suite(variant);
        (variant, expected, run, began.elapsed())
    });
    let mut suspects = Vec::new();
    let mut sorted = results;
    sorted.sort_by_key(|(variant, _, _, _)| *variant);
    for (variant, expected, run, took) in sorted {
        let found = verdict(&expected, &run);
        // SHOULD requirements never block; they are shown so a choice that
        // costs an advisory is seen, not hidden.
        let advisories: Vec<&str> = run
            .iter()
            .flat_map(|run| &run.requirements)
            .filter(|(_, ended)| ended.disposition == "advisory")
            .map(|(id, _)| id.as_str())
            .collect();
        eprintln!(
            "variant-matrix: {:<32} {:>6.1} s  {}{}",
            variant.name(),
            took.as_secs_f64(),
            if found.is_empty() { "ok" } else { "suspect" },
            if advisories.is_empty() {
                String::new()
            } else {
                format!("  advisory: {}", advisories.join(", "))
            }
        );
        // What was measured, profile by profile: the verdict and its scope.
        for verdict in run.iter().flat_map(|run| run.verdicts.iter()) {
            eprintln!("variant-matrix:   {:<10} {}", verdict.0, verdict.1.line);
        }
        // A published report that differs is rechecked like a suspect: a
        // race lost to the load must not read as a stale page.
        let found = match &run {
            Ok(run) if found.is_empty() => published_differences(variant, run),
            _ => found,
        };
        if !found.is_empty() {
            suspects.push((variant, expected, found));
        }
    }
    // A variant that looked wrong under the matrix's load runs again with
    // little else going on; what it gets wrong then is what the suite gets
    // wrong about it.
    let mut found = recheck("variant-matrix", suspects, |variant, expected| {
        let run = run_suite(variant);
        match (verdict(expected, &run), &run) {
            (found, Ok(run)) if found.is_empty() => published_differences(variant, run),
            (found, _) => found,
        }
    });
    eprintln!(
        "variant-matrix: {} variants, {} at a time, {:.1} s in all",
        REGISTRY.len(),
        jobs,
        started.elapsed().as_secs_f64()
    );
    found.sort();
    assert!(
        found.is_empty(),
        "the variant matrix failed:\n{}",
        found.join("\n")
    );
}

/// Runs each suspect (a variant, what is expected of it and what its first
/// run got wrong) again, [`RECHECK_JOBS`] at a time, and answers what
/// `again` still finds wrong; one that passes now lost a timing race to
/// the load the first time, and the log says so under `label`.
fn recheck(
    label: &str,
    suspects: Vec<(Variant, Expectation, Vec<String>)>,
    again: impl Fn(Variant, &Expectation) -> Vec<String> + Sync,
) -> Vec<String> {
    let rechecked = common::in_parallel(suspects, RECHECK_JOBS, |(variant, expected, first)| {
        (variant, first, again(variant, &expected))
    });
    let mut found = Vec::new();
    for (variant, first, again) in rechecked {
        if again.is_empty() {
            eprintln!(
                "{label}: {variant} passes when run again: the first run lost a timing race to the load:\n  {}",
                first.join("\n  ")
            );
        }
        found.extend(again);
    }
    found
}

/// Where the variant's published report (reports/variants/NAME, behind
/// reports/matrix/) concludes otherwise than this fresh run: the published
/// pages would show a host that is no longer there.
fn published_differences(variant: Variant, run: &Run) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/variants")
        .join(variant.name())
        .join("report.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return vec![format!(
            "{variant}: no published report at {}; run scripts/publish-matrix.sh",
            path.display()
        )];
    };
    let published: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let published: BTreeMap<&str, &str> = published["requirements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r["id"].as_str()?, r["disposition"].as_str()?)))
        .collect();
    let mut differences = Vec::new();
    for (id, ended) in &run.requirements {
        let was = published.get(id.as_str()).copied().unwrap_or("absent");
        if was != ended.disposition {
            differences.push(format!(
                "{variant}: reports/variants/{} is stale: {id} is published `{was}`, a fresh run ends `{}`; run scripts/publish-matrix.sh",
                variant.name(),
                ended.disposition
            ));
        }
    }
    differences
}

/// The profile only several replicas of one deployment can be judged on:
/// on one host its scenarios skip, so each variant also runs as a cluster.
const CLUSTER: &str = "cluster";
const CLUSTER_REPLICAS: usize = 3;
/// Cluster runs at once: each holds three replicas' pools on one PostgreSQL.
const DEFAULT_CLUSTER_JOBS: usize = 3;
/// The skip reason every `cluster` scenario has on one host that lacks
/// nothing else: the run named one endpoint.
const NEEDS_ENDPOINTS: &str = "needs-endpoints";

/// The `cluster` profile against `variant`: on one in-memory host, to learn
/// why each scenario skips there, and on three replicas on a fresh schema
/// of `server`, where nothing but the variant's own choices may keep a
/// scenario from running.
fn run_cluster(server: &str, variant: Variant) -> Result<(Run, Run), String> {
    let only_cluster = |run: &mut goalpost::RunConfig| {
        run.profiles = Some(BTreeSet::from([CLUSTER.to_string()]));
    };
    let callback = common::callback_listen()?;
    let config = variant.apply(common::host_config(SECRET, callback)?);
    let one = common::run_suite(
        config,
        SECRET,
        callback,
        "variant-cluster-host",
        only_cluster,
    )?;
    // `cv_<variant>_<random>`: a schema left behind names the cluster
    // variant run that made it.
    let replicas = common::postgres::run_on_replicas(
        server,
        &format!("cv_{}", variant.name()),
        CLUSTER_REPLICAS,
        SECRET,
        "variant-cluster",
        |config| variant.apply(config).into(),
        only_cluster,
    )?;
    Ok((Run::of(one), Run::of(replicas)))
}

/// Everything wrong with `variant` as a cluster: a `cluster` requirement
/// that ended otherwise than `clusterSkips` says (skip with that reason, or
/// pass), a scenario that skipped on replicas for any reason but the one
/// it has on one host (what the variant does not advertise or serve), and
/// a cluster profile not certified that `certifies` names.
fn cluster_problems(expected: &Expectation, one: &Run, replicas: &Run) -> Vec<String> {
    let name = &expected.name;
    let mut found = Vec::new();
    for (id, (profile, _)) in requirements() {
        if profile != CLUSTER {
            continue;
        }
        let Some(ended) = replicas.requirements.get(&id) else {
            found.push(format!("{name}: {id} was not disposed on replicas"));
            continue;
        };
        let wrong = match expected.cluster_skips.get(&id) {
            // The variant does not advertise what the requirement is about.
            Some(reason) if reason == "not-applicable" && ended.disposition == "not-applicable" => {
                continue
            }
            Some(reason) if reason == "not-applicable" => {
                "not `not-applicable` as clusterSkips declares".to_string()
            }
            Some(reason) if ended.disposition != "skip" || ended.why != *reason => {
                format!("not `skip` ({reason}) as clusterSkips declares")
            }
            None if ended.disposition != "pass" => format!(
                "yet the variant's choice is legal ({})",
                expected.allowed_by
            ),
            _ => continue,
        };
        found.push(format!(
            "{name}: {id} is `{}` on replicas, {wrong}: {}",
            ended.disposition, ended.why
        ));
    }
    for (scenario, (outcome, reason)) in &replicas.scenarios {
        let Some(reason) = reason.as_deref().filter(|_| outcome == "skip") else {
            continue;
        };
        let alone = one
            .scenarios
            .get(scenario)
            .and_then(|(_, reason)| reason.as_deref());
        if reason == NEEDS_ENDPOINTS || alone != Some(reason) {
            found.push(format!(
                "{name}: {scenario} skips `{reason}` on replicas but `{}` on one host: only what the variant does not advertise or serve may keep a cluster scenario from running",
                alone.unwrap_or("(it runs)")
            ));
        }
    }
    let certified = replicas.certified.get(CLUSTER).copied().unwrap_or(false);
    if expected.certifies.contains(CLUSTER) && !certified {
        found.push(format!(
            "{name}: `{CLUSTER}` is not certified on replicas, yet variants.json says it must be"
        ));
    }
    // What a cluster certification covers, as for every other profile.
    if let (true, Some(verdict)) = (certified, replicas.verdicts.get(CLUSTER)) {
        let scope = verdict.scope.to_string();
        if expected.scope.get(CLUSTER) != Some(&scope) {
            found.push(format!(
                "{name}: `{CLUSTER}` is certified on replicas for the scope `{scope}`, variants.json says `{}`",
                expected.scope.get(CLUSTER).map_or("nothing", String::as_str)
            ));
        }
    }
    found
}

fn cluster_verdict(expected: &Expectation, run: &Result<(Run, Run), String>) -> Vec<String> {
    match run {
        Ok((one, replicas)) => cluster_problems(expected, one, replicas),
        Err(error) => vec![format!("{} as a cluster: {error}", expected.name)],
    }
}

/// `id: disposition` for each `cluster` requirement of a replicas run, for
/// the log: what was measured, not only whether it matched.
fn cluster_summary(run: &Result<(Run, Run), String>) -> String {
    let Ok((_, replicas)) = run else {
        return "did not run".to_string();
    };
    replicas
        .requirements
        .iter()
        .filter(|(_, ended)| ended.profile == CLUSTER)
        .map(|(id, ended)| match ended.disposition.as_str() {
            "skip" => format!("{id}: skip ({})", ended.why),
            other => format!("{id}: {other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn every_variant_as_a_cluster_passes_each_cluster_requirement_it_can_be_judged_on() {
    let Some(server) = goalpost_test_postgres::server(
        "the variant matrix's cluster half (each conforming variant as three replicas on PostgreSQL)",
    ) else {
        return;
    };
    let started = Instant::now();
    let jobs = common::jobs("GOALPOST_VARIANT_CLUSTER_JOBS", DEFAULT_CLUSTER_JOBS);
    let mut results = common::in_parallel(paired(), jobs, |(variant, expected)| {
        let began = Instant::now();
        let run = run_cluster(&server, variant);
        (variant, expected, run, began.elapsed())
    });
    results.sort_by_key(|(variant, _, _, _)| *variant);
    let mut suspects = Vec::new();
    for (variant, expected, run, took) in results {
        let found = cluster_verdict(&expected, &run);
        eprintln!(
            "variant-cluster: {:<32} {:>5.1} s  {}  {}",
            variant.name(),
            took.as_secs_f64(),
            if found.is_empty() { "ok" } else { "suspect" },
            cluster_summary(&run)
        );
        if !found.is_empty() {
            suspects.push((variant, expected, found));
        }
    }
    // As in the single-host half: a variant that looked wrong under the
    // load runs again with little else going on.
    let mut found = recheck("variant-cluster", suspects, |variant, expected| {
        cluster_verdict(expected, &run_cluster(&server, variant))
    });
    eprintln!(
        "variant-cluster: {} variants as {CLUSTER_REPLICAS} replicas each, {jobs} at a time, {:.1} s in all",
        REGISTRY.len(),
        started.elapsed().as_secs_f64()
    );
    found.sort();
    assert!(
        found.is_empty(),
        "the variant matrix's cluster half failed:\n{}",
        found.join("\n")
    );
}

/// A run whose `cluster` requirements and scenarios ended as given, for
/// checking [`cluster_problems`] itself.
fn cluster_run(
    requirements: &[(&str, &str, &str)],
    scenarios: &[(&str, &str, Option<&str>)],
    certified: bool,
) -> Run {
    let mut run = Run::default();
    run.certified.insert(CLUSTER.to_string(), certified);
    for (id, disposition, why) in requirements {
        run.requirements.insert(
            id.to_string(),
            Ended {
                profile: CLUSTER.to_string(),
                level: "MUST".to_string(),
                disposition: disposition.to_string(),
                why: why.to_string(),
            },
        );
    }
    for (name, outcome, reason) in scenarios {
        run.scenarios.insert(
            name.to_string(),
            (outcome.to_string(), reason.map(str::to_string)),
        );
    }
    run
}

#[test]
fn the_cluster_half_fails_a_variant_that_fails_skips_or_skips_for_another_reason() {
    let expected = |skips: &[(&str, &str)]| Expectation {
        name: "some-variant".to_string(),
        allowed_by: "PROFILE.md#x".to_string(),
        certifies: if skips.is_empty() {
            BTreeSet::from([CLUSTER.to_string()])
        } else {
            BTreeSet::new()
        },
        pins: BTreeSet::new(),
        cluster_skips: skips
            .iter()
            .map(|(id, reason)| (id.to_string(), reason.to_string()))
            .collect(),
        scope: BTreeMap::new(),
        uncertified: BTreeMap::new(),
    };
    let ids: Vec<String> = requirements()
        .into_iter()
        .filter(|(_, (profile, _))| profile == CLUSTER)
        .map(|(id, _)| id)
        .collect();
    assert!(ids.len() >= 2, "the cluster profile has requirements");
    let all = |disposition: &str, why: &str| -> Vec<(String, String, String)> {
        ids.iter()
            .map(|id| (id.clone(), disposition.to_string(), why.to_string()))
            .collect()
    };
    let run = |ended: &[(String, String, String)], scenarios, certified| {
        let ended: Vec<(&str, &str, &str)> = ended
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        cluster_run(&ended, scenarios, certified)
    };
    let one = run(
        &all("skip", NEEDS_ENDPOINTS),
        &[("cluster::a", "skip", Some(NEEDS_ENDPOINTS))],
        false,
    );
    let passing = run(&all("pass", ""), &[("cluster::a", "pass", None)], true);
    assert!(cluster_problems(&expected(&[]), &one, &passing).is_empty());
    // A failure, a skip on replicas that one host owes only to its one
    // endpoint, and a profile left uncertified are each reported.
    let mut failing = all("pass", "");
    failing[0].1 = "fail".to_string();
    let failing = run(&failing, &[("cluster::a", "pass", None)], false);
    let found = cluster_problems(&expected(&[]), &one, &failing);
    assert!(
        found
            .iter()
            .any(|f| f.contains(&format!("{} is `fail`", ids[0]))),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.contains("not certified")),
        "{found:?}"
    );
    let skipping = run(
        &all("pass", ""),
        &[("cluster::a", "skip", Some(NEEDS_ENDPOINTS))],
        true,
    );
    let found = cluster_problems(&expected(&[]), &one, &skipping);
    assert!(
        found.iter().any(|f| f.contains("cluster::a skips")),
        "{found:?}"
    );
    // A declared skip holds only with its own reason, and only when one
    // host skips the scenario for that reason too.
    let mut declared = all("pass", "");
    declared[0] = (
        ids[0].clone(),
        "skip".to_string(),
        "not-advertised".to_string(),
    );
    let declared = run(
        &declared,
        &[("cluster::a", "skip", Some("not-advertised"))],
        false,
    );
    let alone = run(
        &all("skip", NEEDS_ENDPOINTS),
        &[("cluster::a", "skip", Some("not-advertised"))],
        false,
    );
    let skips = expected(&[(&ids[0], "not-advertised")]);
    assert!(cluster_problems(&skips, &alone, &declared).is_empty());
    let found = cluster_problems(&expected(&[(&ids[0], "seam-absent")]), &alone, &declared);
    assert!(
        found.iter().any(|f| f.contains("as clusterSkips declares")),
        "{found:?}"
    );
    let found = cluster_problems(&skips, &one, &declared);
    assert!(found.iter().any(|f| f.contains("on one host")), "{found:?}");
}
