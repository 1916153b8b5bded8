//! The webhook client's side of the mutants: what goes out and how loosely
//! answers are read.

use serde_json::Value;

use super::Mutant;
use crate::domain::Timestamp;

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
    if mutant != Some(Mutant::VerifierAnswerCoerced) {
        return None;
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
