//! Judging a mutant's run, for the kill matrix (one host) and the cluster
//! kill matrix (replicas on PostgreSQL) alike: scenarios/mutants.json says
//! what each mutant breaks, and a run is measured against the clean one.

use std::collections::BTreeMap;

use goalpost::report::RunReport;
use goalpost_host_builds::mutants::Mutant;
use serde_json::Value;

/// The array `key` of scenarios/`file`.
pub fn listed(file: &str, key: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(super::scenarios().join(file)).expect(file);
    let value: Value = serde_json::from_str(&text).expect("JSON");
    value[key]
        .as_array()
        .unwrap_or_else(|| panic!("{file} has no {key} array"))
        .clone()
}

pub fn requirements() -> Vec<Value> {
    listed("requirements.json", "requirements")
}

/// Requirement id → level (`MUST`, `SHOULD`), of the requirements `keep`
/// accepts.
pub fn levels(keep: impl Fn(&Value) -> bool) -> BTreeMap<String, String> {
    requirements()
        .iter()
        .filter(|requirement| keep(requirement))
        .filter_map(|r| {
            Some((
                r["id"].as_str()?.to_string(),
                r["level"].as_str()?.to_string(),
            ))
        })
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// One mutant as scenarios/mutants.json declares it.
#[derive(Debug)]
pub struct Declared {
    pub mutant: Mutant,
    pub name: String,
    pub breaks: Vec<String>,
    pub collateral: Vec<String>,
    /// Needs a cluster of replicas on PostgreSQL (`cluster_matrix.rs`).
    pub cluster: bool,
}

impl Declared {
    /// `breaks` then `collateral`: every requirement whose disposition the
    /// mutant may change.
    pub fn kills(&self) -> impl Iterator<Item = &String> {
        self.breaks.iter().chain(&self.collateral)
    }
}

/// Every mutant of scenarios/mutants.json, in file order; each name must
/// be one the host knows.
pub fn declared() -> Vec<Declared> {
    listed("mutants.json", "mutants")
        .iter()
        .map(|entry| {
            let name = entry["name"].as_str().expect("a name").to_string();
            Declared {
                mutant: Mutant::parse(&name).unwrap_or_else(|| {
                    panic!("mutants.json names {name}, which the host does not know")
                }),
                name,
                breaks: strings(&entry["breaks"]),
                collateral: strings(&entry["collateral"]),
                cluster: entry["cluster"].as_bool().unwrap_or(false),
            }
        })
        .collect()
}

/// Whether a requirement at `level` that ended `disposition` was killed.
pub fn killed(disposition: &str, level: &str) -> bool {
    match disposition {
        "fail" | "error" => true,
        "advisory" => level == "SHOULD",
        _ => false,
    }
}

/// Requirement id → disposition, and id → the failing scenario's message.
#[derive(Debug, Clone, Default)]
pub struct Dispositions {
    pub of: BTreeMap<String, String>,
    pub messages: BTreeMap<String, String>,
}

impl Dispositions {
    /// The requirements of `report` that `keep` accepts (by profile).
    pub fn of_report(report: &RunReport, keep: impl Fn(&str) -> bool) -> Dispositions {
        let mut dispositions = Dispositions::default();
        for requirement in &report.requirements {
            if !keep(&requirement.profile) {
                continue;
            }
            if let Some(message) = &requirement.message {
                dispositions
                    .messages
                    .insert(requirement.id.clone(), message.clone());
            }
            dispositions
                .of
                .insert(requirement.id.clone(), requirement.disposition.to_string());
        }
        dispositions
    }
}

/// Everything wrong with `info`'s run, measured against `clean`: a
/// requirement it breaks that was not killed, or one it does not declare
/// that ended otherwise than on the clean run.
pub fn problems(
    info: &Declared,
    run: &Dispositions,
    clean: &Dispositions,
    levels: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut found = Vec::new();
    for id in &info.breaks {
        let level = levels.get(id).map_or("MUST", String::as_str);
        match run.of.get(id).map(String::as_str) {
            Some(disposition) if killed(disposition, level) => {}
            Some(other) => found.push(format!(
                "{}: survived: {id} ({level}) is `{other}`, so no scenario proves it can fail{}",
                info.name,
                run.messages
                    .get(id)
                    .map_or(String::new(), |message| format!(": {message}"))
            )),
            None => found.push(format!("{}: {id} was not disposed at all", info.name)),
        }
    }
    for (id, disposition) in &run.of {
        if info.kills().any(|kill| kill == id) {
            continue;
        }
        let expected = clean.of.get(id).map_or("(absent)", String::as_str);
        if disposition != expected {
            found.push(format!(
                "{}: collateral: {id} is `{disposition}` (clean run: `{expected}`) but the mutant does not declare it: {}",
                info.name,
                run.messages.get(id).map_or("", String::as_str)
            ));
        }
    }
    found
}

/// [`problems`], or why the run could not be made.
pub fn verdict(
    info: &Declared,
    run: &Result<Dispositions, String>,
    clean: &Dispositions,
    levels: &BTreeMap<String, String>,
) -> Vec<String> {
    match run {
        Ok(run) => problems(info, run, clean, levels),
        Err(error) => vec![format!("{}: {error}", info.name)],
    }
}

/// The clean build (`None`) and every mutant in `mutants`, run by `run`
/// `jobs` at a time: the clean build's result, and each mutant's with the
/// time its run took.
pub fn run_matrix<'a, R: Send>(
    mutants: impl IntoIterator<Item = &'a Declared>,
    jobs: usize,
    run: impl Fn(Option<Mutant>) -> R + Sync,
) -> (Option<R>, Vec<(&'a Declared, R, std::time::Duration)>) {
    let mut work: Vec<Option<&Declared>> = vec![None];
    work.extend(mutants.into_iter().map(Some));
    let results = crate::common::in_parallel(work, jobs, |info| {
        let began = std::time::Instant::now();
        let result = run(info.map(|info| info.mutant));
        (info, result, began.elapsed())
    });
    let mut clean = None;
    let mut runs = Vec::new();
    for (info, result, took) in results {
        match info {
            None => clean = Some(result),
            Some(info) => runs.push((info, result, took)),
        }
    }
    (clean, runs)
}
