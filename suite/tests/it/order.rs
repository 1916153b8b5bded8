//! Results must not depend on how the suite is scheduled: the whole suite
//! against the reference host serially, in parallel and shuffled gives the
//! same disposition for every requirement, and two runs against one
//! long-lived host agree (a run leaves nothing behind that changes the
//! next).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goalpost::shuffle::TrialOrder;
use goalpost::{HostChoice, RunConfig};
use goalpost_schemas::Schemas;
use serde_json::Value;

/// The order the shuffled run replays; any seed would do, a fixed one makes
/// a failure reproducible with `goalpost run --seed`.
const SEED: u64 = 20_260_613;

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

fn harness(args: &[&str]) -> libtest_mimic::Arguments {
    use clap::Parser;
    let mut argv = vec!["goalpost"];
    argv.extend_from_slice(args);
    libtest_mimic::Arguments::try_parse_from(argv).expect("harness arguments")
}

/// Requirement id → disposition (with the skip reason, if any).
type Dispositions = BTreeMap<String, String>;

/// A run's dispositions, read back from the report.json it wrote (checked
/// against the report schema), and the report itself.
fn run(mut config: RunConfig, reports: &Path) -> (Dispositions, Value) {
    // The inner harness's own "test result:" lines would read as this
    // binary's; keep them in a file.
    config.harness.logfile = Some(reports.join("harness.log").to_string_lossy().into_owned());
    let outcome = goalpost::run(config).expect("the run starts");
    assert!(outcome.report.is_some(), "the run wrote no report");
    let text = std::fs::read_to_string(reports.join("report.json")).expect("report.json");
    let report: Value = serde_json::from_str(&text).expect("report.json is JSON");
    if let Err(violations) = Schemas::embedded()
        .expect("schemas")
        .validate("report", &report)
    {
        panic!("report.json violates its schema: {violations:?}");
    }
    let dispositions = report["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .map(|requirement| {
            let mut disposition = requirement["disposition"]
                .as_str()
                .unwrap_or("?")
                .to_string();
            if let Some(reason) = requirement["reason"].as_str() {
                disposition.push_str(&format!(" ({reason})"));
            }
            let id = requirement["id"].as_str().unwrap_or("?").to_string();
            (id, disposition)
        })
        .collect();
    (dispositions, report)
}

fn bundled(args: &[&str], order: TrialOrder, reports: &Path) -> (Dispositions, Value) {
    let mut config = RunConfig::bundled(scenarios(), reports.to_path_buf(), harness(args));
    config.order = order;
    run(config, reports)
}

/// Every requirement whose disposition differs, with the scenario messages
/// that explain it.
fn differences(
    (left_name, left, left_report): (&str, &Dispositions, &Value),
    (right_name, right, right_report): (&str, &Dispositions, &Value),
) -> Vec<String> {
    let messages = |report: &Value, id: &str| -> String {
        report["requirements"]
            .as_array()
            .and_then(|all| all.iter().find(|r| r["id"] == id))
            .and_then(|r| r["message"].as_str())
            .unwrap_or("")
            .to_string()
    };
    let ids: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    ids.into_iter()
        .filter(|id| left.get(*id) != right.get(*id))
        .map(|id| {
            format!(
                "{id}: {left_name} {} / {right_name} {}\n  {left_name}: {}\n  {right_name}: {}",
                left.get(id).map_or("(absent)", String::as_str),
                right.get(id).map_or("(absent)", String::as_str),
                messages(left_report, id),
                messages(right_report, id),
            )
        })
        .collect()
}

fn assert_same(runs: &[(&str, &Dispositions, &Value)]) {
    let (first, rest) = runs.split_first().expect("at least one run");
    assert!(!first.1.is_empty(), "{} disposed no requirement", first.0);
    let mut problems = Vec::new();
    for other in rest {
        problems.extend(differences(*first, *other));
    }
    assert!(
        problems.is_empty(),
        "dispositions depend on scheduling:\n{}",
        problems.join("\n")
    );
}

#[test]
fn serial_parallel_and_shuffled_runs_dispose_every_requirement_alike() {
    // The three runs are independent (each starts its own reference host),
    // so they run side by side: the serial one sets the pace.
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let [serial, parallel, shuffled] = std::thread::scope(|scope| {
        let serial = scope.spawn(|| {
            bundled(
                &["--test-threads", "1"],
                TrialOrder::Catalog,
                dirs[0].path(),
            )
        });
        let parallel = scope.spawn(|| bundled(&[], TrialOrder::Catalog, dirs[1].path()));
        let shuffled =
            scope.spawn(|| bundled(&[], TrialOrder::Shuffled { seed: SEED }, dirs[2].path()));
        [serial, parallel, shuffled].map(|run| run.join().expect("the run does not panic"))
    });
    assert_eq!(
        serial.1.get("order"),
        None,
        "an unshuffled run records no order"
    );
    assert_eq!(
        shuffled.1["order"],
        serde_json::json!({"shuffled": true, "seed": SEED})
    );
    assert_same(&[
        ("serial", &serial.0, &serial.1),
        ("parallel", &parallel.0, &parallel.1),
        ("shuffled", &shuffled.0, &shuffled.1),
    ]);
}

#[test]
fn two_runs_against_one_long_lived_host_agree() {
    const TOKEN_A: &str = "order-a";
    const TOKEN_B: &str = "order-b";
    const SECRET: &str = "order-webhook-secret";
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut host_config = goalpost_host::Config::conformance_in_memory(vec![
        (TOKEN_A.to_string(), "tenant-a".to_string()),
        (TOKEN_B.to_string(), "tenant-b".to_string()),
    ]);
    host_config.webhook_secret = Some(SECRET.to_string());
    let host = runtime
        .block_on(goalpost_host::RunningHost::start(host_config))
        .expect("the host starts");
    let config = |reports: &Path| {
        let mut config = RunConfig::bundled(scenarios(), reports.to_path_buf(), harness(&[]));
        config.host = HostChoice::Remote(host.base_url());
        config.token_a = TOKEN_A.to_string();
        config.token_b = Some(TOKEN_B.to_string());
        config.callback.secret = Some(SECRET.to_string());
        // This host holds no authority credentials: the scenarios that
        // need one skip (not-configured) in both runs.
        config.authority = goalpost::config::AuthorityTokens::default();
        config
    };
    let (first_dir, second_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = run(config(first_dir.path()), first_dir.path());
    let second = run(config(second_dir.path()), second_dir.path());
    runtime.block_on(host.shutdown());
    assert_same(&[
        ("first", &first.0, &first.1),
        ("second", &second.0, &second.1),
    ]);
}
