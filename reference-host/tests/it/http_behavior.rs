//! SPEC §3 and the §4 seams over HTTP: iterations, verdicts, bounds,
//! escalation, pause, the scheduler and events.

use crate::support;

use std::sync::Arc;

use axum::http::StatusCode;
use goalpost_host::clock::Clock;
use goalpost_host::domain::GoalId;
use serde_json::{json, Value};
use support::{goal_body, id_of, Harness, BASE};

fn run_ids(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|event| event["type"] == "goal.evaluated")
        .map(|event| event["payload"]["runId"].clone())
        .collect()
}

fn closes(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|event| event["type"] == "goal.closed")
        .map(|event| event["payload"]["finalState"].clone())
        .collect()
}

/// Events and the goal agree: one `goal.evaluated` per verdict with
/// `iterations` counting up, run ids equal to `contributingRunIds` (minus
/// escalated runs), `lastVerdict` naming the last evaluated run.
async fn assert_consistent(host: &Harness, id: &str) {
    let goal = host.goal(id).await;
    let events = host.events(id).await;
    let evaluations = host.evaluations(id).await;
    let sequences: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().expect("sequence"))
        .collect();
    assert!(
        sequences.windows(2).all(|pair| pair[0] < pair[1]),
        "{sequences:?}"
    );
    let evaluated: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "goal.evaluated")
        .collect();
    assert_eq!(evaluated.len(), evaluations.len());
    for (event, evaluation) in evaluated.iter().zip(&evaluations) {
        assert_eq!(event["payload"]["runId"], evaluation["runId"]);
        assert_eq!(event["payload"]["iterations"], evaluation["iteration"]);
        assert_eq!(event["payload"]["satisfied"], evaluation["satisfied"]);
    }
    let listed = goal["progress"]["contributingRunIds"]
        .as_array()
        .expect("run ids");
    assert_eq!(goal["progress"]["iterations"], json!(listed.len()));
    for run in run_ids(&events) {
        assert!(listed.contains(&run), "{run} is not a contributing run");
    }
    match evaluated.last() {
        Some(last) => assert_eq!(
            goal["completion"]["lastVerdict"]["runId"],
            last["payload"]["runId"]
        ),
        None => assert_eq!(goal["completion"]["lastVerdict"], Value::Null),
    }
    let closes = closes(&events).len();
    assert!(closes <= 1 || goal["state"] != "active", "closes: {closes}");
}

#[tokio::test]
async fn converges_on_the_kth_iteration() {
    let host = Harness::seams();
    let goal = host
        .create(goal_body(
            "conformance:verifier?satisfyOn=3",
            None,
            json!({ "maxLoopIterations": 5 }),
        ))
        .await;
    let id = id_of(&goal);
    for iteration in 1..=3u64 {
        let reply = host.continue_once(&id).await;
        let body = reply.expect(StatusCode::OK, "continue-response");
        assert_eq!(body["evaluation"]["iteration"], iteration);
        assert_eq!(body["evaluation"]["satisfied"], iteration == 3);
        assert_eq!(body["goal"]["progress"]["iterations"], iteration);
        assert_eq!(
            reply.header("etag"),
            Some(format!("\"{}\"", iteration + 1).as_str())
        );
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "satisfied");
    assert_eq!(goal["completion"]["lastVerdict"]["satisfied"], true);
    assert_eq!(goal["completion"]["lastVerdict"]["confidence"], 0.9);
    let events = host.events(&id).await;
    assert_eq!(run_ids(&events).len(), 3);
    assert_eq!(closes(&events), vec![json!("satisfied")]);
    assert_eq!(
        run_ids(&events),
        goal["progress"]["contributingRunIds"]
            .as_array()
            .expect("ids")
            .clone()
    );
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    assert_eq!(host.evaluations(&id).await.len(), 3);
    assert_consistent(&host, &id).await;
}

