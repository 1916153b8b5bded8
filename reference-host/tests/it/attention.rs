//! The attention extension through the router, on a clock the test drives:
//! a timed pause woken by the scheduler's tick (and not before), bindings
//! that survive a restart with their due timers rebuilt, the fail-closed
//! check, authority credentials apart from tenant tokens, and a store that
//! cannot serve attention never advertising it.

use std::sync::Arc;
use std::time::Duration;

use crate::support::receiver::{Answer, Receiver};
use crate::support::{Harness, A, B, BASE};
use axum::http::{Method, StatusCode};
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::engine::EngineSettings;
use goalpost_host::http::attention::Authorities;
use goalpost_host::storage::DbLocation;
use goalpost_host::{app, AppState, Tokens};
use serde_json::{json, Value};

const PRINCIPAL: &str = "principal-token";
const OPERATOR: &str = "host-authority-token";

/// A host whose webhooks may reach loopback, with authority credentials.
fn harness(location: &DbLocation, clock: Arc<ManualClock>) -> Harness {
    let settings = EngineSettings {
        conformance_seams: true,
        egress: goalpost_host::domain::egress::EgressPolicy::new(vec![
            goalpost_host::domain::egress::AllowEntry::parse("127.0.0.1").expect("entry"),
        ]),
        ..EngineSettings::default()
    };
    let mut host = Harness::with_settings(location, settings, clock);
    let tokens = Tokens::new(&[
        (A.to_string(), "tenant-a".to_string()),
        (B.to_string(), "tenant-b".to_string()),
    ])
    .expect("tokens");
    let authorities = Authorities::new(
        &[(OPERATOR.to_string(), "tenant-a".to_string())],
        &[(PRINCIPAL.to_string(), "tenant-a".to_string())],
    )
    .expect("authorities");
    host.app = app(AppState::new(Arc::clone(&host.engine), tokens).with_authorities(authorities));
    host
}

/// A worker that answers every binding by its mode.
async fn worker() -> Receiver {
    Receiver::start(|call, _| {
        Answer::Json(match call.body["mode"].as_str() {
            Some("falsify") => json!({"output": null, "evidence": [
                {"kind": "test", "ref": "t-1", "blocking": true}
            ]}),
            Some("review") => json!({"output": null, "verdict": {"approve": true}}),
            _ => json!({"output": null}),
        })
    })
    .await
}

async fn goal(host: &Harness) -> String {
    let goal = host
        .create(json!({
            "objective": "ship the EU release",
            "completion": {"check": "verifier", "verifierRef": "conformance:verifier"},
            "continuation": {"mode": "manual"},
            "bounds": {"maxLoopIterations": 50},
        }))
        .await;
    goal["id"].as_str().expect("an id").to_string()
}

async fn bind(host: &Harness, goal: &str, mode: &str, arm: &str) -> String {
    let reply = host
        .post(
            &format!("{BASE}/{goal}/attention/bindings"),
            Some(json!({"mode": mode, "armRef": arm})),
        )
        .await;
    let body = reply.expect(StatusCode::CREATED, "attention-binding");
    body["id"].as_str().expect("an id").to_string()
}

async fn binding(host: &Harness, goal: &str, binding: &str) -> Value {
    host.get(&format!("{BASE}/{goal}/attention/bindings/{binding}"))
        .await
        .expect(StatusCode::OK, "attention-binding")
        .clone()
}

#[tokio::test]
async fn a_timed_pause_is_woken_by_the_tick_at_its_instant_and_not_before() {
    let clock = Arc::new(ManualClock::fixed());
    let host = harness(&DbLocation::Memory, Arc::clone(&clock));
    let worker = worker().await;
    let id = goal(&host).await;
    let observer = bind(&host, &id, "observe", &worker.url("/run")).await;
    let until = clock.now().saturating_add_ms(60_000);
    let paused = host
        .post(
            &format!("{BASE}/{id}/attention/bindings/{observer}/pause"),
            Some(json!({"until": until.to_wire()})),
        )
        .await;
    let paused = paused.expect(StatusCode::OK, "attention-binding");
    assert_eq!(paused["status"], "paused");
    assert_eq!(paused["until"], until.to_wire());
    // One tick a millisecond early changes nothing.
    clock.advance(Duration::from_millis(59_999));
    host.scheduler.tick(clock.now()).await.expect("tick");
    assert_eq!(binding(&host, &id, &observer).await["status"], "paused");
    let continued = host
        .post(
            &format!("{BASE}/{id}/attention/bindings/{observer}/continue"),
            None,
        )
        .await;
    continued.expect(StatusCode::CONFLICT, "error");
    // The tick at the instant wakes it, with its event.
    clock.advance(Duration::from_millis(1));
    host.scheduler.tick(clock.now()).await.expect("tick");
    let woken = binding(&host, &id, &observer).await;
    assert_eq!(woken["status"], "active");
    assert_eq!(woken["eligible"], true);
    let events = host
        .get(&format!("{BASE}/{id}/attention/events"))
        .await
        .expect(StatusCode::OK, "event-list")
        .clone();
    let resumed: Vec<&Value> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| event["type"] == "attention.binding.resumed")
        .collect();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["payload"]["woken"], true);
    // The goal was never paused.
    assert_eq!(host.goal(&id).await["state"], "active");
    assert!(worker.calls().is_empty(), "nothing ran while paused");
}

