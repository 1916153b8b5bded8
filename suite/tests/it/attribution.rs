//! Per-requirement attribution and list isolation, against the tiny fake
//! host: a failed check fails only what it proves, SHOULD failures are
//! advisories that never stop a scenario, requirements behind a blocking
//! failure are not reached (and say what blocked them), and list checks
//! see only the scenario's own goals.

use crate::support;

use std::sync::Arc;

use goalpost::http::{Http, DEFAULT_BODY_CAP};
use goalpost::model::Requirement;
use goalpost::run::discovery::Capabilities;
use goalpost::run::driver::{Driver, HostTarget};
use goalpost::run::ledger;
use goalpost::run::loader::load_scenario;
use goalpost::run::outcome::ScenarioResult;
use goalpost::run::outcome::{Outcome, RequirementOutcome};
use goalpost_schemas::Schemas;
use serde_json::{json, Value};
use support::{FakeOptions, BASE, TOKEN_A, TOKEN_B};

/// The nonce every run here uses; the fake's list holds `goalpost n0nce ...`.
const NONCE: &str = "n0nce";

struct Setup {
    driver: Driver,
    dir: tempfile::TempDir,
    schemas: Schemas,
}

async fn setup() -> Setup {
    let base_url = support::start(FakeOptions {
        advertise_seams: false,
        advertise_goals: true,
    })
    .await;
    let capabilities = Capabilities {
        goals: true,
        continuation: ["manual".to_string()].into(),
        continuation_order: vec!["manual".to_string()],
        seams: Default::default(),
        base_path: BASE.to_string(),
        judge: Some("verifier".to_string()),
        requires_bounds: true,
        egress_denies_internal: false,
        reported_runs: Default::default(),
        attention: false,
        host_events: Default::default(),
        events_stream: None,
    };
    let target = HostTarget {
        base_url,
        capabilities,
        token_a: Some(TOKEN_A.to_string()),
        token_b: Some(TOKEN_B.to_string()),
        authority: Default::default(),
    };
    let http = Http::new(1.0, DEFAULT_BODY_CAP).expect("client");
    let schemas = Arc::new(Schemas::embedded().expect("schemas"));
    Setup {
        driver: Driver::new(http, Arc::new(target), schemas, 1.0),
        dir: tempfile::tempdir().expect("tempdir"),
        schemas: Schemas::embedded().expect("schemas"),
    }
}

fn requirement(id: &str, level: &str) -> Requirement {
    Requirement {
        id: id.to_string(),
        profile: "core".to_string(),
        level: level.to_string(),
        clause: "PROFILE.md#x".to_string(),
        text: "a requirement".to_string(),
        capability: Vec::new(),
    }
}

/// Runs a core scenario naming `levels` (id, level) with these steps.
async fn run(setup: &Setup, levels: &[(&str, &str)], checks: u32, steps: Value) -> ScenarioResult {
    let ids: Vec<&str> = levels.iter().map(|(id, _)| *id).collect();
    let file = json!({"title": "attribution", "profile": "core", "requirements": ids,
                      "checks": checks, "steps": steps});
    let path = setup.dir.path().join("core").join("attribution.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, file.to_string()).unwrap();
    let mut scenario = load_scenario(&path, "core", &setup.schemas)
        .unwrap_or_else(|error| panic!("fixture scenario must load: {error}"));
    let registry: Vec<Requirement> = levels
        .iter()
        .map(|(id, level)| requirement(id, level))
        .collect();
    scenario.set_levels(&registry);
    setup.driver.run(&scenario, NONCE).await
}

/// What the run's outcome for `id` counts as at that level.
fn disposed(run: &ScenarioResult, id: &str, level: &str) -> &'static str {
    ledger::counts_as(&requirement(id, level), &run.requirements[id]).as_str()
}

fn keyword<'a>(run: &'a ScenarioResult, id: &str) -> &'a str {
    run.requirements
        .get(id)
        .unwrap_or_else(|| panic!("no outcome for {id}: {run:?}"))
        .keyword()
}

