//! Model-based tests of the goal state machine: random sequences
//! of creates, continues, pauses, resumes, abandons, edits and clock jumps
//! (with scheduler ticks), with fixture verdicts, costs, failures and
//! escalations, never reach an invalid state. After every operation each
//! goal is read back through the API and checked against what was seen
//! before: at most N evaluations, one `goal.closed` per closing, terminal
//! states final, progress never decreasing, no run while paused or after
//! the budget or deadline, and events, evaluations and the goal agreeing.
//!
//! `GOALPOST_PROPTEST_CASES` (default 64) sets the number of cases.

use crate::support;

use std::time::Duration;

use axum::http::StatusCode;
use goalpost_host::clock::Clock;
use proptest::prelude::*;
use serde_json::{json, Value};
use support::{id_of, Harness, BASE};

/// A goal's fixture script and bounds.
#[derive(Debug, Clone)]
struct Spec {
    satisfy_on: Option<u64>,
    cost_cents: u64,
    escalate_on: Option<u64>,
    fail_on: Option<u64>,
    schedule: Option<u64>,
    max_iterations: Option<u64>,
    max_cost_cents: Option<u64>,
    timeout_ms: Option<u64>,
}

#[derive(Debug, Clone)]
enum Edit {
    Objective,
    Manual,
    Schedule(u64),
    Verifier(Option<u64>),
}

#[derive(Debug, Clone)]
enum Op {
    Create(Spec),
    Continue(usize),
    Pause(usize),
    Resume(usize),
    Abandon(usize),
    Patch(usize, Edit),
    /// Moves the clock and runs one scheduler tick.
    Advance(u64),
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        proptest::option::of(1u64..6),
        prop_oneof![Just(0u64), 10u64..60],
        proptest::option::weighted(0.3, 1u64..5),
        proptest::option::weighted(0.3, 1u64..5),
        proptest::option::weighted(0.4, prop_oneof![Just(100u64), Just(1000)]),
        proptest::option::weighted(0.8, 1u64..6),
        proptest::option::weighted(0.4, 0u64..150),
        proptest::option::weighted(0.3, 0u64..5000),
    )
        .prop_filter("a goal needs a bound", |s| {
            s.5.is_some() || s.6.is_some() || s.7.is_some()
        })
        .prop_map(
            |(
                satisfy_on,
                cost_cents,
                escalate_on,
                fail_on,
                schedule,
                max_iterations,
                max_cost_cents,
                timeout_ms,
            )| Spec {
                satisfy_on,
                cost_cents,
                escalate_on,
                fail_on,
                schedule,
                max_iterations,
                max_cost_cents,
                timeout_ms,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    let goal = 0usize..8;
    prop_oneof![
        2 => spec().prop_map(Op::Create),
        6 => goal.clone().prop_map(Op::Continue),
        2 => goal.clone().prop_map(Op::Pause),
        2 => goal.clone().prop_map(Op::Resume),
        1 => goal.clone().prop_map(Op::Abandon),
        2 => (goal, prop_oneof![
            Just(Edit::Objective),
            Just(Edit::Manual),
            prop_oneof![Just(100u64), Just(1000)].prop_map(Edit::Schedule),
            proptest::option::of(1u64..6).prop_map(Edit::Verifier),
        ]).prop_map(|(goal, edit)| Op::Patch(goal, edit)),
        3 => prop_oneof![Just(0u64), 1u64..200, 200u64..3000].prop_map(Op::Advance),
    ]
}

fn verifier_ref(satisfy_on: Option<u64>) -> String {
    match satisfy_on {
        Some(k) => format!("conformance:verifier?satisfyOn={k}"),
        None => "conformance:verifier".to_string(),
    }
}

fn create_body(spec: &Spec) -> Value {
    let mut arm = format!("conformance:arm?costUsd={}", spec.cost_cents as f64 / 100.0);
    if let Some(k) = spec.escalate_on {
        arm.push_str(&format!("&escalateOn={k}"));
    }
    if let Some(k) = spec.fail_on {
        arm.push_str(&format!("&failOn={k}"));
    }
    if let Some(interval) = spec.schedule {
        arm.push_str(&format!("&intervalMs={interval}"));
    }
    let mut bounds = json!({});
    if let Some(n) = spec.max_iterations {
        bounds["maxLoopIterations"] = json!(n);
    }
    if let Some(cents) = spec.max_cost_cents {
        bounds["maxCostUsd"] = json!(cents as f64 / 100.0);
    }
    if let Some(ms) = spec.timeout_ms {
        bounds["runTimeoutMs"] = json!(ms);
    }
    let mode = if spec.schedule.is_some() {
        "schedule"
    } else {
        "manual"
    };
    json!({
        "objective": "model me",
        "completion": { "check": "verifier", "verifierRef": verifier_ref(spec.satisfy_on) },
        "continuation": { "mode": mode, "armRef": arm },
        "bounds": bounds,
    })
}

/// What one goal looked like at the last check.
struct Tracked {
    id: String,
    spec: Spec,
    created_ms: i64,
    goal: Value,
    events: Vec<Value>,
    evaluations: Vec<Value>,
    paused: bool,
    /// The cost of each run so far, in cents, in run order.
    costs: Vec<u64>,
}

fn is_terminal(state: &str) -> bool {
    matches!(state, "satisfied" | "abandoned" | "bound-exceeded")
}

fn closes(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e["type"] == "goal.closed")
        .filter_map(|e| e["payload"]["finalState"].as_str())
        .collect()
}

