//! Completion policies: a goal with attention closes `satisfied` only when
//! its policy allows it, and never while blocking evidence is unresolved.

use serde_json::{json, Value};

use super::binding::AttentionMode;
use super::state::AttentionState;
use crate::domain::ids::{BindingId, EvidenceId};

/// Who must agree before a goal closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// RFC 0097 as it is: the goal's judge decides on the pursuer's runs
    /// (and the goal's own); a request to close is never enough.
    Verifier,
    /// A credential holding the host's authority confirmed this revision.
    HostConfirmed,
    /// A credential holding a principal's authority confirmed this
    /// revision.
    PrincipalConfirmed,
    /// At least `threshold` review or judge bindings approved this
    /// revision.
    Quorum { threshold: u8 },
    /// The named coordinate binding approved this revision (optional: only
    /// hosts that advertise it).
    Supervisor { binding: BindingId },
}

impl Policy {
    pub fn kind(&self) -> &'static str {
        match self {
            Policy::Verifier => "verifier",
            Policy::HostConfirmed => "host-confirmed",
            Policy::PrincipalConfirmed => "principal-confirmed",
            Policy::Quorum { .. } => "quorum",
            Policy::Supervisor { .. } => "supervisor",
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Policy::Quorum { threshold } => json!({ "kind": self.kind(), "threshold": threshold }),
            Policy::Supervisor { binding } => {
                json!({ "kind": self.kind(), "binding": binding.as_str() })
            }
            _ => json!({ "kind": self.kind() }),
        }
    }
}

/// The policies every host that advertises `attention` offers.
pub const REQUIRED_POLICIES: [&str; 4] = [
    "verifier",
    "host-confirmed",
    "principal-confirmed",
    "quorum",
];

/// The most review and judge bindings one goal can hold at once (one per
/// mode), so the highest quorum that can ever be met.
pub const MAX_QUORUM: u8 = 2;

/// Whose authority a confirmation carries: the credential's, never the
/// request body's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Authority {
    Host,
    Principal,
}

impl Authority {
    pub fn as_str(self) -> &'static str {
        match self {
            Authority::Host => "host",
            Authority::Principal => "principal",
        }
    }

    pub fn parse(text: &str) -> Option<Authority> {
        match text {
            "host" => Some(Authority::Host),
            "principal" => Some(Authority::Principal),
            _ => None,
        }
    }
}

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
