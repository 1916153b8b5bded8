//! Retention for closed goals: the scheduler's tick forgets goals closed
//! longer than `retain_closed` ago (with their events, evaluations, runs
//! and idempotency keys), a bounded batch per tick, and the stored-goals
//! quota gets their places back. The clock is the test's: no waiting.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::{EngineSettings, Quotas};
use goalpost_host::scheduler::RETENTION_BATCH;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::{id_of, plain_body, Harness, A, BASE};

const HOUR_MS: u64 = 3_600_000;

fn host(retain: Option<Duration>, stored: u64) -> Harness {
    let settings = EngineSettings {
        conformance_seams: true,
        retain_closed: retain,
        quotas: Quotas {
            goals_per_tenant: 10_000,
            stored_goals_per_tenant: stored,
            ..Quotas::default()
        },
        ..EngineSettings::default()
    };
    Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    )
}

fn satisfiable() -> Value {
    json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=2" },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 5 },
    })
}

async fn abandon(host: &Harness, id: &str) {
    host.post(&format!("{BASE}/{id}/abandon"), None)
        .await
        .expect(StatusCode::OK, "goal");
}

fn keyed(key: &str, body: &Value) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri(BASE)
        .header("authorization", format!("Bearer {A}"))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body.to_string()))
        .expect("a valid request")
}

/// A goal closed longer than the retention period ago is gone with its
/// events and evaluations; one closed more recently and an open one stay;
/// the tenant's stored-goals quota counts exactly what is left.
#[tokio::test]
async fn goals_closed_longer_than_retention_are_forgotten_and_free_their_places() {
    let host = host(Some(Duration::from_millis(48 * HOUR_MS)), 3);
    // Satisfied through two iterations: events and evaluations.
    let old = id_of(&host.create(satisfiable()).await);
    for _ in 0..2 {
        host.continue_once(&old)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    assert_eq!(host.goal(&old).await["state"], "satisfied");
    assert_eq!(host.evaluations(&old).await.len(), 2);
    host.clock.advance(Duration::from_millis(24 * HOUR_MS));
    let recent = id_of(&host.create(plain_body()).await);
    abandon(&host, &recent).await;
    let recent_events = host.events(&recent).await;
    assert!(!recent_events.is_empty());
    let open = id_of(&host.create(plain_body()).await);
    host.post(BASE, Some(plain_body()))
        .await
        .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");

    // 47 h after `old` closed: nothing is due yet.
    host.clock.advance(Duration::from_millis(23 * HOUR_MS));
    assert!(host.tick().await.forgotten.is_empty());

    // Past 48 h (and a minute, when the tick looks again).
    host.clock.advance(Duration::from_millis(HOUR_MS + 60_000));
    let tick = host.tick().await;
    assert_eq!(tick.forgotten.len(), 1);
    assert_eq!(tick.forgotten[0].as_str(), old);
    for path in [
        format!("{BASE}/{old}"),
        format!("{BASE}/{old}/events"),
        format!("{BASE}/{old}/evaluations"),
    ] {
        host.get(&path)
            .await
            .refused(StatusCode::NOT_FOUND, "not_found");
    }
    assert_eq!(host.goal(&recent).await["state"], "abandoned");
    assert_eq!(host.events(&recent).await, recent_events);
    assert_eq!(host.goal(&open).await["state"], "active");
    // One place is free again, and only one.
    host.create(plain_body()).await;
    host.post(BASE, Some(plain_body()))
        .await
        .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
}

/// A goal whose judge the seam `scriptedJudge` scripted is forgotten with
/// its script (the script names the goal, so it goes first).
#[tokio::test]
async fn a_scripted_judge_is_forgotten_with_its_goal() {
    let settings = EngineSettings {
        conformance_seams: true,
        retain_closed: Some(Duration::from_millis(HOUR_MS)),
        choices: goalpost_host::choices::Choices {
            judge: goalpost_host::domain::Check::Host,
            ..Default::default()
        },
        ..EngineSettings::default()
    };
    let host = Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    );
    let mut body = plain_body();
    body["completion"] = json!({ "check": "host" });
    let id = id_of(&host.create(body).await);
    let scripted = host
        .call(
            Method::PUT,
            &format!("{BASE}/{id}/judge"),
            Some(A),
            Some(json!({ "verifierRef": "conformance:verifier?satisfyOn=1" })),
        )
        .await;
    assert_eq!(scripted.status, StatusCode::NO_CONTENT, "{}", scripted.body);
    let ran = host.continue_once(&id).await;
    assert_eq!(ran.body["goal"]["state"], "satisfied", "{}", ran.body);
    host.clock.advance(Duration::from_millis(HOUR_MS + 60_000));
    let tick = host.tick().await;
    assert_eq!(tick.forgotten.len(), 1);
    host.get(&format!("{BASE}/{id}"))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
}

/// A backlog is worked off a bounded batch per tick; the tick after a
/// full batch goes on at once.
#[tokio::test]
async fn a_backlog_is_forgotten_a_batch_per_tick() {
    let host = host(Some(Duration::from_millis(HOUR_MS)), 100_000);
    let total = RETENTION_BATCH + 44;
    for _ in 0..total {
        let id = id_of(&host.create(plain_body()).await);
        abandon(&host, &id).await;
    }
    host.clock.advance(Duration::from_millis(HOUR_MS + 1));
    assert_eq!(host.tick().await.forgotten.len(), RETENTION_BATCH);
    assert_eq!(host.tick().await.forgotten.len(), 44);
    assert!(host.tick().await.forgotten.is_empty());
    let listed = host.get(BASE).await;
    assert_eq!(
        listed.expect(StatusCode::OK, "goal-list")["goals"],
        json!([])
    );
}

/// The idempotency key that made a forgotten goal goes with it (a key
/// naming a goal that no longer exists could only answer 404): the same
/// key then makes a new goal.
#[tokio::test]
async fn a_forgotten_goals_idempotency_key_goes_with_it() {
    let host = host(Some(Duration::from_millis(HOUR_MS)), 100_000);
    let first = host.send(keyed("retained-key", &plain_body())).await;
    let first = id_of(first.expect(StatusCode::CREATED, "goal"));
    abandon(&host, &first).await;
    host.clock.advance(Duration::from_millis(HOUR_MS + 1));
    assert_eq!(host.tick().await.forgotten.len(), 1);
    let again = host.send(keyed("retained-key", &plain_body())).await;
    let again = id_of(again.expect(StatusCode::CREATED, "goal"));
    assert_ne!(again, first);
}

/// With retention off (`--retain-closed 0`) closed goals stay forever.
#[tokio::test]
async fn without_retention_closed_goals_stay() {
    let host = host(None, 100_000);
    let id = id_of(&host.create(plain_body()).await);
    abandon(&host, &id).await;
    host.clock
        .advance(Duration::from_millis(10 * 365 * 24 * HOUR_MS));
    assert!(host.tick().await.forgotten.is_empty());
    assert_eq!(host.goal(&id).await["state"], "abandoned");
}
