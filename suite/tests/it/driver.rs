//! The driver against a tiny fake host: status, schema, assertions,
//! captures, polling, observation, and every way a host can go wrong.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use goalpost::http::{Http, DEFAULT_BODY_CAP};
use goalpost::run::discovery::Capabilities;
use goalpost::run::driver::{Driver, HostTarget};
use goalpost::run::loader::load_scenario;
use goalpost::run::outcome::Outcome;
use goalpost::run::outcome::RequirementOutcome;
use goalpost::run::outcome::ScenarioResult;
use goalpost_schemas::Schemas;
use serde_json::{json, Value};
use support::{FakeOptions, BASE, TOKEN_A, TOKEN_B};

struct Setup {
    driver: Driver,
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    schemas: Schemas,
}

async fn setup(seams: &[&str], http: Http) -> Setup {
    let options = FakeOptions {
        advertise_seams: !seams.is_empty(),
        advertise_goals: true,
    };
    let base_url = support::start(options).await;
    let capabilities = Capabilities {
        goals: true,
        continuation: ["manual".to_string()].into(),
        continuation_order: vec!["manual".to_string()],
        seams: seams.iter().map(|s| s.to_string()).collect(),
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
    let schemas = Arc::new(Schemas::embedded().expect("schemas"));
    let dir = tempfile::tempdir().expect("tempdir");
    Setup {
        driver: Driver::new(http, Arc::new(target), schemas, 1.0),
        path: dir.path().join("core").join("fake.json"),
        _dir: dir,
        schemas: Schemas::embedded().expect("schemas"),
    }
}

fn scenario(checks: u32, needs: Value, steps: Value) -> Value {
    json!({"title": "fake", "profile": "core", "requirements": ["core.fake"],
           "needs": needs, "checks": checks, "steps": steps})
}

async fn run(setup: &Setup, scenario: Value) -> ScenarioResult {
    std::fs::create_dir_all(setup.path.parent().unwrap()).unwrap();
    std::fs::write(&setup.path, scenario.to_string()).unwrap();
    let scenario = load_scenario(&setup.path, "core", &setup.schemas)
        .unwrap_or_else(|error| panic!("fixture scenario must load: {error}"));
    setup.driver.run(&scenario, "n0nce").await
}

fn default_http() -> Http {
    Http::new(1.0, DEFAULT_BODY_CAP).expect("client")
}

fn create_step(assertions: Value) -> Value {
    json!({
        "name": "create a goal",
        "request": {"method": "POST", "path": "{base}", "body": {"objective": "goalpost {nonce}"}},
        "expect": {"status": [201, 200], "assert": assertions},
        "capture": {"goalId": {"pointer": "/id"}, "etag": {"header": "ETag"}}
    })
}

#[tokio::test]
async fn a_passing_scenario_counts_its_checks_and_uses_captures() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([
        create_step(json!([
            {"pointer": "/state", "equals": "active"},
            {"pointer": "/objective", "equals": "goalpost n0nce"},
            {"pointer": "/owner/tenant", "equals": "tenant-a"},
            {"header": "location", "equals": "{base}/goal-1"}
        ])),
        {
            "name": "read it back",
            "request": {"method": "GET", "path": "{base}/{goalId}", "headers": {"If-None-Match": "{etag}"}},
            "expect": {"status": 200, "assert": [
                {"pointer": "/id", "equals": "{goalId}"},
                {"pointer": "/updatedAt", "withinMs": {"of": "2026-06-13T00:00:00Z", "min": 0, "max": 1000}}
            ]}
        },
        {
            "name": "without a token",
            "request": {"method": "GET", "path": "{base}/{goalId}", "as": "anonymous"},
            "expect": {"status": 401, "schema": "error"}
        }
    ]);
    let result = run(&setup, scenario(9, json!({}), steps)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(result.checks, 10);
}

#[tokio::test]
async fn tenant_b_sends_the_second_token() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([{
        "name": "create as b",
        "request": {"method": "POST", "path": "{base}", "as": "b", "body": {"objective": "x"}},
        "expect": {"status": 201, "assert": [{"pointer": "/owner/tenant", "equals": "tenant-b"}]}
    }]);
    let result = run(&setup, scenario(2, json!({"tenants": 2}), steps)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
}

#[tokio::test]
async fn a_failed_assertion_says_where_what_and_why() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([create_step(json!([
        {"pointer": "/state", "equals": "active"},
        {"pointer": "/state", "equals": "satisfied"}
    ]))]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("expected a failure, got {result:?}")
    };
    for part in [
        "core/fake.json",
        "step 1 \"create a goal\"",
        "POST http://127.0.0.1:",
        "/g",
        "/steps/0/expect/assert/1",
        "pointer /state",
        "expected: equals \"satisfied\"",
        "actual:   \"active\"",
        "response: 201 {\"createdAt\"",
    ] {
        assert!(message.contains(part), "missing `{part}` in:\n{message}");
    }
}