fn create(proves: &[&str], assertions: Value) -> Value {
    json!({
        "name": "create a goal",
        "proves": proves,
        "request": {"method": "POST", "path": "{base}", "body": {"objective": "goalpost {nonce}"}},
        "expect": {"status": [201, 200], "assert": assertions},
        "capture": {"goalId": {"pointer": "/id"}}
    })
}

fn read(proves: &[&str]) -> Value {
    json!({
        "name": "read it back",
        "proves": proves,
        "request": {"method": "GET", "path": "{base}/{goalId}"},
        "expect": {"status": 200, "assert": [{"pointer": "/id", "equals": "{goalId}"}]}
    })
}

#[tokio::test]
async fn a_failed_should_check_is_an_advisory_and_the_rest_still_pass() {
    let setup = setup().await;
    let steps = json!([
        create(
            &["core.create.returns-goal"],
            json!([
                {"pointer": "/state", "equals": "active"},
                {"header": "location", "equals": "/somewhere/else", "proves": ["core.create.location"]}
            ])
        ),
        read(&["core.get.returns-goal"])
    ]);
    let levels = [
        ("core.create.returns-goal", "MUST"),
        ("core.create.location", "SHOULD"),
        ("core.get.returns-goal", "MUST"),
    ];
    let result = run(&setup, &levels, 5, steps).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(keyword(&result, "core.create.returns-goal"), "pass");
    assert_eq!(keyword(&result, "core.get.returns-goal"), "pass");
    assert_eq!(
        disposed(&result, "core.create.location", "SHOULD"),
        "advisory"
    );
    let failed = &result.requirements["core.create.location"];
    let RequirementOutcome::Fail(why) = failed else {
        panic!("expected its check to have failed: {failed:?}")
    };
    assert!(why.message.contains("header location"), "{}", why.message);
    let step = why.failed_step.as_deref().expect("the advisory's step");
    assert_eq!(step.step, 1);
    let check = step.check.as_ref().expect("the failed check");
    assert_eq!(check.at, "/steps/0/expect/assert/1");
    assert_eq!(check.actual, format!("\"{BASE}/goal-1\""));
    assert!(result.failed_step.is_none(), "no blocking failure");
}

#[tokio::test]
async fn a_failed_pause_leaves_abandon_not_reached_naming_the_pause_requirement() {
    let setup = setup().await;
    let steps = json!([
        create(&["core.lifecycle.create"], json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "pause the goal",
            "proves": ["core.lifecycle.pause-resume"],
            "request": {"method": "POST", "path": "{base}/{goalId}/pause"},
            "expect": {"status": 200}
        },
        {
            "name": "abandon the goal",
            "proves": ["core.lifecycle.abandon"],
            "request": {"method": "POST", "path": "{base}/{goalId}/abandon"},
            "expect": {"status": 200}
        }
    ]);
    let levels = [
        ("core.lifecycle.create", "MUST"),
        ("core.lifecycle.pause-resume", "MUST"),
        ("core.lifecycle.abandon", "MUST"),
    ];
    let result = run(&setup, &levels, 4, steps).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("step 2 \"pause the goal\"")),
        "{result:?}"
    );
    assert_eq!(keyword(&result, "core.lifecycle.create"), "pass");
    assert_eq!(keyword(&result, "core.lifecycle.pause-resume"), "fail");
    assert_eq!(
        result.requirements["core.lifecycle.abandon"],
        RequirementOutcome::NotReached(
            "not reached: step 2 \"pause the goal\" failed on core.lifecycle.pause-resume"
                .to_string()
        )
    );
    let failed = result.failed_step.as_deref().expect("the blocking step");
    assert_eq!(failed.step, 2);
    assert_eq!(
        result.requirements["core.lifecycle.pause-resume"].failed_step(),
        Some(failed),
        "the requirement's exchange is the one of the check that failed it"
    );
}

