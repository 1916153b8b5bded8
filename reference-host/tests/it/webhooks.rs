//! Webhook verifiers and arms (DESIGN "Webhooks"), against a receiver on
//! 127.0.0.1: the payloads and the secret, every failure mode as an
//! environmental verdict, aggregation whatever the verifier says, cost and
//! escalation from the arm, and fail-closed dispatch around closes.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use goalpost_host::clock::Clock;
use serde_json::{json, Value};
use support::receiver::{Answer, Call, Receiver};
use support::{assert_valid, id_of, Harness, BASE, SECRET};

const ARM: &str = "/arm";
const VERIFIER: &str = "/verifier";

fn body(receiver: &Receiver, mode: &str, arm_fragment: &str, bounds: Value) -> Value {
    json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": receiver.url(VERIFIER) },
        "continuation": { "mode": mode, "armRef": format!("{}{arm_fragment}", receiver.url(ARM)) },
        "bounds": bounds,
    })
}

fn run(call: &Call) -> Answer {
    Answer::Json(json!({ "output": { "iteration": call.body["iteration"] } }))
}

fn verdict(satisfied: bool) -> Answer {
    Answer::Json(json!({ "satisfied": satisfied, "confidence": 0.7 }))
}

/// A receiver whose arm runs cleanly and whose verifier answers `verifier`.
async fn receiver_with_verifier(
    verifier: impl Fn(&Call, usize) -> Answer + Send + Sync + 'static,
) -> Receiver {
    Receiver::start(move |call, n| {
        if call.path == ARM {
            run(call)
        } else {
            verifier(call, n)
        }
    })
    .await
}

async fn create(host: &Harness, body: Value) -> String {
    id_of(&host.create(body).await)
}

#[tokio::test]
async fn calls_are_signed_for_the_tenant_and_carry_the_documented_payloads() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver_with_verifier(|_, n| verdict(n >= 2)).await;
    let id = create(
        &host,
        body(&receiver, "manual", "", json!({ "maxLoopIterations": 5 })),
    )
    .await;
    for _ in 0..2 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "satisfied");
    let runs = goal["progress"]["contributingRunIds"].clone();

    let calls = receiver.calls();
    let paths: Vec<&str> = calls.iter().map(|call| call.path.as_str()).collect();
    assert_eq!(paths, vec![ARM, VERIFIER, ARM, VERIFIER]);
    for call in &calls {
        assert!(call.signed_for(SECRET, "tenant-a"), "{:?}", call.headers);
        assert_eq!(call.header("x-goalpost-goal"), Some(id.as_str()));
        assert_eq!(call.header("x-goalpost-webhook-secret"), None);
        assert_eq!(call.header("content-type"), Some("application/json"));
        let schema = if call.path == ARM {
            "webhook-arm-request"
        } else {
            "webhook-verifier-request"
        };
        assert_valid(schema, &call.body);
        assert_eq!(call.body["goalId"], json!(id));
    }
    let arm_calls = receiver.calls_to(ARM);
    let verifier_calls = receiver.calls_to(VERIFIER);
    for (index, (arm, verifier)) in arm_calls.iter().zip(&verifier_calls).enumerate() {
        // The arm sees the objective as data; the verifier never does.
        assert_eq!(arm.body["objective"], "ship the release checklist");
        assert_eq!(verifier.body.get("objective"), None);
        assert_eq!(arm.body["runId"], runs[index]);
        assert_eq!(verifier.body["runId"], runs[index]);
        assert_eq!(arm.body["iteration"], index + 1);
        assert_eq!(verifier.body["output"], json!({ "iteration": index + 1 }));
    }
    let evaluations = host.evaluations(&id).await;
    assert_eq!(evaluations[1]["confidence"], 0.7);
    assert_eq!(evaluations[0]["satisfied"], false);
}

#[tokio::test]
async fn the_projection_counts_the_remaining_budget_down() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Json(json!({ "output": null, "costUsd": 0.25 }))
        } else {
            verdict(false)
        }
    })
    .await;
    let goal = host
        .create(body(
            &receiver,
            "manual",
            "",
            json!({ "maxLoopIterations": 3, "maxCostUsd": 2, "runTimeoutMs": 60000 }),
        ))
        .await;
    let id = id_of(&goal);
    for _ in 0..3 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let created = goalpost_host::domain::Timestamp::parse(goal["createdAt"].as_str().expect("at"))
        .expect("timestamp");
    let deadline = created.saturating_add_ms(60_000).to_wire();
    let remaining: Vec<Value> = receiver
        .calls_to(ARM)
        .iter()
        .map(|call| call.body["remaining"].clone())
        .collect();
    assert_eq!(
        remaining,
        vec![
            json!({ "iterations": 3, "costUsd": 2.0, "deadline": deadline }),
            json!({ "iterations": 2, "costUsd": 1.75, "deadline": deadline }),
            json!({ "iterations": 1, "costUsd": 1.5, "deadline": deadline }),
        ]
    );
    assert_eq!(host.goal(&id).await["state"], "bound-exceeded");
}

