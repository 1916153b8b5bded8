//! The store contract on PostgreSQL, beside SQLite: the same calls answer
//! the same on both (pages in id order, per-goal event sequences, version
//! conflicts, one reservation per iteration), and the restart rule of
//! `restart.rs` holds across replicas: a run a dead replica left in flight
//! is closed once, by another replica, after the dead one's lease lapsed.
//!
//! Needs `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh` prints it);
//! without it each test prints why it did not run and passes.

use crate::pg;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::domain::{Change, GoalId, RunId, Tenant};
use goalpost_host::storage::{
    CreateGuard, DbLocation, Inserted, RunReservation, Written, REPLICA_LEASE,
};
use serde_json::json;
use support::{goal_body, id_of, Harness, BASE};

fn never_satisfied(max: u64) -> serde_json::Value {
    goal_body(
        "conformance:verifier?satisfyOn=1000",
        None,
        json!({ "maxLoopIterations": max }),
    )
}

/// What every store must answer alike.
async fn contract(location: &DbLocation) {
    let host = Harness::open(location, true, Arc::new(ManualClock::fixed()));
    let store = Arc::clone(&host.store);
    let tenant = Tenant::parse("tenant-a").expect("tenant");

    // Pages follow the id (creation) order from the cursor.
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(id_of(&host.create(never_satisfied(3)).await));
    }
    let all: Vec<String> = store
        .goals(&tenant, None)
        .expect("lists")
        .iter()
        .map(|goal| goal.id.as_str().to_string())
        .collect();
    assert_eq!(all, ids, "{location}");
    let after = GoalId::parse(&ids[1]).expect("id");
    let page: Vec<String> = store
        .goals_page(&tenant, None, Some(&after), 2)
        .expect("pages")
        .iter()
        .map(|goal| goal.id.as_str().to_string())
        .collect();
    assert_eq!(page, ids[2..4].to_vec(), "{location}");

    // Two iterations: their events numbered from 1, their evaluations and
    // run ids kept in order.
    for _ in 0..2 {
        host.continue_once(&ids[0])
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let first = GoalId::parse(&ids[0]).expect("id");
    let goal = store.goal(&first).expect("reads").expect("exists");
    assert_eq!(goal.progress.iterations, 2, "{location}");
    let sequences: Vec<u64> = store
        .events(&first, 0)
        .expect("events")
        .iter()
        .map(|event| event.sequence)
        .collect();
    assert_eq!(sequences, vec![1, 2], "{location}");
    assert_eq!(store.events(&first, 1).expect("events").len(), 1);
    let evaluations = store.evaluations(&first).expect("evaluations");
    let iterations: Vec<u64> = evaluations.iter().map(|e| e.iteration).collect();
    assert_eq!(iterations, vec![1, 2], "{location}");
    let run_ids: Vec<&RunId> = goal.progress.contributing_run_ids.iter().collect();
    let evaluated: Vec<&RunId> = evaluations.iter().map(|e| &e.run_id).collect();
    assert_eq!(run_ids, evaluated, "{location}");

    // A write from a stale version changes nothing.
    let mut edited = goal.clone();
    edited.paused = true;
    edited.version = goal.version + 1;
    let stale = Change {
        goal: edited,
        events: Vec::new(),
        evaluation: None,
    };
    let written = store
        .apply(&stale, goal.version - 1, None, host.clock.now())
        .await
        .expect("applies");
    assert_eq!(written, Written::Conflict, "{location}");
    assert!(!store.goal(&first).expect("reads").expect("exists").paused);

    // A reservation from a stale version is refused; a second reservation
    // of an iteration is never granted.
    let second = GoalId::parse(&ids[1]).expect("id");
    let reservation = |iteration| RunReservation {
        run_id: RunId::generate(),
        goal_id: second.clone(),
        iteration,
        started_at: host.clock.now(),
        report: None,
    };
    let refused = store.reserve_run(&reservation(1), 0).await.expect("asks");
    assert_eq!(refused, Written::Conflict, "{location}");
    let granted = store.reserve_run(&reservation(1), 1).await.expect("asks");
    assert_eq!(granted, Written::Done(()), "{location}");
    let again = store.reserve_run(&reservation(1), 1).await;
    assert!(
        !matches!(again, Ok(Written::Done(()))),
        "{location}: iteration 1 was reserved twice"
    );

    // A scripted judge is kept beside its goal: replaced by a later one,
    // the goal's version untouched, nothing kept for a goal not stored.
    let third = GoalId::parse(&ids[2]).expect("id");
    let version = store.goal(&third).expect("reads").expect("exists").version;
    assert_eq!(store.judge_script(&third).expect("reads"), None);
    for script in ["conformance:verifier", "conformance:verifier?satisfyOn=2"] {
        assert!(store
            .put_judge_script(&third, script)
            .await
            .expect("writes"));
        assert_eq!(
            store.judge_script(&third).expect("reads").as_deref(),
            Some(script),
            "{location}"
        );
    }
    let unchanged = store.goal(&third).expect("reads").expect("exists");
    assert_eq!(unchanged.version, version, "{location}");
    let nobody = GoalId::generate();
    assert!(!store
        .put_judge_script(&nobody, "conformance:verifier")
        .await
        .expect("asks"));
    assert_eq!(store.judge_script(&nobody).expect("reads"), None);

    // A script given at create is written in the goal's own insert, so no
    // run can come before it; a create the guard refuses writes neither.
    let template = store.goal(&third).expect("reads").expect("exists");
    let guard = |max_open_goals, judge_script: &str| CreateGuard {
        max_open_goals,
        max_open_armed: u64::MAX,
        max_stored_goals: u64::MAX,
        key: None,
        keys_expire_at_or_before: host.clock.now(),
        judge_script: Some(judge_script.to_string()),
    };
    let mut created = template.clone();
    created.id = GoalId::generate();
    let script = "conformance:verifier?satisfyOn=3";
    let inserted = store
        .insert_goal_guarded(&created, &guard(u64::MAX, script))
        .await
        .expect("inserts");
    assert_eq!(inserted, Inserted::Done, "{location}");
    assert_eq!(
        store.judge_script(&created.id).expect("reads").as_deref(),
        Some(script),
        "{location}"
    );
    let mut refused = template.clone();
    refused.id = GoalId::generate();
    let inserted = store
        .insert_goal_guarded(&refused, &guard(0, script))
        .await
        .expect("asks");
    assert_eq!(inserted, Inserted::TooManyGoals, "{location}");
    assert!(store.goal(&refused.id).expect("reads").is_none());
    assert_eq!(store.judge_script(&refused.id).expect("reads"), None);
}