#[tokio::test]
async fn the_iteration_bound_is_never_crossed() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                None,
                json!({ "maxLoopIterations": 3 }),
            ))
            .await,
    );
    for _ in 0..3 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded");
    assert_eq!(goal["progress"]["iterations"], 3);
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    assert_eq!(host.evaluations(&id).await.len(), 3);
    assert_eq!(
        closes(&host.events(&id).await),
        vec![json!("bound-exceeded")]
    );
    assert_consistent(&host, &id).await;
}

#[tokio::test]
async fn satisfied_on_the_last_allowed_iteration_wins() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier?satisfyOn=3",
                None,
                json!({ "maxLoopIterations": 3 }),
            ))
            .await,
    );
    for _ in 0..3 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    assert_eq!(host.goal(&id).await["state"], "satisfied");
    assert_eq!(closes(&host.events(&id).await), vec![json!("satisfied")]);
}

#[tokio::test]
async fn the_cost_bound_stops_after_three_runs_of_0_4_under_1_0() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                Some("conformance:arm?costUsd=0.4"),
                json!({ "maxCostUsd": 1.0, "maxLoopIterations": 10 }),
            ))
            .await,
    );
    for _ in 0..3 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded");
    assert_eq!(goal["progress"]["iterations"], 3);
    let evaluations = host.evaluations(&id).await;
    let costs: Vec<&Value> = evaluations.iter().map(|e| &e["costUsd"]).collect();
    assert_eq!(costs, vec![&json!(0.4), &json!(0.4), &json!(0.4)]);
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
}

#[tokio::test]
async fn escalation_halts_and_resume_keeps_progress_and_spent_cost() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                Some("conformance:arm?costUsd=0.4&escalateOn=2"),
                json!({ "maxCostUsd": 1.0, "maxLoopIterations": 10 }),
            ))
            .await,
    );
    let path = format!("{BASE}/{id}");
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    let reply = host.continue_once(&id).await;
    let body = reply.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["evaluation"], Value::Null);
    assert_eq!(body["goal"]["state"], "escalated");
    assert_eq!(body["goal"]["progress"]["iterations"], 2);

    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_escalated");
    host.post(&format!("{path}/pause"), None)
        .await
        .refused(StatusCode::CONFLICT, "goal_escalated");
    let attention = host.get(&format!("{path}/attention")).await;
    assert_eq!(
        attention.expect(StatusCode::OK, "attention")["status"],
        "stopped"
    );
    let events = host.events(&id).await;
    assert_eq!(
        run_ids(&events).len(),
        1,
        "no verdict for the escalated run"
    );
    assert_eq!(closes(&events), vec![json!("escalated")]);

    let resumed = host.post(&format!("{path}/resume"), None).await;
    let goal = resumed.expect(StatusCode::OK, "goal");
    assert_eq!(goal["state"], "active");
    assert_eq!(goal["progress"]["iterations"], 2);
    assert_eq!(
        goal["progress"]["contributingRunIds"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    // 0.8 was spent before the escalation; the third run reaches 1.2 and
    // closes the goal, which it would not if resume had reset the budget.
    let third = host.continue_once(&id).await;
    let body = third.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["evaluation"]["iteration"], 3);
    assert_eq!(body["goal"]["state"], "bound-exceeded");
    assert_eq!(
        closes(&host.events(&id).await),
        vec![json!("escalated"), json!("bound-exceeded")]
    );
    assert_consistent(&host, &id).await;
}

#[tokio::test]
async fn abandoning_an_escalated_goal_closes_it() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                Some("conformance:arm?escalateOn=1"),
                json!({ "maxLoopIterations": 3 }),
            ))
            .await,
    );
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    let reply = host.post(&format!("{BASE}/{id}/abandon"), None).await;
    assert_eq!(reply.expect(StatusCode::OK, "goal")["state"], "abandoned");
    assert_eq!(
        closes(&host.events(&id).await),
        vec![json!("escalated"), json!("abandoned")]
    );
}