/// Runs one iteration against a verifier answering `answer` and checks it
/// ended as an environmental failure that counts and never satisfies.
async fn verifier_failure_is_environmental(answer: Answer) {
    let host = Harness::webhooks(Duration::from_millis(300));
    let receiver = receiver_with_verifier(move |_, _| answer.clone()).await;
    let id = create(
        &host,
        body(&receiver, "manual", "", json!({ "maxLoopIterations": 2 })),
    )
    .await;
    for iteration in 1..=2u64 {
        let reply = host.continue_once(&id).await;
        let evaluation = &reply.expect(StatusCode::OK, "continue-response")["evaluation"];
        assert_eq!(evaluation["satisfied"], false);
        assert_eq!(evaluation["failureClass"], "environmental");
        assert_eq!(evaluation["confidence"], 0.0);
        assert_eq!(evaluation["iteration"], iteration);
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded", "the failures counted");
    assert_eq!(goal["progress"]["iterations"], 2);
    assert_eq!(receiver.calls_to(VERIFIER).len(), 2, "no retries");
}

#[tokio::test]
async fn a_malformed_json_verdict_is_environmental() {
    verifier_failure_is_environmental(Answer::Raw("{\"satisfied\": true,".into())).await;
}

#[tokio::test]
async fn a_schema_invalid_verdict_is_environmental() {
    verifier_failure_is_environmental(Answer::Json(
        json!({ "satisfied": true, "confidence": 0.9, "verdict": "yes" }),
    ))
    .await;
    verifier_failure_is_environmental(Answer::Json(
        json!({ "satisfied": "true", "confidence": 1 }),
    ))
    .await;
}

#[tokio::test]
async fn a_500_verdict_is_environmental() {
    verifier_failure_is_environmental(Answer::Status(
        500,
        json!({ "satisfied": true, "confidence": 1 }),
    ))
    .await;
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    verifier_failure_is_environmental(Answer::Status(
        307,
        json!({ "satisfied": true, "confidence": 1 }),
    ))
    .await;
}

#[tokio::test]
async fn a_verdict_slower_than_the_timeout_is_environmental() {
    verifier_failure_is_environmental(Answer::Delayed(
        Duration::from_secs(3),
        Box::new(verdict(true)),
    ))
    .await;
}

#[tokio::test]
async fn a_refused_connection_is_environmental() {
    let host = Harness::webhooks(Duration::from_secs(2));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let nowhere = format!("http://{}/verifier", closed.local_addr().expect("addr"));
    drop(closed);
    let id = create(
        &host,
        json!({
            "objective": "o",
            "completion": { "check": "verifier", "verifierRef": nowhere.clone() },
            "continuation": { "mode": "manual", "armRef": nowhere },
            "bounds": { "maxLoopIterations": 1 },
        }),
    )
    .await;
    let reply = host.continue_once(&id).await;
    let body = reply.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["evaluation"]["failureClass"], "environmental");
    assert_eq!(body["evaluation"]["costUsd"], 0.0);
    assert_eq!(body["goal"]["state"], "bound-exceeded");
}

#[tokio::test]
async fn a_failing_arm_is_environmental_and_skips_the_verifier() {
    let host = Harness::webhooks(Duration::from_millis(300));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Status(503, json!({ "output": "busy", "costUsd": 5 }))
        } else {
            verdict(true)
        }
    })
    .await;
    let id = create(
        &host,
        body(
            &receiver,
            "manual",
            "",
            json!({ "maxLoopIterations": 3, "maxCostUsd": 1 }),
        ),
    )
    .await;
    let reply = host.continue_once(&id).await;
    let evaluation = &reply.expect(StatusCode::OK, "continue-response")["evaluation"];
    assert_eq!(evaluation["failureClass"], "environmental");
    assert_eq!(evaluation["costUsd"], 0.0, "a failed run costs nothing");
    assert!(receiver.calls_to(VERIFIER).is_empty());
    assert_eq!(host.goal(&id).await["state"], "active");
}