#[tokio::test]
async fn the_store_contract_holds_on_sqlite_and_postgres() {
    contract(&DbLocation::Memory).await;
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    contract(&DbLocation::Postgres(schema.url.clone())).await;
    // The counts the trigger keeps are what a recount of the goals finds.
    let kept = schema
        .query("SELECT tenant, open, armed, total FROM tenant_counts ORDER BY tenant")
        .await;
    let recounted = schema
        .query(
            "SELECT tenant,
                    COUNT(*) FILTER (WHERE state IN ('active', 'escalated')),
                    COUNT(*) FILTER (WHERE state IN ('active', 'escalated')
                                       AND mode IN ('schedule', 'heartbeat')),
                    COUNT(*)
             FROM goals GROUP BY tenant ORDER BY tenant",
        )
        .await;
    assert_eq!(kept, recounted);
    assert!(!kept.is_empty());
    schema.drop().await;
}

/// Reserves the first run of a goal just created (version 1) in the
/// store, as an iteration does before its dispatch, and leaves it in flight.
async fn reserve_first_run(host: &Harness, goal_id: &GoalId) -> RunId {
    let run_id = RunId::generate();
    let reservation = RunReservation {
        run_id: run_id.clone(),
        goal_id: goal_id.clone(),
        iteration: 1,
        started_at: host.clock.now(),
        report: None,
    };
    assert_eq!(
        host.store.reserve_run(&reservation, 1).await.expect("asks"),
        Written::Done(())
    );
    run_id
}

