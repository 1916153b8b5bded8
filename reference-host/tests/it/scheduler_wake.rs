//! The scheduler loop sleeps until the next thing is due instead of
//! only ticking on its fixed period. The store answers when that is, the
//! engine wakes the loop when a write arms a goal sooner, and the real loop
//! (with a one-minute tick, so anything it does within seconds it did
//! because it woke) fires, probes and closes goals when they are due.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::domain::{
    parse_create, Goal, GoalId, GoalState, RequestContext, Tenant, Timestamp,
};
use goalpost_host::engine::{Engine, EngineSettings};
use goalpost_host::scheduler::Scheduler;
use goalpost_host::storage::{DbLocation, SqliteStore, Store};
use serde_json::{json, Value};
use support::{id_of, Harness};
use tokio::sync::watch;

fn body(mode: &str, arm: Option<&str>, bounds: Value) -> Value {
    let mut continuation = json!({ "mode": mode });
    if let Some(arm) = arm {
        continuation["armRef"] = json!(arm);
    }
    json!({
        "objective": "keep the backlog short",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": continuation,
        "bounds": bounds,
    })
}

fn schedule_body(interval_ms: u64) -> Value {
    body(
        "schedule",
        Some(&format!("conformance:arm?intervalMs={interval_ms}")),
        json!({ "maxLoopIterations": 100 }),
    )
}

/// A goal as the engine would create it at `now`, for storing directly.
fn goal(h: &Harness, body: &Value) -> Goal {
    let context = RequestContext::new(true);
    parse_create(body, context)
        .expect("a valid body")
        .into_goal(
            GoalId::generate(),
            Tenant::parse("tenant-a").expect("tenant"),
            h.clock.now(),
        )
}

fn at(h: &Harness, ms: u64) -> Timestamp {
    h.clock.now().saturating_add_ms(ms)
}

#[test]
fn next_due_is_the_earliest_fire_or_deadline_of_an_armed_goal() {
    let h = Harness::seams();
    let now = h.clock.now();
    let next = |after| h.store.next_due_after(after).expect("readable");
    assert_eq!(next(now), None, "an empty store has nothing due");

    // Sooner than anything that counts, but none of them can fire.
    let mut paused = goal(&h, &schedule_body(60_000));
    paused.next_fire_at = Some(at(&h, 100));
    paused.paused = true;
    let mut closed = goal(&h, &schedule_body(60_000));
    closed.next_fire_at = Some(at(&h, 200));
    closed.state = GoalState::Satisfied;
    let mut manual = goal(
        &h,
        &body("manual", None, json!({ "maxLoopIterations": 100 })),
    );
    manual.next_fire_at = Some(at(&h, 300));
    let mut heartbeat = goal(
        &h,
        &body(
            "heartbeat",
            Some("conformance:arm?heartbeatMs=1000"),
            json!({ "maxLoopIterations": 100 }),
        ),
    );
    heartbeat.next_fire_at = Some(at(&h, 400));
    // A closed goal's deadline is past caring about.
    let closed_with_deadline = Goal {
        state: GoalState::Abandoned,
        ..goal(&h, &body("manual", None, json!({ "runTimeoutMs": 500 })))
    };
    // Due at once: the tick at `now` found it, so it is not "next".
    let unfired = goal(&h, &schedule_body(60_000));
    let mut scheduled = goal(&h, &schedule_body(60_000));
    scheduled.next_fire_at = Some(at(&h, 5_000));
    h.store
        .insert_goals(&[
            paused,
            closed,
            manual,
            heartbeat,
            closed_with_deadline,
            unfired,
            scheduled,
        ])
        .expect("stored");
    assert_eq!(next(now), Some(at(&h, 5_000)));

    // A deadline counts even while the goal is paused (the scheduler closes
    // paused goals at their deadline too), and only the earliest one wins.
    let mut deadline = goal(&h, &body("manual", None, json!({ "runTimeoutMs": 4_000 })));
    deadline.paused = true;
    let later = goal(&h, &body("manual", None, json!({ "runTimeoutMs": 9_000 })));
    h.store.insert_goals(&[deadline, later]).expect("stored");
    assert_eq!(next(now), Some(at(&h, 4_000)));

    // Strictly after: what is due at `after` is the tick's business.
    assert_eq!(next(at(&h, 4_000)), Some(at(&h, 5_000)));
    assert_eq!(next(at(&h, 5_000)), Some(at(&h, 9_000)));
    assert_eq!(next(at(&h, 9_000)), None);
}

