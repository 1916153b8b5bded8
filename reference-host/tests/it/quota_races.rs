//! Quotas under concurrent creates on a file database (group commit, two
//! worker threads): the kept per-tenant counts never let a create past a
//! quota, and they are still exact after the store is opened again.

use crate::support;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::{EngineSettings, Quotas};
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::{id_of, plain_body, Harness, A, B, BASE};

fn host(location: &DbLocation) -> Arc<Harness> {
    with_quotas(
        location,
        Quotas {
            goals_per_tenant: 12,
            active_arms_per_tenant: 4,
            ..Quotas::default()
        },
    )
}

fn with_quotas(location: &DbLocation, quotas: Quotas) -> Arc<Harness> {
    let settings = EngineSettings {
        conformance_seams: true,
        quotas,
        ..EngineSettings::default()
    };
    Arc::new(Harness::with_settings(
        location,
        settings,
        Arc::new(ManualClock::fixed()),
    ))
}

fn schedule_body() -> Value {
    json!({
        "objective": "keep the lights on",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "schedule", "armRef": "conformance:arm?intervalMs=60000" },
        "bounds": { "maxLoopIterations": 3 },
    })
}

/// 40 creates at once for each of two tenants, armed or not: how many
/// each tenant got.
async fn burst(host: &Arc<Harness>, armed: bool) -> [usize; 2] {
    let calls: Vec<_> = (0..80)
        .map(|n| {
            let host = Arc::clone(host);
            let token = if n % 2 == 0 { A } else { B };
            let body = if armed { schedule_body() } else { plain_body() };
            tokio::spawn(async move {
                let reply = host.call(Method::POST, BASE, Some(token), Some(body)).await;
                (token, reply.status)
            })
        })
        .collect();
    let mut created = [0, 0];
    for call in calls {
        let (token, status) = call.await.expect("the call finishes");
        match status {
            StatusCode::CREATED => created[usize::from(token == B)] += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}"),
        }
    }
    created
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_never_pass_either_quota_and_the_counts_survive_a_restart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("quotas.db"));
    let first = host(&location);
    assert_eq!(
        burst(&first, true).await,
        [4, 4],
        "the armed quota, exactly"
    );
    assert_eq!(
        burst(&first, false).await,
        [8, 8],
        "the goal quota, exactly"
    );
    // Closing two goals of A frees two places, one of them armed.
    let listed = first.get(&format!("{BASE}?state=active")).await;
    let goals = listed.expect(StatusCode::OK, "goal-list")["goals"]
        .as_array()
        .expect("a list")
        .clone();
    let armed = goals
        .iter()
        .find(|goal| goal["continuation"]["mode"] == "schedule")
        .expect("an armed goal");
    let plain = goals
        .iter()
        .find(|goal| goal["continuation"]["mode"] == "manual")
        .expect("a manual goal");
    for goal in [armed, plain] {
        first
            .post(&format!("{BASE}/{}/abandon", id_of(goal)), None)
            .await
            .expect(StatusCode::OK, "goal");
    }
    drop(first);

    // Opened again, the counts are where they were: A gets exactly its
    // two freed places, one of them armed, and B none.
    let second = host(&location);
    assert_eq!(burst(&second, true).await, [1, 0], "one armed place freed");
    assert_eq!(burst(&second, false).await, [1, 0], "one more place freed");
}

/// Creates and abandons racing on a file database: the quota on stored
/// goals counts closed ones too, so no interleaving lets a tenant hold
/// more than it, and the refusal names that quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_racing_abandons_never_store_past_the_total_quota() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("stored.db"));
    let host = with_quotas(
        &location,
        Quotas {
            goals_per_tenant: 100,
            active_arms_per_tenant: 4,
            stored_goals_per_tenant: 10,
        },
    );
    // Each task creates and at once abandons: the open quota is far away,
    // and what stops the 30 creates of each tenant is the stored one.
    let calls: Vec<_> = (0..60)
        .map(|n| {
            let host = Arc::clone(&host);
            let token = if n % 2 == 0 { A } else { B };
            tokio::spawn(async move {
                let reply = host
                    .call(Method::POST, BASE, Some(token), Some(plain_body()))
                    .await;
                match reply.status {
                    StatusCode::CREATED => {
                        let id = id_of(&reply.body);
                        let abandoned = host
                            .call(
                                Method::POST,
                                &format!("{BASE}/{id}/abandon"),
                                Some(token),
                                None,
                            )
                            .await;
                        assert_eq!(abandoned.status, StatusCode::OK);
                        (token, None)
                    }
                    StatusCode::TOO_MANY_REQUESTS => (
                        token,
                        reply.body["details"]["quota"].as_str().map(str::to_string),
                    ),
                    other => panic!("unexpected {other}"),
                }
            })
        })
        .collect();
    let mut created = [0, 0];
    for call in calls {
        let (token, refused) = call.await.expect("the call finishes");
        match refused {
            None => created[usize::from(token == B)] += 1,
            Some(quota) => assert_eq!(quota, "storedGoalsPerTenant"),
        }
    }
    assert_eq!(created, [10, 10], "each tenant stores exactly its quota");
    // Everything is closed now, and still nothing more fits.
    let refused = host
        .call(Method::POST, BASE, Some(A), Some(plain_body()))
        .await;
    let error = refused.refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(
        error["details"],
        json!({ "quota": "storedGoalsPerTenant", "limit": 10 })
    );
    let listed = host.get(BASE).await;
    let listed = listed.expect(StatusCode::OK, "goal-list");
    assert_eq!(listed["goals"].as_array().map(Vec::len), Some(10));
}
