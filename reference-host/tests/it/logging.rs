//! What `serve` logs, captured with its own subscriber: every request as
//! method, path, status and latency, and never an objective or a token.

use std::io::Write;
use std::sync::{Arc, Mutex};

use crate::support;

use goalpost_host::logging::{subscriber, LogFormat, DEFAULT_FILTER};
use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

const CANARY_OBJECTIVE: &str = "canary-objective-7f3a9c";
const CANARY_TOKEN: &str = "canary-token-b81e44";
const CANARY_SECRET: &str = "canary-webhook-secret-5d20e1";

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    fn text(&self) -> String {
        let bytes = self.0.lock().expect("not poisoned").clone();
        String::from_utf8(bytes).expect("UTF-8 logs")
    }
}

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;

    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

async fn exchange(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client.request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the host answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// Starts a host, creates a goal with the canary objective and token, runs
/// an iteration whose run fails (so the engine logs too), refuses a request
/// that carries the canary in its body, and returns the logs.
fn logs_of_a_session(format: LogFormat, filter: &str) -> String {
    let buffer = Buffer::default();
    let subscriber = subscriber(format, EnvFilter::new(filter), false, buffer.clone());
    // A current-thread runtime: the host's tasks run on this thread, under
    // this thread's default subscriber.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    support::scoped_subscribers_see_every_callsite();
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let host = RunningHost::start(Config::conformance_in_memory(vec![(
                CANARY_TOKEN.into(),
                "acme".into(),
            )]))
            .await
            .expect("the host starts");
            let base = format!("{}/v1/host/sample/goals", host.base_url());
            let client = goalpost_host::tls::client();
            let (status, goal) = exchange(
                &client,
                reqwest::Method::POST,
                base.clone(),
                CANARY_TOKEN,
                Some(json!({
                    "objective": CANARY_OBJECTIVE,
                    "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
                    "continuation": { "mode": "manual", "armRef": "conformance:arm?failOn=1" },
                    "bounds": { "maxLoopIterations": 3 },
                })),
            )
            .await;
            assert_eq!(status, 201, "{goal}");
            let id = goal["id"].as_str().expect("an id");
            let (status, _) = exchange(
                &client,
                reqwest::Method::POST,
                format!("{base}/{id}/continue"),
                CANARY_TOKEN,
                None,
            )
            .await;
            assert_eq!(status, 200);
            let (status, _) = exchange(
                &client,
                reqwest::Method::PATCH,
                format!("{base}/{id}"),
                CANARY_TOKEN,
                Some(json!({ "state": "satisfied", "objective": CANARY_OBJECTIVE })),
            )
            .await;
            assert_eq!(status, 422);
            let (status, _) = exchange(
                &client,
                reqwest::Method::GET,
                base.clone(),
                &format!("{CANARY_TOKEN}-wrong"),
                None,
            )
            .await;
            assert_eq!(status, 401);
            host.shutdown().await;
        });
    });
    buffer.text()
}

fn assert_no_canary(logs: &str) {
    assert!(
        !logs.contains(CANARY_OBJECTIVE),
        "the objective leaked:\n{logs}"
    );
    assert!(!logs.contains(CANARY_TOKEN), "a token leaked:\n{logs}");
}

#[test]
fn text_logs_show_requests_but_no_objective_or_token() {
    let logs = logs_of_a_session(LogFormat::Text, DEFAULT_FILTER);
    // The capture works: the requests are there, a tenant's with its
    // tenant.
    assert!(
        logs.contains("request{method=POST path=/v1/host/sample/goals tenant=acme}"),
        "{logs}"
    );
    assert!(logs.contains("status=201"), "{logs}");
    assert!(logs.contains("status=422"), "{logs}");
    assert!(logs.contains("status=401"), "{logs}");
    assert!(logs.contains("latency_ms="), "{logs}");
    assert!(logs.contains("run failed"), "the engine logs too:\n{logs}");
    assert_no_canary(&logs);
}

