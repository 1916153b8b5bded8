//! The kill matrix (issue 4): the whole suite against every mutant of the
//! reference host (`goalpost_host::mutants::REGISTRY`, built with the
//! `mutants` feature through this crate's dev-dependency), through the same
//! library path as `goalpost run`. For every mutant:
//!
//! - every requirement whose own rule it breaks (`breaks`) must be killed:
//!   end `fail` or `error`, or `advisory` when it is SHOULD (a SHOULD
//!   requirement never fails). `not-reached` is no kill: the requirement's
//!   own checks never ran. A mutant that survives names the requirement its
//!   scenarios left unproven;
//! - a requirement it fails only as `collateral` may end anything;
//! - every other requirement of the profiles run must keep the disposition
//!   it has against the clean host, so a declaration can hide no collateral.
//!
//! And every MUST requirement must be declared by at least one mutant.
//!
//! Each host is in-process, seams on, both tenants, signing webhooks with
//! the secret the suite checks (as the bundled host does). Mutants run
//! several at a time (`GOALPOST_KILL_MATRIX_JOBS`, default 6): they spend
//! their time waiting on polls and quiet periods, not on the CPU. Every run
//! is the whole suite, `strict` included.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use goalpost::bundled::{DEFAULT_TOKEN_A, DEFAULT_TOKEN_B, TENANT_A, TENANT_B};
use goalpost::{HostChoice, RunConfig};
use goalpost_host::mutants::{Mutant, MutantInfo, REGISTRY};
use serde_json::Value;

const DEFAULT_JOBS: usize = 6;
const SECRET: &str = "goalpost-kill-matrix-secret";

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

fn requirements() -> Vec<Value> {
    let path = scenarios().join("requirements.json");
    let text = std::fs::read_to_string(&path).expect("requirements.json");
    let value: Value = serde_json::from_str(&text).expect("requirements.json is JSON");
    value["requirements"]
        .as_array()
        .expect("a requirements array")
        .clone()
}