#[tokio::test]
async fn every_arm_failure_is_environmental_and_costs_nothing() {
    let failures = [
        Answer::Raw("{\"output\": ".into()),
        Answer::Json(json!({ "output": null, "costUsd": -1 })),
        Answer::Json(json!({ "output": null, "escalate": { "kind": "confidence" } })),
        Answer::Json(json!({ "result": "done" })),
        Answer::Status(500, json!({ "output": null })),
        Answer::Delayed(
            Duration::from_secs(3),
            Box::new(Answer::Json(json!({ "output": null }))),
        ),
    ];
    for failure in failures {
        let host = Harness::webhooks(Duration::from_millis(300));
        let answer = failure.clone();
        let receiver = Receiver::start(move |call, _| {
            if call.path == ARM {
                answer.clone()
            } else {
                verdict(true)
            }
        })
        .await;
        let id = create(
            &host,
            body(&receiver, "manual", "", json!({ "maxLoopIterations": 1 })),
        )
        .await;
        let reply = host.continue_once(&id).await;
        let body = reply.expect(StatusCode::OK, "continue-response");
        assert_eq!(
            body["evaluation"]["failureClass"], "environmental",
            "{failure:?}"
        );
        assert_eq!(body["evaluation"]["costUsd"], 0.0, "{failure:?}");
        assert_eq!(body["goal"]["state"], "bound-exceeded", "{failure:?}");
        assert!(receiver.calls_to(VERIFIER).is_empty(), "{failure:?}");
    }
}

#[tokio::test]
async fn a_failing_criterion_outvotes_satisfied_true() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver_with_verifier(|_, _| {
        Answer::Json(json!({ "satisfied": true, "confidence": 0.95, "criteria": [
            { "id": "tests", "verdict": "pass", "failureClass": "logical" },
            { "id": "docs", "verdict": "fail", "failureClass": "logical" }
        ] }))
    })
    .await;
    let id = create(
        &host,
        body(&receiver, "manual", "", json!({ "maxLoopIterations": 2 })),
    )
    .await;
    let reply = host.continue_once(&id).await;
    let body = reply.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["evaluation"]["satisfied"], false);
    assert_eq!(body["evaluation"]["failureClass"], "logical");
    assert_eq!(
        body["evaluation"]["criteria"],
        json!([
            { "id": "tests", "verdict": "pass", "failureClass": null },
            { "id": "docs", "verdict": "fail", "failureClass": "logical" }
        ])
    );
    assert_eq!(body["goal"]["state"], "active");
    assert_eq!(
        body["goal"]["completion"]["lastVerdict"]["satisfied"],
        false
    );
    let events = host.events(&id).await;
    assert_eq!(events[0]["payload"]["satisfied"], false);
}

#[tokio::test]
async fn a_worker_claiming_done_never_closes_the_goal() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let claims = json!({ "done": true, "satisfied": true, "state": "satisfied", "complete": true });
    let receiver = Receiver::start(move |call, _| {
        if call.path == ARM {
            Answer::Json(json!({ "output": claims.clone() }))
        } else {
            verdict(false)
        }
    })
    .await;
    let id = create(
        &host,
        body(&receiver, "manual", "", json!({ "maxLoopIterations": 3 })),
    )
    .await;
    for _ in 0..3 {
        let reply = host.continue_once(&id).await;
        assert_eq!(
            reply.expect(StatusCode::OK, "continue-response")["evaluation"]["satisfied"],
            false
        );
    }
    assert_eq!(host.goal(&id).await["state"], "bound-exceeded");

    // Without a verifier, the claim is not even looked at.
    let receiver = Receiver::start(|_, _| {
        Answer::Json(json!({ "output": { "done": true, "satisfied": true } }))
    })
    .await;
    let id = create(
        &host,
        json!({
            "objective": "o",
            "completion": { "check": "verifier" },
            "continuation": { "mode": "manual", "armRef": receiver.url(ARM) },
            "bounds": { "maxLoopIterations": 1 },
        }),
    )
    .await;
    let reply = host.continue_once(&id).await;
    let body = reply.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["evaluation"]["failureClass"], "environmental");
    assert_eq!(body["goal"]["state"], "bound-exceeded");
}

