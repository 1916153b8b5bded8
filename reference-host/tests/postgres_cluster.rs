//! Several replicas of the host on one PostgreSQL database, in one
//! process: each replica is its own store (its own pool and lease), engine
//! and per-goal locks, so nothing but the database is shared. Concurrent
//! continues spread over three replicas never run a goal past its bound,
//! never reach the arm twice for one iteration, record one verdict per run
//! and close each goal once; an idempotency key and the create quota hold
//! whichever replica serves the request.
//!
//! Needs `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh` prints it);
//! without it each test prints why it did not run and passes.

mod pg;
mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::domain::egress::{AllowEntry, EgressPolicy};
use goalpost_host::engine::{EngineSettings, Quotas};
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{id_of, plain_body, Harness, BASE};

const ARM: &str = "/arm";
const VERIFIER: &str = "/verifier";

fn settings(quotas: Quotas) -> EngineSettings {
    EngineSettings {
        conformance_seams: true,
        webhook_timeout: Duration::from_secs(5),
        egress: EgressPolicy::new(vec![AllowEntry::parse("127.0.0.1").expect("entry")]),
        quotas,
        ..EngineSettings::default()
    }
}

fn replicas(location: &DbLocation, count: usize, quotas: Quotas) -> Vec<Arc<Harness>> {
    let clock = Arc::new(ManualClock::fixed());
    (0..count)
        .map(|_| {
            Arc::new(Harness::with_settings(
                location,
                settings(quotas),
                Arc::clone(&clock),
            ))
        })
        .collect()
}

/// Each goal gets 12 continues at once, four on each of three replicas,
/// against an arm that takes 20 ms: only `maxLoopIterations` of them run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_continues_on_three_replicas_never_exceed_the_bound() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Delayed(
                Duration::from_millis(20),
                Box::new(Answer::Json(json!({ "output": call.body["iteration"] }))),
            )
        } else {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        }
    })
    .await;
    let hosts = replicas(&location, 3, Quotas::default());
    const BOUND: u64 = 3;
    let body = json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": receiver.url(VERIFIER) },
        "continuation": { "mode": "manual", "armRef": receiver.url(ARM) },
        "bounds": { "maxLoopIterations": BOUND },
    });
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(id_of(&hosts[n].create(body.clone()).await));
    }
    let mut continues = tokio::task::JoinSet::new();
    for id in &ids {
        for n in 0..12 {
            let (host, id) = (Arc::clone(&hosts[n % 3]), id.clone());
            continues.spawn(async move {
                let reply = host.continue_once(&id).await;
                (id, reply.status)
            });
        }
    }
    let mut ran = std::collections::HashMap::<String, u64>::new();
    while let Some(joined) = continues.join_next().await {
        let (id, status) = joined.expect("the continue task");
        match status {
            StatusCode::OK => *ran.entry(id).or_default() += 1,
            StatusCode::CONFLICT => {}
            other => panic!("a continue answered {other}"),
        }
    }
    let arm_calls = receiver.calls_to(ARM);
    let dispatched: Vec<(String, u64)> = arm_calls
        .iter()
        .map(|call| {
            (
                call.body["goalId"].as_str().expect("goalId").to_string(),
                call.body["iteration"].as_u64().expect("iteration"),
            )
        })
        .collect();
    let distinct: HashSet<&(String, u64)> = dispatched.iter().collect();
    assert_eq!(
        distinct.len(),
        dispatched.len(),
        "an iteration reached the arm twice: {dispatched:?}"
    );
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(ran.get(id), Some(&BOUND), "continues that ran for {id}");
        // Read on another replica than the one that created it.
        let reader = &hosts[(n + 1) % 3];
        let goal = reader.goal(id).await;
        assert_eq!(goal["progress"]["iterations"], BOUND);
        assert_eq!(goal["state"], "bound-exceeded");
        let evaluations = reader.evaluations(id).await;
        let runs: HashSet<&str> = evaluations
            .iter()
            .map(|evaluation| evaluation["runId"].as_str().expect("runId"))
            .collect();
        assert_eq!(evaluations.len() as u64, BOUND, "one verdict per run");
        assert_eq!(runs.len() as u64, BOUND);
        let closes = reader
            .events(id)
            .await
            .iter()
            .filter(|event| event["type"] == "goal.closed")
            .count();
        assert_eq!(closes, 1, "goal.closed once for {id}");
        let calls = dispatched.iter().filter(|(goal, _)| goal == id).count() as u64;
        assert_eq!(calls, BOUND, "arm calls for {id}");
    }
    drop(hosts);
    schema.drop().await;
}

fn create_request(key: &str, body: &Value) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri(BASE)
        .header("authorization", format!("Bearer {}", support::A))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body.to_string()))
        .expect("a valid request")
}

/// Nine creates with one key at once, three per replica, make one goal,
/// and every answer names it; nine keyless creates against a quota of
/// four open goals make exactly the four that fit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotency_keys_and_quotas_hold_across_replicas() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let quotas = Quotas {
        goals_per_tenant: 5,
        ..Quotas::default()
    };
    let hosts = replicas(&location, 3, quotas);
    let mut creates = tokio::task::JoinSet::new();
    for n in 0..9 {
        let host = Arc::clone(&hosts[n % 3]);
        creates.spawn(async move {
            let reply = host.send(create_request("one-key", &plain_body())).await;
            (reply.status, reply.body["id"].as_str().map(str::to_string))
        });
    }
    let mut named = HashSet::new();
    while let Some(joined) = creates.join_next().await {
        let (status, id) = joined.expect("the create task");
        assert!(status.is_success(), "a keyed create answered {status}");
        named.insert(id.expect("the answer names the goal"));
    }
    assert_eq!(named.len(), 1, "one key made {named:?}");

    // One of the five is taken by the keyed goal.
    let mut creates = tokio::task::JoinSet::new();
    for n in 0..9 {
        let host = Arc::clone(&hosts[n % 3]);
        creates.spawn(async move { host.post(BASE, Some(plain_body())).await.status });
    }
    let (mut created, mut refused) = (0, 0);
    while let Some(joined) = creates.join_next().await {
        match joined.expect("the create task") {
            StatusCode::CREATED => created += 1,
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("a create answered {other}"),
        }
    }
    assert_eq!((created, refused), (4, 5));
    let listed = hosts[2].get(BASE).await;
    let goals = listed.expect(StatusCode::OK, "goal-list")["goals"]
        .as_array()
        .expect("goals")
        .len();
    assert_eq!(goals, 5);
    drop(hosts);
    schema.drop().await;
}
