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

use crate::pg;
use crate::support;

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

/// What concurrent continues broke: each entry one violated invariant.
/// Each of `goals` goals gets 12 continues at once, four on each of the
/// three replicas, against an arm that takes 20 ms: only
/// `maxLoopIterations` of them may run.
async fn continue_storm(hosts: &[Arc<Harness>], goals: usize) -> Vec<String> {
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
    const BOUND: u64 = 3;
    let body = json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": receiver.url(VERIFIER) },
        "continuation": { "mode": "manual", "armRef": receiver.url(ARM) },
        "bounds": { "maxLoopIterations": BOUND },
    });
    let mut ids = Vec::new();
    for n in 0..goals {
        ids.push(id_of(&hosts[n % 3].create(body.clone()).await));
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
    let mut violations = Vec::new();
    let mut ran = std::collections::HashMap::<String, u64>::new();
    while let Some(joined) = continues.join_next().await {
        let (id, status) = joined.expect("the continue task");
        match status {
            StatusCode::OK => *ran.entry(id).or_default() += 1,
            StatusCode::CONFLICT => {}
            other => violations.push(format!("a continue of {id} answered {other}")),
        }
    }
    let dispatched: Vec<(String, u64)> = receiver
        .calls_to(ARM)
        .iter()
        .map(|call| {
            (
                call.body["goalId"].as_str().expect("goalId").to_string(),
                call.body["iteration"].as_u64().expect("iteration"),
            )
        })
        .collect();
    let distinct: HashSet<&(String, u64)> = dispatched.iter().collect();
    if distinct.len() != dispatched.len() {
        violations.push(format!(
            "an iteration reached the arm twice: {dispatched:?}"
        ));
    }
    for (n, id) in ids.iter().enumerate() {
        if ran.get(id) != Some(&BOUND) {
            violations.push(format!("{:?} continues ran for {id}", ran.get(id)));
        }
        // Read on another replica than the one that created it.
        let reader = &hosts[(n + 1) % 3];
        let goal = reader.goal(id).await;
        if goal["progress"]["iterations"] != BOUND || goal["state"] != "bound-exceeded" {
            violations.push(format!("{id} ended as {goal}"));
        }
        let evaluations = reader.evaluations(id).await;
        let runs: HashSet<&str> = evaluations
            .iter()
            .map(|evaluation| evaluation["runId"].as_str().expect("runId"))
            .collect();
        if evaluations.len() as u64 != BOUND || runs.len() as u64 != BOUND {
            violations.push(format!(
                "{id} has {} verdicts for {} runs",
                evaluations.len(),
                runs.len()
            ));
        }
        let closes = reader
            .events(id)
            .await
            .iter()
            .filter(|event| event["type"] == "goal.closed")
            .count();
        if closes != 1 {
            violations.push(format!("goal.closed {closes} times for {id}"));
        }
        let calls = dispatched.iter().filter(|(goal, _)| goal == id).count() as u64;
        if calls != BOUND {
            violations.push(format!("{calls} arm calls for {id}"));
        }
    }
    violations
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_continues_on_three_replicas_never_exceed_the_bound() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let hosts = replicas(&location, 3, Quotas::default());
    let violations = continue_storm(&hosts, 3).await;
    assert!(violations.is_empty(), "{violations:#?}");
    drop(hosts);
    schema.drop().await;
}

/// A receiver whose verifier is never satisfied and whose arm answers at
/// once, or only once released when `held`.
async fn never_satisfied(held: bool) -> Receiver {
    Receiver::start(move |call, _| {
        if call.path != ARM {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        } else if held {
            Answer::Held(Box::new(Answer::Json(json!({ "output": 1 }))))
        } else {
            Answer::Json(json!({ "output": 1 }))
        }
    })
    .await
}

/// A manual goal on `receiver` whose wall-clock deadline is a minute
/// after its create, with iterations to spare.
async fn deadline_goal(host: &Harness, receiver: &Receiver) -> String {
    id_of(
        &host
            .create(json!({
                "objective": "ship the release checklist",
                "completion": { "check": "verifier", "verifierRef": receiver.url(VERIFIER) },
                "continuation": { "mode": "manual", "armRef": receiver.url(ARM) },
                "bounds": { "maxLoopIterations": 10, "runTimeoutMs": 60_000 },
            }))
            .await,
    )
}