/// A run in flight that no lock of the closing process holds (another
/// replica's, or one a crashed process left for its restart to record)
/// keeps the deadline close away on either store: the close looks for it
/// in its own write, and writes nothing. Once the run ended, the close
/// goes ahead.
async fn a_deadline_close_leaves_a_stored_run_in_flight(location: &DbLocation) {
    let clock = Arc::new(ManualClock::fixed());
    let host = Harness::open(location, true, Arc::clone(&clock));
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier?satisfyOn=1000",
                None,
                json!({ "maxLoopIterations": 3, "runTimeoutMs": 60_000 }),
            ))
            .await,
    );
    let goal_id = GoalId::parse(&id).expect("id");
    let run_id = reserve_first_run(&host, &goal_id).await;
    let events = host.store.events(&goal_id, 0).expect("reads").len();
    clock.advance(Duration::from_secs(61));
    let closed = host
        .engine
        .close_if_past_deadline(&goal_id)
        .await
        .expect("the close runs");
    assert!(!closed, "{location}: closed under a run in flight");
    let goal = host.store.goal(&goal_id).expect("reads").expect("the goal");
    assert_eq!(
        (goal.state.as_str(), goal.version),
        ("active", 1),
        "{location}"
    );
    assert_eq!(
        host.store.events(&goal_id, 0).expect("reads").len(),
        events,
        "{location}: the refused close wrote events"
    );

    host.store
        .discard_run(&run_id, clock.now())
        .await
        .expect("discards");
    let closed = host
        .engine
        .close_if_past_deadline(&goal_id)
        .await
        .expect("the close runs");
    assert!(closed, "{location}: not closed once the run ended");
}

#[tokio::test]
async fn a_deadline_close_leaves_a_stored_run_in_flight_on_sqlite_and_postgres() {
    a_deadline_close_leaves_a_stored_run_in_flight(&DbLocation::Memory).await;
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    a_deadline_close_leaves_a_stored_run_in_flight(&DbLocation::Postgres(schema.url.clone())).await;
    schema.drop().await;
}

/// Two replicas (each its own store and engine) on a fresh schema, on
/// one manual clock (each harness's `clock`).
struct TwoReplicas {
    schema: pg::Schema,
    a: Harness,
    b: Harness,
}

/// `None` without a server (`pg::server` says why).
async fn two_replicas() -> Option<TwoReplicas> {
    let server = pg::server()?;
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let clock = Arc::new(ManualClock::fixed());
    let a = Harness::open(&location, true, Arc::clone(&clock));
    let b = Harness::open(&location, true, Arc::clone(&clock));
    Some(TwoReplicas { schema, a, b })
}

/// The restart rule across replicas: replica A reserves a run and dies
/// with it in flight. While A lives, B leaves the run alone; once A's
/// lease lapsed, B closes it as an environmental failure that counts as
/// iteration 1, exactly once, and the next run is iteration 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_by_a_dead_replica_is_closed_once_after_its_lease() {
    let Some(TwoReplicas { schema, a, b }) = two_replicas().await else {
        return;
    };
    let id = id_of(&a.create(never_satisfied(2)).await);
    let goal_id = GoalId::parse(&id).expect("id");
    let run_id = reserve_first_run(&a, &goal_id).await;
    // A live replica's run is its own: B neither closes it nor runs the
    // goal meanwhile (a fire skips it).
    assert_eq!(b.engine.recover_orphans().await.expect("sweeps"), 0);
    assert_eq!(b.engine.recover().await.expect("recovers"), 0);
    let fired = b.engine.fire(&goal_id).await.expect("fires");
    assert_eq!(fired, goalpost_host::engine::FireOutcome::Skipped);

    let died = Instant::now();
    drop(a);
    let deadline = died + REPLICA_LEASE + Duration::from_secs(10);
    loop {
        let closed = b.engine.recover_orphans().await.expect("sweeps");
        if closed == 1 {
            break;
        }
        assert_eq!(closed, 0);
        assert!(
            Instant::now() < deadline,
            "the dead replica's run was not closed within {:?}",
            deadline - died
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        died.elapsed() >= REPLICA_LEASE - Duration::from_secs(1),
        "closed before the lease could lapse: {:?}",
        died.elapsed()
    );
    assert_eq!(b.engine.recover_orphans().await.expect("sweeps"), 0);
    let goal = b.goal(&id).await;
    assert_eq!(goal["progress"]["iterations"], 1);
    assert_eq!(
        goal["progress"]["contributingRunIds"],
        json!([run_id.as_str()])
    );
    let evaluations = b.evaluations(&id).await;
    assert_eq!(evaluations.len(), 1);
    assert_eq!(evaluations[0]["failureClass"], "environmental");

    // The next run is iteration 2, and the bound of 2 closes the goal.
    let next = b.continue_once(&id).await;
    let body = next.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["goal"]["progress"]["iterations"], 2);
    assert_eq!(body["goal"]["state"], "bound-exceeded");
    let runs = schema
        .query(&format!(
            "SELECT iteration, status FROM runs WHERE goal_id = '{id}' ORDER BY iteration"
        ))
        .await;
    let runs: Vec<(String, String)> = runs
        .into_iter()
        .map(|row| {
            (
                row[0].clone().expect("iteration"),
                row[1].clone().expect("status"),
            )
        })
        .collect();
    assert_eq!(
        runs,
        vec![
            ("1".to_string(), "recorded".to_string()),
            ("2".to_string(), "recorded".to_string())
        ]
    );
    drop(b);
    schema.drop().await;
}