#[tokio::test]
async fn every_check_of_a_failing_step_is_evaluated_and_attributed() {
    let setup = setup().await;
    let steps = json!([
        create(&["core.a"], json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "read a goal that is not there",
            "proves": ["core.b"],
            "request": {"method": "GET", "path": "{base}/goal-404"},
            "expect": {"status": 200, "assert": [
                {"pointer": "/error", "equals": "not_found", "proves": ["core.c"]},
                {"pointer": "/id", "equals": "goal-404", "proves": ["core.d"]}
            ]}
        },
        read(&["core.e"])
    ]);
    let levels = [
        ("core.a", "MUST"),
        ("core.b", "MUST"),
        ("core.c", "MUST"),
        ("core.d", "MUST"),
        ("core.e", "MUST"),
    ];
    let result = run(&setup, &levels, 1, steps).await;
    // The status failed, the `/error` assertion held, the `/id` one failed:
    // no short-circuit on the blocking status, but what held on an answer
    // with the wrong status is not credited (it was not the answer the claim
    // is about).
    assert_eq!(keyword(&result, "core.a"), "pass");
    assert_eq!(keyword(&result, "core.b"), "fail");
    assert_eq!(keyword(&result, "core.c"), "not-reached");
    assert_eq!(keyword(&result, "core.d"), "fail");
    assert_eq!(
        result.requirements["core.e"],
        RequirementOutcome::NotReached(
            "not reached: step 2 \"read a goal that is not there\" failed on core.b, core.d"
                .to_string()
        )
    );
    let why = |id: &str| {
        result.requirements[id]
            .failed_step()
            .and_then(|s| s.check.clone())
    };
    assert_eq!(
        why("core.b").map(|c| c.at),
        Some("/steps/1/expect/status".to_string())
    );
    assert_eq!(
        why("core.d").map(|c| c.at),
        Some("/steps/1/expect/assert/1".to_string())
    );
}

#[tokio::test]
async fn a_failed_setup_step_leaves_everything_after_it_not_reached() {
    let setup = setup().await;
    let steps = json!([
        create(&[], json!([{"pointer": "/state", "equals": "gone"}])),
        read(&["core.a"])
    ]);
    let result = run(&setup, &[("core.a", "MUST")], 1, steps).await;
    assert!(matches!(result.outcome, Outcome::Fail(_)), "{result:?}");
    assert_eq!(
        result.requirements["core.a"],
        RequirementOutcome::NotReached(
            "not reached: step 1 \"create a goal\" failed on a setup check".to_string()
        )
    );
}

#[tokio::test]
async fn a_poll_stops_once_every_blocking_check_holds() {
    let setup = setup().await;
    let steps = json!([
        create(&["core.a"], json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "poll the goal",
            "proves": ["core.a"],
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [
                {"pointer": "/reads", "gte": 1},
                {"pointer": "/never", "exists": true, "proves": ["core.s"]}
            ]},
            "poll": {"timeoutMs": 5000, "intervalMs": 10}
        },
        {
            "name": "the poll read once",
            "proves": ["core.a"],
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [{"pointer": "/reads", "equals": 2}]}
        }
    ]);
    let levels = [("core.a", "MUST"), ("core.s", "SHOULD")];
    let result = run(&setup, &levels, 1, steps).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(keyword(&result, "core.a"), "pass");
    assert_eq!(disposed(&result, "core.s", "SHOULD"), "advisory");
    // Had the non-blocking miss kept the poll going, a SHOULD requirement
    // would have set the pace (and, run to its deadline, the verdict).
    let step = result.requirements["core.s"].failed_step().expect("step");
    let check = step.check.as_ref().expect("check");
    assert_eq!(check.context, None, "the first look was the verdict");
}

#[tokio::test]
async fn scenarios_without_proves_keep_failing_every_requirement() {
    let setup = setup().await;
    let steps = json!([
        {
            "name": "create a goal",
            "request": {"method": "POST", "path": "{base}", "body": {"objective": "goalpost {nonce}"}},
            "expect": {"status": 200}
        }
    ]);
    let levels = [("core.a", "MUST"), ("core.b", "MUST")];
    let result = run(&setup, &levels, 1, steps).await;
    assert!(matches!(result.outcome, Outcome::Fail(_)), "{result:?}");
    assert_eq!(keyword(&result, "core.a"), "fail");
    assert_eq!(keyword(&result, "core.b"), "fail");
}

