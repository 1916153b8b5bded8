//! What the people and workers around a goal are told: an escalation's
//! kind and reason at `GET {base}/{id}/escalation` (never in events), a
//! person's resolution note carried by `resume` to the next run, and the
//! previous verdict's outcome in every arm request after the first.

use crate::support;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{assert_valid, id_of, Harness, B, BASE};

const ARM: &str = "/arm";
const VERIFIER: &str = "/verifier";

fn body(receiver: &Receiver, iterations: u64) -> Value {
    json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": receiver.url(VERIFIER) },
        "continuation": { "mode": "manual", "armRef": receiver.url(ARM) },
        "bounds": { "maxLoopIterations": iterations },
    })
}

/// An arm that escalates its run `escalate_on` with `kind`, and a verifier
/// whose second criterion fails (logical) until run 3.
async fn receiver(escalate_on: usize, kind: &'static str) -> Receiver {
    Receiver::start(move |call, n| {
        if call.path == ARM {
            if n == escalate_on {
                return Answer::Json(json!({ "output": null,
                    "escalate": { "kind": kind, "reason": "which region should ship first?" } }));
            }
            Answer::Json(json!({ "output": { "n": n } }))
        } else {
            let failing = n < 3;
            Answer::Json(json!({ "satisfied": true, "confidence": 0.8, "criteria": [
                { "id": "builds", "verdict": "pass" },
                { "id": "tests-green", "verdict": if failing { "fail" } else { "pass" },
                  "failureClass": if failing { json!("logical") } else { Value::Null } },
            ] }))
        }
    })
    .await
}

#[tokio::test]
async fn the_arm_hears_how_the_previous_verdict_went_and_never_its_text() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver(0, "approval").await;
    let id = id_of(&host.create(body(&receiver, 5)).await);
    for _ in 0..3 {
        assert_eq!(host.continue_once(&id).await.status, StatusCode::OK);
    }
    let previous: Vec<Value> = receiver
        .calls_to(ARM)
        .iter()
        .map(|call| {
            assert_valid("webhook-arm-request", &call.body);
            call.body["previous"].clone()
        })
        .collect();
    assert_eq!(
        previous,
        vec![
            Value::Null,
            json!({ "satisfied": false, "failingCriteria": ["tests-green"], "failureClass": "logical" }),
            json!({ "satisfied": false, "failingCriteria": ["tests-green"], "failureClass": "logical" }),
        ]
    );
    // The third verdict passed: the goal is satisfied, so no fourth run
    // hears of it; what the host kept says so.
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "satisfied");
}

#[tokio::test]
async fn an_escalation_shows_its_reason_and_a_resume_note_reaches_the_next_run() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver(2, "clarification").await;
    let id = id_of(&host.create(body(&receiver, 5)).await);
    let path = format!("{BASE}/{id}/escalation");
    host.get(&path)
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");

    assert_eq!(host.continue_once(&id).await.status, StatusCode::OK);
    assert_eq!(host.continue_once(&id).await.status, StatusCode::OK);
    assert_eq!(host.goal(&id).await["state"], "escalated");
    let escalated_run = receiver.calls_to(ARM)[1].body["runId"].clone();
    let shown = host.get(&path).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(shown.body["kind"], "clarification");
    assert_eq!(shown.body["reason"], "which region should ship first?");
    assert_eq!(shown.body["runId"], escalated_run);
    assert_eq!(shown.body["goalId"], id.as_str());
    // Another tenant sees nothing, as for the goal itself.
    host.call(Method::GET, &path, Some(B), None)
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
    // Events stay content-free: the reason is in none of them.
    for event in host.events(&id).await {
        assert!(!event.to_string().contains("region"), "{event}");
    }

    // A note of the wrong type or over the bound is refused, and the goal
    // stays escalated.
    let resume = format!("{BASE}/{id}/resume");
    for bad in [
        json!({ "note": 7 }),
        json!({ "note": "n".repeat(goalpost_host::domain::notes::MAX_RESOLUTION_NOTE_CHARS + 1) }),
    ] {
        host.post(&resume, Some(bad))
            .await
            .refused(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(host.goal(&id).await["state"], "escalated");
    }
    let note =
        "n".repeat(goalpost_host::domain::notes::MAX_RESOLUTION_NOTE_CHARS - 9) + " EU first";
    let resumed = host.post(&resume, Some(json!({ "note": note }))).await;
    assert_eq!(resumed.status, StatusCode::OK);
    host.get(&path)
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");

    assert_eq!(host.continue_once(&id).await.status, StatusCode::OK);
    assert_eq!(host.continue_once(&id).await.status, StatusCode::OK);
    let calls = receiver.calls_to(ARM);
    assert_eq!(
        calls[2].body["resolution"],
        json!({ "kind": "clarification", "note": note })
    );
    assert!(calls[0].body.get("resolution").is_none());
    assert!(
        calls[3].body.get("resolution").is_none(),
        "the note is for the first run after the resume only"
    );
    // The escalated run had no verdict: the run after it hears of run 1's.
    assert_eq!(calls[2].body["previous"]["satisfied"], false);
}

#[tokio::test]
async fn an_interrupt_whose_kind_cannot_be_shown_is_a_malformed_answer() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver(1, "needs\u{7}bell").await;
    let id = id_of(&host.create(body(&receiver, 5)).await);
    let reply = host.continue_once(&id).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["goal"]["state"], "active");
    assert_eq!(reply.body["evaluation"]["failureClass"], "environmental");
    host.get(&format!("{BASE}/{id}/escalation"))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
}
