//! An arm that is an `http` URL (DESIGN "Webhooks"): a run is one POST of
//! the attention projection, a heartbeat probe one POST of the probe.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Escalation, ProbeRequest, Remaining, RunError, RunReport, RunRequest, Worker};
use crate::domain::{Feedback, MicroUsd, Tenant};
use crate::future::BoxFuture;
use crate::webhook::{Endpoint, WebhookClient};

/// The largest arm request the host sends. The objective is bounded by the
/// 64 KiB body limit at create and PATCH, so only a goal stored some other
/// way could reach this; such a run fails environmentally rather than
/// sending a truncated objective.
pub const MAX_ARM_REQUEST_BYTES: usize = 128 * 1024;

#[derive(Debug)]
pub struct WebhookArm {
    endpoint: Endpoint,
}

impl WebhookArm {
    pub fn new(client: Arc<WebhookClient>, url: String, owner: Tenant) -> WebhookArm {
        WebhookArm {
            endpoint: Endpoint::new(client, url, owner),
        }
    }
}

fn remaining(remaining: &Remaining) -> Value {
    json!({
        "iterations": remaining.iterations,
        "costUsd": remaining.cost.map(MicroUsd::as_usd),
        "deadline": remaining.deadline.map(|at| at.to_wire()),
    })
}

/// The previous verdict's outcome as the worker reads it: flags and ids
/// only. `null` before the first verdict.
fn previous(feedback: Option<&Feedback>) -> Value {
    feedback.map_or(Value::Null, |feedback| {
        json!({
            "satisfied": feedback.satisfied,
            "failingCriteria": feedback.failing_criteria,
            "failureClass": feedback.failure_class.map(|class| class.as_str()),
        })
    })
}

/// The attention projection (schema `webhook-arm-request`). `previous`
/// and `resolution` are this host's additions, which the schema allows:
/// how the last verdict went, and how a person resolved the escalation
/// this run follows (present only then).
pub fn arm_request(request: &RunRequest) -> Value {
    let mut body = json!({
        "goalId": request.goal_id.as_str(),
        "runId": request.run_id.as_str(),
        "iteration": request.iteration,
        "objective": request.objective.as_str(),
        "remaining": remaining(&request.remaining),
        "previous": previous(request.previous.as_ref()),
    });
    if let (Some(resolution), Some(object)) = (&request.resolution, body.as_object_mut()) {
        object.insert(
            "resolution".into(),
            json!({ "kind": resolution.kind.as_str(), "note": resolution.note }),
        );
    }
    if let (Some(extras), Some(object)) = (&request.extras, body.as_object_mut()) {
        object.insert("revision".into(), json!(extras.revision));
        object.insert("mode".into(), json!(extras.mode.as_str()));
    }
    body
}

/// The heartbeat probe (schema `webhook-heartbeat-request`).
pub fn probe_request(request: &ProbeRequest) -> Value {
    json!({
        "goalId": request.goal_id.as_str(),
        "probe": "heartbeat",
        "iteration": request.iteration,
        "remaining": remaining(&request.remaining),
    })
}

/// Reads a schema-valid `webhook-arm-response`.
fn report(answer: Value) -> Result<RunReport, RunError> {
    let Value::Object(mut answer) = answer else {
        return Err(RunError("the arm answer is not an object".into()));
    };
    let cost = match answer.get("costUsd").and_then(Value::as_f64) {
        None => MicroUsd::ZERO,
        Some(usd) => MicroUsd::from_usd(usd)
            .ok_or_else(|| RunError(format!("the arm reported a cost of {usd}")))?,
    };
    let escalation = match answer.get("escalate") {
        None | Some(Value::Null) => None,
        Some(escalate) => Some(
            Escalation::parse(&text(escalate, "kind")?, &text(escalate, "reason")?)
                .map_err(RunError)?,
        ),
    };
    let commitment_ms = match answer.get("commitment") {
        None | Some(Value::Null) => None,
        Some(commitment) => Some(
            commitment
                .get("afterMs")
                .and_then(Value::as_u64)
                .and_then(crate::domain::commitment::commitment_ms)
                .ok_or_else(|| {
                    RunError(format!(
                        "commitment.afterMs must be a whole number of ms in {}..={}",
                        crate::domain::commitment::MIN_COMMITMENT_MS,
                        crate::domain::commitment::MAX_COMMITMENT_MS
                    ))
                })?,
        ),
    };
    Ok(RunReport {
        output: answer.remove("output").unwrap_or(Value::Null),
        cost,
        escalation,
        commitment_ms,
    })
}

fn text(object: &Value, key: &str) -> Result<String, RunError> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RunError(format!("escalate.{key} is not a string")))
}

