//! The exchange a failing or erroring step leaves for the reports: recorded
//! from the failing attempt, credentials redacted, against the fake host.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use goalpost::http::{Http, DEFAULT_BODY_CAP};
use goalpost::run::discovery::Capabilities;
use goalpost::run::driver::{Driver, HostTarget};
use goalpost::run::loader::load_scenario;
use goalpost::run::outcome::exchange::FailedStep;
use goalpost::run::outcome::Outcome;
use goalpost::run::outcome::ScenarioResult;
use goalpost_schemas::Schemas;
use serde_json::{json, Value};
use support::{FakeOptions, BASE, TOKEN_A, TOKEN_B};

async fn run_with(http: Http, steps: Value) -> ScenarioResult {
    let base_url = support::start(FakeOptions {
        advertise_seams: false,
        advertise_goals: true,
    })
    .await;
    let target = HostTarget {
        base_url,
        capabilities: Capabilities {
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
        },
        token_a: Some(TOKEN_A.to_string()),
        token_b: Some(TOKEN_B.to_string()),
        authority: Default::default(),
    };
    let schemas = Schemas::embedded().expect("schemas");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("core").join("fake.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let scenario = json!({"title": "fake", "profile": "core", "requirements": ["core.fake"],
                          "needs": {"tenants": 2}, "checks": 1, "steps": steps});
    std::fs::write(&path, scenario.to_string()).unwrap();
    let scenario = load_scenario(&path, "core", &schemas)
        .unwrap_or_else(|error| panic!("fixture scenario must load: {error}"));
    let driver = Driver::new(http, Arc::new(target), Arc::new(schemas), 1.0);
    driver.run(&scenario, "n0nce").await
}

async fn run(steps: Value) -> ScenarioResult {
    run_with(Http::new(1.0, DEFAULT_BODY_CAP).expect("client"), steps).await
}

fn create(expect: Value) -> Value {
    json!({"name": "create a goal",
           "request": {"method": "POST", "path": "{base}", "body": {"objective": "goalpost {nonce}"}},
           "expect": expect})
}

fn step(run: &ScenarioResult) -> &FailedStep {
    run.failed_step
        .as_deref()
        .unwrap_or_else(|| panic!("no failed step recorded: {:?}", run.outcome))
}

fn header<'a>(
    headers: &'a [goalpost::run::outcome::exchange::Header],
    name: &str,
) -> Option<&'a str> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

