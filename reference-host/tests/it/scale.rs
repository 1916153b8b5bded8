//! Scale: due fires beyond the scheduler's fire
//! slots wait in a queue (none is lost, none fires twice), and goals can be
//! stored in bulk, all or none. The numbers are in BENCHMARKS.md; nothing
//! here measures time.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::domain::{parse_create, GoalId, RequestContext, Tenant};
use goalpost_host::engine::{Engine, EngineSettings};
use goalpost_host::scheduler::{Scheduler, MAX_FIRES_IN_FLIGHT};
use goalpost_host::storage::{DbLocation, SqliteStore, Store};
use serde_json::json;
use support::{id_of, Harness, BASE};
use tokio::sync::watch;

fn schedule_body() -> serde_json::Value {
    json!({
        "objective": "keep the backlog short",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "schedule", "armRef": "conformance:arm?intervalMs=60000" },
        "bounds": { "maxLoopIterations": 10 },
    })
}

#[tokio::test]
async fn more_due_goals_than_fire_slots_each_fire_once() {
    let h = Harness::seams();
    // More than the slots, within one tenant's armed quota (1,000).
    let count = MAX_FIRES_IN_FLIGHT + 5;
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(id_of(&h.create(schedule_body()).await));
    }

    let tick = h.tick().await;
    assert_eq!(tick.fired.len(), count);
    for id in &ids {
        let goal = h.goal(id).await;
        assert_eq!(goal["progress"]["iterations"], 1, "goal {id}: {goal}");
    }

    // Nothing is due again before the interval: no second run.
    let again = h.advance_and_tick(1_000).await;
    assert!(again.fired.is_empty(), "{:?}", again.fired);
    let list = h.get(BASE).await;
    let runs: Vec<_> = list.body["goals"]
        .as_array()
        .expect("goals")
        .iter()
        .map(|goal| goal["progress"]["iterations"].clone())
        .collect();
    assert_eq!(runs, vec![json!(1); count]);
}

#[test]
fn bulk_inserts_store_every_goal_or_none() {
    let h = Harness::seams();
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    let context = RequestContext::new(true);
    let goal = || {
        parse_create(&schedule_body(), context)
            .expect("a valid body")
            .into_goal(GoalId::generate(), tenant.clone(), h.clock.now())
    };

    let batch = vec![goal(), goal(), goal()];
    h.store.insert_goals(&batch).expect("the batch is stored");
    for stored in &batch {
        assert_eq!(
            h.store.goal(&stored.id).expect("readable").as_ref(),
            Some(stored)
        );
    }

    // The second goal repeats an id that exists: nothing of the batch stays.
    let fresh = goal();
    let refused = h.store.insert_goals(&[fresh.clone(), batch[0].clone()]);
    assert!(refused.is_err());
    assert_eq!(h.store.goal(&fresh.id).expect("readable"), None);
}

/// A backlog several listings long drains without waiting for the loop's
/// period: the loop here ticks once a minute, so every goal past the first
/// listing fired because the queue running low woke it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_longer_than_one_listing_drains_between_ticks() {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&DbLocation::Memory).expect("the store opens"));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    let context = RequestContext::new(true);
    // A tick lists at most four fire slots' worth beyond what is firing.
    let count = MAX_FIRES_IN_FLIGHT * 12;
    let due: Vec<_> = (0..count)
        .map(|_| {
            let mut goal = parse_create(&schedule_body(), context)
                .expect("a valid body")
                .into_goal(GoalId::generate(), tenant.clone(), clock.now());
            goal.next_fire_at = Some(clock.now());
            goal
        })
        .collect();
    store.insert_goals(&due).expect("stored");

    let settings = EngineSettings {
        conformance_seams: true,
        ..EngineSettings::default()
    };
    let engine = Arc::new(Engine::new(
        Arc::clone(&store),
        Arc::clone(&clock),
        settings,
    ));
    let scheduler = Arc::new(Scheduler::new(engine));
    let (stop, stopped) = watch::channel(false);
    let running = tokio::spawn(scheduler.run(
        clock,
        Duration::from_secs(60),
        Duration::from_secs(5),
        stopped,
    ));

    // Polls (a patient observer; the loop does not depend on it).
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let fired = store
            .goals(&tenant, None)
            .expect("readable")
            .iter()
            .filter(|goal| goal.progress.iterations >= 1)
            .count();
        if fired == count {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "{fired} of {count} due goals fired in 30 s with a one-minute tick"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(true);
    running.await.expect("the loop stops");
}