/// A goal whose wall-clock deadline passes while one replica's run is out
/// is not closed under it by another replica's scheduler: the run was
/// reserved before the deadline and dispatched, so it gets its verdict,
/// and recording it closes the goal, the run counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deadline_close_waits_for_a_run_out_on_another_replica() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let hosts = replicas(&location, 2, Quotas::default());
    let receiver = never_satisfied(true).await;
    let id = deadline_goal(&hosts[0], &receiver).await;
    let running = {
        let (host, id) = (Arc::clone(&hosts[0]), id.clone());
        tokio::spawn(async move { host.continue_once(&id).await })
    };
    receiver.wait_for_calls(ARM, 1).await;
    // Past the deadline, on the shared clock: replica B's scheduler looks.
    hosts[1].clock.advance(Duration::from_secs(61));
    let goal = goalpost_host::domain::GoalId::parse(&id).expect("a goal id");
    let closed = hosts[1]
        .engine
        .close_if_past_deadline(&goal)
        .await
        .expect("the close runs");
    assert!(!closed, "closed under a run out on replica A");
    receiver.release();
    let reply = running.await.expect("the continue");
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["goal"]["state"], "bound-exceeded",
        "{}",
        reply.body
    );
    assert_eq!(
        reply.body["goal"]["progress"]["iterations"], 1,
        "{}",
        reply.body
    );
    drop(hosts);
    schema.drop().await;
}

/// The interleaving a close that looked for runs before its write lost:
/// replica A's reservation holds the goal's row lock with its run stored
/// but not committed (a trigger in the test schema waits on a lock the
/// test holds) while replica B's deadline close looks at the goal; A
/// commits while B waits for the row. B must see A's run and leave the
/// goal to it, so the arm's one call is the goal's one counted iteration.
/// Looked for before B's write, the run was not there yet: B closed the
/// goal, and A's run, out at the arm, was never counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deadline_close_sees_a_reservation_that_commits_while_it_waits() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let hosts = replicas(&location, 2, Quotas::default());
    let receiver = never_satisfied(false).await;
    let id = deadline_goal(&hosts[0], &receiver).await;
    // A key of this test's own: the waits below are told apart from any
    // other session's on the server by it.
    const LOCK: i64 = 0x636c_6f73_6574;
    let (high, low) = (LOCK >> 32, LOCK & 0xffff_ffff);
    let holder = schema.hold_inserts("runs", &id, LOCK).await;
    let held = format!(
        "FROM pg_locks l WHERE l.locktype = 'advisory' AND NOT l.granted
           AND l.classid = {high} AND l.objid = {low}"
    );

    let running = {
        let (host, id) = (Arc::clone(&hosts[0]), id.clone());
        tokio::spawn(async move { host.continue_once(&id).await })
    };
    schema
        .wait_for_count(
            &format!("SELECT COUNT(*) {held}"),
            1,
            "A's reservation reaching its held insert",
        )
        .await;
    // Past the deadline, on the shared clock: replica B's scheduler looks.
    hosts[1].clock.advance(Duration::from_secs(61));
    let closing = {
        let host = Arc::clone(&hosts[1]);
        let goal = goalpost_host::domain::GoalId::parse(&id).expect("a goal id");
        tokio::spawn(async move { host.engine.close_if_past_deadline(&goal).await })
    };
    // B either closes at once (it does not wait for A's row lock) or
    // waits for A's transaction.
    let blocked_by_a = format!(
        "SELECT COUNT(*) FROM pg_stat_activity w
         WHERE EXISTS (SELECT 1 {held} AND l.pid = ANY (pg_blocking_pids(w.pid)))"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !closing.is_finished() {
        let waiting = schema.query(&blocked_by_a).await;
        if waiting[0][0].as_deref() != Some("0") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "B's close neither ended nor waited for A within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK])
        .await
        .expect("unlocks");
    let closed = closing
        .await
        .expect("the close task")
        .expect("the close runs");
    let reply = running.await.expect("the continue");
    let calls = receiver.calls_to(ARM).len();
    assert!(
        !closed,
        "B closed the goal under A's run ({calls} arm calls; A answered {} {})",
        reply.status, reply.body
    );
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(calls, 1);
    assert_eq!(
        reply.body["goal"]["progress"]["iterations"], 1,
        "{}",
        reply.body
    );
    assert_ne!(reply.body["goal"]["state"], "active", "{}", reply.body);
    drop(hosts);
    schema.drop().await;
}