fn unix_ms(timestamp: &Value) -> i64 {
    let text = timestamp.as_str().expect("a timestamp");
    let parsed = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .expect("RFC 3339");
    i64::try_from(parsed.unix_timestamp_nanos() / 1_000_000).expect("fits")
}

fn cents(usd: &Value) -> u64 {
    (usd.as_f64().unwrap_or(0.0) * 100.0).round() as u64
}

/// Reads the goal back and checks every invariant against the last view.
/// `resumed` says whether the operation was a successful resume of it.
async fn check(host: &Harness, tracked: &mut Tracked, op: &Op, resumed: bool) {
    let id = tracked.id.clone();
    let goal = host.goal(&id).await;
    let events = host.events(&id).await;
    let evaluations = host.evaluations(&id).await;
    let attention = host.get(&format!("{BASE}/{id}/attention")).await;
    let attention = attention.expect(StatusCode::OK, "attention")["status"].clone();
    let context = format!("{id} after {op:?}\nbefore: {}\nnow: {goal}", tracked.goal);

    let before_state = tracked.goal["state"]
        .as_str()
        .unwrap_or("active")
        .to_string();
    let state = goal["state"].as_str().expect("state").to_string();
    let iterations = goal["progress"]["iterations"].as_u64().expect("iterations");
    let before_iterations = tracked.goal["progress"]["iterations"].as_u64().unwrap_or(0);
    let runs = goal["progress"]["contributingRunIds"]
        .as_array()
        .expect("runs")
        .clone();
    let before_runs = tracked.goal["progress"]["contributingRunIds"]
        .as_array()
        .cloned()
        .unwrap_or_default();

    // Terminal is final: nothing about a closed goal changes any more.
    if is_terminal(&before_state) {
        assert_eq!(goal, tracked.goal, "a closed goal changed: {context}");
        assert_eq!(events, tracked.events, "events after a close: {context}");
    }
    // Progress never decreases; runs are only ever appended.
    assert!(
        iterations >= before_iterations,
        "progress went back: {context}"
    );
    assert_eq!(
        &runs[..before_runs.len()],
        &before_runs[..],
        "runs rewritten: {context}"
    );
    assert_eq!(
        &events[..tracked.events.len()],
        &tracked.events[..],
        "events rewritten: {context}"
    );
    assert_eq!(
        &evaluations[..tracked.evaluations.len()],
        &tracked.evaluations[..],
        "evaluations rewritten: {context}"
    );
    // Bounds.
    if let Some(max) = tracked.spec.max_iterations {
        assert!(iterations <= max, "more than {max} runs: {context}");
        assert!(
            evaluations.len() as u64 <= max,
            "more than {max} evaluations: {context}"
        );
    }
    // A run's cost is on its evaluation; an escalated run has none and
    // costs what the arm charges.
    let mut costs = tracked.costs.clone();
    for run in &runs[tracked.costs.len()..] {
        let judged = evaluations.iter().find(|e| &e["runId"] == run);
        costs.push(judged.map_or(tracked.spec.cost_cents, |e| cents(&e["costUsd"])));
    }
    if let Some(cap) = tracked.spec.max_cost_cents {
        let before_last: u64 = costs.iter().rev().skip(1).sum();
        assert!(
            costs.is_empty() || before_last < cap,
            "run {iterations} started with {before_last} of {cap} cents spent: {context}"
        );
    }
    if let Some(timeout) = tracked.spec.timeout_ms {
        let deadline = tracked.created_ms + i64::try_from(timeout).expect("fits");
        for evaluation in &evaluations[tracked.evaluations.len()..] {
            assert!(
                unix_ms(&evaluation["at"]) < deadline,
                "a run after the deadline: {context}"
            );
        }
    }
    // Nothing runs while paused: only a resume lets progress move.
    if tracked.paused && !resumed {
        assert_eq!(iterations, before_iterations, "ran while paused: {context}");
    }
    // One goal.closed per closing transition, naming the new state.
    let new_closes = closes(&events).len() - closes(&tracked.events).len();
    let closing = state != before_state && state != "active";
    assert_eq!(
        new_closes,
        usize::from(closing),
        "closes: {context}\n{events:#?}"
    );
    if closing {
        assert_eq!(closes(&events).last(), Some(&state.as_str()), "{context}");
    }
    assert!(
        closes(&events).iter().filter(|s| is_terminal(s)).count() <= 1,
        "{context}"
    );
    // Events agree with the goal and the evaluations.
    let sequences: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().expect("seq"))
        .collect();
    assert_eq!(
        sequences,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "{context}"
    );
    let evaluated: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "goal.evaluated")
        .map(|e| &e["payload"])
        .collect();
    assert_eq!(evaluated.len(), evaluations.len(), "{context}");
    for (event, evaluation) in evaluated.iter().zip(&evaluations) {
        assert_eq!(event["runId"], evaluation["runId"], "{context}");
        assert_eq!(event["iterations"], evaluation["iteration"], "{context}");
        assert_eq!(event["satisfied"], evaluation["satisfied"], "{context}");
    }
    assert_eq!(runs.len() as u64, iterations, "{context}");
    let escalations = closes(&events)
        .iter()
        .filter(|s| **s == "escalated")
        .count();
    assert_eq!(
        evaluations.len() + escalations,
        runs.len(),
        "every run has one verdict or one escalation: {context}"
    );
    let mut remaining = runs.iter();
    for evaluation in &evaluations {
        assert!(
            remaining.any(|run| run == &evaluation["runId"]),
            "evaluations out of run order: {context}"
        );
    }
    match evaluations.last() {
        Some(last) => {
            assert_eq!(
                goal["completion"]["lastVerdict"]["runId"], last["runId"],
                "{context}"
            );
            assert_eq!(
                goal["completion"]["lastVerdict"]["satisfied"], last["satisfied"],
                "{context}"
            );
        }
        None => assert!(goal["completion"]["lastVerdict"].is_null(), "{context}"),
    }
    // Judge-only completion: satisfied only on a satisfied verdict.
    if state == "satisfied" {
        assert_eq!(
            evaluations.last().map(|e| &e["satisfied"]),
            Some(&json!(true)),
            "{context}"
        );
    }
    let expected_attention = match (state.as_str(), attention == "paused") {
        ("active", true) => "paused",
        ("active", false) => "active",
        _ => "stopped",
    };
    assert_eq!(attention, expected_attention, "{context}");

    tracked.paused = attention == "paused";
    tracked.costs = costs;
    tracked.goal = goal;
    tracked.events = events;
    tracked.evaluations = evaluations;
}