#[tokio::test]
async fn failures_are_environmental_unsatisfied_and_counted() {
    let host = Harness::seams();
    let no_verifier = json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": null },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 2 }
    });
    let id = id_of(&host.create(no_verifier).await);
    let reply = host.continue_once(&id).await;
    let evaluation = &reply.expect(StatusCode::OK, "continue-response")["evaluation"];
    assert_eq!(evaluation["satisfied"], false);
    assert_eq!(evaluation["failureClass"], "environmental");
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    assert_eq!(host.goal(&id).await["state"], "bound-exceeded");

    let failing = goal_body(
        "conformance:verifier?satisfyOn=1",
        Some("conformance:arm?failOn=1"),
        json!({ "maxLoopIterations": 3 }),
    );
    let id = id_of(&host.create(failing).await);
    let first = host.continue_once(&id).await;
    let body = first.expect(StatusCode::OK, "continue-response");
    assert_eq!(
        body["evaluation"]["satisfied"], false,
        "a failed run never satisfies"
    );
    assert_eq!(body["evaluation"]["failureClass"], "environmental");
    assert_eq!(body["goal"]["progress"]["iterations"], 1);
    let second = host.continue_once(&id).await;
    assert_eq!(
        second.expect(StatusCode::OK, "continue-response")["goal"]["state"],
        "satisfied"
    );
}

#[tokio::test]
async fn one_failing_criterion_makes_the_verdict_unsatisfied() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier?satisfyOn=1&criteria=pass,fail:logical",
                None,
                json!({ "maxLoopIterations": 2 }),
            ))
            .await,
    );
    let reply = host.continue_once(&id).await;
    let evaluation = &reply.expect(StatusCode::OK, "continue-response")["evaluation"];
    assert_eq!(evaluation["satisfied"], false);
    assert_eq!(evaluation["failureClass"], "logical");
    assert_eq!(
        evaluation["criteria"],
        json!([
            { "id": "c1", "verdict": "pass", "failureClass": null },
            { "id": "c2", "verdict": "fail", "failureClass": "logical" }
        ])
    );
    assert_eq!(
        host.goal(&id).await["completion"]["lastVerdict"]["satisfied"],
        false
    );

    let passing = goal_body(
        "conformance:verifier?satisfyOn=1&criteria=pass,pass",
        None,
        json!({ "maxLoopIterations": 2 }),
    );
    let id = id_of(&host.create(passing).await);
    let reply = host.continue_once(&id).await;
    assert_eq!(
        reply.expect(StatusCode::OK, "continue-response")["goal"]["state"],
        "satisfied"
    );
}

#[tokio::test]
async fn events_carry_no_content() {
    let host = Harness::seams();
    let canary = format!("canary-{}", GoalId::generate());
    let mut body = goal_body(
        "conformance:verifier?satisfyOn=2",
        Some("conformance:arm?costUsd=0.1"),
        json!({ "maxLoopIterations": 3 }),
    );
    body["objective"] = json!(canary);
    let id = id_of(&host.create(body).await);
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    let events = host.events(&id).await;
    let evaluations = host.evaluations(&id).await;
    assert_eq!(events.len(), 3);
    for event in &events {
        let schema = if event["type"] == "goal.evaluated" {
            "goal-evaluated"
        } else {
            "goal-closed"
        };
        support::assert_valid(schema, &event["payload"]);
    }
    let text = format!("{}{}", Value::from(events), Value::from(evaluations));
    assert!(!text.contains(&canary));
    assert_eq!(host.goal(&id).await["objective"], json!(canary));
}

#[tokio::test]
async fn events_after_a_sequence() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier?satisfyOn=3",
                None,
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    for _ in 0..3 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let all = host.events(&id).await;
    let sequences: Vec<&Value> = all.iter().map(|event| &event["sequence"]).collect();
    assert_eq!(sequences, vec![&json!(1), &json!(2), &json!(3), &json!(4)]);
    let reply = host.get(&format!("{BASE}/{id}/events?after=2")).await;
    let later = reply.expect(StatusCode::OK, "event-list")["events"]
        .as_array()
        .expect("events")
        .clone();
    assert_eq!(later, all[2..].to_vec());
    host.get(&format!("{BASE}/{id}/events?after=-1"))
        .await
        .refused(StatusCode::BAD_REQUEST, "invalid_request");
}