#[tokio::test]
async fn a_status_mismatch_and_a_schema_violation_fail() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([{
        "name": "unknown id",
        "request": {"method": "GET", "path": "{base}/goal-2"},
        "expect": {"status": 200}
    }]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("expected: 200") && m.contains("actual:   404")),
        "{result:?}"
    );
    let steps = json!([{
        "name": "a goal is not an error",
        "request": {"method": "GET", "path": "{base}/goal-1"},
        "expect": {"status": 200, "schema": "error"}
    }]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("schema `error`")),
        "{result:?}"
    );
}

#[tokio::test]
async fn fewer_checks_than_declared_is_a_failure() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([create_step(
        json!([{"pointer": "/state", "equals": "active"}])
    )]);
    let result = run(&setup, scenario(5, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("made 2 checks but declares at least 5")),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_is_an_error() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([{
        "name": "html",
        "request": {"method": "GET", "path": "/html"},
        "expect": {"status": 200, "assert": [{"pointer": "/id", "exists": true}]}
    }]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Error(m) if m.contains("not JSON") && m.contains("<html>hello</html>")),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_slow_host_is_a_timeout_error() {
    let http = default_http().with_timeout(Duration::from_millis(200));
    let setup = setup(&[], http).await;
    let steps = json!([{
        "name": "slow",
        "request": {"method": "GET", "path": "/slow"},
        "expect": {"status": 200}
    }]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Error(m) if m.contains("no complete response within")),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_an_error() {
    let setup = setup(&[], Http::new(1.0, 1024).expect("client")).await;
    let steps = json!([{
        "name": "big",
        "request": {"method": "GET", "path": "/big"},
        "expect": {"status": 200}
    }]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Error(m) if m.contains("exceeds 1024 bytes")),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_advertised_seam_answering_404_fails_with_a_clear_message() {
    let setup = setup(&["continue"], default_http()).await;
    let steps = json!([
        create_step(json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "continue",
            "request": {"method": "POST", "path": "{base}/{goalId}/continue", "seam": "continue"},
            "expect": {"status": 200}
        }
    ]);
    let result = run(&setup, scenario(3, json!({"seams": ["continue"]}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m)
            if m.contains("host advertises conformanceSeams.goals.continue but the seam answered 404")),
        "{result:?}"
    );
}

#[tokio::test]
async fn polling_repeats_until_the_expectation_holds() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([
        create_step(json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "wait for the third read",
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [{"pointer": "/reads", "gte": 3}]},
            "poll": {"timeoutMs": 5000, "intervalMs": 5}
        }
    ]);
    let result = run(&setup, scenario(4, json!({}), steps)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
}

#[tokio::test]
async fn polling_reports_the_last_failure_at_the_deadline() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([
        create_step(json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "never",
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [{"pointer": "/reads", "lt": 0}]},
            "poll": {"timeoutMs": 60, "intervalMs": 20}
        }
    ]);
    let result = run(&setup, scenario(4, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("still failing after polling")),
        "{result:?}"
    );
}

#[tokio::test]
async fn observing_requires_every_answer_to_hold() {
    let setup = setup(&[], default_http()).await;
    let holds = json!([
        create_step(json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "stays the same goal",
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [{"pointer": "/id", "equals": "goal-1"}]},
            "observe": {"forMs": 60, "intervalMs": 10}
        }
    ]);
    let result = run(&setup, scenario(4, json!({}), holds)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    // A fresh host, so its read counter starts again at zero.
    let setup = self::setup(&[], default_http()).await;
    let breaks = json!([
        create_step(json!([{"pointer": "/state", "equals": "active"}])),
        {
            "name": "nothing changes",
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [{"pointer": "/reads", "lte": 2}]},
            "observe": {"forMs": 2000, "intervalMs": 5}
        }
    ]);
    let result = run(&setup, scenario(4, json!({}), breaks)).await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("observation window, attempt 3")),
        "{result:?}"
    );
}