#[tokio::test]
async fn an_escalation_from_the_arm_halts_the_goal_without_a_verdict() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM && call.body["iteration"] == 2 {
            Answer::Json(json!({ "output": null, "costUsd": 0.1,
                "escalate": { "kind": "clarification", "reason": "unsure about the release" } }))
        } else if call.path == ARM {
            Answer::Json(json!({ "output": null, "costUsd": 0.1, "escalate": null }))
        } else {
            verdict(false)
        }
    })
    .await;
    let id = create(
        &host,
        body(&receiver, "manual", "", json!({ "maxLoopIterations": 5 })),
    )
    .await;
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    let reply = host.continue_once(&id).await;
    let body = reply.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["evaluation"], Value::Null);
    assert_eq!(body["goal"]["state"], "escalated");
    assert_eq!(body["goal"]["progress"]["iterations"], 2);
    assert_eq!(receiver.calls_to(VERIFIER).len(), 1, "no verdict for run 2");
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_escalated");
    assert_eq!(receiver.calls_to(ARM).len(), 2);
    let events = host.events(&id).await;
    let closes: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "goal.closed")
        .map(|event| &event["payload"]["finalState"])
        .collect();
    assert_eq!(closes, vec![&json!("escalated")]);
}

#[tokio::test]
async fn a_schedule_arm_dispatches_nothing_after_an_escalation() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM && call.body["iteration"] == 2 {
            Answer::Json(json!({ "output": null,
                "escalate": { "kind": "approval", "reason": "stuck" } }))
        } else if call.path == ARM {
            run(call)
        } else {
            verdict(false)
        }
    })
    .await;
    let id = create(
        &host,
        body(
            &receiver,
            "schedule",
            "#intervalMs=10",
            json!({ "maxLoopIterations": 10 }),
        ),
    )
    .await;
    host.tick().await;
    for _ in 0..6 {
        host.advance_and_tick(10).await;
    }
    assert_eq!(host.goal(&id).await["state"], "escalated");
    assert_eq!(
        receiver.calls_to(ARM).len(),
        2,
        "nothing after the escalation"
    );
    host.post(&format!("{BASE}/{id}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.tick().await;
    assert_eq!(
        receiver.calls_to(ARM).len(),
        3,
        "resume re-arms the schedule"
    );
}

#[tokio::test]
async fn cost_reported_by_the_arm_drives_the_cost_bound() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Json(json!({ "output": null, "costUsd": 0.4 }))
        } else {
            verdict(false)
        }
    })
    .await;
    let id = create(
        &host,
        body(
            &receiver,
            "manual",
            "",
            json!({ "maxLoopIterations": 10, "maxCostUsd": 1.0 }),
        ),
    )
    .await;
    for _ in 0..3 {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded");
    assert_eq!(goal["progress"]["iterations"], 3);
    let costs: Vec<Value> = host
        .evaluations(&id)
        .await
        .iter()
        .map(|evaluation| evaluation["costUsd"].clone())
        .collect();
    assert_eq!(costs, vec![json!(0.4), json!(0.4), json!(0.4)]);
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    assert_eq!(receiver.calls_to(ARM).len(), 3, "never a fourth run");
}

#[tokio::test]
async fn an_answer_after_abandon_is_recorded_nowhere() {
    let host = Arc::new(Harness::webhooks(Duration::from_secs(5)));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Held(Box::new(run(call)))
        } else {
            verdict(true)
        }
    })
    .await;
    let id = create(
        &host,
        body(&receiver, "manual", "", json!({ "maxLoopIterations": 3 })),
    )
    .await;
    let running = {
        let host = Arc::clone(&host);
        let id = id.clone();
        tokio::spawn(async move { host.continue_once(&id).await })
    };
    receiver.wait_for_calls(ARM, 1).await;
    let reply = tokio::time::timeout(
        Duration::from_secs(2),
        host.post(&format!("{BASE}/{id}/abandon"), None),
    )
    .await
    .expect("abandon answers while the arm holds its answer");
    assert_eq!(reply.expect(StatusCode::OK, "goal")["state"], "abandoned");
    receiver.release();
    let continued = running.await.expect("the continue finishes");
    continued.refused(StatusCode::CONFLICT, "goal_terminal");

    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "abandoned");
    assert_eq!(goal["progress"]["iterations"], 0);
    assert_eq!(goal["completion"]["lastVerdict"], Value::Null);
    assert!(host.evaluations(&id).await.is_empty());
    let types: Vec<Value> = host
        .events(&id)
        .await
        .iter()
        .map(|event| event["type"].clone())
        .collect();
    assert_eq!(types, vec![json!("goal.closed")]);
    assert!(
        receiver.calls_to(VERIFIER).is_empty(),
        "no judge after close"
    );
    assert!(host.store.runs_in_flight().expect("store").is_empty());
}

