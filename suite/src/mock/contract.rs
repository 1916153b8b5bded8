//! Checking a host's webhook payload against the contract (docs/DESIGN.md,
//! "Webhooks"): the request schemas decide.

use goalpost_schemas::Schemas;
use serde_json::Value;

use crate::model::mock_script::Endpoint;

/// Which endpoint a POST to the arm URL is: a heartbeat probe says so.
pub fn arm_url_endpoint(body: &Value) -> Endpoint {
    if body.get("probe").is_some() {
        Endpoint::Heartbeat
    } else {
        Endpoint::Arm
    }
}

/// Every way the payload breaks its request schema; empty when it keeps it.
pub fn problems(endpoint: Endpoint, body: &Value, schemas: &Schemas) -> Vec<String> {
    let schema = endpoint.request_schema();
    match schemas.validate(schema, body) {
        Ok(()) => Vec::new(),
        Err(violations) => violations
            .iter()
            .map(|v| format!("schema `{schema}`: {v}"))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mock_script::{AnswerBody, CallFacts, MockScript};
    use serde_json::json;

    fn schemas() -> Schemas {
        Schemas::embedded().expect("schemas")
    }

    fn remaining() -> Value {
        json!({"iterations": 3, "costUsd": null, "deadline": "2026-06-13T00:00:01.000Z"})
    }

    #[test]
    fn well_formed_payloads_keep_the_contract() {
        let schemas = schemas();
        let verifier = json!({"goalId": "g", "runId": "r", "iteration": 1, "output": {"a": 1}});
        assert_eq!(
            problems(Endpoint::Verifier, &verifier, &schemas),
            Vec::<String>::new()
        );
        let arm = json!({"goalId": "g", "runId": "r", "iteration": 2, "objective": "o",
                         "remaining": remaining()});
        assert_eq!(
            problems(Endpoint::Arm, &arm, &schemas),
            Vec::<String>::new()
        );
        let probe = json!({"goalId": "g", "probe": "heartbeat", "iteration": 1,
                           "remaining": remaining()});
        assert_eq!(
            problems(Endpoint::Heartbeat, &probe, &schemas),
            Vec::<String>::new()
        );
    }

    #[test]
    fn broken_payloads_name_the_schema_and_the_place() {
        let schemas = schemas();
        // The verifier never gets the objective.
        let leaky = json!({"goalId": "g", "runId": "r", "iteration": 1, "output": 1,
                           "objective": "leak"});
        let found = problems(Endpoint::Verifier, &leaky, &schemas);
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("schema `webhook-verifier-request`")),
            "{found:?}"
        );
        let arm = json!({"goalId": "g", "runId": "r", "iteration": 1, "objective": "o",
                         "remaining": {"iterations": -1, "costUsd": null, "deadline": null}});
        let found = problems(Endpoint::Arm, &arm, &schemas);
        assert!(
            found.iter().any(|p| p.contains("/remaining/iterations")),
            "{found:?}"
        );
        assert!(!problems(Endpoint::Heartbeat, &json!([1]), &schemas).is_empty());
    }

    #[test]
    fn probes_are_told_apart_from_runs() {
        assert_eq!(
            arm_url_endpoint(&json!({"probe": "heartbeat"})),
            Endpoint::Heartbeat
        );
        assert_eq!(arm_url_endpoint(&json!({"runId": "r"})), Endpoint::Arm);
        assert_eq!(arm_url_endpoint(&json!(null)), Endpoint::Arm);
    }

    #[test]
    fn the_mock_answers_what_the_contract_allows() {
        // Generated answers must be valid, or a correct host would record
        // environmental failures the scenarios do not expect.
        let schemas = schemas();
        let script = MockScript::parse(&json!({
            "verifier": {"satisfyOn": 1, "criteria": [{"id": "c1", "verdict": "pass"},
                                                      {"id": "c2", "verdict": "fail", "failureClass": "logical"}]},
            "arm": {"costUsd": 0.5, "escalateOn": 1},
            "heartbeat": {"fireOn": [1]}
        }))
        .expect("script");
        for (endpoint, schema) in [
            (Endpoint::Verifier, "webhook-verifier-response"),
            (Endpoint::Arm, "webhook-arm-response"),
            (Endpoint::Heartbeat, "webhook-heartbeat-response"),
        ] {
            for script in [&script, &MockScript::default()] {
                let answer = script.answer(&CallFacts {
                    endpoint,
                    iteration: Some(1),
                    number: 1,
                    run_id: Some("run-1".to_string()),
                    mode: None,
                });
                let AnswerBody::Json(body) = &answer.body else {
                    panic!("generated answers are JSON");
                };
                assert_eq!(schemas.validate(schema, body), Ok(()), "{body}");
            }
        }
    }
}
