//! The webhook client's side of the mutants: what goes out and how loosely
//! answers are read.

use serde_json::Value;

use super::Mutant;
use goalpost_host::domain::Timestamp;

/// The body actually sent.
pub(crate) fn request_body(mutant: Option<Mutant>, body: &Value) -> Value {
    let mut body = body.clone();
    if let (Some(Mutant::ArmFeedbackMissing), Some(previous)) = (mutant, body.get_mut("previous")) {
        *previous = Value::Null;
    }
    if let (Some(Mutant::ResolutionNoteDropped), Some(object)) = (mutant, body.as_object_mut()) {
        object.remove("resolution");
    }
    if mutant == Some(Mutant::DeadlineAsEpoch) {
        if let Some(deadline) = body.pointer_mut("/remaining/deadline") {
            if let Some(at) = deadline.as_str().and_then(Timestamp::parse) {
                *deadline = Value::from(at.unix_ms());
            }
        }
    }
    body
}

/// The status the client acts on.
pub(crate) fn status(mutant: Option<Mutant>, status: reqwest::StatusCode) -> reqwest::StatusCode {
    if mutant == Some(Mutant::WebhookErrorStatusRead) {
        reqwest::StatusCode::OK
    } else {
        status
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty() && text != "false",
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        Value::Object(_) => true,
    }
}

/// A loosely read answer that skips the schema check; `None` to check as
/// usual.
pub(crate) fn lenient_answer(
    mutant: Option<Mutant>,
    schema: &str,
    answer: &Value,
) -> Option<Value> {
    match mutant {
        Some(Mutant::VerifierAnswerCoerced) => {}
        Some(Mutant::WorkerAnswerLenient) if schema == "webhook-arm-response" => {
            return lenient_arm_answer(answer);
        }
        Some(Mutant::VerifierConfidenceUnchecked) if schema == "webhook-verifier-response" => {
            return clamped_confidence(answer);
        }
        _ => return None,
    }
    let mut answer = answer.clone();
    let object = answer.as_object_mut()?;
    match schema {
        "webhook-verifier-response" => {
            let satisfied = object.get("satisfied").is_some_and(truthy);
            object.insert("satisfied".into(), Value::Bool(satisfied));
            let confidence = object
                .get("confidence")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .clamp(0.0, 1.0);
            object.insert("confidence".into(), Value::from(confidence));
        }
        "webhook-heartbeat-response" => {
            let fire = object.get("fire").is_some_and(truthy);
            object.insert("fire".into(), Value::Bool(fire));
        }
        _ => return None,
    }
    Some(answer)
}

/// `worker-answer-lenient`: an arm answer read for what it can be made to
/// mean. Members the schema does not define are dropped, an `escalate`
/// without a kind (or that is only a reason) is an escalation of kind
/// `clarification`, and a commitment's `afterMs` is rounded and clamped
/// into 1 s to 30 days. `None` leaves an answer that is not an object to
/// the schema check.
fn lenient_arm_answer(answer: &Value) -> Option<Value> {
    const KNOWN: [&str; 4] = ["output", "costUsd", "escalate", "commitment"];
    const MIN_AFTER_MS: f64 = 1_000.0;
    const MAX_AFTER_MS: f64 = 2_592_000_000.0;
    let mut answer = answer.clone();
    let object = answer.as_object_mut()?;
    object.retain(|key, _| KNOWN.contains(&key.as_str()));
    object.entry("output").or_insert(Value::Null);
    if let Some(escalate) = object.get_mut("escalate") {
        let reason = match &*escalate {
            Value::String(reason) => Some(reason.clone()),
            Value::Object(fields) => Some(
                fields
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => None,
        };
        if let Some(reason) = reason {
            let kind = escalate
                .get("kind")
                .and_then(Value::as_str)
                .filter(|kind| !kind.is_empty())
                .unwrap_or("clarification")
                .to_string();
            *escalate = serde_json::json!({ "kind": kind, "reason": reason });
        }
    }
    if let Some(after) = object
        .get_mut("commitment")
        .and_then(|commitment| commitment.get_mut("afterMs"))
    {
        if let Some(ms) = after.as_f64() {
            // Rounding and clamping are the bug being modelled.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ms = ms.round().clamp(MIN_AFTER_MS, MAX_AFTER_MS) as u64;
            *after = Value::from(ms);
        }
    }
    Some(answer)
}

/// `verifier-confidence-unchecked`: a verifier answer whose confidence is
/// out of range is read with it clamped into 0..1; everything else is
/// checked as usual (`None`).
fn clamped_confidence(answer: &Value) -> Option<Value> {
    let confidence = answer.get("confidence")?.as_f64()?;
    if (0.0..=1.0).contains(&confidence) {
        return None;
    }
    let mut answer = answer.clone();
    answer["confidence"] = Value::from(confidence.clamp(0.0, 1.0));
    Some(answer)
}
