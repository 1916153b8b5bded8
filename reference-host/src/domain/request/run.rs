//! `POST {base}/{id}/runs`: a run executed elsewhere, reported to its goal
//! as `{runId?, output, costUsd?, escalate?}` (PROFILE.md "Reported runs").

use serde_json::Value;

use super::reader::{child, invalid, non_negative_number, object, only_keys, required, string};
use super::RequestError;
use crate::domain::ids::ClientKey;
use crate::domain::money::MicroUsd;

/// The longest `runId` a reporter may name.
pub const MAX_RUN_KEY_CHARS: usize = 128;
/// The longest escalation kind and reason: what an arm may answer
/// (schema `webhook-arm-response`), so a reported run escalates as a
/// dispatched one can.
pub use crate::domain::notes::{MAX_ESCALATION_KIND_CHARS, MAX_ESCALATION_REASON_CHARS};

const TOP: [&str; 4] = ["runId", "output", "costUsd", "escalate"];
const ESCALATE: [&str; 2] = ["kind", "reason"];

/// The reporter's own name for the run: 1 to 128 visible ASCII characters.
/// It makes a report idempotent; it is not the host's run id.
pub type RunKey = ClientKey<MAX_RUN_KEY_CHARS>;

/// The RFC 0044 interrupt a reported run raised instead of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedEscalation {
    pub kind: String,
    pub reason: String,
}

/// A valid report.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedRun {
    pub key: Option<RunKey>,
    pub output: Value,
    pub cost: MicroUsd,
    pub escalation: Option<ReportedEscalation>,
}

fn bounded_text(
    map: &serde_json::Map<String, Value>,
    key: &str,
    min: usize,
    max: usize,
) -> Result<String, RequestError> {
    let at = child("/escalate", key);
    let text = string(required(map, "/escalate", key)?, &at)?;
    let length = text.chars().count();
    if length < min || length > max {
        return Err(invalid(&at, format!("must be {min} to {max} characters")));
    }
    Ok(text.to_string())
}

pub fn parse_run_report(body: &Value) -> Result<ReportedRun, RequestError> {
    let top = object(body, "")?;
    only_keys(top, "", &TOP)?;
    let key = match top.get("runId") {
        None => None,
        Some(value) => Some(RunKey::parse(string(value, "/runId")?).ok_or_else(|| {
            invalid(
                "/runId",
                format!("must be 1 to {MAX_RUN_KEY_CHARS} visible ASCII characters"),
            )
        })?),
    };
    let output = required(top, "", "output")?.clone();
    let cost = match top.get("costUsd") {
        None | Some(Value::Null) => MicroUsd::ZERO,
        Some(value) => {
            let number = non_negative_number(value, "/costUsd")?;
            number
                .as_f64()
                .and_then(MicroUsd::from_usd)
                .ok_or_else(|| invalid("/costUsd", "must be a number >= 0"))?
        }
    };
    let escalation = match top.get("escalate") {
        None | Some(Value::Null) => None,
        Some(value) => {
            let map = object(value, "/escalate")?;
            only_keys(map, "/escalate", &ESCALATE)?;
            let kind = bounded_text(map, "kind", 1, MAX_ESCALATION_KIND_CHARS)?;
            // The same rule as an arm's interrupt (printable text), so a
            // reported run escalates exactly as a dispatched one can.
            crate::domain::notes::EscalationKind::parse(&kind)
                .map_err(|message| invalid("/escalate/kind", message))?;
            Some(ReportedEscalation {
                kind,
                reason: bounded_text(map, "reason", 0, MAX_ESCALATION_REASON_CHARS)?,
            })
        }
    };
    Ok(ReportedRun {
        key,
        output,
        cost,
        escalation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused_at(body: Value) -> String {
        match parse_run_report(&body) {
            Err(RequestError::Invalid { pointer, .. }) => pointer,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_full_report_parses() {
        let report = parse_run_report(&json!({
            "runId": "ci-481", "output": {"done": true}, "costUsd": 0.25,
            "escalate": {"kind": "approval", "reason": "needs sign-off"}
        }))
        .expect("valid");
        assert_eq!(report.key.as_ref().map(RunKey::as_str), Some("ci-481"));
        assert_eq!(report.output, json!({"done": true}));
        assert_eq!(report.cost, MicroUsd::from_micros(250_000));
        assert_eq!(report.escalation.map(|e| e.kind), Some("approval".into()));
        let bare = parse_run_report(&json!({"output": null})).expect("valid");
        assert_eq!(
            (bare.key, bare.cost, bare.escalation),
            (None, MicroUsd::ZERO, None)
        );
    }

    #[test]
    fn bad_reports_are_refused_where_they_are_wrong() {
        assert_eq!(refused_at(json!([])), "");
        assert_eq!(refused_at(json!({})), "/output");
        assert_eq!(refused_at(json!({"output": 1, "extra": 1})), "/extra");
        assert_eq!(refused_at(json!({"output": 1, "runId": ""})), "/runId");
        assert_eq!(refused_at(json!({"output": 1, "runId": "a b"})), "/runId");
        assert_eq!(refused_at(json!({"output": 1, "runId": 7})), "/runId");
        let long = "r".repeat(MAX_RUN_KEY_CHARS + 1);
        assert_eq!(refused_at(json!({"output": 1, "runId": long})), "/runId");
        let longest = "r".repeat(MAX_RUN_KEY_CHARS);
        assert!(parse_run_report(&json!({"output": 1, "runId": longest})).is_ok());
        assert_eq!(refused_at(json!({"output": 1, "costUsd": -1})), "/costUsd");
        assert_eq!(refused_at(json!({"output": 1, "costUsd": "1"})), "/costUsd");
        assert_eq!(
            refused_at(json!({"output": 1, "escalate": {"kind": "approval"}})),
            "/escalate/reason"
        );
        assert_eq!(
            refused_at(json!({"output": 1, "escalate": {"kind": "", "reason": "r"}})),
            "/escalate/kind"
        );
        let reason = "r".repeat(MAX_ESCALATION_REASON_CHARS + 1);
        assert_eq!(
            refused_at(json!({"output": 1, "escalate": {"kind": "k", "reason": reason}})),
            "/escalate/reason"
        );
        let reason = "r".repeat(MAX_ESCALATION_REASON_CHARS);
        let kind = "k".repeat(MAX_ESCALATION_KIND_CHARS);
        assert!(parse_run_report(
            &json!({"output": 1, "escalate": {"kind": kind, "reason": reason}})
        )
        .is_ok());
        let kind = "k".repeat(MAX_ESCALATION_KIND_CHARS + 1);
        assert_eq!(
            refused_at(json!({"output": 1, "escalate": {"kind": kind, "reason": ""}})),
            "/escalate/kind"
        );
    }
}
