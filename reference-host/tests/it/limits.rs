//! Limits: the 64 KiB body cap, the 8 KiB objective cap and the
//! per-tenant quotas on open goals and on goals the scheduler drives.

use crate::support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::{EngineSettings, Quotas};
use goalpost_host::storage::DbLocation;
use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use support::{id_of, plain_body, Harness, Reply, A, B, BASE};

fn with_quotas(goals: u64, arms: u64) -> Harness {
    let settings = EngineSettings {
        conformance_seams: true,
        quotas: Quotas {
            goals_per_tenant: goals,
            active_arms_per_tenant: arms,
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

fn schedule_body() -> Value {
    json!({
        "objective": "keep the lights on",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "schedule", "armRef": "conformance:arm?intervalMs=60000" },
        "bounds": { "maxLoopIterations": 3 },
    })
}

fn heartbeat_body() -> Value {
    let mut body = schedule_body();
    body["continuation"] =
        json!({ "mode": "heartbeat", "armRef": "conformance:arm?heartbeatMs=60000" });
    body
}

async fn raw_create(host: &Harness, bytes: Vec<u8>) -> Reply {
    let request = Request::builder()
        .method(Method::POST)
        .uri(BASE)
        .header("authorization", format!("Bearer {A}"))
        .header("content-type", "application/json")
        .body(Body::from(bytes))
        .expect("a valid request");
    host.send(request).await
}

/// A create body of exactly `size` bytes (padding in the objective).
fn body_of_size(size: usize) -> Vec<u8> {
    let mut body = plain_body();
    body["objective"] = json!("");
    let bare = body.to_string().len();
    body["objective"] = json!(" ".repeat(size - bare));
    let bytes = body.to_string().into_bytes();
    assert_eq!(bytes.len(), size);
    bytes
}

#[tokio::test]
async fn bodies_up_to_64_kib_are_read_and_larger_ones_are_413() {
    let host = Harness::seams();
    // Read, then refused for the objective: the body limit let it through.
    raw_create(&host, body_of_size(64 * 1024))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "objective_too_long");
    raw_create(&host, body_of_size(64 * 1024 + 1))
        .await
        .refused(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(host.get(BASE).await.body["goals"], json!([]));
}

#[tokio::test]
async fn a_chunked_body_without_length_is_capped_too() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let host = RunningHost::start(Config::conformance_in_memory(vec![(
        A.to_string(),
        "tenant-a".to_string(),
    )]))
    .await
    .expect("the host starts");
    let mut stream = tokio::net::TcpStream::connect(host.addr())
        .await
        .expect("connect");
    let head = format!(
        "POST {BASE} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {A}\r\n\
         content-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let chunk = format!("400\r\n{}\r\n", " ".repeat(1024));
    // Up to 80 KiB; the host may answer and close before all of it is sent.
    for _ in 0..80 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    host.shutdown().await;
}

#[tokio::test]
async fn a_declared_oversized_body_is_read_before_its_413() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let host = RunningHost::start(Config::conformance_in_memory(vec![(
        A.to_string(),
        "tenant-a".to_string(),
    )]))
    .await
    .expect("the host starts");
    let mut stream = tokio::net::TcpStream::connect(host.addr())
        .await
        .expect("connect");
    let size = 7 * 1024 * 1024;
    let head = format!(
        "POST {BASE} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {A}\r\n\
         content-type: application/json\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    // Every byte is accepted: the host reads the body it refuses, so the
    // client never meets a reset that could swallow the answer.
    stream
        .write_all(&vec![b' '; size])
        .await
        .expect("the whole body is read");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("the answer");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    host.shutdown().await;
}

#[tokio::test]
async fn objectives_over_8_kib_of_utf8_are_422_on_create_and_patch() {
    let host = Harness::seams();
    let mut body = plain_body();
    body["objective"] = json!("o".repeat(8 * 1024));
    let goal = host.create(body.clone()).await;
    // 2731 three-byte characters: few characters, 8193 bytes.
    body["objective"] = json!("€".repeat(2731));
    let reply = host.post(BASE, Some(body.clone())).await;
    let error = reply.refused(StatusCode::UNPROCESSABLE_ENTITY, "objective_too_long");
    assert_eq!(error["details"]["pointer"], "/objective");
    // Every 400 of the body comes first.
    body["bounds"] = json!({ "maxLoopIterations": 0 });
    host.post(BASE, Some(body))
        .await
        .refused(StatusCode::BAD_REQUEST, "invalid_request");

    let path = format!("{BASE}/{}", id_of(&goal));
    host.patch(&path, json!({ "objective": "x".repeat(8 * 1024 + 1) }))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "objective_too_long");
    let unchanged = host.get(&path).await;
    assert_eq!(unchanged.header("etag"), Some("\"1\""));
    host.patch(&path, json!({ "objective": "x".repeat(8 * 1024) }))
        .await
        .expect(StatusCode::OK, "goal");
    assert_eq!(
        host.get(BASE).await.body["goals"].as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn open_goals_per_tenant_are_capped() {
    let host = with_quotas(3, 100);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(id_of(&host.create(plain_body()).await));
    }
    let reply = host.post(BASE, Some(plain_body())).await;
    let error = reply.refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(
        error["details"],
        json!({ "quota": "goalsPerTenant", "limit": 3 })
    );
    // Another tenant has its own quota.
    host.call(Method::POST, BASE, Some(B), Some(plain_body()))
        .await
        .expect(StatusCode::CREATED, "goal");
    // A closed goal frees its place; an escalated or paused one would not.
    host.post(&format!("{BASE}/{}/abandon", ids[0]), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.create(plain_body()).await;
    host.post(BASE, Some(plain_body()))
        .await
        .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(
        host.get(BASE).await.body["goals"].as_array().map(Vec::len),
        Some(4)
    );
}

#[tokio::test]
async fn concurrent_creates_never_overshoot_the_quota() {
    let host = Arc::new(with_quotas(5, 100));
    let calls: Vec<_> = (0..25)
        .map(|_| {
            let host = Arc::clone(&host);
            tokio::spawn(async move { host.post(BASE, Some(plain_body())).await.status })
        })
        .collect();
    let mut created = 0;
    for call in calls {
        match call.await.expect("the call finishes") {
            StatusCode::CREATED => created += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(created, 5);
    assert_eq!(
        host.get(BASE).await.body["goals"].as_array().map(Vec::len),
        Some(5)
    );
}

#[tokio::test]
async fn armed_goals_per_tenant_are_capped_on_create_and_patch() {
    let host = with_quotas(100, 2);
    let first = id_of(&host.create(schedule_body()).await);
    host.create(heartbeat_body()).await;
    let reply = host.post(BASE, Some(schedule_body())).await;
    let error = reply.refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(
        error["details"],
        json!({ "quota": "activeArmsPerTenant", "limit": 2 })
    );
    // Manual goals do not count.
    let manual = id_of(&host.create(plain_body()).await);
    let manual_path = format!("{BASE}/{manual}");
    host.patch(
        &manual_path,
        json!({ "continuation": { "mode": "schedule" } }),
    )
    .await
    .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(host.goal(&manual).await["continuation"]["mode"], "manual");
    // An armed goal may still be edited within its mode.
    host.patch(
        &format!("{BASE}/{first}"),
        json!({ "continuation": { "mode": "heartbeat" } }),
    )
    .await
    .expect(StatusCode::OK, "goal");
    // Pausing does not free a place; closing does.
    host.post(&format!("{BASE}/{first}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.post(BASE, Some(schedule_body()))
        .await
        .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    host.post(&format!("{BASE}/{first}/abandon"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.patch(
        &manual_path,
        json!({ "continuation": { "mode": "schedule" } }),
    )
    .await
    .expect(StatusCode::OK, "goal");
    host.post(BASE, Some(schedule_body()))
        .await
        .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
}

/// A `commitment` goal's runs start on their own (whenever the last one
/// committed to a check-in), so it counts against the armed quota like a
/// `schedule` or `heartbeat` goal, on create and on PATCH. It escaped it.
#[tokio::test]
async fn commitment_goals_count_against_the_armed_quota() {
    let host = with_quotas(100, 2);
    let commitment = json!({
        "objective": "check back when told",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "commitment", "armRef": "conformance:arm" },
        "bounds": { "maxLoopIterations": 3 },
    });
    host.create(commitment.clone()).await;
    host.create(schedule_body()).await;
    let refused = host.post(BASE, Some(commitment)).await;
    let body = refused.refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(body["details"]["quota"], "activeArmsPerTenant");
    let manual = id_of(&host.create(plain_body()).await);
    host.patch(
        &format!("{BASE}/{manual}"),
        json!({ "continuation": { "mode": "commitment", "armRef": "conformance:arm" } }),
    )
    .await
    .refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
}