/// Cursors commit in order per tenant. Replica A's iteration is held
/// between taking its event's cursor and committing (a trigger in the test
/// schema waits on a lock the test holds); meanwhile replica B records an
/// iteration of another goal of the same tenant. A reader then must not
/// see B's event without A's: with cursors from a sequence, B committed
/// cursor 2 while A still held 1, and a stream that resumed after 2
/// never saw 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_never_sees_a_cursor_before_the_lower_ones_of_its_tenant() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let clock = Arc::new(ManualClock::fixed());
    let a = Arc::new(Harness::open(&location, true, Arc::clone(&clock)));
    let b = Arc::new(Harness::open(&location, true, Arc::clone(&clock)));
    let held = id_of(&a.create(never_satisfied(5)).await);
    let free = id_of(&b.create(never_satisfied(5)).await);
    const LOCK: i64 = 0x7067_6665_6564;
    let holder = schema.hold_inserts("events", &held, LOCK).await;

    let first = tokio::spawn({
        let (a, held) = (Arc::clone(&a), held.clone());
        async move { a.continue_once(&held).await.status }
    });
    schema
        .wait_for_count(
            "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
            1,
            "A's iteration reaching its held event",
        )
        .await;
    let second = tokio::spawn({
        let (b, free) = (Arc::clone(&b), free.clone());
        async move { b.continue_once(&free).await.status }
    });
    // B either commits (cursors out of order) or waits for A's cursors.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if second.is_finished() {
            break;
        }
        let waiting = schema
            .query("SELECT COUNT(*) FROM pg_locks WHERE locktype <> 'advisory' AND NOT granted")
            .await;
        if waiting[0][0].as_deref() != Some("0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "B's iteration neither committed nor waited within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    let cursors = |store: &Arc<dyn goalpost_host::storage::Store>| -> Vec<u64> {
        store
            .tenant_events_after(&tenant, None, 0, 100)
            .expect("reads")
            .iter()
            .map(|event| event.cursor)
            .collect()
    };
    let seen = cursors(&a.store);

    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK])
        .await
        .expect("unlocks");
    assert_eq!(first.await.expect("A's iteration"), StatusCode::OK);
    assert_eq!(second.await.expect("B's iteration"), StatusCode::OK);
    let all = cursors(&b.store);
    assert_eq!(all.len(), 2, "{all:?}");
    let newest_seen = seen.iter().max().copied().unwrap_or(0);
    let below: Vec<u64> = all.iter().copied().filter(|c| *c <= newest_seen).collect();
    assert_eq!(
        seen, below,
        "a reader saw cursor {newest_seen} before a lower cursor of its tenant committed"
    );
    drop((a, b));
    schema.drop().await;
}

/// Waits until `replicas` replicas listen for live events: a write
/// committed before a replica listens reaches its subscribers only from
/// storage (the replica ends the subscriptions it had once it listens).
async fn wait_for_listeners(schema: &pg::Schema, replicas: i64) {
    schema
        .wait_for_count(
            "SELECT COUNT(*) FROM pg_stat_activity
         WHERE query LIKE 'LISTEN goalpost_events%' AND state = 'idle'
           AND application_name = 'goalpost-events ' || 'events'::regclass::oid::text",
            replicas,
            "the replicas listening",
        )
        .await;
}

