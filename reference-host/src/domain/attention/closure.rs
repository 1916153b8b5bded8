//! Completion policies: a goal with attention closes `satisfied` only when
//! its policy allows it, and never while blocking evidence is unresolved.

use serde_json::{json, Value};

use super::binding::AttentionMode;
use super::policy::{Authority, Policy};
use super::state::AttentionState;
use crate::domain::ids::EvidenceId;

/// What a closure still waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Under `verifier`, only the judge's satisfied verdict closes.
    Judge,
    Confirmation(Authority),
    Approvals {
        have: usize,
        need: usize,
    },
    SupervisorApproval,
    /// Blocking evidence nobody resolved yet.
    Unresolved(Vec<EvidenceId>),
}

impl Missing {
    pub fn to_json(&self) -> Value {
        match self {
            Missing::Judge => json!({ "what": "judge-verdict" }),
            Missing::Confirmation(authority) => {
                json!({ "what": "confirmation", "authority": authority.as_str() })
            }
            Missing::Approvals { have, need } => {
                json!({ "what": "approvals", "have": have, "need": need })
            }
            Missing::SupervisorApproval => json!({ "what": "supervisor-approval" }),
            Missing::Unresolved(ids) => json!({
                "what": "resolution",
                "evidence": ids.iter().map(EvidenceId::as_str).collect::<Vec<_>>(),
            }),
        }
    }
}

/// Distinct live review and judge bindings whose latest verdict approves
/// `revision` (any revision with `None`: what a faulty host counts).
pub fn approvals(state: &AttentionState, revision: Option<u64>) -> usize {
    state
        .votes
        .iter()
        .filter(|vote| vote.approve)
        .filter(|vote| revision.is_none_or(|revision| vote.revision == revision))
        .filter(|vote| matches!(vote.mode, AttentionMode::Review | AttentionMode::Judge))
        .filter(|vote| {
            state
                .binding(&vote.binding)
                .is_some_and(|binding| binding.status.is_live())
        })
        .map(|vote| &vote.binding)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// Whether a request to close at `revision` (the goal's current one) would
/// be granted: `Ok` or everything still missing.
pub fn closure(state: &AttentionState, revision: u64, approved: usize) -> Result<(), Vec<Missing>> {
    let mut missing = Vec::new();
    match &state.policy {
        Policy::Verifier => missing.push(Missing::Judge),
        Policy::HostConfirmed | Policy::PrincipalConfirmed => {
            let wanted = if state.policy == Policy::HostConfirmed {
                Authority::Host
            } else {
                Authority::Principal
            };
            let confirmed = state
                .confirmations
                .iter()
                .any(|c| c.authority == wanted && c.revision == revision);
            if !confirmed {
                missing.push(Missing::Confirmation(wanted));
            }
        }
        Policy::Quorum { threshold } => {
            let need = usize::from(*threshold);
            if approved < need {
                missing.push(Missing::Approvals {
                    have: approved,
                    need,
                });
            }
        }
        Policy::Supervisor { binding } => {
            let approved =
                state.votes.iter().any(|vote| {
                    vote.binding == *binding && vote.approve && vote.revision == revision
                }) && state
                    .binding(binding)
                    .is_some_and(|supervisor| supervisor.status.is_live());
            if !approved {
                missing.push(Missing::SupervisorApproval);
            }
        }
    }
    let unresolved = state.unresolved_blocking();
    if !unresolved.is_empty() {
        missing.push(Missing::Unresolved(unresolved));
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}