#[tokio::test]
async fn a_status_mismatch_records_the_whole_exchange_without_the_token() {
    let run = run(json!([create(json!({"status": 422}))])).await;
    assert!(matches!(run.outcome, Outcome::Fail(_)), "{:?}", run.outcome);
    let step = step(&run);
    assert_eq!(
        (step.step, step.name.as_str(), step.pointer.as_str()),
        (1, "create a goal", "/steps/0")
    );
    let check = step.check.as_ref().expect("a check");
    assert_eq!(
        (
            check.what.as_str(),
            check.at.as_str(),
            check.expected.as_str(),
            check.actual.as_str()
        ),
        ("status", "/steps/0/expect/status", "422", "201")
    );
    assert_eq!(step.error, None);
    let request = &step.request;
    assert_eq!(request.method, "POST");
    assert!(request.url.ends_with(BASE), "{}", request.url);
    assert_eq!(
        header(&request.headers, "authorization"),
        Some("Bearer $TOKEN")
    );
    assert_eq!(
        header(&request.headers, "content-type"),
        Some("application/json")
    );
    assert_eq!(
        request.body.as_ref().map(|b| b.text.as_str()),
        Some(r#"{"objective":"goalpost n0nce"}"#)
    );
    let response = step.response.as_ref().expect("a response");
    assert_eq!(response.status, 201);
    assert_eq!(header(&response.headers, "etag"), Some("\"1\""));
    assert!(
        response.body.text.contains("\"goal-1\""),
        "{}",
        response.body.text
    );
    let everything = serde_json::to_string(&run.failed_step).unwrap();
    assert!(!everything.contains(TOKEN_A), "{everything}");
    assert!(step
        .request
        .curl()
        .contains("-H \"authorization: Bearer $TOKEN\""));
}

#[tokio::test]
async fn a_pointer_assertion_names_the_body_pointer() {
    let run = run(json!([create(json!({"status": 201, "assert": [
        {"pointer": "/state", "equals": "active"},
        {"pointer": "/owner/tenant", "equals": "tenant-b"}
    ]}))]))
    .await;
    let check = step(&run).check.as_ref().expect("a check");
    assert_eq!(check.pointer.as_deref(), Some("/owner/tenant"));
    assert_eq!(check.at, "/steps/0/expect/assert/1");
    assert_eq!(check.actual, "\"tenant-a\"");
}

#[tokio::test]
async fn tenant_b_and_a_foreign_token_are_redacted_differently() {
    let read = |name: &str, extra: Value| {
        let mut request = json!({"method": "GET", "path": "{base}/goal-1", "as": "b"});
        if let Value::Object(extra) = extra {
            request.as_object_mut().unwrap().extend(extra);
        }
        json!({"name": name, "request": request, "expect": {"status": 418}})
    };
    let run_b = run(json!([read("as b", json!({}))])).await;
    assert_eq!(
        header(&step(&run_b).request.headers, "authorization"),
        Some("Bearer $TOKEN_B")
    );
    let foreign = run(json!([read(
        "foreign",
        json!({"headers": {"Authorization": "Bearer stolen-{nonce}"}})
    )]))
    .await;
    let step = step(&foreign);
    assert_eq!(
        header(&step.request.headers, "authorization"),
        Some("[redacted]")
    );
    assert_eq!(step.response.as_ref().map(|r| r.status), Some(401));
}

#[tokio::test]
async fn a_body_that_is_not_json_is_an_error_with_its_response() {
    let run = run(json!([{"name": "html", "request": {"method": "GET", "path": "/html"},
                          "expect": {"status": 200, "assert": [{"pointer": "/a", "exists": true}]}}]))
    .await;
    assert!(
        matches!(run.outcome, Outcome::Error(_)),
        "{:?}",
        run.outcome
    );
    let step = step(&run);
    assert_eq!(step.check, None);
    assert!(step
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("not JSON"));
    let response = step.response.as_ref().expect("the answer is kept");
    assert_eq!(response.body.text, "<html>hello</html>");
    assert!(step.request.body.is_none());
    assert!(!step.request.curl().contains("-X"), "GET needs no -X");
}

#[tokio::test]
async fn a_request_without_an_answer_records_no_response() {
    let http = Http::new(1.0, DEFAULT_BODY_CAP)
        .expect("client")
        .with_timeout(Duration::from_millis(200));
    let run = run_with(
        http,
        json!([{"name": "slow", "request": {"method": "GET", "path": "/slow"}, "expect": {"status": 200}}]),
    )
    .await;
    assert!(
        matches!(run.outcome, Outcome::Error(_)),
        "{:?}",
        run.outcome
    );
    let step = step(&run);
    assert!(step.response.is_none());
    assert!(step
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("no complete response"));
    assert!(step.request.url.ends_with("/slow"));
}

#[tokio::test]
async fn polling_records_the_last_attempt() {
    let run = run(json!([
        create(json!({"status": 201})),
        {"name": "wait", "request": {"method": "GET", "path": "{base}/goal-1"},
         "poll": {"timeoutMs": 300, "intervalMs": 50},
         "expect": {"status": 200, "assert": [{"pointer": "/reads", "equals": 0}]}}
    ]))
    .await;
    let step = step(&run);
    assert_eq!(step.step, 2);
    let check = step.check.as_ref().expect("a check");
    assert!(
        check
            .context
            .as_deref()
            .unwrap_or_default()
            .starts_with("still failing after polling"),
        "{check:?}"
    );
    // The recorded answer is the last attempt's: its count matches the
    // number of reads the fake host served.
    let body: Value = serde_json::from_str(&step.response.as_ref().unwrap().body.text).unwrap();
    assert_eq!(
        Some(check.actual.as_str()),
        body["reads"].as_u64().map(|n| n.to_string()).as_deref()
    );
    assert!(body["reads"].as_u64().unwrap_or(0) > 1, "{body}");
}

#[tokio::test]
async fn a_passing_scenario_records_nothing() {
    let run = run(json!([create(json!({"status": 201}))])).await;
    assert_eq!(run.outcome, Outcome::Pass);
    assert!(run.failed_step.is_none());
}
