//! A binding's answer, read, and cut down to what its mode may do. An
//! answer that claims more (a falsifier asking to close, an observer adding
//! evidence) changes nothing beyond its authority; what was refused is
//! counted and recorded with the run.

use serde_json::Value;

use super::binding::Powers;
use super::state::{
    MAX_EVIDENCE_PER_ANSWER, MAX_KIND_CHARS, MAX_LABEL_CHARS, MAX_REF_CHARS, MAX_SUMMARY_CHARS,
};
use crate::domain::money::MicroUsd;

/// Evidence an answer offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvidence {
    pub kind: String,
    pub reference: String,
    pub label: Option<String>,
    pub summary: Option<String>,
    pub blocking: bool,
}

/// A binding's answer (schema `attention-arm-response`), read.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingAnswer {
    /// The run's output: for a pursuer under the `verifier` policy, what the
    /// goal's judge evaluates; otherwise kept by nobody.
    pub output: Value,
    pub cost: MicroUsd,
    pub evidence: Vec<NewEvidence>,
    /// A verdict on the claim: approve or not.
    pub verdict: Option<bool>,
    pub request_close: bool,
}

/// What of an answer its mode allows, and the names of what it claimed
/// beyond that.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Admitted {
    pub evidence: Vec<NewEvidence>,
    pub verdict: Option<bool>,
    pub request_close: bool,
    pub refused: Vec<&'static str>,
}

fn text(
    value: Option<&Value>,
    key: &str,
    max: usize,
    required: bool,
) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) if !required => Ok(None),
        Some(Value::String(text)) => {
            let chars = text.chars().count();
            if chars == 0 || chars > max {
                return Err(format!("evidence {key} must have 1 to {max} characters"));
            }
            if text.chars().any(char::is_control) {
                return Err(format!("evidence {key} must be printable text"));
            }
            Ok(Some(text.clone()))
        }
        _ => Err(format!("evidence {key} must be a string")),
    }
}

impl BindingAnswer {
    /// Reads an answer already valid against its schema, and checks what
    /// the schema does not: text sizes and how much evidence one answer
    /// may bring. `Err` makes the run an environmental failure, like any
    /// answer the host cannot read.
    pub fn from_json(answer: &Value) -> Result<BindingAnswer, String> {
        let object = answer.as_object().ok_or("the answer is not an object")?;
        let cost = match object.get("costUsd").and_then(Value::as_f64) {
            None => MicroUsd::ZERO,
            Some(usd) => MicroUsd::from_usd(usd).ok_or_else(|| format!("a cost of {usd}"))?,
        };
        let mut evidence = Vec::new();
        if let Some(items) = object.get("evidence").filter(|value| !value.is_null()) {
            let items = items.as_array().ok_or("evidence must be an array")?;
            if items.len() > MAX_EVIDENCE_PER_ANSWER {
                return Err(format!(
                    "an answer adds at most {MAX_EVIDENCE_PER_ANSWER} evidence items"
                ));
            }
            for item in items {
                let item = item
                    .as_object()
                    .ok_or("an evidence item must be an object")?;
                evidence.push(NewEvidence {
                    kind: text(item.get("kind"), "kind", MAX_KIND_CHARS, true)?.unwrap_or_default(),
                    reference: text(item.get("ref"), "ref", MAX_REF_CHARS, true)?
                        .unwrap_or_default(),
                    label: text(item.get("label"), "label", MAX_LABEL_CHARS, false)?,
                    summary: text(item.get("summary"), "summary", MAX_SUMMARY_CHARS, false)?,
                    blocking: item
                        .get("blocking")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                });
            }
        }
        let verdict = match object.get("verdict") {
            None | Some(Value::Null) => None,
            Some(verdict) => Some(
                verdict
                    .get("approve")
                    .and_then(Value::as_bool)
                    .ok_or("verdict.approve must be a boolean")?,
            ),
        };
        Ok(BindingAnswer {
            output: object.get("output").cloned().unwrap_or(Value::Null),
            cost,
            evidence,
            verdict,
            request_close: object.get("requestClose").and_then(Value::as_bool) == Some(true),
        })
    }

    /// Cuts the answer down to `powers` (plus a verdict when the binding is
    /// the goal's supervisor): the rest is refused, not applied.
    pub fn admit(&self, powers: Powers, supervises: bool) -> Admitted {
        let mut admitted = Admitted::default();
        if !self.evidence.is_empty() && !powers.evidence {
            admitted.refused.push("evidence");
        } else {
            for item in &self.evidence {
                if item.blocking && !powers.blocking {
                    admitted.refused.push("blocking-evidence");
                } else {
                    admitted.evidence.push(item.clone());
                }
            }
        }
        if let Some(approve) = self.verdict {
            if powers.verdict || supervises {
                admitted.verdict = Some(approve);
            } else {
                admitted.refused.push("verdict");
            }
        }
        if self.request_close {
            if powers.request_close {
                admitted.request_close = true;
            } else {
                admitted.refused.push("request-closure");
            }
        }
        admitted
    }
}
