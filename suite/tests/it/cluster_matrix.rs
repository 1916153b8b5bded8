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

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use common::kills::{run_matrix, verdict, Declared, Dispositions};
use goalpost_host_builds::mutants::{Mutant, Selection};
use serde_json::Value;

const SECRET: &str = "goalpost-cluster-matrix-secret";
const PROFILE: &str = "cluster";
const REPLICAS: usize = 3;
/// Runs at once: each holds three replicas' pools on one PostgreSQL.
const DEFAULT_JOBS: usize = 3;

/// The mutants scenarios/mutants.json marks `cluster`.
fn declared() -> Vec<Declared> {
    common::kills::declared()
        .into_iter()
        .filter(|info| info.cluster)
        .collect()
}

/// Requirement id → level, for the `cluster` profile.
fn levels() -> BTreeMap<String, String> {
    common::kills::levels(|requirement| requirement["profile"] == PROFILE)
}

/// One run of the `cluster` profile against the replicas.
#[derive(Debug, Clone, Default)]
struct ClusterRun {
    dispositions: Dispositions,
    certified: bool,
    /// The scenarios that failed or errored, with their outcome.
    failed: Vec<String>,
}

/// The `cluster` profile against three replicas running `mutant` (`None`:
/// the clean host) on a fresh schema.
fn run_cluster(server: &str, mutant: Option<Mutant>) -> Result<ClusterRun, String> {
    let label = format!("cluster_{}", mutant.map_or("clean", Mutant::name));
    let report = common::postgres::run_on_replicas(
        server,
        &label,
        REPLICAS,
        SECRET,
        "cluster-matrix",
        |config| common::Hosted {
            config,
            mutant: Selection::of(mutant),
        },
        |run| run.profiles = Some(BTreeSet::from([PROFILE.to_string()])),
    )?;
    let mut failed = Vec::new();
    for scenario in &report.scenarios {
        if scenario.outcome.is_failure() {
            // Which step: the message's first line names it.
            let step = scenario
                .message
                .as_deref()
                .and_then(|message| message.lines().next())
                .and_then(|line| line.split_once(" step "))
                .map_or(String::new(), |(_, step)| format!(" at step {step}"));
            failed.push(format!("{} ({}){step}", scenario.name, scenario.outcome));
        }
    }
    Ok(ClusterRun {
        dispositions: Dispositions::of_report(&report, |profile| profile == PROFILE),
        certified: report.profiles.get(PROFILE).is_some_and(|p| p.certified),
        failed,
    })
}

/// Everything wrong with `info`'s run, measured against the clean cluster.
fn problems(
    info: &Declared,
    run: &Result<ClusterRun, String>,
    clean: &Dispositions,
    levels: &BTreeMap<String, String>,
) -> Vec<String> {
    let run = run.as_ref().map(|run| run.dispositions.clone());
    verdict(info, &run.map_err(Clone::clone), clean, levels)
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
    for known in goalpost_host_builds::mutants::REGISTRY {
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
    let Some(server) =
        goalpost_test_postgres::server("the cluster kill matrix (three replicas on PostgreSQL)")
    else {
        return;
    };
    let started = Instant::now();
    let levels = levels();
    let declared = declared();
    let jobs = common::jobs("GOALPOST_CLUSTER_MATRIX_JOBS", DEFAULT_JOBS);
    let (clean, mut runs) = run_matrix(&declared, jobs, |mutant| run_cluster(&server, mutant));
    let mut clean = clean
        .expect("the clean cluster ran")
        .unwrap_or_else(|error| panic!("the clean cluster's run failed: {error}"));
    if !clean.certified {
        eprintln!("cluster-matrix: the clean cluster missed a requirement under load; running it again alone");
        clean = run_cluster(&server, None)
            .unwrap_or_else(|error| panic!("the clean cluster's run failed: {error}"));
    }
    let clean_run = clean;
    let clean = clean_run.dispositions;
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
        unclean.is_empty() && clean_run.certified && clean.of.len() == levels.len(),
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
                let why = run.dispositions.messages.get(id).map_or("", String::as_str);
                eprintln!(
                    "cluster-matrix:   {id}: {} {}",
                    run.dispositions
                        .of
                        .get(id)
                        .map_or("(absent)", String::as_str),
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