#[tokio::test]
async fn an_interval_binding_runs_on_the_tick_and_stops_when_the_goal_pauses() {
    let clock = Arc::new(ManualClock::fixed());
    let host = harness(&DbLocation::Memory, Arc::clone(&clock));
    let worker = worker().await;
    let id = goal(&host).await;
    let arm = worker.url("/run?intervalMs=1000#intervalMs=1000");
    bind(&host, &id, "falsify", &arm).await;
    host.scheduler.tick(clock.now()).await.expect("tick");
    host.scheduler.settle().await;
    assert_eq!(worker.calls().len(), 1, "an interval binding runs at once");
    assert_eq!(worker.calls()[0].body["mode"], "falsify");
    // Not again before its interval.
    clock.advance(Duration::from_millis(999));
    host.scheduler.tick(clock.now()).await.expect("tick");
    host.scheduler.settle().await;
    assert_eq!(worker.calls().len(), 1);
    clock.advance(Duration::from_millis(1));
    host.scheduler.tick(clock.now()).await.expect("tick");
    host.scheduler.settle().await;
    assert_eq!(worker.calls().len(), 2);
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 2);
    // A paused goal runs none of its bindings.
    host.post(&format!("{BASE}/{id}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    clock.advance(Duration::from_millis(5_000));
    host.scheduler.tick(clock.now()).await.expect("tick");
    host.scheduler.settle().await;
    assert_eq!(worker.calls().len(), 2);
    // Resumed, it runs again.
    host.post(&format!("{BASE}/{id}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.scheduler.tick(clock.now()).await.expect("tick");
    host.scheduler.settle().await;
    assert_eq!(worker.calls().len(), 3);
}

#[tokio::test]
async fn attention_survives_a_restart_and_its_timers_are_rebuilt() {
    let dir = tempfile::tempdir().expect("a folder");
    let location = DbLocation::File(dir.path().join("attention.db"));
    let clock = Arc::new(ManualClock::fixed());
    let worker = worker().await;
    let (id, falsifier, observer) = {
        let host = harness(&location, Arc::clone(&clock));
        let id = goal(&host).await;
        let falsifier = bind(&host, &id, "falsify", &worker.url("/run")).await;
        let observer = bind(&host, &id, "observe", &worker.url("/run")).await;
        host.post(
            &format!("{BASE}/{id}/attention/bindings/{falsifier}/continue"),
            None,
        )
        .await
        .expect(StatusCode::OK, "attention-continue-response");
        let until = clock.now().saturating_add_ms(10_000);
        host.post(
            &format!("{BASE}/{id}/attention/bindings/{observer}/pause"),
            Some(json!({"until": until.to_wire()})),
        )
        .await
        .expect(StatusCode::OK, "attention-binding");
        (id, falsifier, observer)
    };
    let host = harness(&location, Arc::clone(&clock));
    let tenant = goalpost_host::domain::Tenant::parse("tenant-a").expect("tenant");
    assert_eq!(
        host.engine
            .attention_recover(&[tenant])
            .await
            .expect("recovered"),
        1
    );
    let evidence = host
        .get(&format!("{BASE}/{id}/attention/evidence"))
        .await
        .expect(StatusCode::OK, "attention-evidence-list")
        .clone();
    assert_eq!(evidence["evidence"][0]["bindingId"], falsifier.as_str());
    assert_eq!(evidence["evidence"][0]["blocking"], true);
    assert_eq!(binding(&host, &id, &observer).await["status"], "paused");
    clock.advance(Duration::from_millis(10_000));
    host.scheduler.tick(clock.now()).await.expect("tick");
    assert_eq!(binding(&host, &id, &observer).await["status"], "active");
}

#[tokio::test]
async fn authority_credentials_confirm_and_open_nothing_else() {
    let clock = Arc::new(ManualClock::fixed());
    let host = harness(&DbLocation::Memory, clock);
    let id = goal(&host).await;
    host.call(
        Method::PUT,
        &format!("{BASE}/{id}/attention/policy"),
        Some(A),
        Some(json!({"kind": "principal-confirmed"})),
    )
    .await
    .expect(StatusCode::OK, "attention-policy");
    let confirmations = format!("{BASE}/{id}/attention/confirmations");
    host.call(Method::POST, &confirmations, Some(A), None)
        .await
        .refused(StatusCode::FORBIDDEN, "authority_required");
    host.call(
        Method::POST,
        &confirmations,
        Some(PRINCIPAL),
        Some(json!({"authority": "principal"})),
    )
    .await
    .refused(StatusCode::BAD_REQUEST, "invalid_request");
    // An authority credential is not a tenant's token.
    host.call(Method::GET, &format!("{BASE}/{id}"), Some(PRINCIPAL), None)
        .await
        .refused(StatusCode::UNAUTHORIZED, "unauthorized");
    host.call(
        Method::POST,
        &confirmations,
        Some(PRINCIPAL),
        Some(json!({"evidence": {"kind": "signature", "ref": "sig-1"}})),
    )
    .await
    .expect(StatusCode::CREATED, "attention-confirmation");
    let closed = host
        .post(&format!("{BASE}/{id}/attention/close"), None)
        .await;
    assert_eq!(closed.expect(StatusCode::OK, "goal")["state"], "satisfied");
}

#[tokio::test]
async fn a_bad_binding_body_is_refused_and_writes_nothing() {
    let clock = Arc::new(ManualClock::fixed());
    let host = harness(&DbLocation::Memory, clock);
    let id = goal(&host).await;
    let etag = host.get(&format!("{BASE}/{id}")).await.headers["etag"].clone();
    let bindings = format!("{BASE}/{id}/attention/bindings");
    for body in [
        json!({"mode": "supervise", "armRef": "http://127.0.0.1:9/run"}),
        json!({"mode": "pursue"}),
        json!({"mode": "pursue", "armRef": "conformance:arm"}),
        json!({"mode": "pursue", "armRef": "http://127.0.0.1:9/run", "extra": 1}),
        json!([]),
    ] {
        host.post(&bindings, Some(body.clone()))
            .await
            .refused(StatusCode::BAD_REQUEST, "invalid_request");
    }
    // An arm the egress policy denies.
    host.post(
        &bindings,
        Some(json!({"mode": "pursue", "armRef": "http://10.0.0.1/run"})),
    )
    .await
    .refused(StatusCode::UNPROCESSABLE_ENTITY, "egress_denied");
    let after = host.get(&format!("{BASE}/{id}")).await;
    assert_eq!(after.headers["etag"], etag, "nothing was written");
    let list = host.get(&bindings).await;
    assert_eq!(
        list.expect(StatusCode::OK, "attention-binding-list")["bindings"],
        json!([])
    );
}

#[tokio::test]
async fn a_store_several_replicas_share_never_advertises_attention() {
    let Some(server) = crate::pg::server() else {
        return;
    };
    let schema = crate::pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let host = harness(&location, Arc::new(ManualClock::fixed()));
    let discovery = host
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    assert!(discovery
        .body
        .pointer("/extensions/goalpost/attention")
        .is_none());
    let id = goal(&host).await;
    host.get(&format!("{BASE}/{id}/attention/bindings"))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
    drop(host);
    schema.drop().await;
}

#[tokio::test]
async fn a_sqlite_host_advertises_attention_and_a_host_without_it_serves_none() {
    let host = harness(&DbLocation::Memory, Arc::new(ManualClock::fixed()));
    let discovery = host
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    let attention = &discovery.body["extensions"]["goalpost"]["attention"];
    assert_eq!(attention["modes"].as_array().map(Vec::len), Some(6));
    assert_eq!(
        attention["policies"],
        json!([
            "verifier",
            "host-confirmed",
            "principal-confirmed",
            "quorum"
        ])
    );
    let settings = EngineSettings {
        conformance_seams: true,
        choices: goalpost_host::choices::Choices {
            attention_extension: goalpost_host::choices::AttentionOffer::Off,
            ..goalpost_host::choices::Choices::default()
        },
        ..EngineSettings::default()
    };
    let off = Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    );
    let discovery = off
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    assert!(discovery.body.get("extensions").is_none());
    let id = goal(&off).await;
    off.get(&format!("{BASE}/{id}/attention/bindings"))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
}
