//! Isolation: no check may depend on state another client left in the
//! tenant. The reference host built with the `mutants` feature can serve one
//! schema-invalid goal in tenant A's lists (`--foreign-invalid-goal`), as if
//! someone else had stored it before the run. The whole suite, `strict`
//! included, must end every requirement exactly as it does against the
//! clean host: a list step looks only at the scenario's own goals (those
//! whose objective carries `goalpost {nonce}`), so a goal it did not create
//! can fail nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goalpost::bundled::{DEFAULT_TOKEN_A, DEFAULT_TOKEN_B, TENANT_A, TENANT_B};
use goalpost::{HostChoice, RunConfig};
use serde_json::Value;

const SECRET: &str = "goalpost-isolation-secret";

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Requirement id → (disposition, message).
type Dispositions = BTreeMap<String, (String, String)>;

fn config(foreign_invalid_goal: bool) -> goalpost_host::Config {
    let mut config = goalpost_host::Config::conformance_in_memory(vec![
        (DEFAULT_TOKEN_A.to_string(), TENANT_A.to_string()),
        (DEFAULT_TOKEN_B.to_string(), TENANT_B.to_string()),
    ]);
    config.webhook_secret = Some(SECRET.to_string());
    if foreign_invalid_goal {
        config.mutants.foreign_invalid_goal = Some(TENANT_A.to_string());
    }
    config
}

/// Tenant A's list as the host serves it.
async fn list_of_a(base: &str) -> Value {
    let discovery: Value = reqwest::get(format!("{base}/.well-known/openwop"))
        .await
        .expect("discovery answers")
        .json()
        .await
        .expect("discovery is JSON");
    let path = discovery
        .pointer("/conformanceSeams/goals/basePath")
        .and_then(Value::as_str)
        .unwrap_or("/v1/host/sample/goals")
        .to_string();
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(DEFAULT_TOKEN_A)
        .send()
        .await
        .expect("the list answers")
        .json()
        .await
        .expect("the list is JSON")
}

/// The whole suite against a fresh host; with `foreign_invalid_goal`, first
/// checks that the host really serves the foreign goal, so this test cannot
/// pass by poisoning nothing.
fn run_suite(foreign_invalid_goal: bool) -> Dispositions {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let host = runtime
        .block_on(goalpost_host::RunningHost::start(config(
            foreign_invalid_goal,
        )))
        .expect("the host starts");
    if foreign_invalid_goal {
        let list = runtime.block_on(list_of_a(&host.base_url()));
        assert_eq!(
            list.pointer("/goals/0/id").and_then(Value::as_str),
            Some("goal-foreign-invalid"),
            "the poisoned host does not serve its foreign goal: {list}"
        );
    }
    let reports = tempfile::tempdir().expect("a temporary folder");
    let harness = {
        use clap::Parser;
        libtest_mimic::Arguments::try_parse_from(["goalpost"]).expect("harness arguments")
    };
    let mut run = RunConfig::bundled(scenarios(), reports.path().to_path_buf(), harness);
    run.host = HostChoice::Remote(host.base_url());
    run.token_a = DEFAULT_TOKEN_A.to_string();
    run.token_b = Some(DEFAULT_TOKEN_B.to_string());
    run.callback.secret = Some(SECRET.to_string());
    run.profiles = Some(
        ["core", "behavior", "observed", "hardening", "strict"]
            .into_iter()
            .map(str::to_string)
            .collect(),
    );
    run.harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    let outcome = goalpost::run(run);
    runtime.block_on(host.shutdown());
    let report = outcome
        .expect("the run starts")
        .report
        .expect("the run writes a report");
    report
        .requirements
        .into_iter()
        .map(|requirement| {
            (
                requirement.id,
                (
                    requirement.disposition.to_string(),
                    requirement.message.unwrap_or_default(),
                ),
            )
        })
        .collect()
}

#[test]
fn a_foreign_invalid_goal_in_the_tenant_changes_no_requirement() {
    let (clean, poisoned) = std::thread::scope(|scope| {
        let clean = scope.spawn(|| run_suite(false));
        let poisoned = scope.spawn(|| run_suite(true));
        (
            clean.join().expect("the clean run"),
            poisoned.join().expect("the poisoned run"),
        )
    });
    assert!(!clean.is_empty(), "the clean run disposed nothing");
    let mut changed = Vec::new();
    for (id, (disposition, _)) in &clean {
        let (poisoned_disposition, message) = poisoned
            .get(id)
            .cloned()
            .unwrap_or_else(|| ("(absent)".to_string(), String::new()));
        if &poisoned_disposition != disposition {
            changed.push(format!(
                "{id}: `{poisoned_disposition}` with a foreign invalid goal in the tenant (clean host: `{disposition}`): {message}"
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "a goal no scenario created changed {} requirement(s):\n{}",
        changed.len(),
        changed.join("\n")
    );
}
