//! `parallel` steps against a host that can only answer when every copy is
//! in flight at once: the copies really overlap, each carries its own
//! `{parallel.index}`, and the aggregate, the per-status schemas and the
//! check count say exactly what happened. Also the other request features
//! of the hardening profile: `rawBodyBase64`, `generate` and
//! `{discovery.judge}`, as an echoing host receives them.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use goalpost::http::{Http, DEFAULT_BODY_CAP};
use goalpost::run::discovery::Capabilities;
use goalpost::run::driver::{Driver, HostTarget};
use goalpost::run::loader::load_scenario;
use goalpost::run::outcome::Outcome;
use goalpost::run::outcome::ScenarioResult;
use goalpost_schemas::Schemas;
use serde_json::{json, Value};
use tokio::sync::{Barrier, Mutex};

const COPIES: usize = 10;

#[derive(Clone)]
struct Race {
    /// Every copy waits here: the race answers only if all of them are in
    /// flight together.
    barrier: Arc<Barrier>,
    winner: Arc<Mutex<bool>>,
    seen: Arc<Mutex<BTreeSet<String>>>,
}

/// One winner (200 with an ETag), everyone else 412 with the envelope; a
/// copy that waits alone for 5 s gets a 504 the scenarios never accept.
async fn race(State(race): State<Race>, headers: HeaderMap) -> Response {
    let copy = headers
        .get("x-copy")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("?")
        .to_string();
    race.seen.lock().await.insert(copy.clone());
    if tokio::time::timeout(Duration::from_secs(5), race.barrier.wait())
        .await
        .is_err()
    {
        return (StatusCode::GATEWAY_TIMEOUT, "the copies did not overlap").into_response();
    }
    let mut won = race.winner.lock().await;
    if *won {
        let body = json!({"error": "precondition_failed", "message": "stale"});
        (StatusCode::PRECONDITION_FAILED, Json(body)).into_response()
    } else {
        *won = true;
        let body = json!({"copy": copy});
        (StatusCode::OK, [("etag", "\"2\"")], Json(body)).into_response()
    }
}

/// The body as received: its length, its bytes in hex and its text.
async fn echo(body: Bytes) -> Json<Value> {
    let hex: String = body.iter().map(|byte| format!("{byte:02x}")).collect();
    Json(json!({"length": body.len(), "hex": hex, "text": String::from_utf8_lossy(&body)}))
}

async fn start() -> (String, Race) {
    let state = Race {
        barrier: Arc::new(Barrier::new(COPIES)),
        winner: Arc::new(Mutex::new(false)),
        seen: Arc::new(Mutex::new(BTreeSet::new())),
    };
    let app = Router::new()
        .route("/race", post(race))
        .route("/plain", post(|| async { "not json" }))
        .route("/echo", post(echo))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}"), state)
}

async fn run(base_url: String, scenario: Value) -> ScenarioResult {
    run_judged(base_url, scenario, "verifier").await
}

async fn run_judged(base_url: String, scenario: Value, judge: &str) -> ScenarioResult {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hardening/race.json");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, scenario.to_string()).expect("write");
    let schemas = Schemas::embedded().expect("schemas");
    let scenario = load_scenario(&path, "hardening", &schemas)
        .unwrap_or_else(|error| panic!("fixture scenario must load: {error}"));
    let target = HostTarget {
        base_url,
        capabilities: Capabilities {
            goals: true,
            continuation: ["manual".to_string()].into(),
            continuation_order: vec!["manual".to_string()],
            seams: Default::default(),
            base_path: "/v1/host/sample/goals".to_string(),
            judge: Some(judge.to_string()),
            requires_bounds: true,
            egress_denies_internal: false,
            reported_runs: Default::default(),
            attention: false,
            host_events: Default::default(),
            events_stream: None,
        },
        token_a: Some("token-a".to_string()),
        token_b: None,
        authority: Default::default(),
    };
    let http = Http::new(1.0, DEFAULT_BODY_CAP).expect("client");
    let driver = Driver::new(http, Arc::new(target), Arc::new(schemas), 1.0);
    driver.run(&scenario, "n0nce").await
}

fn race_scenario(checks: u32, expect: Value) -> Value {
    json!({
        "title": "a race", "profile": "hardening", "requirements": ["hardening.fake"],
        "checks": checks,
        "steps": [{
            "name": "ten at once",
            "request": {"method": "POST", "path": "/race", "headers": {"X-Copy": "{parallel.index}"},
                        "body": {"copy": "{parallel.index}"}},
            "parallel": {"count": COPIES},
            "expect": expect,
            "capture": {"winnerTag": {"pointer": "/first/200/headers/etag"}}
        }, {
            "name": "the winner's tag was captured",
            "request": {"method": "POST", "path": "/plain", "rawBody": "{winnerTag}"},
            "expect": {"status": 200}
        }]
    })
}