/// Requirement id → level (`MUST`, `SHOULD`).
fn levels() -> BTreeMap<String, String> {
    requirements()
        .iter()
        .filter_map(|r| {
            Some((
                r["id"].as_str()?.to_string(),
                r["level"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Whether a requirement at `level` that ended `disposition` was killed.
fn killed(disposition: &str, level: &str) -> bool {
    match disposition {
        "fail" | "error" => true,
        "advisory" => level == "SHOULD",
        _ => false,
    }
}

/// Requirement id → disposition, and id → the failing scenario's message.
#[derive(Debug, Clone, Default)]
struct Dispositions {
    of: BTreeMap<String, String>,
    messages: BTreeMap<String, String>,
}

/// A free port on 127.0.0.1 for the suite's callback, chosen before the
/// host starts so the host may call that port and no other loopback one
/// (as `goalpost`'s bundled host does). The probe socket is closed at
/// once; the mock binds the port moments later.
fn callback_listen() -> Result<std::net::SocketAddr, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|probe| probe.local_addr())
        .map_err(|error| format!("cannot find a callback port: {error}"))
}

/// One run of the suite against a host running `mutant` (`None`: the clean
/// host), on `profiles`.
fn run_suite(mutant: Option<Mutant>, profiles: &BTreeSet<String>) -> Result<Dispositions, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("kill-matrix-host")
        .build()
        .map_err(|error| format!("cannot start a runtime: {error}"))?;
    let mut config = goalpost_host::Config::conformance_in_memory(vec![
        (DEFAULT_TOKEN_A.to_string(), TENANT_A.to_string()),
        (DEFAULT_TOKEN_B.to_string(), TENANT_B.to_string()),
    ]);
    config.webhook_secret = Some(SECRET.to_string());
    let callback = callback_listen()?;
    config.webhook_allow = vec![goalpost_host::domain::egress::AllowEntry::parse(
        &callback.to_string(),
    )?];
    config.mutant = mutant;
    let host = runtime
        .block_on(goalpost_host::RunningHost::start(config))
        .map_err(|error| format!("cannot start the host: {error}"))?;
    let reports = tempfile::tempdir().map_err(|error| error.to_string())?;
    let harness = {
        use clap::Parser;
        libtest_mimic::Arguments::try_parse_from(["goalpost"]).map_err(|error| error.to_string())?
    };
    let mut run = RunConfig::bundled(scenarios(), reports.path().to_path_buf(), harness);
    run.host = HostChoice::Remote(host.base_url());
    run.token_a = DEFAULT_TOKEN_A.to_string();
    run.token_b = Some(DEFAULT_TOKEN_B.to_string());
    run.callback.secret = Some(SECRET.to_string());
    run.callback.listen = Some(callback);
    run.profiles = Some(profiles.clone());
    run.harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    let outcome = goalpost::run(run);
    runtime.block_on(host.shutdown());
    let outcome = outcome.map_err(|error| format!("the run did not start: {error}"))?;
    let report = outcome.report.ok_or("the run wrote no report")?;
    let mut dispositions = Dispositions::default();
    for requirement in report.requirements {
        if let Some(message) = requirement.message {
            dispositions
                .messages
                .insert(requirement.id.clone(), message);
        }
        dispositions
            .of
            .insert(requirement.id, requirement.disposition);
    }
    Ok(dispositions)
}

/// Every profile with requirements, `strict` included: each run is the
/// whole suite, so a mutant's collateral cannot hide in a profile it was
/// not run on.
fn all_profiles() -> BTreeSet<String> {
    requirements()
        .iter()
        .filter_map(|requirement| requirement["profile"].as_str())
        .map(str::to_string)
        .collect()
}

/// Everything wrong with `mutant`'s run, measured against `clean`.
fn problems(
    info: &MutantInfo,
    run: &Dispositions,
    clean: &Dispositions,
    levels: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut found = Vec::new();
    for id in info.breaks {
        let level = levels.get(*id).map_or("MUST", String::as_str);
        match run.of.get(*id).map(String::as_str) {
            Some(disposition) if killed(disposition, level) => {}
            Some(other) => found.push(format!(
                "{}: survived: {id} ({level}) is `{other}`, so no scenario proves it can fail{}",
                info.name,
                run.messages
                    .get(*id)
                    .map_or(String::new(), |message| format!(": {message}"))
            )),
            None => found.push(format!("{}: {id} was not disposed at all", info.name)),
        }
    }
    for (id, disposition) in &run.of {
        if info.kills.contains(&id.as_str()) {
            continue;
        }
        let expected = clean.of.get(id).map_or("(absent)", String::as_str);
        if disposition != expected {
            found.push(format!(
                "{}: collateral: {id} is `{disposition}` (clean host: `{expected}`) but the mutant does not declare it: {}",
                info.name,
                run.messages.get(id).map_or("", String::as_str)
            ));
        }
    }
    found
}

/// `GOALPOST_KILL_MATRIX_ONLY=name,name`: run only these mutants (and the
/// clean host), for checking a few new ones without the whole matrix.
fn selected(info: &MutantInfo) -> bool {
    match std::env::var("GOALPOST_KILL_MATRIX_ONLY") {
        Ok(names) if !names.trim().is_empty() => {
            names.split(',').any(|name| name.trim() == info.name)
        }
        _ => true,
    }
}

fn jobs() -> usize {
    std::env::var("GOALPOST_KILL_MATRIX_JOBS")
        .ok()
        .and_then(|text| text.parse().ok())
        .filter(|jobs| *jobs >= 1)
        .unwrap_or(DEFAULT_JOBS)
}

/// Runs `work` on `jobs` threads, each taking the next item.
fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    jobs: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let queue = Mutex::new(items.into_iter().collect::<VecDeque<T>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some(item) = next else { break };
                let result = work(item);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(result);
            });
        }
    });
    results.into_inner().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn every_must_requirement_has_a_mutant_and_every_kill_names_a_requirement() {
    let requirements = requirements();
    let known: BTreeSet<&str> = requirements
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    let mut problems = Vec::new();
    for info in REGISTRY {
        for id in info.kills {
            if !known.contains(id) {
                problems.push(format!("{} declares unknown requirement {id}", info.name));
            }
        }
        for id in info.breaks.iter().chain(info.collateral) {
            if !info.kills.contains(id) {
                problems.push(format!("{}: {id} is not in its kills", info.name));
            }
        }
    }
    for requirement in &requirements {
        let id = requirement["id"].as_str().unwrap_or_default();
        if requirement["level"] == "MUST" && goalpost_host::mutants::killing(id).is_empty() {
            problems.push(format!("{id} is a MUST that no mutant proves can fail"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What `run` got wrong, or why it could not run.
fn verdict(
    info: &MutantInfo,
    run: &Result<Dispositions, String>,
    clean: &Dispositions,
    levels: &BTreeMap<String, String>,
) -> Vec<String> {
    match run {
        Ok(run) => problems(info, run, clean, levels),
        Err(error) => vec![format!("{}: {error}", info.name)],
    }
}

fn not_passing(clean: &Dispositions) -> Vec<String> {
    clean
        .of
        .iter()
        .filter(|(_, disposition)| *disposition != "pass")
        .map(|(id, disposition)| {
            format!(
                "{id}: {disposition} {}",
                clean.messages.get(id).map_or("", String::as_str)
            )
        })
        .collect()
}

/// Runs at once while the matrix is re-checking: few, so timing-sensitive
/// scenarios (deadlines within 1 s, 100 ms grace) run as on a quiet host.
const RECHECK_JOBS: usize = 2;

#[test]
fn every_mutant_is_killed_and_changes_nothing_it_does_not_declare() {
    let started = Instant::now();
    let profiles = all_profiles();
    let levels = levels();
    // The clean host first, in the same pool: it is the yardstick.
    let mut work: Vec<Option<&'static MutantInfo>> = vec![None];
    work.extend(REGISTRY.iter().filter(|info| selected(info)).map(Some));
    let jobs = jobs();
    let results = in_parallel(work, jobs, |info| {
        let began = Instant::now();
        let run = run_suite(info.map(|info| info.mutant), &profiles);
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
        .unwrap_or_else(|| Err("the clean host did not run".into()))
        .unwrap_or_else(|error| panic!("the clean host's run failed: {error}"));
    // A deadline scenario that lost a race against the load of the whole
    // matrix must not count against every mutant: check the clean host
    // again alone before anything is compared with it.
    if !not_passing(&clean).is_empty() {
        eprintln!(
            "kill-matrix: the clean host missed a requirement under load; running it again alone"
        );
        clean = run_suite(None, &profiles)
            .unwrap_or_else(|error| panic!("the clean host's run failed: {error}"));
    }
    let unclean = not_passing(&clean);
    assert!(
        unclean.is_empty(),
        "the clean host must pass every requirement:\n{}",
        unclean.join("\n")
    );
    runs.sort_by_key(|(info, _, _)| info.mutant);
    let mut suspects = Vec::new();
    for (info, run, took) in &runs {
        eprintln!(
            "kill-matrix: {:<36} {:>6.1} s  kills {}",
            info.name,
            took.as_secs_f64(),
            info.kills.len()
        );
        let found = verdict(info, run, &clean, &levels);
        if !found.is_empty() {
            suspects.push((*info, found));
        }
    }
    // A mutant that looked wrong under the matrix's load is run again with
    // little else going on; what it gets wrong then is what it gets wrong.
    for (info, first) in &suspects {
        eprintln!(
            "kill-matrix: {} again, alone-ish, after:\n  {}",
            info.name,
            first.join("\n  ")
        );
    }
    let rechecked = in_parallel(suspects, RECHECK_JOBS, |(info, first)| {
        let run = run_suite(Some(info.mutant), &profiles);
        (info, first, verdict(info, &run, &clean, &levels))
    });
    let mut found = Vec::new();
    for (info, first, again) in rechecked {
        if again.is_empty() {
            eprintln!("kill-matrix: {} passes when run again: the first run lost a timing race to the load", info.name);
        }
        found.extend(again);
        let _ = first;
    }
    let slowest = runs
        .iter()
        .map(|(_, _, took)| *took)
        .max()
        .unwrap_or(Duration::ZERO);
    eprintln!(
        "kill-matrix: {} mutants, {} at a time, {:.1} s in all (slowest run {:.1} s)",
        runs.len(),
        jobs,
        started.elapsed().as_secs_f64(),
        slowest.as_secs_f64()
    );
    found.sort();
    assert!(
        found.is_empty(),
        "the kill matrix failed:\n{}",
        found.join("\n")
    );
}

#[test]
fn kills_follow_levels_and_not_reached_is_no_kill() {
    assert!(killed("fail", "MUST"));
    assert!(killed("error", "MUST"));
    assert!(killed("advisory", "SHOULD"));
    assert!(!killed("advisory", "MUST"));
    assert!(!killed("not-reached", "MUST"));
    assert!(!killed("not-reached", "SHOULD"));
    assert!(!killed("pass", "SHOULD"));
    assert!(!killed("skip", "MUST"));
}