/// Collects the cursors a store hands to its sink, in order, and how many
/// it had when the store said it may have missed some.
#[derive(Default)]
struct Collected {
    cursors: std::sync::Mutex<Vec<u64>>,
    interrupted_after: std::sync::Mutex<Vec<usize>>,
}

impl goalpost_host::storage::EventSink for Collected {
    fn committed(&self, _tenant: &Tenant, events: &[goalpost_host::domain::Event]) {
        let mut cursors = self.cursors.lock().expect("unpoisoned");
        cursors.extend(events.iter().map(|event| event.cursor));
    }

    fn interrupted(&self) {
        let collected = self.cursors.lock().expect("unpoisoned").len();
        self.interrupted_after
            .lock()
            .expect("unpoisoned")
            .push(collected);
    }
}

/// Every replica's commits reach a replica's sink: once each, in cursor
/// order, its own and another replica's interleaved. Six goals, three
/// created on each of two replicas, are continued three times each, all
/// at once; replica A's sink must get exactly the tenant's stored cursors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_hands_over_every_replicas_events_once_in_cursor_order() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let clock = Arc::new(ManualClock::fixed());
    let a = Arc::new(Harness::open(&location, true, Arc::clone(&clock)));
    let b = Arc::new(Harness::open(&location, true, Arc::clone(&clock)));
    wait_for_listeners(&schema, 2).await;
    let collected = Arc::new(Collected::default());
    a.store.set_event_sink(Arc::clone(&collected) as _);
    let mut goals = Vec::new();
    for n in 0..6 {
        let host = if n % 2 == 0 { &a } else { &b };
        goals.push((
            Arc::clone(host),
            id_of(&host.create(never_satisfied(3)).await),
        ));
    }
    let mut runs = tokio::task::JoinSet::new();
    for (host, id) in goals {
        runs.spawn(async move {
            for _ in 0..3 {
                assert_eq!(host.continue_once(&id).await.status, StatusCode::OK);
            }
        });
    }
    while let Some(run) = runs.join_next().await {
        run.expect("the continues succeed");
    }
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    let stored: Vec<u64> = b
        .store
        .tenant_events_after(&tenant, None, 0, 1000)
        .expect("reads")
        .iter()
        .map(|event| event.cursor)
        .collect();
    assert!(stored.len() >= 18, "{stored:?}");
    let newest = *stored.last().expect("events");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = collected.cursors.lock().expect("unpoisoned").clone();
        if got.last() == Some(&newest) || Instant::now() >= deadline {
            assert_eq!(got, stored, "handed over: {got:?}");
            // Told it may have missed events only before any committed
            // (its replica began listening just after the sink was set).
            let interrupted = collected.interrupted_after.lock().expect("unpoisoned");
            assert!(interrupted.iter().all(|at| *at == 0), "{interrupted:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop((a, b));
    schema.drop().await;
}

/// The cursor of the subscription's next event.
async fn next_cursor(subscription: &mut goalpost_host::engine::Subscription) -> u64 {
    use goalpost_host::engine::FeedItem;
    let item = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("an event within 10 s")
        .expect("the feed works")
        .expect("the subscription goes on");
    match item {
        FeedItem::Event(event) => event.event.cursor,
        FeedItem::Dropped { last } => panic!("dropped after {last}"),
    }
}

/// A subscriber on replica A sees a goal continued on replica B live: no
/// reconnect, no repeat, in order, between A's own events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_on_one_replica_sees_another_replicas_events_live() {
    let Some(TwoReplicas { schema, a, b, .. }) = two_replicas().await else {
        return;
    };
    wait_for_listeners(&schema, 2).await;
    let id = id_of(&a.create(never_satisfied(10)).await);
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    a.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    let mut subscription = a
        .engine
        .subscribe(&tenant, None, 0)
        .await
        .expect("subscribes");
    // From storage; the subscription follows the live feed from here on.
    assert_eq!(next_cursor(&mut subscription).await, 1);
    let mut seen = Vec::new();
    for host in [&b, &b, &a, &b] {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
        seen.push(next_cursor(&mut subscription).await);
    }
    assert_eq!(seen, vec![2, 3, 4, 5]);
    drop((a, b));
    schema.drop().await;
}