#[test]
fn json_logs_are_json_lines_with_the_request_span() {
    let logs = logs_of_a_session(LogFormat::Json, DEFAULT_FILTER);
    let lines: Vec<Value> = logs
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    let created = lines
        .iter()
        .find(|line| line["fields"]["status"] == 201)
        .unwrap_or_else(|| panic!("no 201 logged:\n{logs}"));
    assert_eq!(created["span"]["method"], "POST");
    assert_eq!(created["span"]["path"], "/v1/host/sample/goals");
    assert_eq!(created["span"]["tenant"], "acme");
    assert!(created["fields"]["latency_ms"].is_u64());
    assert_no_canary(&logs);
}

#[test]
fn even_trace_level_from_the_host_keeps_them_out() {
    let logs = logs_of_a_session(LogFormat::Text, "goalpost_host=trace");
    assert!(logs.contains("status=201"), "{logs}");
    assert_no_canary(&logs);
}

/// An arm and a verifier that echo what they are sent (the objective
/// included) in answers the host must refuse as schema-invalid.
async fn echoing_webhooks() -> String {
    use axum::routing::post;
    use axum::{Json, Router};
    let router = Router::new()
        .route(
            "/arm",
            post(|Json(call): Json<Value>| async move {
                Json(json!({ "output": call.clone(), "costUsd": call["objective"].clone() }))
            }),
        )
        .route(
            "/verifier",
            post(|Json(call): Json<Value>| async move {
                Json(json!({ "satisfied": call.to_string(), "confidence": 2 }))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    url
}

// Known leak, outside the logging code: `engine/iteration.rs` logs a failed
// run's error at info, and a schema-invalid webhook answer's error quotes the
// offending values (`/costUsd: "<the objective, echoed>" is not of types …`).
// Un-ignore once webhook errors name pointers without values (or the detail
// moves to debug).
#[test]
#[ignore = "webhook answer violations quote values at info; see the comment above"]
fn webhook_calls_and_refused_answers_leak_nothing() {
    let buffer = Buffer::default();
    let subscriber = subscriber(
        LogFormat::Text,
        EnvFilter::new(DEFAULT_FILTER),
        false,
        buffer.clone(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    support::scoped_subscribers_see_every_callsite();
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let hooks = echoing_webhooks().await;
            let mut config =
                Config::conformance_in_memory(vec![(CANARY_TOKEN.into(), "acme".into())]);
            config.webhook_secret = Some(CANARY_SECRET.into());
            let host = RunningHost::start(config).await.expect("the host starts");
            let base = format!("{}/v1/host/sample/goals", host.base_url());
            let client = goalpost_host::tls::client();
            for (verifier, arm) in [
                ("conformance:verifier".to_string(), format!("{hooks}/arm")),
                (format!("{hooks}/verifier"), "conformance:arm".to_string()),
            ] {
                let (status, goal) = exchange(
                    &client,
                    reqwest::Method::POST,
                    base.clone(),
                    CANARY_TOKEN,
                    Some(json!({
                        "objective": CANARY_OBJECTIVE,
                        "completion": { "check": "verifier", "verifierRef": verifier },
                        "continuation": { "mode": "manual", "armRef": arm },
                        "bounds": { "maxLoopIterations": 3 },
                    })),
                )
                .await;
                assert_eq!(status, 201, "{goal}");
                let id = goal["id"].as_str().expect("an id");
                let (status, stepped) = exchange(
                    &client,
                    reqwest::Method::POST,
                    format!("{base}/{id}/continue"),
                    CANARY_TOKEN,
                    None,
                )
                .await;
                assert_eq!(status, 200, "{stepped}");
                assert_eq!(stepped["evaluation"]["failureClass"], "environmental");
            }
            host.shutdown().await;
        });
    });
    let logs = buffer.text();
    assert!(
        logs.contains("run failed"),
        "the arm's refusal is logged:\n{logs}"
    );
    assert!(
        logs.contains("judge failed"),
        "the verifier's refusal is logged:\n{logs}"
    );
    assert_no_canary(&logs);
    assert!(
        !logs.contains(CANARY_SECRET),
        "the webhook secret leaked:\n{logs}"
    );
}
