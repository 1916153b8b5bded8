//! A verifier that is an `http` URL (DESIGN "Webhooks"): one POST of
//! `{goalId, runId, iteration, output}` per run.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{JudgeError, Verifier, VerifyRequest};
use crate::domain::{Criterion, FailureClass, Judgement, Tenant};
use crate::future::BoxFuture;
use crate::webhook::{Endpoint, WebhookClient};

#[derive(Debug)]
pub struct WebhookVerifier {
    endpoint: Endpoint,
}

impl WebhookVerifier {
    pub fn new(client: Arc<WebhookClient>, url: String, owner: Tenant) -> WebhookVerifier {
        WebhookVerifier {
            endpoint: Endpoint::new(client, url, owner),
        }
    }
}

/// Schema `webhook-verifier-request`.
pub fn verify_request(request: &VerifyRequest) -> Value {
    json!({
        "goalId": request.goal_id.as_str(),
        "runId": request.run_id.as_str(),
        "iteration": request.iteration,
        "output": request.output,
    })
}

/// Reads a schema-valid `webhook-verifier-response`. The verifier's flag is
/// taken as it says; aggregation with the criteria is the engine's. A
/// passing criterion keeps no failure class.
fn judgement(answer: &Value) -> Result<Judgement, JudgeError> {
    let malformed = |what: &str| JudgeError(format!("the verifier answer has no valid {what}"));
    let satisfied = answer
        .get("satisfied")
        .and_then(Value::as_bool)
        .ok_or_else(|| malformed("satisfied"))?;
    let confidence = answer
        .get("confidence")
        .and_then(Value::as_f64)
        .ok_or_else(|| malformed("confidence"))?;
    let criteria = match answer.get("criteria") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| {
                    let id = item
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| malformed("criterion id"))?;
                    let pass = match item.get("verdict").and_then(Value::as_str) {
                        Some("pass") => true,
                        Some("fail") => false,
                        _ => return Err(malformed("criterion verdict")),
                    };
                    let failure_class = match item.get("failureClass") {
                        _ if pass => None,
                        None | Some(Value::Null) => None,
                        Some(class) => Some(
                            class
                                .as_str()
                                .and_then(FailureClass::parse)
                                .ok_or_else(|| malformed("failure class"))?,
                        ),
                    };
                    Ok(Criterion {
                        id: id.to_string(),
                        pass,
                        failure_class,
                    })
                })
                .collect::<Result<Vec<_>, JudgeError>>()?,
        ),
        Some(_) => return Err(malformed("criteria")),
    };
    Ok(Judgement {
        satisfied,
        confidence,
        criteria,
    })
}

impl Verifier for WebhookVerifier {
    fn verify(&self, request: VerifyRequest) -> BoxFuture<'_, Result<Judgement, JudgeError>> {
        Box::pin(async move {
            let answer = self
                .endpoint
                .call(
                    &request.goal_id,
                    &verify_request(&request),
                    "webhook-verifier-response",
                )
                .await
                .map_err(|error| JudgeError(error.to_string()))?;
            judgement(&answer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_become_judgements_as_said() {
        let judgement = judgement(&json!({ "satisfied": true, "confidence": 0.8, "criteria": [
            { "id": "c1", "verdict": "pass", "failureClass": "logical" },
            { "id": "c2", "verdict": "fail", "failureClass": "environmental" },
            { "id": "c3", "verdict": "fail" }
        ] }))
        .expect("valid");
        assert!(
            judgement.satisfied,
            "the flag is kept; the engine aggregates"
        );
        let criteria = judgement.criteria.expect("criteria");
        assert_eq!(criteria[0].failure_class, None);
        assert!(!criteria[1].pass);
        assert_eq!(criteria[1].failure_class, Some(FailureClass::Environmental));
        assert_eq!(criteria[2].failure_class, None);
        let bare =
            super::judgement(&json!({ "satisfied": false, "confidence": 0.1, "criteria": null }))
                .expect("valid");
        assert_eq!(bare.criteria, None);
    }
}