#[tokio::test]
async fn copies_overlap_carry_their_index_and_are_counted_honestly() {
    let (url, race) = start().await;
    let expect = json!({
        "status": [200, 412],
        "schemas": {"412": "error", "500": "error"},
        "assert": [
            {"pointer": "/count", "equals": COPIES},
            {"pointer": "/counts", "equals": {"200": 1, "412": COPIES - 1}},
            {"pointer": "/responses", "where": {"/status": 412, "/body/error": "precondition_failed"},
             "length": COPIES - 1},
            {"pointer": "/responses", "map": "/index", "increasing": true},
            {"pointer": "/first/200/headers/etag", "equals": "\"2\""}
        ]
    });
    let result = run(url, race_scenario(8, expect.clone())).await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    // status 1 + the `412` schema + 5 assertions, then the second step's
    // status: the `500` entry met no answer, so it checked nothing.
    assert_eq!(result.checks, 8);
    let seen = race.seen.lock().await.clone();
    let expected: BTreeSet<String> = (1..=COPIES).map(|i| i.to_string()).collect();
    assert_eq!(seen, expected, "every copy carries its own index");
    let (url, _race) = start().await;
    let overclaimed = run(url, race_scenario(9, expect)).await;
    assert!(
        matches!(&overclaimed.outcome, Outcome::Fail(message) if message.contains("made 8 checks")),
        "{overclaimed:?}"
    );
}

#[tokio::test]
async fn a_schema_by_status_is_checked_on_every_answer_of_that_status() {
    let (url, _race) = start().await;
    let expect = json!({"status": [200, 412], "schemas": {"200": "error", "412": "error"}});
    let result = run(url, race_scenario(1, expect)).await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("the winner's body is no error envelope: {result:?}")
    };
    assert!(
        message.contains("schema `error` of parallel answer") && message.contains("(200)"),
        "{message}"
    );
    let failed = result.failed_step.expect("the failing step is recorded");
    let response = failed.response.expect("the offending answer is recorded");
    assert_eq!(response.status, 200);
}

#[tokio::test]
async fn a_wrong_count_fails_with_the_tally() {
    let (url, _race) = start().await;
    let expect = json!({"assert": [{"pointer": "/counts/200", "equals": 2}]});
    let result = run(url, race_scenario(1, expect)).await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("expected a failure: {result:?}")
    };
    assert!(
        message.contains("aggregate pointer /counts/200")
            && message.contains(&format!("{COPIES} requests sent at once"))
            && message.contains("\"412\":9"),
        "{message}"
    );
    let failed = result.failed_step.expect("the failing step is recorded");
    assert_eq!(failed.step, 1);
}

#[tokio::test]
async fn a_status_outside_the_list_names_the_copy() {
    let (url, _race) = start().await;
    let result = run(url, race_scenario(1, json!({"status": 200}))).await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("expected a failure: {result:?}")
    };
    assert!(
        message.contains("status of every one of 10 parallel answers") && message.contains(": 412"),
        "{message}"
    );
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_an_error_under_a_schema() {
    let (url, _race) = start().await;
    let scenario = json!({
        "title": "plain", "profile": "hardening", "requirements": ["hardening.fake"], "checks": 1,
        "steps": [{"name": "two at once", "request": {"method": "POST", "path": "/plain"},
                   "parallel": {"count": 2}, "expect": {"schema": "error"}}]
    });
    let result = run(url, scenario).await;
    assert!(
        matches!(&result.outcome, Outcome::Error(message) if message.contains("not JSON")),
        "{result:?}"
    );
}

#[tokio::test]
async fn bytes_generated_text_and_discovery_values_reach_the_host() {
    let (url, _race) = start().await;
    let scenario = json!({
        "title": "echo", "profile": "hardening", "requirements": ["hardening.fake"], "checks": 5,
        "generate": {"padding": {"repeat": "ab", "times": 40000}},
        "steps": [{
            "name": "bytes that are not UTF-8",
            "request": {"method": "POST", "path": "/echo", "rawBodyBase64": "/+7AryI=",
                        "contentType": "application/octet-stream"},
            "expect": {"status": 200, "assert": [{"pointer": "/hex", "equals": "ffeec0af22"}]}
        }, {
            "name": "generated text and the advertised judge",
            "request": {"method": "POST", "path": "/echo", "rawBody": "{discovery.judge}:{padding}"},
            "expect": {"status": 200, "assert": [
                {"pointer": "/length", "equals": 80005},
                {"pointer": "/text", "contains": "host:abab"}
            ]}
        }]
    });
    let result = run_judged(url, scenario, "host").await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(result.checks, 5);
}
