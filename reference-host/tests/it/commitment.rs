//! `commitment` continuation (PROFILE.md "Commitment continuation"): the
//! first check-in fires at once, every later one only when a run committed
//! to it and its instant has come, once; a run that commits to nothing
//! leaves nothing armed. Driven by the scheduler's `tick` on a manual clock.

use crate::support;

use axum::http::StatusCode;
use serde_json::json;
use support::{id_of, Harness};

fn committed(arm: &str) -> serde_json::Value {
    json!({
        "objective": "check in when you said you would",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=3" },
        "continuation": { "mode": "commitment", "armRef": arm },
        "bounds": { "maxLoopIterations": 5 },
    })
}

async fn iterations(host: &Harness, id: &str) -> u64 {
    host.goal(id).await["progress"]["iterations"]
        .as_u64()
        .expect("iterations")
}

#[tokio::test]
async fn discovery_offers_commitment() {
    let host = Harness::seams();
    let discovery = host.get("/.well-known/openwop").await;
    let modes =
        &discovery.expect(StatusCode::OK, "capabilities")["agents"]["goals"]["continuation"];
    assert!(
        modes
            .as_array()
            .expect("modes")
            .contains(&json!("commitment")),
        "{modes}"
    );
}

#[tokio::test]
async fn a_commitment_fires_when_it_comes_and_once() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(committed("conformance:arm?commitAfterMs=5000"))
            .await,
    );
    // The first check-in is at once.
    let tick = host.tick().await;
    assert_eq!(tick.fired.len(), 1);
    assert_eq!(iterations(&host, &id).await, 1);
    // Not a moment before the committed instant...
    host.advance_and_tick(4_999).await;
    assert_eq!(iterations(&host, &id).await, 1);
    // ...then once.
    host.advance_and_tick(1).await;
    assert_eq!(iterations(&host, &id).await, 2);
    host.tick().await;
    assert_eq!(iterations(&host, &id).await, 2);
    // The third run's verdict satisfies the goal: nothing is armed after.
    host.advance_and_tick(5_000).await;
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "satisfied");
    host.advance_and_tick(60_000).await;
    assert_eq!(iterations(&host, &id).await, 3);
}

#[tokio::test]
async fn a_run_that_commits_to_nothing_arms_nothing() {
    let host = Harness::seams();
    let id = id_of(&host.create(committed("conformance:arm")).await);
    host.tick().await;
    assert_eq!(iterations(&host, &id).await, 1);
    // Well past any schedule interval: no commitment, no fire.
    for _ in 0..5 {
        host.advance_and_tick(60_000).await;
    }
    assert_eq!(iterations(&host, &id).await, 1);
    // A person can still run it.
    let reply = host.continue_once(&id).await;
    assert_eq!(
        reply.expect(StatusCode::OK, "continue-response")["goal"]["progress"]["iterations"],
        2
    );
    // And an out-of-range commitment is refused when the goal is created.
    let refused = host
        .post(
            "/v1/host/sample/goals",
            Some(committed("conformance:arm?commitAfterMs=999")),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
}

/// A paused commitment goal fires nothing, its commitment come or not;
/// resumed, it asks its agent at once for a new check-in.
#[tokio::test]
async fn a_paused_commitment_waits() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(committed("conformance:arm?commitAfterMs=2000"))
            .await,
    );
    host.tick().await;
    host.post(&format!("/v1/host/sample/goals/{id}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.advance_and_tick(10_000).await;
    assert_eq!(iterations(&host, &id).await, 1);
    host.post(&format!("/v1/host/sample/goals/{id}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.tick().await;
    assert_eq!(iterations(&host, &id).await, 2);
}

/// A manual goal switched to commitment checks in at once, as if created so.
#[tokio::test]
async fn a_goal_switched_to_commitment_checks_in_at_once() {
    let host = Harness::seams();
    let mut body = committed("conformance:arm?commitAfterMs=3000");
    body["continuation"]["mode"] = json!("manual");
    let id = id_of(&host.create(body).await);
    host.tick().await;
    assert_eq!(iterations(&host, &id).await, 0);
    host.patch(
        &format!("/v1/host/sample/goals/{id}"),
        json!({ "continuation": { "mode": "commitment" } }),
    )
    .await
    .expect(StatusCode::OK, "goal");
    host.tick().await;
    assert_eq!(iterations(&host, &id).await, 1);
    host.advance_and_tick(3_000).await;
    assert_eq!(iterations(&host, &id).await, 2);
}