/// The cursor of the subscription's next event; a subscription ended
/// meanwhile (its replica began listening again just after it was taken)
/// is taken again after the cursor before `expected`, as a client resumes.
async fn next_resuming(
    host: &Harness,
    subscription: &mut goalpost_host::engine::Subscription,
    expected: u64,
) -> u64 {
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    for _ in 0..3 {
        let item = tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .expect("an event within 10 s")
            .expect("the feed works");
        match item {
            Some(goalpost_host::engine::FeedItem::Event(event)) => return event.event.cursor,
            Some(dropped) => panic!("{dropped:?}"),
            None => {
                *subscription = host
                    .engine
                    .subscribe(&tenant, None, expected - 1)
                    .await
                    .expect("subscribes");
            }
        }
    }
    panic!("the subscription ended again and again");
}

/// When a replica's listening connection drops, its subscribers end (they
/// may have missed another replica's events and resume from storage), and
/// the replica listens again by itself: its subscribers see the other
/// replica's events again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listening_connection_ends_the_subscriptions_and_listens_again() {
    let Some(TwoReplicas { schema, a, b, .. }) = two_replicas().await else {
        return;
    };
    let id = id_of(&a.create(never_satisfied(10)).await);
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    let listeners = "SELECT COUNT(*) FROM pg_stat_activity
                     WHERE query LIKE 'LISTEN goalpost_events%' AND state = 'idle'
                       AND application_name = 'goalpost-events ' || 'events'::regclass::oid::text";
    schema
        .wait_for_count(listeners, 2, "both replicas listening")
        .await;
    let mut subscription = a
        .engine
        .subscribe(&tenant, None, 0)
        .await
        .expect("subscribes");
    b.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    assert_eq!(next_resuming(&a, &mut subscription, 1).await, 1);
    // Both replicas' listening connections go (the test cannot tell which
    // is A's); each listens again.
    schema
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE query LIKE 'LISTEN goalpost_events%' AND application_name = 'goalpost-events ' || 'events'::regclass::oid::text",
        )
        .await;
    let ended = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("the subscription ends within 10 s")
        .expect("the feed works");
    assert_eq!(ended, None);
    schema
        .wait_for_count(listeners, 2, "both replicas listening again")
        .await;
    let mut subscription = a
        .engine
        .subscribe(&tenant, None, 1)
        .await
        .expect("subscribes");
    for expected in 2..=3 {
        b.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
        assert_eq!(
            next_resuming(&a, &mut subscription, expected).await,
            expected
        );
    }
    drop((a, b));
    schema.drop().await;
}

/// Each heartbeat goal is probed by one replica: two replicas' listings
/// share no goal and together hold all. A listing writes only claims
/// near their end: listed again at once, no row is rewritten (its `xmin`
/// stays), yet each replica lists what it holds. A claim near its end is
/// renewed by its holder, and one that lapsed goes to the other replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_goals_are_claimed_by_one_replica_each_and_renewed_near_their_end() {
    let Some(TwoReplicas { schema, a, b, .. }) = two_replicas().await else {
        return;
    };
    let body = json!({
        "objective": "keep the build green",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=1000" },
        "continuation": { "mode": "heartbeat", "armRef": "conformance:arm?heartbeatMs=1000" },
        "bounds": { "maxLoopIterations": 3 },
    });
    for _ in 0..10 {
        a.create(body.clone()).await;
    }
    let sorted = |mut ids: Vec<GoalId>| {
        ids.sort_by(|x, y| x.as_str().cmp(y.as_str()));
        ids
    };
    let listed_a = sorted(a.store.heartbeat_goals().expect("lists"));
    let listed_b = sorted(b.store.heartbeat_goals().expect("lists"));
    assert_eq!(listed_a.len() + listed_b.len(), 10);
    assert!(listed_a.iter().all(|id| !listed_b.contains(id)));
    let rows = "SELECT id, xmin::text, claimed_by FROM goals ORDER BY id";
    let written = schema.query(rows).await;
    assert_eq!(sorted(a.store.heartbeat_goals().expect("lists")), listed_a);
    assert_eq!(sorted(b.store.heartbeat_goals().expect("lists")), listed_b);
    assert_eq!(
        schema.query(rows).await,
        written,
        "claims far from their end were rewritten"
    );

    // A claim near its end: its holder renews it and keeps it.
    let listed = |host: &Harness| sorted(host.store.heartbeat_goals().expect("lists"));
    let first = listed_a
        .first()
        .or(listed_b.first())
        .expect("a goal")
        .clone();
    let holder = if listed_a.contains(&first) { &a } else { &b };
    let other = if listed_a.contains(&first) { &b } else { &a };
    schema
        .query(&format!(
            "UPDATE goals SET claim_until_ms = goalpost_now_ms() + 1000 WHERE id = '{first}'"
        ))
        .await;
    let until =
        format!("SELECT claim_until_ms - goalpost_now_ms() FROM goals WHERE id = '{first}'");
    assert!(listed(other).iter().all(|id| *id != first));
    assert!(listed(holder).contains(&first));
    let left: i64 = schema.query(&until).await[0][0]
        .as_deref()
        .expect("a claim")
        .parse()
        .expect("ms");
    assert!(
        left > 2000,
        "the claim near its end was not renewed: {left} ms left"
    );

    // A lapsed claim goes to whichever replica lists next.
    schema
        .query(&format!(
            "UPDATE goals SET claim_until_ms = goalpost_now_ms() - 1 WHERE id = '{first}'"
        ))
        .await;
    assert!(listed(other).contains(&first));
    assert!(listed(holder).iter().all(|id| *id != first));
    drop((a, b));
    schema.drop().await;
}