async fn apply(host: &Harness, goals: &mut Vec<Tracked>, op: &Op) {
    let path = |index: usize, goals: &Vec<Tracked>| -> Option<(usize, String)> {
        let index = index.checked_rem(goals.len())?;
        Some((index, format!("{BASE}/{}", goals[index].id)))
    };
    let mut resumed = None;
    match op {
        Op::Create(spec) => {
            let goal = host.create(create_body(spec)).await;
            assert_eq!(goal["state"], "active");
            goals.push(Tracked {
                id: id_of(&goal),
                spec: spec.clone(),
                created_ms: unix_ms(&goal["createdAt"]),
                goal: json!({ "state": "active", "progress": { "iterations": 0, "contributingRunIds": [] } }),
                events: Vec::new(),
                evaluations: Vec::new(),
                paused: false,
                costs: Vec::new(),
            });
        }
        Op::Continue(index) => {
            if let Some((index, path)) = path(*index, goals) {
                let reply = host.post(&format!("{path}/continue"), None).await;
                let before = goals[index].goal["state"]
                    .as_str()
                    .unwrap_or("active")
                    .to_string();
                match reply.status {
                    StatusCode::OK => {
                        assert_eq!(before, "active", "continue ran a {before} goal");
                        assert!(!goals[index].paused, "continue ran a paused goal");
                        reply.expect(StatusCode::OK, "continue-response");
                    }
                    StatusCode::CONFLICT => {
                        let code = reply.body["error"].as_str().unwrap_or_default().to_string();
                        let expected: &[&str] = match before.as_str() {
                            "escalated" => &["goal_escalated"],
                            "active" if goals[index].paused => &["goal_paused", "goal_terminal"],
                            "active" => &["goal_terminal"],
                            _ => &["goal_terminal"],
                        };
                        assert!(expected.contains(&code.as_str()), "{before}: {code}");
                    }
                    other => panic!("continue answered {other}: {}", reply.body),
                }
            }
        }
        Op::Pause(index) | Op::Resume(index) | Op::Abandon(index) => {
            if let Some((index, path)) = path(*index, goals) {
                let verb = match op {
                    Op::Pause(_) => "pause",
                    Op::Resume(_) => "resume",
                    _ => "abandon",
                };
                let before = goals[index].goal["state"]
                    .as_str()
                    .unwrap_or("active")
                    .to_string();
                let reply = host.post(&format!("{path}/{verb}"), None).await;
                let allowed = match (verb, before.as_str()) {
                    (_, state) if is_terminal(state) => StatusCode::CONFLICT,
                    ("pause", "escalated") => StatusCode::CONFLICT,
                    _ => StatusCode::OK,
                };
                assert_eq!(reply.status, allowed, "{verb} on {before}: {}", reply.body);
                if reply.status == StatusCode::OK {
                    let goal = reply.expect(StatusCode::OK, "goal");
                    let expected: &[&str] = match verb {
                        "abandon" => &["abandoned"],
                        "pause" => &["active"],
                        // A resume with the bounds used up closes at once.
                        _ => &["active", "bound-exceeded"],
                    };
                    assert!(
                        expected.iter().any(|state| goal["state"] == *state),
                        "{verb}: {goal}"
                    );
                    if verb == "resume" {
                        resumed = Some(index);
                        assert_eq!(
                            goal["progress"], goals[index].goal["progress"],
                            "resume keeps progress"
                        );
                    }
                }
            }
        }
        Op::Patch(index, edit) => {
            if let Some((index, path)) = path(*index, goals) {
                let body = match edit {
                    Edit::Objective => json!({ "objective": "edited" }),
                    Edit::Manual => json!({ "continuation": { "mode": "manual" } }),
                    Edit::Schedule(interval) => json!({ "continuation": { "mode": "schedule",
                        "armRef": format!("conformance:arm?intervalMs={interval}") } }),
                    Edit::Verifier(k) => {
                        json!({ "completion": { "verifierRef": verifier_ref(*k) } })
                    }
                };
                let before = goals[index].goal["state"]
                    .as_str()
                    .unwrap_or("active")
                    .to_string();
                let reply = host.patch(&path, body).await;
                if is_terminal(&before) {
                    reply.refused(StatusCode::CONFLICT, "goal_terminal");
                } else {
                    let goal = reply.expect(StatusCode::OK, "goal");
                    assert_eq!(goal["state"], before.as_str());
                    // The script follows the new refs.
                    let tracked = &mut goals[index];
                    match edit {
                        Edit::Schedule(interval) => {
                            tracked.spec.schedule = Some(*interval);
                            tracked.spec.cost_cents = 0;
                            tracked.spec.escalate_on = None;
                            tracked.spec.fail_on = None;
                        }
                        Edit::Manual => tracked.spec.schedule = None,
                        Edit::Verifier(k) => tracked.spec.satisfy_on = *k,
                        Edit::Objective => {}
                    }
                }
            }
        }
        Op::Advance(ms) => {
            host.advance_and_tick(*ms).await;
        }
    }
    for (index, tracked) in goals.iter_mut().enumerate() {
        check(host, tracked, op, resumed == Some(index)).await;
    }
    // A goal past its deadline is closed by the tick that sees it (unless
    // escalated: that waits for a person).
    if let Op::Advance(_) = op {
        let now = host.clock.now().unix_ms();
        for tracked in goals.iter() {
            if let Some(timeout) = tracked.spec.timeout_ms {
                let deadline = tracked.created_ms + i64::try_from(timeout).expect("fits");
                if now >= deadline {
                    assert_ne!(
                        tracked.goal["state"], "active",
                        "{} outlived its deadline",
                        tracked.id
                    );
                }
            }
        }
    }
}

fn cases() -> u32 {
    std::env::var("GOALPOST_PROPTEST_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(64)
}

proptest! {
    // No regression files: mutation runs fail this on purpose, and a real
    // failure is turned into a named test instead.
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_sequence_of_operations_breaks_a_goal(ops in proptest::collection::vec(op(), 1..40)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let host = Harness::seams();
            let mut goals = Vec::new();
            for op in &ops {
                apply(&host, &mut goals, op).await;
            }
            // Time always runs out for a goal with a deadline; let it.
            host.clock.advance(Duration::from_secs(10));
            apply(&host, &mut goals, &Op::Advance(0)).await;
        });
    }
}