fn list_step(query: &str, assertions: Value) -> Value {
    json!({
        "name": "list the goals",
        "proves": ["core.list"],
        "request": {"method": "GET", "path": format!("{{base}}{query}")},
        "expect": {"status": 200, "schema": "goal-list", "assert": assertions}
    })
}

#[tokio::test]
async fn list_checks_see_only_the_scenarios_own_goals() {
    let setup = setup().await;
    // The tenant also holds a schema-invalid goal of another scenario and
    // a valid one: neither changes anything.
    let steps = json!([list_step(
        "",
        json!([
            {"pointer": "/goals", "length": 1},
            {"pointer": "/goals/0/id", "equals": "goal-1"},
            {"pointer": "/goals", "map": "/objective", "notContains": "goalpost 0ther fine"}
        ])
    )]);
    let result = run(&setup, &[("core.list", "MUST")], 4, steps).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(keyword(&result, "core.list"), "pass");
}

#[tokio::test]
async fn an_own_invalid_goal_still_fails_and_the_report_keeps_the_full_list() {
    let setup = setup().await;
    let steps = json!([list_step(
        "?shape=own-invalid",
        json!([{"pointer": "/goals", "length": 1}])
    )]);
    let result = run(&setup, &[("core.list", "MUST")], 3, steps).await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("an own invalid goal fails: {result:?}")
    };
    assert!(message.contains("schema `goal-list`"), "{message}");
    assert!(
        message.contains("2 goal(s) of other scenarios left out"),
        "{message}"
    );
    let step = result.failed_step.as_deref().expect("failed step");
    let check = step.check.as_ref().expect("check");
    assert_eq!(check.at, "/steps/0/expect/schema");
    // The own goal is second in the full list the report records.
    assert_eq!(check.pointer.as_deref(), Some("/goals/1/state"));
    assert!(check.what.contains("/goals/1/state"), "{}", check.what);
    assert!(
        check.actual.starts_with("/goals/1/state"),
        "{}",
        check.actual
    );
    assert!(
        check
            .note
            .as_deref()
            .is_some_and(|note| note.contains("2 goal(s) of other scenarios left out")),
        "{check:?}"
    );
    let body = &step.response.as_ref().expect("response").body.text;
    assert!(
        body.contains("goalpost 0ther poisoned") && body.contains("goalpost 0ther fine"),
        "the recorded exchange keeps the full body: {body}"
    );
}

#[tokio::test]
async fn a_broken_list_envelope_still_fails_and_garbage_still_errors() {
    let setup = setup().await;
    let steps = json!([list_step(
        "?shape=not-a-list",
        json!([{"pointer": "/goals", "exists": true}])
    )]);
    let result = run(&setup, &[("core.list", "MUST")], 2, steps).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("schema `goal-list`")),
        "{result:?}"
    );
    assert_eq!(keyword(&result, "core.list"), "fail");
    let steps = json!([list_step(
        "?shape=garbage",
        json!([{"pointer": "/goals", "exists": true}])
    )]);
    let result = run(&setup, &[("core.list", "MUST")], 2, steps).await;
    assert!(
        matches!(&result.outcome, Outcome::Error(m) if m.contains("not JSON")),
        "{result:?}"
    );
    assert_eq!(keyword(&result, "core.list"), "error");
}

#[tokio::test]
async fn captures_from_a_list_read_the_scenarios_own_goals() {
    let setup = setup().await;
    let mut list = list_step("", json!([{"pointer": "/goals", "length": 1}]));
    list["capture"] = json!({"goalId": {"pointer": "/goals/0/id"}});
    let steps = json!([list, read(&["core.list"])]);
    let result = run(&setup, &[("core.list", "MUST")], 5, steps).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
}
