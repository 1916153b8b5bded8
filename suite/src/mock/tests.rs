//! The mock server over real HTTP: namespaces, scripted answers, the log,
//! secrets, payload checks, delays cut short when a scenario ends.

use super::*;
use crate::testing::assert_contains;
use serde_json::json;
use time::macros::datetime;

const SECRET: &str = "s3cret";

fn wall() -> OffsetDateTime {
    datetime!(2026-06-13 00:00:00 UTC)
}

async fn server(secret: Option<&str>) -> MockServer {
    let schemas = Arc::new(Schemas::embedded().expect("schemas"));
    MockServer::start(MockConfig::local(secret.map(str::to_string)), schemas, wall)
        .await
        .expect("the mock starts")
}

fn script(value: Value) -> MockScript {
    MockScript::parse(&value).expect("script")
}

fn arm_payload(goal: &str, run: &str, iteration: u64) -> Value {
    json!({"goalId": goal, "runId": run, "iteration": iteration, "objective": "ship it",
           "remaining": {"iterations": 3, "costUsd": null, "deadline": null}})
}

fn verifier_payload(goal: &str, run: &str, iteration: u64) -> Value {
    json!({"goalId": goal, "runId": run, "iteration": iteration, "output": {"n": iteration}})
}

struct Reply {
    status: u16,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).expect("a JSON answer")
    }
}

/// Posts `body`, signed (as of the mock's wall clock) with `secret` when
/// one is given.
async fn post(url: &str, body: &Value, secret: Option<&str>) -> Reply {
    post_signed(url, body, secret, wall().unix_timestamp()).await
}

async fn post_signed(url: &str, body: &Value, secret: Option<&str>, at_unix: i64) -> Reply {
    let text = body.to_string();
    let mut request = crate::http::client()
        .post(url)
        .header("content-type", "application/json")
        .body(text.clone());
    if let Some(secret) = secret {
        let key = goalpost_host::webhook::WebhookSecret::new(secret).expect("a valid secret");
        request = request.header(
            signature::SIGNATURE_HEADER,
            goalpost_host::webhook::signature::sign(&key, at_unix, text.as_bytes()),
        );
    }
    let response = request.send().await.expect("the mock answers");
    Reply {
        status: response.status().as_u16(),
        text: response.text().await.expect("a body"),
    }
}

