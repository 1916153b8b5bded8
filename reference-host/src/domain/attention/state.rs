//! A goal's attention record: its completion policy, its bindings and what
//! their answers and the people around it contributed. Kept with the goal
//! (host-private, like its notes), so every change of it is one write of
//! the goal: a binding's run, its evidence and the goal's bounds move
//! together or not at all.

use sha2::{Digest, Sha256};

use super::binding::{AttentionMode, Binding, BindingStatus, PauseWake};
use super::policy::{Authority, Policy};
use crate::domain::goal::{Goal, GoalState};
use crate::domain::ids::{BindingId, EvidenceId, Objective};
use crate::domain::timestamp::Timestamp;

/// Most bindings one goal keeps, superseded and stopped ones included: a
/// goal's record is read on every run, so it must stay small.
pub const MAX_BINDINGS: usize = 16;
/// Most evidence items one goal keeps.
pub const MAX_EVIDENCE: usize = 64;
/// Most evidence items one answer may add.
pub const MAX_EVIDENCE_PER_ANSWER: usize = 8;
/// Confirmations kept (the latest): only the current revision's count.
pub const MAX_CONFIRMATIONS: usize = 8;
/// Longest evidence `kind`, in characters.
pub const MAX_KIND_CHARS: usize = 64;
/// Longest evidence `ref`, in characters.
pub const MAX_REF_CHARS: usize = 256;
/// Longest evidence `label`, in characters.
pub const MAX_LABEL_CHARS: usize = 256;
/// Longest evidence `summary`, in characters.
pub const MAX_SUMMARY_CHARS: usize = 1024;

/// A pointer to something that supports or undermines the claim. The host
/// keeps the pointer, never the artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub id: EvidenceId,
    /// The binding whose answer added it.
    pub binding: BindingId,
    pub mode: AttentionMode,
    pub kind: String,
    pub reference: String,
    pub label: Option<String>,
    pub summary: Option<String>,
    /// Holds closure until resolved.
    pub blocking: bool,
    pub resolved: bool,
    /// The goal revision it was added on.
    pub revision: u64,
    pub at: Timestamp,
}

/// A review or judge binding's latest verdict on the claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vote {
    pub binding: BindingId,
    pub mode: AttentionMode,
    pub approve: bool,
    pub revision: u64,
    pub at: Timestamp,
}

/// Confirmation evidence from a credential that holds an authority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    pub authority: Authority,
    pub revision: u64,
    pub at: Timestamp,
    /// What the confirmer points at (`kind`, `ref`), if anything.
    pub evidence: Option<(String, String)>,
}

/// A goal's attention.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionState {
    pub policy: Policy,
    /// The revision of the claim (the objective) the record was last
    /// written against; see [`AttentionState::revision_of`].
    pub revision: u64,
    /// A digest of the objective `revision` counts.
    pub claim: String,
    pub bindings: Vec<Binding>,
    pub evidence: Vec<Evidence>,
    pub votes: Vec<Vote>,
    pub confirmations: Vec<Confirmation>,
}

/// What identifies the claim under attention: the objective's text.
pub fn claim_of(objective: &Objective) -> String {
    let digest = Sha256::digest(objective.as_str().as_bytes());
    digest[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl AttentionState {
    /// A record for `goal`, under the `verifier` policy (RFC 0097 as is).
    pub fn new(goal: &Goal) -> AttentionState {
        AttentionState {
            policy: Policy::Verifier,
            revision: 1,
            claim: claim_of(&goal.objective),
            bindings: Vec::new(),
            evidence: Vec::new(),
            votes: Vec::new(),
            confirmations: Vec::new(),
        }
    }

    /// The goal's current revision: one more than the recorded one once the
    /// objective changed since it was recorded. Verdicts and confirmations
    /// count only on the revision they were given on, so an edited claim
    /// must be reviewed again.
    pub fn revision_of(&self, goal: &Goal) -> u64 {
        if claim_of(&goal.objective) == self.claim {
            self.revision
        } else {
            self.revision.saturating_add(1)
        }
    }

    /// Brings the recorded revision up to the goal's (before a write).
    pub fn rebase(&mut self, goal: &Goal) {
        self.revision = self.revision_of(goal);
        self.claim = claim_of(&goal.objective);
    }

    pub fn binding(&self, id: &BindingId) -> Option<&Binding> {
        self.bindings.iter().find(|binding| binding.id == *id)
    }

    pub fn binding_mut(&mut self, id: &BindingId) -> Option<&mut Binding> {
        self.bindings.iter_mut().find(|binding| binding.id == *id)
    }

    /// The live binding that holds `mode`, if one does.
    pub fn holder_of(&self, mode: AttentionMode) -> Option<&Binding> {
        self.bindings
            .iter()
            .find(|binding| binding.mode == mode && binding.status.is_live())
    }

    /// The id of [`AttentionState::holder_of`].
    pub fn holder_id(&self, mode: AttentionMode) -> Option<BindingId> {
        self.holder_of(mode).map(|holder| holder.id.clone())
    }

    /// Blocking evidence not yet resolved, oldest first.
    pub fn unresolved_blocking(&self) -> Vec<EvidenceId> {
        self.evidence
            .iter()
            .filter(|item| item.blocking && !item.resolved)
            .map(|item| item.id.clone())
            .collect()
    }

    /// Whether the goal, as it is, may dispatch to `binding` at `now`:
    /// the goal open, active and unpaused, the binding active. The bounds
    /// are checked where the run is reserved, as for every run.
    pub fn eligible(goal: &Goal, binding: &Binding, now: Timestamp, wake: PauseWake) -> bool {
        goal.state == GoalState::Active
            && !goal.paused
            && binding.status_at(now, wake) == BindingStatus::Active
    }

    /// When the host next has something to do for this goal's attention: a
    /// timed pause to wake, or an interval binding to run.
    pub fn next_due(&self, goal: &Goal, now: Timestamp, wake: PauseWake) -> Option<Timestamp> {
        if goal.state != GoalState::Active || goal.paused {
            return None;
        }
        self.bindings
            .iter()
            .filter_map(|binding| match binding.status_at(now, wake) {
                BindingStatus::Paused { until } => until,
                BindingStatus::Active => binding.next_fire(),
                _ => None,
            })
            .min()
    }
}
