//! The variant matrix: the other half of the kill matrix. Mutants prove the
//! suite fails broken hosts; variants prove it certifies correct hosts that
//! chose differently. Each conforming variant of the reference host
//! (`goalpost_host::variants::REGISTRY`, built with the `variants` feature
//! through this crate's dev-dependency) makes one choice the profile allows;
//! `scenarios/variants.json` says which section allows it, which profiles
//! must certify it and which `strict` requirements pin the reference host's
//! own choice. For every variant, the whole suite (`strict` included) runs
//! through the same library path as `goalpost run`, and the matrix fails
//! when:
//!
//! - a profile in `certifies` is not certified: every MUST requirement of it
//!   that did not pass is named, with its disposition and message (it
//!   over-reached: it demands what the profile leaves open);
//! - a requirement in `pins` did not fail (strict no longer pins the
//!   choice, or the variant does not make it);
//! - any other `strict` requirement failed, errored or was not reached
//!   (strict pins more than the one choice); a skip is fine.
//!
//! Each host is in-process, both tenants, signing webhooks with the secret
//! the suite checks when the variant signs at all; the suite is given the
//! secret either way, as an operator who configured one would. Variants run
//! a few at a time (`GOALPOST_VARIANT_MATRIX_JOBS`, default 3); one that
//! looks wrong is run again with less going on, so a timing race lost to
//! the load is not reported as an over-reach.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use goalpost_host::variants::{Variant, REGISTRY};
use serde_json::Value;

const DEFAULT_JOBS: usize = 3;
/// Runs at once while suspects are checked again.
const RECHECK_JOBS: usize = 1;
const SECRET: &str = "goalpost-variant-matrix-secret";
const STRICT: &str = "strict";

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

/// One run of the whole suite against `variant`.
#[derive(Debug, Clone, Default)]
struct Run {
    requirements: BTreeMap<String, Ended>,
    certified: BTreeMap<String, bool>,
}

fn run_suite(variant: Variant) -> Result<Run, String> {
    let callback = common::callback_listen()?;
    let config = variant.apply(common::host_config(SECRET, callback)?);
    let report = common::run_suite(config, SECRET, callback, "variant-matrix-host", |run| {
        run.profiles = None;
        run.strict = true;
    })?;
    let mut ended = Run::default();
    for (profile, summary) in &report.profiles {
        ended.certified.insert(profile.clone(), summary.certified);
    }
    for requirement in report.requirements {
        let why = requirement
            .message
            .as_deref()
            .map(gist)
            .or(requirement.reason)
            .unwrap_or_default();
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
    Ok(ended)
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
        if run.certified.get(profile).copied().unwrap_or(false) {
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
    let rechecked = common::in_parallel(suspects, RECHECK_JOBS, |(variant, expected, first)| {
        let run = run_suite(variant);
        let again = match (verdict(&expected, &run), &run) {
            (found, Ok(run)) if found.is_empty() => published_differences(variant, run),
            (found, _) => found,
        };
        (variant, first, again)
    });
    let mut found = Vec::new();
    for (variant, first, again) in rechecked {
        if again.is_empty() {
            eprintln!(
                "variant-matrix: {variant} passes when run again: the first run lost a timing race to the load:\n  {}",
                first.join("\n  ")
            );
        }
        found.extend(again);
    }
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