/// A run dispatched before the deadline is not dropped by it: the worker
/// has seen it, so it gets its verdict, and its record closes the goal. The
/// deadline never waits for it either: the tick goes on at once.
#[tokio::test]
async fn the_deadline_leaves_a_run_in_flight_to_its_verdict() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Held(Box::new(run(call)))
        } else {
            verdict(false)
        }
    })
    .await;
    let id = create(
        &host,
        body(
            &receiver,
            "schedule",
            "#intervalMs=1",
            json!({ "maxLoopIterations": 3, "runTimeoutMs": 1000 }),
        ),
    )
    .await;
    host.scheduler.tick(host.clock.now()).await.expect("tick");
    receiver.wait_for_calls(ARM, 1).await;
    host.clock.advance(Duration::from_millis(1000));
    let tick = tokio::time::timeout(
        Duration::from_secs(2),
        host.scheduler.tick(host.clock.now()),
    )
    .await
    .expect("the tick is not held up by the run")
    .expect("tick");
    assert!(tick.closed.is_empty(), "closed under its run: {tick:?}");
    receiver.release();
    tokio::time::timeout(Duration::from_secs(5), host.scheduler.settle())
        .await
        .expect("the run finished");
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded");
    assert_eq!(goal["progress"]["iterations"], 1);
    assert_eq!(host.evaluations(&id).await.len(), 1);
    for _ in 0..3 {
        host.advance_and_tick(10).await;
    }
    assert_eq!(receiver.calls_to(ARM).len(), 1, "nothing after the close");
}

#[tokio::test]
async fn no_run_starts_after_a_pause_answers() {
    let host = Arc::new(Harness::webhooks(Duration::from_secs(5)));
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            Answer::Held(Box::new(run(call)))
        } else {
            verdict(false)
        }
    })
    .await;
    let id = create(
        &host,
        body(
            &receiver,
            "schedule",
            "#intervalMs=1",
            json!({ "maxLoopIterations": 50 }),
        ),
    )
    .await;
    host.scheduler.tick(host.clock.now()).await.expect("tick");
    receiver.wait_for_calls(ARM, 1).await;
    let pausing = {
        let host = Arc::clone(&host);
        let id = id.clone();
        tokio::spawn(async move { host.post(&format!("{BASE}/{id}/pause"), None).await })
    };
    // A continue racing the pause: whichever takes the goal's lock second
    // re-reads it first.
    let racing = {
        let host = Arc::clone(&host);
        let id = id.clone();
        tokio::spawn(async move { host.continue_once(&id).await.status })
    };
    receiver.release();
    let paused = pausing.await.expect("the pause finishes");
    let after_pause = std::time::Instant::now();
    paused.expect(StatusCode::OK, "goal");
    let raced = racing.await.expect("the continue finishes");
    assert!(
        raced == StatusCode::OK || raced == StatusCode::CONFLICT,
        "{raced}"
    );
    host.scheduler.settle().await;
    for _ in 0..5 {
        host.advance_and_tick(10).await;
    }
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_paused");
    let late: Vec<Call> = receiver
        .calls_to(ARM)
        .into_iter()
        .filter(|call| call.at >= after_pause)
        .collect();
    assert!(late.is_empty(), "{} arm calls after the pause", late.len());
    let landed = host.evaluations(&id).await.len();
    assert_eq!(
        landed,
        receiver.calls_to(ARM).len(),
        "every run before the pause landed"
    );
}

#[tokio::test]
async fn unknown_fragment_parameters_are_400() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = Receiver::start(|call, _| run(call)).await;
    let reply = host
        .post(
            BASE,
            Some(body(
                &receiver,
                "schedule",
                "#everyMs=5",
                json!({ "maxLoopIterations": 1 }),
            )),
        )
        .await;
    let body = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(body["details"]["pointer"], "/continuation/armRef");
    let id = create(
        &host,
        self::body(&receiver, "manual", "", json!({ "maxLoopIterations": 1 })),
    )
    .await;
    let patch = json!({ "completion": { "verifierRef": format!("{}#intervalMs=5", receiver.url(VERIFIER)) } });
    host.patch(&format!("{BASE}/{id}"), patch)
        .await
        .refused(StatusCode::BAD_REQUEST, "invalid_request");
    // An https ref is a webhook like any other (called over TLS).
    let https = json!({ "continuation": { "armRef": "https://example.test/arm" } });
    let patched = host.patch(&format!("{BASE}/{id}"), https).await;
    assert_eq!(
        patched.expect(StatusCode::OK, "goal")["continuation"]["armRef"],
        "https://example.test/arm"
    );
}