#[tokio::test]
async fn concurrent_continues_never_cross_the_bound() {
    let host = Arc::new(Harness::seams());
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                Some("conformance:arm?runMs=5"),
                json!({ "maxLoopIterations": 3 }),
            ))
            .await,
    );
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let host = Arc::clone(&host);
            let id = id.clone();
            tokio::spawn(async move { host.continue_once(&id).await.status })
        })
        .collect();
    let mut ok = 0;
    for call in calls {
        match call.await.expect("the call finishes") {
            StatusCode::OK => ok += 1,
            StatusCode::CONFLICT => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok, 3);
    assert_eq!(host.evaluations(&id).await.len(), 3);
    let goal = host.goal(&id).await;
    assert_eq!(goal["progress"]["iterations"], 3);
    assert_eq!(goal["state"], "bound-exceeded");
    assert_consistent(&host, &id).await;
}

fn schedule_body(verifier: &str, arm: &str, bounds: Value) -> Value {
    json!({
        "objective": "keep the lights on",
        "completion": { "check": "verifier", "verifierRef": verifier },
        "continuation": { "mode": "schedule", "armRef": arm },
        "bounds": bounds,
    })
}

#[tokio::test]
async fn a_schedule_arm_fires_at_once_then_every_interval() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(schedule_body(
                "conformance:verifier",
                "conformance:arm?intervalMs=1000",
                json!({ "maxLoopIterations": 10 }),
            ))
            .await,
    );
    assert_eq!(
        host.tick().await.fired,
        vec![GoalId::parse(&id).expect("id")]
    );
    assert_eq!(host.evaluations(&id).await.len(), 1);
    assert!(host.advance_and_tick(999).await.fired.is_empty());
    assert_eq!(host.evaluations(&id).await.len(), 1);
    host.advance_and_tick(1).await;
    assert_eq!(host.evaluations(&id).await.len(), 2);
    // A long gap fires once, not a burst of catch-up runs.
    host.advance_and_tick(10_000).await;
    assert_eq!(host.evaluations(&id).await.len(), 3);
    assert_consistent(&host, &id).await;
}

#[tokio::test]
async fn pause_disarms_a_schedule_arm_and_resume_rearms_it() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(schedule_body(
                "conformance:verifier",
                "conformance:arm?intervalMs=100",
                json!({ "maxLoopIterations": 50 }),
            ))
            .await,
    );
    host.tick().await;
    host.advance_and_tick(100).await;
    assert_eq!(host.evaluations(&id).await.len(), 2);
    host.post(&format!("{BASE}/{id}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    for _ in 0..10 {
        assert!(host.advance_and_tick(100).await.fired.is_empty());
    }
    assert_eq!(host.evaluations(&id).await.len(), 2, "no run while paused");
    host.post(&format!("{BASE}/{id}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.tick().await;
    assert_eq!(host.evaluations(&id).await.len(), 3, "resume fires at once");
    assert_consistent(&host, &id).await;
}

#[tokio::test]
async fn the_deadline_closes_an_idle_goal_without_a_client_call() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(schedule_body(
                "conformance:verifier",
                "conformance:arm?intervalMs=60000",
                json!({ "runTimeoutMs": 5000 }),
            ))
            .await,
    );
    host.tick().await;
    assert_eq!(host.evaluations(&id).await.len(), 1);
    assert!(host.advance_and_tick(4999).await.closed.is_empty());
    let tick = host.advance_and_tick(1).await;
    assert_eq!(tick.closed.len(), 1);
    assert!(tick.fired.is_empty());
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded");
    assert_eq!(
        closes(&host.events(&id).await),
        vec![json!("bound-exceeded")]
    );
    assert_eq!(
        host.evaluations(&id).await.len(),
        1,
        "no run at or after the deadline"
    );
}

