//! The cluster kill matrix: the suite's `cluster` profile against three
//! in-process replicas of the reference host on one PostgreSQL schema
//! (each replica its own store, pool, engine and scheduler: only the
//! database is shared), every request sent to the next replica in turn, as
//! `goalpost run --host A --host B --host C` does.
//!
//! - The clean cluster must pass every `cluster` requirement and certify
//!   the profile.
//! - Every mutant scenarios/mutants.json marks `cluster` (a broken
//!   PostgreSQL store, `--mutant postgres-… --db postgres://…`) must fail
//!   each requirement it `breaks` (a SHOULD one: `advisory`), and change no
//!   other `cluster` requirement it does not declare, as in
//!   `kill_matrix.rs`.
//!
//! Each run gets a schema of its own (`cluster_<mutant>_<random>`), dropped
//! afterwards. Needs `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh`
//! prints it); without it the test prints why it did not run and passes.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use goalpost_host::mutants::Mutant;
use goalpost_host::storage::DbLocation;
use serde_json::Value;

const SECRET: &str = "goalpost-cluster-matrix-secret";
const PROFILE: &str = "cluster";
const REPLICAS: usize = 3;
/// Runs at once: each holds three replicas' pools on one PostgreSQL.
const DEFAULT_JOBS: usize = 3;

const SKIP_REASON: &str = "SKIPPED: GOALPOST_TEST_POSTGRES is not set, so the cluster kill matrix \
     (three replicas on PostgreSQL) did not run; enable it with \
     `export GOALPOST_TEST_POSTGRES=$(scripts/start-postgres.sh)` (starts PostgreSQL 15 and prints the URL)";

/// The server's URL, or `None` after printing why the test is skipped
/// (straight to stderr: the harness swallows a passing test's `eprintln!`).
fn server() -> Option<String> {
    match std::env::var("GOALPOST_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{SKIP_REASON}");
            None
        }
    }
}

fn listed(file: &str, key: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(common::scenarios().join(file)).expect(file);
    let value: Value = serde_json::from_str(&text).expect("JSON");
    value[key].as_array().expect(key).clone()
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

/// One mutant scenarios/mutants.json marks `cluster`.
#[derive(Debug)]
struct Declared {
    mutant: Mutant,
    name: String,
    breaks: Vec<String>,
    collateral: Vec<String>,
}

fn declared() -> Vec<Declared> {
    listed("mutants.json", "mutants")
        .iter()
        .filter(|entry| entry["cluster"].as_bool() == Some(true))
        .map(|entry| {
            let name = entry["name"].as_str().expect("a name").to_string();
            Declared {
                mutant: Mutant::parse(&name)
                    .unwrap_or_else(|| panic!("mutants.json names unknown mutant {name}")),
                name,
                breaks: strings(&entry["breaks"]),
                collateral: strings(&entry["collateral"]),
            }
        })
        .collect()
}

/// Requirement id → level, for the `cluster` profile.
fn levels() -> BTreeMap<String, String> {
    listed("requirements.json", "requirements")
        .iter()
        .filter(|r| r["profile"] == PROFILE)
        .filter_map(|r| {
            Some((
                r["id"].as_str()?.to_string(),
                r["level"].as_str()?.to_string(),
            ))
        })
        .collect()
}

#[derive(Debug, Clone, Default)]
struct Dispositions {
    of: BTreeMap<String, String>,
    messages: BTreeMap<String, String>,
    certified: bool,
    /// The scenarios that failed or errored, with their outcome.
    failed: Vec<String>,
}

/// A schema made for one run, on the server of `GOALPOST_TEST_POSTGRES`.
struct Schema {
    name: String,
    url: String,
    server: String,
}

async fn execute(url: &str, sql: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|error| format!("cannot reach GOALPOST_TEST_POSTGRES: {error}"))?;
    let connection = tokio::spawn(connection);
    let result = client
        .batch_execute(sql)
        .await
        .map_err(|error| format!("{sql}: {error}"));
    drop(client);
    let _ = connection.await;
    result
}

impl Schema {
    fn fresh(
        runtime: &tokio::runtime::Runtime,
        server: &str,
        label: &str,
    ) -> Result<Schema, String> {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("cluster_{}_{}", label.replace('-', "_"), &random[..12]);
        runtime.block_on(execute(server, &format!("CREATE SCHEMA {name}")))?;
        let separator = if server.contains('?') { '&' } else { '?' };
        Ok(Schema {
            url: format!("{server}{separator}options=-c%20search_path%3D{name}"),
            name,
            server: server.to_string(),
        })
    }