#[tokio::test]
async fn a_session_answers_from_its_script_and_logs_every_call() {
    let server = server(Some(SECRET)).await;
    let session = server
        .open(
            "n1",
            script(json!({"verifier": {"satisfyOn": 2}, "arm": {"costUsd": 0.5}})),
            Instant::now(),
        )
        .expect("open");
    assert_eq!(
        session.verifier_url(),
        format!("{}/mock/n1/verifier", server.base_url())
    );
    let run = post(&session.arm_url(), &arm_payload("g", "r1", 1), Some(SECRET)).await;
    assert_eq!(run.status, 200);
    assert_eq!(
        run.json(),
        json!({"output": {"iteration": 1, "runId": "r1"}, "costUsd": 0.5})
    );
    let first = post(
        &session.verifier_url(),
        &verifier_payload("g", "r1", 1),
        Some(SECRET),
    )
    .await;
    assert_eq!(first.json()["satisfied"], false);
    let second = post(
        &session.verifier_url(),
        &verifier_payload("g", "r2", 2),
        Some(SECRET),
    )
    .await;
    assert_eq!(second.json()["satisfied"], true);
    let view = session.view(&Window::default());
    assert_eq!(view["total"], 3);
    assert_eq!(view["arm"]["runIds"], json!(["r1"]));
    assert_eq!(view["verifier"]["runIds"], json!(["r1", "r2"]));
    assert_eq!(view["verifier"]["satisfiedAnswers"], 1);
    assert_eq!(view["invalid"], 0);
    assert_eq!(view["unauthenticated"], 0);
    let first_call = &view["calls"][0];
    assert_eq!(first_call["endpoint"], "arm");
    assert_eq!(first_call["at"], "2026-06-13T00:00:00.000Z");
    assert_eq!(first_call["body"]["objective"], "ship it");
    assert_eq!(first_call["secret"], "match");
    assert!(first_call["answeredMs"].as_f64().is_some(), "{first_call}");
    let times: Vec<f64> = session.calls().iter().map(|c| c.at_ms).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn probes_on_the_arm_url_are_heartbeats() {
    let server = server(None).await;
    let session = server
        .open(
            "n2",
            script(json!({"heartbeat": {"fireOn": [2]}})),
            Instant::now(),
        )
        .expect("open");
    let probe = json!({"goalId": "g", "probe": "heartbeat", "iteration": 1,
                       "remaining": {"iterations": null, "costUsd": null, "deadline": null}});
    let answers: Vec<Value> = [
        post(&session.arm_url(), &probe, None).await.json(),
        post(&session.arm_url(), &probe, None).await.json(),
        post(&session.arm_url(), &probe, None).await.json(),
    ]
    .to_vec();
    assert_eq!(
        answers,
        [
            json!({"fire": false}),
            json!({"fire": true}),
            json!({"fire": false})
        ]
    );
    let view = session.view(&Window::default());
    assert_eq!(view["heartbeat"]["count"], 3);
    assert_eq!(view["heartbeat"]["fired"], 1);
    assert_eq!(view["arm"]["count"], 0);
    // Without a known secret a present header cannot be judged; a missing one can.
    assert_eq!(view["unauthenticated"], 3);
    assert_eq!(view["calls"][0]["secret"], "missing");
    server.shutdown().await;
}

#[tokio::test]
async fn replayed_and_cross_tenant_signatures_are_refused() {
    let server = server(Some(SECRET)).await;
    let session = server
        .open("n-replay", MockScript::default(), Instant::now())
        .expect("open");
    let payload = arm_payload("g", "r", 1);
    let now = wall().unix_timestamp();
    let old = now - signature::REPLAY_WINDOW_SECS - 1;
    post_signed(&session.arm_url(), &payload, Some(SECRET), old).await;
    // Signed with tenant B's key (derived from the same master) while
    // claiming tenant A: what a tenant-B receiver could try.
    let key_b = goalpost_host::webhook::signature::tenant_secret(
        &goalpost_host::webhook::WebhookSecret::new(SECRET).expect("valid"),
        "tenant-b",
    );
    let text = payload.to_string();
    crate::http::client()
        .post(session.arm_url())
        .header("content-type", "application/json")
        .header(signature::TENANT_HEADER, "tenant-a")
        .header(
            signature::SIGNATURE_HEADER,
            goalpost_host::webhook::signature::sign(&key_b, now, text.as_bytes()),
        )
        .body(text)
        .send()
        .await
        .expect("answers");
    let view = session.view(&Window::default());
    assert_eq!(view["calls"][0]["secret"], "stale");
    assert_eq!(view["calls"][1]["secret"], "mismatch");
    assert_eq!(view["unauthenticated"], 2);
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_secrets_and_broken_payloads_are_recorded() {
    let server = server(Some(SECRET)).await;
    let session = server
        .open("n3", MockScript::default(), Instant::now())
        .expect("open");
    let broken =
        json!({"goalId": "g", "runId": "r", "iteration": 0, "output": 1, "objective": "leak"});
    let reply = post(&session.verifier_url(), &broken, Some("guess")).await;
    // The mock still answers: judging the payload is the scenario's business.
    assert_eq!(reply.status, 200);
    let raw = crate::http::client()
        .post(session.arm_url())
        .header("content-type", "text/plain")
        .body("not json")
        .send()
        .await
        .expect("answers");
    assert_eq!(raw.status().as_u16(), 200);
    let view = session.view(&Window::default());
    assert_eq!(view["invalid"], 2);
    assert_eq!(view["unauthenticated"], 2);
    assert_eq!(view["calls"][0]["secret"], "mismatch");
    let problems = view["calls"][1]["problems"].to_string();
    assert_contains(&problems, "Content-Type");
    assert_contains(&problems, "not JSON");
    assert_eq!(view["calls"][1]["body"], Value::Null);
    assert_eq!(view["calls"][1]["endpoint"], "arm");
    server.shutdown().await;
}

#[tokio::test]
async fn scripted_failures_reach_the_wire() {
    let server = server(None).await;
    let session = server
        .open(
            "n4",
            script(json!({"verifier": {"replies": [
                {"iteration": 1, "status": 500, "body": {"satisfied": true, "confidence": 1}},
                {"iteration": 2, "rawBody": "{\"satisfied\": tru"}
            ]}})),
            Instant::now(),
        )
        .expect("open");
    let error = post(
        &session.verifier_url(),
        &verifier_payload("g", "r1", 1),
        None,
    )
    .await;
    assert_eq!(error.status, 500);
    assert_eq!(error.json()["satisfied"], true);
    let malformed = post(
        &session.verifier_url(),
        &verifier_payload("g", "r2", 2),
        None,
    )
    .await;
    assert_eq!(malformed.status, 200);
    assert_eq!(malformed.text, "{\"satisfied\": tru");
    let view = session.view(&Window::default());
    // Neither answer could satisfy a host.
    assert_eq!(view["verifier"]["satisfiedAnswers"], 0);
    assert_eq!(view["calls"][1]["answer"]["rawBody"], "{\"satisfied\": tru");
    server.shutdown().await;
}

#[tokio::test]
async fn closing_a_session_cuts_delays_short_and_closes_the_namespace() {
    let server = server(None).await;
    let session = server
        .open(
            "n5",
            script(json!({"arm": {"runMs": 30000}})),
            Instant::now(),
        )
        .expect("open");
    let url = session.arm_url();
    let pending = tokio::spawn(async move { post(&url, &arm_payload("g", "r", 1), None).await });
    // The call is logged on arrival, long before its answer is due.
    let deadline = Instant::now() + Duration::from_secs(5);
    while session.total() == 0 {
        assert!(Instant::now() < deadline, "the call never arrived");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(session.calls()[0].answered_ms, None);
    let url = session.arm_url();
    drop(session);
    let cut = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the delayed answer ends with the session")
        .expect("task");
    assert_eq!(cut.status, 503);
    let late = post(&url, &arm_payload("g", "r", 2), None).await;
    assert_eq!(late.status, 404);
    assert_eq!(server.strays(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn namespaces_are_separate_and_unique() {
    let server = server(None).await;
    let a = server
        .open("a", MockScript::default(), Instant::now())
        .expect("open a");
    let b = server
        .open("b", MockScript::default(), Instant::now())
        .expect("open b");
    assert!(matches!(
        server.open("a", MockScript::default(), Instant::now()),
        Err(MockError::Duplicate(_))
    ));
    post(&a.arm_url(), &arm_payload("g", "r", 1), None).await;
    assert_eq!(a.total(), 1);
    assert_eq!(b.total(), 0);
    let unknown = post(
        &format!("{}/mock/a/judge", server.base_url()),
        &json!({}),
        None,
    )
    .await;
    assert_eq!(unknown.status, 404);
    let names: Vec<String> = a.variables().iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        names,
        ["mock.base", "mock.verifier", "mock.arm", "mock.attention"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_unspecified_listen_address_needs_a_public_url() {
    let schemas = Arc::new(Schemas::embedded().expect("schemas"));
    let config = MockConfig {
        listen: SocketAddr::from(([0, 0, 0, 0], 0)),
        public_url: None,
        secret: None,
    };
    assert!(matches!(
        MockServer::start(config.clone(), schemas.clone(), wall).await,
        Err(MockError::NoPublicUrl(_))
    ));
    let public = MockConfig {
        public_url: Some("http://suite.example:9000/".to_string()),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..config
    };
    let server = MockServer::start(public, schemas, wall)
        .await
        .expect("starts");
    assert_eq!(server.base_url(), "http://suite.example:9000");
    let session = server
        .open("n", MockScript::default(), Instant::now())
        .expect("open");
    assert_eq!(session.arm_url(), "http://suite.example:9000/mock/n/arm");
    drop(session);
    server.shutdown().await;
}
