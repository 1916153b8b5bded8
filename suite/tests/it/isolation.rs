//! Isolation: no check may depend on state another client left in the
//! tenant. The reference host's other builds (`goalpost-host-builds`) can
//! make one that serves a schema-invalid goal in tenant A's lists (`--foreign-invalid-goal`), as if
//! someone else had stored it before the run. The whole suite, `strict`
//! included, must end every requirement exactly as it does against the
//! clean host: a list step looks only at the scenario's own goals (those
//! whose objective carries `goalpost {nonce}`), so a goal it did not create
//! can fail nothing.

use crate::common;

use std::collections::BTreeMap;

use goalpost::bundled::{DEFAULT_TOKEN_A, TENANT_A};
use serde_json::Value;

const SECRET: &str = "goalpost-isolation-secret";

/// Requirement id → (disposition, message).
type Dispositions = BTreeMap<String, (String, String)>;

/// Tenant A's list as the host serves it.
async fn list_of_a(base: &str) -> Result<Value, String> {
    let discovery: Value = reqwest::get(format!("{base}/.well-known/openwop"))
        .await
        .map_err(|error| format!("discovery does not answer: {error}"))?
        .json()
        .await
        .map_err(|error| format!("discovery is not JSON: {error}"))?;
    let path = discovery
        .pointer("/conformanceSeams/goals/basePath")
        .and_then(Value::as_str)
        .unwrap_or("/v1/host/sample/goals")
        .to_string();
    goalpost::http::client()
        .get(format!("{base}{path}"))
        .bearer_auth(DEFAULT_TOKEN_A)
        .send()
        .await
        .map_err(|error| format!("the list does not answer: {error}"))?
        .json()
        .await
        .map_err(|error| format!("the list is not JSON: {error}"))
}

/// The whole suite against a fresh host; with `foreign_invalid_goal`, first
/// checks that the host really serves the foreign goal, so this test cannot
/// pass by poisoning nothing.
fn run_suite(foreign_invalid_goal: bool) -> Dispositions {
    let callback = common::callback_listen().expect("a callback port");
    let config = common::host_config(SECRET, callback).expect("the host's configuration");
    let host = common::Hosted {
        config,
        mutant: goalpost_host_builds::mutants::Selection {
            mutant: None,
            foreign_invalid_goal: foreign_invalid_goal.then(|| TENANT_A.to_string()),
        },
    };
    let poisoned = |runtime: &tokio::runtime::Runtime, base: &str| {
        if !foreign_invalid_goal {
            return Ok(());
        }
        let list = runtime.block_on(list_of_a(base))?;
        match list.pointer("/goals/0/id").and_then(Value::as_str) {
            Some("goal-foreign-invalid") => Ok(()),
            _ => Err(format!(
                "the poisoned host does not serve its foreign goal: {list}"
            )),
        }
    };
    let thread = if foreign_invalid_goal {
        "isolation-poisoned"
    } else {
        "isolation-clean"
    };
    let report = common::run_suite_checked(host, SECRET, callback, thread, poisoned, |run| {
        run.profiles = Some(
            ["core", "behavior", "observed", "hardening", "strict"]
                .into_iter()
                .map(str::to_string)
                .collect(),
        );
    })
    .unwrap_or_else(|error| panic!("{error}"));
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