#[tokio::test]
async fn quiet_steps_send_nothing_and_are_summed() {
    let setup = setup(&[], default_http()).await;
    let steps = json!([
        {"name": "wait", "quietMs": 20, "why": "the requirement says without any client call"},
        create_step(json!([{"pointer": "/state", "equals": "active"}]))
    ]);
    let result = run(&setup, scenario(2, json!({}), steps)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(result.quiet, Duration::from_millis(20));
}

#[tokio::test]
async fn an_unreachable_host_is_an_error() {
    let mut setup = setup(&[], default_http()).await;
    let mut target = setup.driver.host().clone();
    target.base_url = "http://127.0.0.1:9".to_string();
    setup.driver = Driver::new(
        default_http(),
        Arc::new(target),
        Arc::new(Schemas::embedded().unwrap()),
        1.0,
    );
    let steps = json!([create_step(
        json!([{"pointer": "/state", "equals": "active"}])
    )]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    assert!(
        matches!(&result.outcome, Outcome::Error(m) if m.contains("transport failure")),
        "{result:?}"
    );
}

// ---- `when`: steps that run only on an earlier step's status ----

/// A read whose status decides which branch runs: the fake host answers
/// 200 for `goal-1` and 404 for any other id.
fn probe(name: &str, id: &str) -> Value {
    json!({"name": name, "proves": [], "request": {"method": "GET", "path": format!("{{base}}/{id}")},
           "expect": {"status": [200, 404]}})
}

/// A step of the branch `status` of `on` that holds only on the fake host's
/// 200 for goal-1 (`holds`), or never (it expects a status nobody sends).
fn branch(name: &str, on: &str, status: &str, holds: bool) -> Value {
    let expect = if holds {
        json!({"status": 200, "assert": [{"pointer": "/id", "equals": "goal-1"}]})
    } else {
        json!({"status": 418})
    };
    json!({"name": name, "when": {"step": on, "status": status},
           "request": {"method": "GET", "path": "{base}/goal-1"}, "expect": expect})
}

#[tokio::test]
async fn only_the_branch_the_answer_took_runs_and_counts_its_checks() {
    let setup = setup(&[], default_http()).await;
    // goal-1 answers 200: its 2xx branch runs (2 checks), the 4xx branch
    // (which could never hold) does not. A missing id answers 404: the
    // other way round.
    let steps = json!([
        probe("read the goal", "goal-1"),
        branch("accepted: it reads back", "read the goal", "2xx", true),
        branch("refused: never sent", "read the goal", "4xx", false),
        probe("read a missing goal", "goal-missing"),
        branch("found: never sent", "read a missing goal", "2xx", false),
        branch(
            "not found: the goal still reads",
            "read a missing goal",
            "4xx",
            true
        ),
    ]);
    let result = run(&setup, scenario(6, json!({}), steps)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(result.checks, 6);
    // The report says which branches the answers did not take, and why.
    let not_taken: Vec<(usize, &str, &str, Option<u16>)> = result
        .not_taken
        .iter()
        .map(|skip| {
            (
                skip.step,
                skip.name.as_str(),
                skip.when_step.as_str(),
                skip.answered,
            )
        })
        .collect();
    assert_eq!(
        not_taken,
        [
            (3, "refused: never sent", "read the goal", Some(200)),
            (5, "found: never sent", "read a missing goal", Some(404)),
        ]
    );
}

#[tokio::test]
async fn a_branch_taken_fails_like_any_step_and_an_untaken_one_cannot() {
    let setup = setup(&[], default_http()).await;
    // The host answered 2xx, so the scenario holds it to the 2xx branch.
    let steps = json!([
        probe("read the goal", "goal-1"),
        branch("accepted: must hold", "read the goal", "2xx", false),
    ]);
    let result = run(&setup, scenario(1, json!({}), steps)).await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("the taken branch must fail: {result:?}")
    };
    assert!(
        message.contains("accepted: must hold") && message.contains("expected: 418"),
        "{message}"
    );
    assert!(
        matches!(
            result.requirements["core.fake"],
            RequirementOutcome::Fail(_)
        ),
        "{:?}",
        result.requirements
    );
    // A class or code that does not match the answer skips the step,
    // whatever it would have found.
    let steps = json!([
        probe("read a missing goal", "goal-missing"),
        {"name": "only on 200", "when": {"step": "read a missing goal", "status": [200, "3xx", 403]},
         "request": {"method": "GET", "path": "{base}/goal-1"}, "expect": {"status": 418}},
        {"name": "on this very 404", "when": {"step": "read a missing goal", "status": 404},
         "request": {"method": "GET", "path": "{base}/goal-1"}, "expect": {"status": 200}},
    ]);
    let result = run(&setup, scenario(2, json!({}), steps)).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(result.checks, 2);
}