/// An abandon served by replica B cancels the run replica A has in flight
/// for the goal: A's continue answers without waiting for its arm, and
/// nothing is recorded for the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandon_on_one_replica_cancels_the_run_in_flight_on_another() {
    use goalpost_host::domain::egress::{AllowEntry, EgressPolicy};
    use goalpost_host::engine::EngineSettings;
    use support::receiver::{Answer, Receiver};
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let clock = Arc::new(ManualClock::fixed());
    let settings = || EngineSettings {
        conformance_seams: true,
        webhook_timeout: Duration::from_secs(60),
        egress: EgressPolicy::new(vec![AllowEntry::parse("127.0.0.1").expect("entry")]),
        ..EngineSettings::default()
    };
    let a = Arc::new(Harness::with_settings(
        &location,
        settings(),
        Arc::clone(&clock),
    ));
    let b = Harness::with_settings(&location, settings(), Arc::clone(&clock));
    let receiver = Receiver::start(|call, _| {
        if call.path == "/arm" {
            Answer::Held(Box::new(Answer::Json(json!({ "output": "done" }))))
        } else {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        }
    })
    .await;
    let id = id_of(
        &a.create(json!({
            "objective": "ship the release checklist",
            "completion": { "check": "verifier", "verifierRef": receiver.url("/verifier") },
            "continuation": { "mode": "manual", "armRef": receiver.url("/arm") },
            "bounds": { "maxLoopIterations": 3 },
        }))
        .await,
    );
    let listeners = "SELECT COUNT(*) FROM pg_stat_activity
                     WHERE query LIKE 'LISTEN goalpost_events%' AND state = 'idle'
                       AND application_name = 'goalpost-events ' || 'events'::regclass::oid::text";
    schema
        .wait_for_count(listeners, 2, "both replicas listening")
        .await;
    let running = tokio::spawn({
        let (a, id) = (Arc::clone(&a), id.clone());
        async move { a.continue_once(&id).await.status }
    });
    receiver.wait_for_calls("/arm", 1).await;
    b.post(&format!("{BASE}/{id}/abandon"), None)
        .await
        .expect(StatusCode::OK, "goal");
    let answered = tokio::time::timeout(Duration::from_secs(10), running).await;
    receiver.release();
    answered
        .expect("A's continue answered without waiting for its held arm")
        .expect("A's continue");
    assert_eq!(b.goal(&id).await["state"], "abandoned");
    assert!(b.evaluations(&id).await.is_empty());
    let runs = schema
        .query(&format!("SELECT status FROM runs WHERE goal_id = '{id}'"))
        .await;
    assert_eq!(runs, vec![vec![Some("discarded".to_string())]]);
    drop(b);
    drop(a);
    schema.drop().await;
}
