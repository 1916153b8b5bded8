//! `Idempotency-Key` on create (DESIGN "Hardening contract"): the
//! same key and body answer the goal the key made, another body is 409,
//! keys belong to a tenant, expire after 24 h and survive a restart.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::{id_of, plain_body, Harness, Reply, A, B, BASE};

fn create_request(token: &str, key: Option<&str>, body: &str) -> Request<Body> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(BASE)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request
        .body(Body::from(body.to_string()))
        .expect("a valid request")
}

async fn create_with_key(host: &Harness, token: &str, key: &str, body: &Value) -> Reply {
    host.send(create_request(token, Some(key), &body.to_string()))
        .await
}

async fn goal_count(host: &Harness, token: &str) -> usize {
    let reply = host.call(Method::GET, BASE, Some(token), None).await;
    reply.expect(StatusCode::OK, "goal-list")["goals"]
        .as_array()
        .expect("goals")
        .len()
}

#[tokio::test]
async fn the_same_key_and_body_answer_the_same_goal_once() {
    let host = Harness::seams();
    let first = create_with_key(&host, A, "order-1", &plain_body()).await;
    let goal = first.expect(StatusCode::CREATED, "goal").clone();
    assert_eq!(first.header("idempotent-replayed"), None);

    // Same JSON, other key order and spacing.
    let reordered = r#"{ "bounds": {"maxLoopIterations": 3}, "continuation": {"mode": "manual"},
        "completion": {"check": "verifier"}, "objective": "ship the release checklist" }"#;
    let again = host
        .send(create_request(A, Some("order-1"), reordered))
        .await;
    assert_eq!(again.expect(StatusCode::CREATED, "goal"), &goal);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("etag"), first.header("etag"));
    assert_eq!(goal_count(&host, A).await, 1);

    // A replay is the original answer again, even after the goal changed;
    // a GET shows the goal as it is now.
    let path = format!("{BASE}/{}", id_of(&goal));
    host.patch(&path, json!({ "objective": "edited since" }))
        .await
        .expect(StatusCode::OK, "goal");
    let later = create_with_key(&host, A, "order-1", &plain_body()).await;
    assert_eq!(later.expect(StatusCode::CREATED, "goal"), &goal);
    assert_eq!(later.header("etag"), Some("\"1\""));
    assert_eq!(later.header("idempotent-replayed"), Some("true"));
    let now = host.get(&path).await;
    assert_eq!(now.body["objective"], "edited since");
    assert_eq!(now.header("etag"), Some("\"2\""));
    assert_eq!(goal_count(&host, A).await, 1);

    // Without a key, or with another key, creates are not deduplicated.
    host.create(plain_body()).await;
    create_with_key(&host, A, "order-2", &plain_body())
        .await
        .expect(StatusCode::CREATED, "goal");
    assert_eq!(goal_count(&host, A).await, 3);
}

#[tokio::test]
async fn the_same_key_with_another_body_is_409_and_creates_nothing() {
    let host = Harness::seams();
    let goal = create_with_key(&host, A, "order-1", &plain_body())
        .await
        .expect(StatusCode::CREATED, "goal")
        .clone();
    let mut other = plain_body();
    other["objective"] = json!("something else entirely");
    let reply = create_with_key(&host, A, "order-1", &other).await;
    reply.refused(StatusCode::CONFLICT, "idempotency_conflict");
    // Even a body that would be refused on its own is a conflict first.
    let reply = create_with_key(&host, A, "order-1", &json!({ "objective": 1 })).await;
    reply.refused(StatusCode::CONFLICT, "idempotency_conflict");
    assert_eq!(goal_count(&host, A).await, 1);
    assert_eq!(host.goal(&id_of(&goal)).await, goal);
}

#[tokio::test]
async fn keys_belong_to_a_tenant() {
    let host = Harness::seams();
    let mine = create_with_key(&host, A, "shared-key", &plain_body())
        .await
        .expect(StatusCode::CREATED, "goal")
        .clone();
    let theirs = create_with_key(&host, B, "shared-key", &plain_body()).await;
    let theirs = theirs.expect(StatusCode::CREATED, "goal");
    assert_ne!(theirs["id"], mine["id"]);
    assert_eq!(theirs["owner"]["tenant"], "tenant-b");
    assert_eq!(goal_count(&host, A).await, 1);
    assert_eq!(goal_count(&host, B).await, 1);
}