/// Replicas whose stores trust their in-memory locks: the same storm
/// breaks the invariants (the guard in the reservation is needed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_in_memory_lock_only_mutant_is_killed() {
    use goalpost_host::storage::Store;
    use goalpost_host_builds::mutants::{open_postgres, StoreMutant};
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let clock = Arc::new(ManualClock::fixed());
    let hosts: Vec<Arc<Harness>> = (0..3)
        .map(|_| {
            let store =
                open_postgres(&schema.url, StoreMutant::InMemoryLockOnly).expect("the store opens");
            Arc::new(Harness::with_store(
                Arc::new(store) as Arc<dyn Store>,
                settings(Quotas::default()),
                Arc::clone(&clock),
            ))
        })
        .collect();
    let violations = continue_storm(&hosts, 6).await;
    assert!(!violations.is_empty(), "the mutant survived the storm");
    eprintln!("killed: {}", violations[0]);
    drop(hosts);
    schema.drop().await;
}

/// Ten schedule goals due at once, listed by two replicas' schedulers:
/// how many distinct goals were listed, and how many by both.
async fn claims_overlap(a: &Harness, b: &Harness) -> (usize, usize) {
    let body = json!({
        "objective": "keep the mirror in sync",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=1000" },
        "continuation": { "mode": "schedule", "armRef": "conformance:arm" },
        "bounds": { "maxLoopIterations": 3 },
    });
    for _ in 0..10 {
        a.create(body.clone()).await;
    }
    let now = goalpost_host::clock::Clock::now(a.clock.as_ref());
    let listed_a = a.store.due_schedule_goals(now, 100).expect("lists");
    let listed_b = b.store.due_schedule_goals(now, 100).expect("lists");
    let first: HashSet<_> = listed_a.iter().collect();
    let both = listed_b.iter().filter(|id| first.contains(id)).count();
    (listed_a.len() + listed_b.len() - both, both)
}

/// Due goals are claimed by one replica's scheduler or the other's, never
/// both: the schedulers share the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn due_goals_are_claimed_by_one_replica_each() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let hosts = replicas(&location, 2, Quotas::default());
    let (all, both) = claims_overlap(&hosts[0], &hosts[1]).await;
    assert_eq!((all, both), (10, 0), "claimed by both replicas");
    drop(hosts);
    schema.drop().await;
}

/// What one listing takes is capped (256), what a replica holds is not:
/// a replica whose first listing took the cap, all still due (firing),
/// lists them again with the rest on its next listing, and another
/// replica gets none of them. Capping the holding made a replica list only
/// its firing goals, taking nothing new until they were recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_keeps_taking_due_goals_while_it_holds_the_cap() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let hosts = replicas(&location, 2, Quotas::default());
    let body = json!({
        "objective": "keep the mirror in sync",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=1000" },
        "continuation": { "mode": "schedule", "armRef": "conformance:arm" },
        "bounds": { "maxLoopIterations": 3 },
    });
    const GOALS: usize = 300;
    for _ in 0..GOALS {
        hosts[0].create(body.clone()).await;
    }
    let now = goalpost_host::clock::Clock::now(hosts[0].clock.as_ref());
    let first = hosts[0].store.due_schedule_goals(now, 1000).expect("lists");
    assert_eq!(first.len(), 256, "one listing takes at most the cap");
    let second = hosts[0].store.due_schedule_goals(now, 1000).expect("lists");
    assert_eq!(second.len(), GOALS, "its own claims and the rest");
    let held: HashSet<_> = first.iter().collect();
    assert!(held.iter().all(|id| second.contains(id)));
    let other = hosts[1].store.due_schedule_goals(now, 1000).expect("lists");
    assert!(other.is_empty(), "the other replica took {}", other.len());
    let bounded = hosts[0].store.due_schedule_goals(now, 10).expect("lists");
    assert_eq!(
        bounded,
        second[..10].to_vec(),
        "longest due first, at most the limit"
    );
    drop(hosts);
    schema.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_claim_without_skip_locked_mutant_is_killed() {
    use goalpost_host::storage::Store;
    use goalpost_host_builds::mutants::{open_postgres, StoreMutant};
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let clock = Arc::new(ManualClock::fixed());
    let hosts: Vec<Harness> = (0..2)
        .map(|_| {
            let store = open_postgres(&schema.url, StoreMutant::ClaimWithoutSkipLocked)
                .expect("the store opens");
            Harness::with_store(
                Arc::new(store) as Arc<dyn Store>,
                settings(Quotas::default()),
                Arc::clone(&clock),
            )
        })
        .collect();
    let (_, both) = claims_overlap(&hosts[0], &hosts[1]).await;
    assert!(
        both > 0,
        "the mutant's replicas never listed one goal twice"
    );
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