#[tokio::test]
async fn creating_an_armed_goal_wakes_the_scheduler() {
    let h = Harness::seams();
    let wake = h.engine.scheduler_wake();
    assert_eq!(wake.take(), None);

    // A manual goal without a deadline gives the scheduler nothing to do.
    h.create(body("manual", None, json!({ "maxLoopIterations": 100 })))
        .await;
    assert_eq!(wake.take(), None);

    // A new schedule goal fires at once.
    h.create(schedule_body(60_000)).await;
    tokio::time::timeout(Duration::from_secs(5), wake.notified())
        .await
        .expect("the create woke the scheduler");
    assert_eq!(wake.take(), Some(h.clock.now()));

    // A deadline is something to do too.
    h.create(body("manual", None, json!({ "runTimeoutMs": 1_500 })))
        .await;
    assert_eq!(wake.take(), Some(at(&h, 1_500)));

    // A new heartbeat goal is probed at once.
    h.create(body(
        "heartbeat",
        Some("conformance:arm?heartbeatMs=1000"),
        json!({ "maxLoopIterations": 100 }),
    ))
    .await;
    assert_eq!(wake.take(), Some(h.clock.now()));
}

#[tokio::test]
async fn resuming_and_recording_arm_the_next_fire() {
    let h = Harness::seams();
    let wake = h.engine.scheduler_wake();
    let id = id_of(&h.create(schedule_body(2_000)).await);
    let path = format!("{}/{id}", support::BASE);

    h.post(&format!("{path}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    assert_eq!(
        wake.take(),
        Some(h.clock.now()),
        "still armed by its create"
    );
    h.post(&format!("{path}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    assert_eq!(wake.take(), Some(h.clock.now()), "resumed: due at once");

    let tick = h.tick().await;
    assert_eq!(tick.fired.len(), 1);
    assert_eq!(
        wake.take(),
        Some(at(&h, 2_000)),
        "the recorded run armed the next fire one interval on"
    );
}

#[test]
fn an_arm_the_scheduler_will_wake_for_anyway_wakes_nobody() {
    let h = Harness::seams();
    let wake = h.engine.scheduler_wake();
    wake.plan(at(&h, 1_000));
    wake.arm(at(&h, 1_000));
    wake.arm(at(&h, 5_000));
    assert_eq!(wake.take(), None);
    wake.arm(at(&h, 400));
    wake.arm(at(&h, 700));
    assert_eq!(wake.take(), Some(at(&h, 400)), "the earliest arm");
    wake.unplan();
    wake.arm(at(&h, 60_000));
    assert_eq!(wake.take(), Some(at(&h, 60_000)), "no plan: every arm");
}

/// Polls (this is a client being patient, not what causes the change)
/// until `done` holds for the goal, or fails after `limit`.
async fn wait_for(engine: &Engine, goal: &Goal, limit: Duration, done: impl Fn(&Goal) -> bool) {
    let give_up = Instant::now() + limit;
    loop {
        let now = engine
            .get(&goal.owner, &goal.id)
            .await
            .expect("the goal is readable");
        if done(&now) {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "after {limit:?} the goal is still {:?} after {} iterations",
            now.state,
            now.progress.iterations
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_acts_when_things_are_due_not_only_at_its_tick() {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&DbLocation::Memory).expect("the store opens"));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let settings = EngineSettings {
        conformance_seams: true,
        ..EngineSettings::default()
    };
    let engine = Arc::new(Engine::new(store, Arc::clone(&clock), settings));
    let scheduler = Arc::new(Scheduler::new(Arc::clone(&engine)));
    let tick = Duration::from_secs(60);
    let (stop, stopped) = watch::channel(false);
    let running = tokio::spawn(scheduler.run(clock, tick, Duration::from_secs(5), stopped));
    let tenant = Tenant::parse("tenant-a").expect("tenant");
    let limit = Duration::from_secs(10);

    // Created after the loop's first tick: the create wakes it, and each
    // recorded run arms the next fire 200 ms on.
    let scheduled = engine
        .create(&tenant, &schedule_body(200))
        .await
        .expect("created");
    wait_for(&engine, &scheduled, limit, |goal| {
        goal.progress.iterations >= 3
    })
    .await;

    // Probed at once, then every 200 ms (the probe arms its next one).
    let heartbeat = engine
        .create(
            &tenant,
            &body(
                "heartbeat",
                Some("conformance:arm?heartbeatMs=200"),
                json!({ "maxLoopIterations": 100 }),
            ),
        )
        .await
        .expect("created");
    wait_for(&engine, &heartbeat, limit, |goal| {
        goal.progress.iterations >= 3
    })
    .await;

    // Closed at its deadline with nothing else to wake for.
    let bounded = engine
        .create(
            &tenant,
            &body("manual", None, json!({ "runTimeoutMs": 300 })),
        )
        .await
        .expect("created");
    wait_for(&engine, &bounded, limit, |goal| {
        goal.state == GoalState::BoundExceeded
    })
    .await;

    let _ = stop.send(true);
    running.await.expect("the loop stops");
}