#[tokio::test]
async fn bad_keys_are_400_and_refused_bodies_store_no_key() {
    let host = Harness::seams();
    for key in ["", &"k".repeat(256), "two words"] {
        let reply = host
            .send(create_request(A, Some(key), &plain_body().to_string()))
            .await;
        let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(error["details"], json!({ "header": "Idempotency-Key" }));
    }
    create_with_key(&host, A, &"k".repeat(255), &plain_body())
        .await
        .expect(StatusCode::CREATED, "goal");

    // A refused create leaves the key free for a good body.
    let mut unbounded = plain_body();
    unbounded["bounds"] = json!({});
    create_with_key(&host, A, "retry-me", &unbounded)
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "bounds_required");
    create_with_key(&host, A, "retry-me", &plain_body())
        .await
        .expect(StatusCode::CREATED, "goal");
    assert_eq!(goal_count(&host, A).await, 2);
}

#[tokio::test]
async fn concurrent_creates_with_one_key_make_one_goal() {
    let host = Arc::new(Harness::seams());
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let host = Arc::clone(&host);
            tokio::spawn(async move {
                let reply = create_with_key(&host, A, "burst", &plain_body()).await;
                (
                    reply.status,
                    reply.body["id"].clone(),
                    reply.header("idempotent-replayed").map(str::to_string),
                )
            })
        })
        .collect();
    let mut ids = Vec::new();
    let mut fresh = 0;
    for call in calls {
        let (status, id, replayed) = call.await.expect("the call finishes");
        assert_eq!(status, StatusCode::CREATED);
        ids.push(id);
        if replayed.is_none() {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1, "exactly one create made the goal");
    assert!(ids.iter().all(|id| id == &ids[0]), "{ids:?}");
    assert_eq!(goal_count(&host, A).await, 1);
}

#[tokio::test]
async fn keys_expire_after_24_hours() {
    let host = Harness::seams();
    let first = create_with_key(&host, A, "daily", &plain_body())
        .await
        .expect(StatusCode::CREATED, "goal")
        .clone();
    host.clock.advance(Duration::from_secs(24 * 3600 - 1));
    let replay = create_with_key(&host, A, "daily", &plain_body()).await;
    assert_eq!(
        replay.expect(StatusCode::CREATED, "goal")["id"],
        first["id"]
    );
    host.clock.advance(Duration::from_secs(1));
    let mut other = plain_body();
    other["objective"] = json!("a new day, a new body");
    let fresh = create_with_key(&host, A, "daily", &other).await;
    let fresh = fresh.expect(StatusCode::CREATED, "goal");
    assert_ne!(fresh["id"], first["id"]);
    assert_eq!(goal_count(&host, A).await, 2);
    assert_eq!(
        host.engine.purge_idempotency_keys().await.expect("purge"),
        0
    );
    host.clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(
        host.engine.purge_idempotency_keys().await.expect("purge"),
        1
    );
}

#[tokio::test]
async fn keys_survive_a_restart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("host.db"));
    let clock = Arc::new(ManualClock::fixed());
    let goal = {
        let host = Harness::open(&location, true, Arc::clone(&clock));
        create_with_key(&host, A, "across-restarts", &plain_body())
            .await
            .expect(StatusCode::CREATED, "goal")
            .clone()
    };
    let host = Harness::open(&location, true, clock);
    let replay = create_with_key(&host, A, "across-restarts", &plain_body()).await;
    assert_eq!(replay.expect(StatusCode::CREATED, "goal"), &goal);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let mut other = plain_body();
    other["objective"] = json!("changed my mind");
    create_with_key(&host, A, "across-restarts", &other)
        .await
        .refused(StatusCode::CONFLICT, "idempotency_conflict");
    assert_eq!(goal_count(&host, A).await, 1);
}
