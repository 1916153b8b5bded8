//! The store contract on PostgreSQL, beside SQLite: the same calls answer
//! the same on both (pages in id order, per-goal event sequences, version
//! conflicts, one reservation per iteration), and the restart rule of
//! `restart.rs` holds across replicas: a run a dead replica left in flight
//! is closed once, by another replica, after the dead one's lease lapsed.
//!
//! Needs `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh` prints it);
//! without it each test prints why it did not run and passes.

mod pg;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::domain::{Change, GoalId, RunId, Tenant};
use goalpost_host::storage::{DbLocation, RunReservation, Written, REPLICA_LEASE};
use serde_json::json;
use support::{goal_body, id_of, Harness};

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

/// The restart rule across replicas: replica A reserves a run and dies
/// with it in flight. While A lives, B leaves the run alone; once A's
/// lease lapsed, B closes it as an environmental failure that counts as
/// iteration 1, exactly once, and the next run is iteration 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_by_a_dead_replica_is_closed_once_after_its_lease() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let clock = Arc::new(ManualClock::fixed());
    let a = Harness::open(&location, true, Arc::clone(&clock));
    let b = Harness::open(&location, true, Arc::clone(&clock));
    let id = id_of(&a.create(never_satisfied(2)).await);
    let goal_id = GoalId::parse(&id).expect("id");
    let run_id = RunId::generate();
    let reservation = RunReservation {
        run_id: run_id.clone(),
        goal_id: goal_id.clone(),
        iteration: 1,
        started_at: clock.now(),
        report: None,
    };
    assert_eq!(
        a.store.reserve_run(&reservation, 1).await.expect("asks"),
        Written::Done(())
    );
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