#[tokio::test]
async fn the_deadline_closes_paused_goals_too_and_continue_after_it_runs_nothing() {
    let host = Harness::seams();
    let paused = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                None,
                json!({ "runTimeoutMs": 1000 }),
            ))
            .await,
    );
    host.post(&format!("{BASE}/{paused}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    let manual = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                None,
                json!({ "runTimeoutMs": 1000 }),
            ))
            .await,
    );
    host.clock.advance(std::time::Duration::from_millis(1000));
    // A continue at the deadline closes the goal instead of running it.
    host.continue_once(&manual)
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    assert_eq!(host.goal(&manual).await["state"], "bound-exceeded");
    assert!(host.evaluations(&manual).await.is_empty());
    let tick = host.tick().await;
    assert_eq!(tick.closed.len(), 1);
    assert_eq!(host.goal(&paused).await["state"], "bound-exceeded");
    assert_eq!(
        closes(&host.events(&paused).await),
        vec![json!("bound-exceeded")]
    );
}

#[tokio::test]
async fn a_slow_scheduled_run_is_fired_once() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(schedule_body(
                "conformance:verifier",
                "conformance:arm?intervalMs=1&runMs=30",
                json!({ "maxLoopIterations": 10 }),
            ))
            .await,
    );
    let first = host.scheduler.tick(host.clock.now()).await.expect("tick");
    let second = host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert_eq!(first.fired.len(), 1);
    assert!(second.fired.is_empty(), "already firing");
    host.scheduler.settle().await;
    assert_eq!(host.evaluations(&id).await.len(), 1);
}

/// Polls `probe` until it holds, failing after two seconds.
async fn eventually<F, Fut>(mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !probe().await {
        assert!(std::time::Instant::now() < deadline, "condition never held");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn pause_waits_for_a_run_in_flight_and_nothing_lands_after_it() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(schedule_body(
                "conformance:verifier",
                "conformance:arm?intervalMs=1&runMs=40",
                json!({ "maxLoopIterations": 10 }),
            ))
            .await,
    );
    let tick = host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert_eq!(tick.fired.len(), 1);
    eventually(|| async { !host.store.runs_in_flight().expect("store").is_empty() }).await;
    host.post(&format!("{BASE}/{id}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    assert_eq!(
        host.evaluations(&id).await.len(),
        1,
        "the run in flight was recorded first"
    );
    host.scheduler.settle().await;
    for _ in 0..5 {
        host.advance_and_tick(10).await;
    }
    assert_eq!(
        host.evaluations(&id).await.len(),
        1,
        "nothing after the pause"
    );
}

/// Abandon does not wait for a run in flight (it may be a slow
/// webhook); the run is cancelled and recorded nowhere.
#[tokio::test]
async fn abandon_answers_at_once_and_the_run_in_flight_is_recorded_nowhere() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(schedule_body(
                "conformance:verifier?satisfyOn=1",
                "conformance:arm?intervalMs=1&runMs=30000",
                json!({ "maxLoopIterations": 10 }),
            ))
            .await,
    );
    host.scheduler.tick(host.clock.now()).await.expect("tick");
    eventually(|| async { !host.store.runs_in_flight().expect("store").is_empty() }).await;
    let reply = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        host.post(&format!("{BASE}/{id}/abandon"), None),
    )
    .await
    .expect("abandon answers while the 30 s run is in flight");
    let goal = reply.expect(StatusCode::OK, "goal");
    assert_eq!(goal["state"], "abandoned");
    assert_eq!(goal["progress"]["iterations"], 0);
    tokio::time::timeout(std::time::Duration::from_secs(5), host.scheduler.settle())
        .await
        .expect("the run in flight was cancelled");
    assert!(host.store.runs_in_flight().expect("store").is_empty());
    assert!(host.evaluations(&id).await.is_empty());
    let events = host.events(&id).await;
    let types: Vec<&Value> = events.iter().map(|event| &event["type"]).collect();
    assert_eq!(types, vec![&json!("goal.closed")]);
    let goal = host.goal(&id).await;
    assert_eq!(goal["progress"]["iterations"], 0);
    assert_eq!(goal["completion"]["lastVerdict"], Value::Null);
}