    fn drop(self, runtime: &tokio::runtime::Runtime) {
        let dropped = runtime.block_on(execute(
            &self.server,
            &format!("DROP SCHEMA {} CASCADE", self.name),
        ));
        if let Err(error) = dropped {
            eprintln!("cluster-matrix: schema {} left behind: {error}", self.name);
        }
    }
}

/// The `cluster` profile against three replicas running `mutant` (`None`:
/// the clean host) on a fresh schema.
fn run_cluster(server: &str, mutant: Option<Mutant>) -> Result<Dispositions, String> {
    let label = mutant.map_or("clean", Mutant::name);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let schema = Schema::fresh(&runtime, server, label)?;
    let callback = common::callback_listen()?;
    let configs = (0..REPLICAS)
        .map(|_| {
            let mut config = common::host_config(SECRET, callback)?;
            config.db = DbLocation::Postgres(schema.url.clone());
            config.mutants.mutant = mutant;
            Ok(config)
        })
        .collect::<Result<Vec<_>, String>>();
    let report = configs.and_then(|configs| {
        common::run_suite_on(configs, SECRET, callback, "cluster-matrix", |run| {
            run.profiles = Some(BTreeSet::from([PROFILE.to_string()]));
        })
    });
    schema.drop(&runtime);
    let report = report?;
    let mut dispositions = Dispositions {
        certified: report.profiles.get(PROFILE).is_some_and(|p| p.certified),
        ..Dispositions::default()
    };
    for scenario in &report.scenarios {
        if scenario.outcome.is_failure() {
            // Which step: the message's first line names it.
            let step = scenario
                .message
                .as_deref()
                .and_then(|message| message.lines().next())
                .and_then(|line| line.split_once(" step "))
                .map_or(String::new(), |(_, step)| format!(" at step {step}"));
            dispositions
                .failed
                .push(format!("{} ({}){step}", scenario.name, scenario.outcome));
        }
    }
    for requirement in report.requirements {
        if requirement.profile != PROFILE {
            continue;
        }
        if let Some(message) = requirement.message {
            dispositions
                .messages
                .insert(requirement.id.clone(), message);
        }
        dispositions
            .of
            .insert(requirement.id, requirement.disposition.to_string());
    }
    Ok(dispositions)
}

fn killed(disposition: &str, level: &str) -> bool {
    match disposition {
        "fail" | "error" => true,
        "advisory" => level == "SHOULD",
        _ => false,
    }
}

/// Everything wrong with `mutant`'s run, measured against `clean`.
fn problems(
    info: &Declared,
    run: &Result<Dispositions, String>,
    clean: &Dispositions,
    levels: &BTreeMap<String, String>,
) -> Vec<String> {
    let run = match run {
        Ok(run) => run,
        Err(error) => return vec![format!("{}: {error}", info.name)],
    };
    let mut found = Vec::new();
    for id in &info.breaks {
        let level = levels.get(id).map_or("MUST", String::as_str);
        match run.of.get(id).map(String::as_str) {
            Some(disposition) if killed(disposition, level) => {}
            other => found.push(format!(
                "{}: survived: {id} ({level}) is `{}`{}",
                info.name,
                other.unwrap_or("(absent)"),
                run.messages
                    .get(id)
                    .map_or(String::new(), |message| format!(": {message}"))
            )),
        }
    }
    for (id, disposition) in &run.of {
        if info.breaks.contains(id) || info.collateral.contains(id) {
            continue;
        }
        let expected = clean.of.get(id).map_or("(absent)", String::as_str);
        if disposition != expected {
            found.push(format!(
                "{}: collateral: {id} is `{disposition}` (clean cluster: `{expected}`) but the mutant does not declare it: {}",
                info.name,
                run.messages.get(id).map_or("", String::as_str)
            ));
        }
    }
    found
}

