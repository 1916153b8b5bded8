//! What a goal tells the people and workers around it, beside its wire
//! object (which openwop's schema closes): why it escalated, how a person
//! resolved that, and how the last verdict went, for the next run.
//!
//! None of it is ever in an event: events stay content-free. The reason
//! and the note are text the arm and a person wrote, shown only to the
//! goal's tenant (`GET {base}/{id}/escalation`) and to the goal's own arm.

use super::ids::RunId;
use super::timestamp::Timestamp;
use super::verdict::{FailureClass, Verdict};

/// Longest escalation reason kept, in characters (the arm answer's schema
/// allows as much).
pub const MAX_ESCALATION_REASON_CHARS: usize = 4096;
/// Longest escalation kind, in characters.
pub const MAX_ESCALATION_KIND_CHARS: usize = 256;
/// Longest resolution note a `resume` may carry, in characters.
pub const MAX_RESOLUTION_NOTE_CHARS: usize = 2048;

/// An interrupt's kind. RFC 0044 names `clarification` and `approval` and
/// leaves `x-host-…` to hosts; the profile's seam contract makes an
/// `escalate` object an escalation whatever its kind, so any other kind is
/// kept as the arm wrote it ([`EscalationKind::is_rfc_0044`] tells them
/// apart). What is checked is that a person can be shown it: one line of
/// printable text, bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationKind(String);

impl EscalationKind {
    pub fn parse(text: &str) -> Result<EscalationKind, String> {
        if text.is_empty() || text.chars().count() > MAX_ESCALATION_KIND_CHARS {
            return Err(format!(
                "escalate.kind must have 1 to {MAX_ESCALATION_KIND_CHARS} characters"
            ));
        }
        if text.chars().any(char::is_control) {
            return Err("escalate.kind must be printable text".into());
        }
        Ok(EscalationKind(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `clarification`, `approval` or `x-host-…`.
    pub fn is_rfc_0044(&self) -> bool {
        matches!(self.0.as_str(), "clarification" | "approval")
            || self
                .0
                .strip_prefix("x-host-")
                .is_some_and(|rest| !rest.is_empty())
    }
}

/// Why a run escalated its goal, as the arm said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    pub kind: EscalationKind,
    pub reason: String,
}

impl Escalation {
    /// Checks the arm's interrupt: a known kind, a bounded reason.
    pub fn parse(kind: &str, reason: &str) -> Result<Escalation, String> {
        let kind = EscalationKind::parse(kind)?;
        if reason.chars().count() > MAX_ESCALATION_REASON_CHARS {
            return Err(format!(
                "escalate.reason is longer than {MAX_ESCALATION_REASON_CHARS} characters"
            ));
        }
        Ok(Escalation {
            kind,
            reason: reason.to_string(),
        })
    }
}

/// The escalation a goal is stopped on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenEscalation {
    pub escalation: Escalation,
    pub run_id: RunId,
    pub at: Timestamp,
}

/// How a person resolved the goal's escalation, for its next run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub kind: EscalationKind,
    pub note: Option<String>,
}

/// A resolution note as `resume` takes it.
pub fn resolution_note(text: &str) -> Result<String, String> {
    if text.chars().count() > MAX_RESOLUTION_NOTE_CHARS {
        return Err(format!(
            "note is longer than {MAX_RESOLUTION_NOTE_CHARS} characters"
        ));
    }
    Ok(text.to_string())
}

/// The previous verdict's outcome, as the next run's worker sees it: flags
/// and ids, never text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feedback {
    pub satisfied: bool,
    /// The failing criteria's ids, in the judge's order.
    pub failing_criteria: Vec<String>,
    pub failure_class: Option<FailureClass>,
}

impl Feedback {
    pub fn of(verdict: &Verdict) -> Feedback {
        Feedback {
            satisfied: verdict.satisfied(),
            failing_criteria: verdict
                .criteria()
                .unwrap_or_default()
                .iter()
                .filter(|criterion| !criterion.pass)
                .map(|criterion| criterion.id.clone())
                .collect(),
            failure_class: verdict.failure_class(),
        }
    }
}

/// A goal's notes; all empty for a new goal.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Notes {
    /// Set when a run escalates the goal; cleared by `resume`.
    pub escalation: Option<OpenEscalation>,
    /// Set by the `resume` that reactivated an escalated goal; cleared once
    /// a run after it is recorded.
    pub resolution: Option<Resolution>,
    /// The last recorded verdict's outcome.
    pub feedback: Option<Feedback>,
    /// The goal's attention (bindings, policy, evidence), when anyone
    /// attends it through the attention extension (`domain::attention`).
    pub attention: Option<Box<super::attention::AttentionState>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_printable_bounded_kind_escalates_and_rfc_0044_kinds_are_told_apart() {
        for kind in ["clarification", "approval", "x-host-budget"] {
            let parsed = EscalationKind::parse(kind).expect(kind);
            assert_eq!(parsed.as_str(), kind);
            assert!(parsed.is_rfc_0044(), "{kind}");
        }
        for kind in ["confidence", "x-host-", "Approval"] {
            let parsed = EscalationKind::parse(kind).expect(kind);
            assert!(!parsed.is_rfc_0044(), "{kind}");
        }
        for kind in ["", "x-host-a\u{7}", "two\nlines"] {
            assert!(EscalationKind::parse(kind).is_err(), "{kind:?}");
        }
        let longest = format!("x-host-{}", "k".repeat(MAX_ESCALATION_KIND_CHARS - 7));
        assert!(EscalationKind::parse(&longest).is_ok());
        assert!(EscalationKind::parse(&format!("{longest}k")).is_err());
    }

    #[test]
    fn the_reason_and_the_note_are_bounded() {
        let reason = "é".repeat(MAX_ESCALATION_REASON_CHARS);
        assert!(Escalation::parse("approval", &reason).is_ok());
        assert!(Escalation::parse("approval", &format!("{reason}x")).is_err());
        let note = "n".repeat(MAX_RESOLUTION_NOTE_CHARS);
        assert!(resolution_note(&note).is_ok());
        assert!(resolution_note(&format!("{note}n")).is_err());
    }
}