impl Worker for WebhookArm {
    fn run(&self, request: RunRequest) -> BoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(async move {
            let body = arm_request(&request);
            let size = serde_json::to_vec(&body).map_or(usize::MAX, |bytes| bytes.len());
            if size > MAX_ARM_REQUEST_BYTES {
                return Err(RunError(format!(
                    "the arm request would be {size} bytes, over {MAX_ARM_REQUEST_BYTES}"
                )));
            }
            let answer = self
                .endpoint
                .call(&request.goal_id, &body, "webhook-arm-response")
                .await
                .map_err(|error| RunError(error.to_string()))?;
            report(answer)
        })
    }

    fn probe(&self, request: ProbeRequest) -> BoxFuture<'_, Result<bool, RunError>> {
        Box::pin(async move {
            let answer = self
                .endpoint
                .call(
                    &request.goal_id,
                    &probe_request(&request),
                    "webhook-heartbeat-response",
                )
                .await
                .map_err(|error| RunError(error.to_string()))?;
            answer
                .get("fire")
                .and_then(Value::as_bool)
                .ok_or_else(|| RunError("the probe answer has no fire flag".into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{GoalId, Objective, RunId, Timestamp};

    #[test]
    fn the_projection_carries_the_objective_and_what_is_left() {
        let request = RunRequest {
            goal_id: GoalId::generate(),
            run_id: RunId::generate(),
            iteration: 2,
            objective: Objective::new("ship it".into()),
            remaining: Remaining {
                iterations: Some(2),
                cost: Some(MicroUsd::from_micros(700_000)),
                deadline: Timestamp::from_unix_ms(1_781_308_805_000),
            },
            previous: None,
            resolution: None,
            extras: None,
        };
        let body = arm_request(&request);
        assert_eq!(body["objective"], "ship it");
        assert_eq!(
            body["previous"],
            Value::Null,
            "no verdict before the first run"
        );
        assert!(body.get("resolution").is_none());
        assert_eq!(body["iteration"], 2);
        assert_eq!(
            body["remaining"],
            json!({ "iterations": 2, "costUsd": 0.7, "deadline": "2026-06-13T00:00:05.000Z" })
        );
        let unbounded = Remaining {
            iterations: None,
            cost: None,
            deadline: None,
        };
        assert_eq!(
            remaining(&unbounded),
            json!({ "iterations": null, "costUsd": null, "deadline": null })
        );
        assert!(body.get("revision").is_none() && body.get("mode").is_none());
        // A host's own members ride beside the projection when it adds them.
        let extended = arm_request(&RunRequest {
            extras: Some(crate::arms::RunExtras {
                revision: 4,
                mode: crate::domain::Mode::Schedule,
            }),
            ..request
        });
        assert_eq!(extended["revision"], 4);
        assert_eq!(extended["mode"], "schedule");
        assert_eq!(extended["objective"], "ship it");
    }

    #[test]
    fn answers_become_reports() {
        let plain = report(json!({ "output": { "done": true } })).expect("valid");
        assert_eq!(plain.output, json!({ "done": true }));
        assert_eq!(plain.cost, MicroUsd::ZERO);
        assert_eq!(plain.escalation, None);
        let costly =
            report(json!({ "output": 1, "costUsd": 0.25, "escalate": null })).expect("valid");
        assert_eq!(costly.cost, MicroUsd::from_micros(250_000));
        let escalated = report(json!({ "output": null,
            "escalate": { "kind": "approval", "reason": "unsure" } }))
        .expect("valid");
        let committed =
            report(json!({ "output": 1, "commitment": { "afterMs": 1000 } })).expect("valid");
        assert_eq!(committed.commitment_ms, Some(1000));
        assert_eq!(plain.commitment_ms, None);
        for bad in [
            json!({ "afterMs": 999 }),
            json!({ "afterMs": "1000" }),
            json!(5),
        ] {
            assert!(report(json!({ "output": 1, "commitment": bad })).is_err());
        }
        assert_eq!(
            escalated.escalation,
            Some(Escalation::parse("approval", "unsure").expect("valid"))
        );
        // Any kind escalates (the seam contract), RFC 0044's or not; one
        // that cannot be shown to a person, or an overlong reason, is a
        // malformed answer: the run fails environmentally.
        let other = report(json!({ "output": null,
            "escalate": { "kind": "confidence", "reason": "unsure" } }))
        .expect("valid");
        assert_eq!(
            other.escalation.map(|e| e.kind.as_str().to_string()),
            Some("confidence".into())
        );
        for (kind, reason) in [
            ("bell\u{7}", "unsure".to_string()),
            (
                "approval",
                "r".repeat(crate::domain::notes::MAX_ESCALATION_REASON_CHARS + 1),
            ),
        ] {
            let answer =
                report(json!({ "output": null, "escalate": { "kind": kind, "reason": reason } }));
            assert!(answer.is_err(), "{kind}");
        }
    }
}