#[test]
fn cluster_mutants_are_postgres_mutants_and_cover_every_cluster_must() {
    let declared = declared();
    let levels = levels();
    assert!(!levels.is_empty(), "the {PROFILE} profile has requirements");
    let mut found = Vec::new();
    for info in &declared {
        if !info.mutant.needs_postgres() {
            found.push(format!(
                "{} is marked cluster but does not break the PostgreSQL store",
                info.name
            ));
        }
        for id in info.breaks.iter().chain(&info.collateral) {
            if !levels.contains_key(id) {
                found.push(format!(
                    "{} declares {id}, which is not a {PROFILE} requirement (this matrix runs only {PROFILE})",
                    info.name
                ));
            }
        }
    }
    for known in goalpost_host::mutants::REGISTRY {
        if known.mutant.needs_postgres() && !declared.iter().any(|info| info.mutant == known.mutant)
        {
            found.push(format!(
                "{} is not marked cluster in mutants.json",
                known.name
            ));
        }
    }
    for (id, level) in &levels {
        if level == "MUST" && !declared.iter().any(|info| info.breaks.contains(id)) {
            found.push(format!("{id} is a MUST no cluster mutant breaks"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The `cluster` dispositions of the published cluster run.
fn published_cluster() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/cluster/report.json");
    let text = std::fs::read_to_string(&path).expect("reports/cluster/report.json is committed");
    let report: Value = serde_json::from_str(&text).expect("report.json is JSON");
    report["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .filter(|r| r["profile"] == PROFILE)
        .filter_map(|r| {
            Some((
                r["id"].as_str()?.to_string(),
                r["disposition"].as_str()?.to_string(),
            ))
        })
        .collect()
}

#[test]
fn a_clean_cluster_certifies_and_every_postgres_mutant_is_killed() {
    let Some(server) = server() else { return };
    let started = Instant::now();
    let levels = levels();
    let declared = declared();
    let mut work: Vec<Option<&Declared>> = vec![None];
    work.extend(declared.iter().map(Some));
    let jobs = common::jobs("GOALPOST_CLUSTER_MATRIX_JOBS", DEFAULT_JOBS);
    let results = common::in_parallel(work, jobs, |info| {
        let began = Instant::now();
        let run = run_cluster(&server, info.map(|info| info.mutant));
        (info, run, began.elapsed())
    });
    let mut clean = None;
    let mut runs = Vec::new();
    for (info, run, took) in results {
        match info {
            None => clean = Some(run),
            Some(info) => runs.push((info, run, took)),
        }
    }
    let mut clean = clean
        .expect("the clean cluster ran")
        .unwrap_or_else(|error| panic!("the clean cluster's run failed: {error}"));
    if !clean.certified {
        eprintln!("cluster-matrix: the clean cluster missed a requirement under load; running it again alone");
        clean = run_cluster(&server, None)
            .unwrap_or_else(|error| panic!("the clean cluster's run failed: {error}"));
    }
    let unclean: Vec<String> = clean
        .of
        .iter()
        .filter(|(_, disposition)| *disposition != "pass")
        .map(|(id, disposition)| {
            format!(
                "{id}: {disposition} {}",
                clean.messages.get(id).map_or("", String::as_str)
            )
        })
        .collect();
    assert!(
        unclean.is_empty() && clean.certified && clean.of.len() == levels.len(),
        "three clean replicas must pass every {PROFILE} requirement and certify it:\n{}",
        unclean.join("\n")
    );
    // The published cluster run (reports/cluster) must say what a fresh
    // clean cluster says, requirement by requirement.
    let published = published_cluster();
    assert_eq!(
        published, clean.of,
        "reports/cluster is stale: regenerate it with `OUT=reports/cluster scripts/certify-cluster.sh` (release binaries)"
    );
    runs.sort_by_key(|(info, _, _)| info.mutant);
    let mut found = Vec::new();
    for (info, run, took) in &runs {
        let mut wrong = problems(info, run, &clean, &levels);
        if !wrong.is_empty() {
            // Lost to the load of the runs beside it? Once more, alone.
            eprintln!(
                "cluster-matrix: {} again, alone, after:\n  {}",
                info.name,
                wrong.join("\n  ")
            );
            wrong = problems(
                info,
                &run_cluster(&server, Some(info.mutant)),
                &clean,
                &levels,
            );
        }
        eprintln!(
            "cluster-matrix: {:<36} {:>5.1} s  {}",
            info.name,
            took.as_secs_f64(),
            if wrong.is_empty() {
                "killed"
            } else {
                "NOT killed"
            }
        );
        // The evidence: how each requirement it breaks ended, and why.
        if let Ok(run) = run {
            for failed in &run.failed {
                eprintln!("cluster-matrix:   failed scenario {failed}");
            }
            for id in &info.breaks {
                let why = run.messages.get(id).map_or("", String::as_str);
                eprintln!(
                    "cluster-matrix:   {id}: {} {}",
                    run.of.get(id).map_or("(absent)", String::as_str),
                    why.lines().next().unwrap_or_default()
                );
            }
        }
        found.extend(wrong);
    }
    eprintln!(
        "cluster-matrix: clean cluster certified {PROFILE}; {} mutants, {:.1} s in all",
        runs.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        found.is_empty(),
        "the cluster kill matrix failed:\n{}",
        found.join("\n")
    );
}
