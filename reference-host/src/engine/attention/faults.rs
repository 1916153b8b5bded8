//! Where a deliberately broken build lets a bug into the attention rules
//! (the kill matrix; `crate::mutants`). Every hook's default is the
//! faithful rule, so the engine calls each one unconditionally.

use serde_json::Value;

use super::BindingFilter;
use crate::domain::attention::{
    approvals, AttentionMode, AttentionState, Authority, BindingStatus, Missing, Powers,
};
use crate::domain::transition::Change;
use crate::domain::Goal;

pub trait AttentionFaults: Send + Sync {
    /// The modes discovery lists.
    fn advertised_modes(&self, modes: Vec<&'static str>) -> Vec<&'static str> {
        modes
    }

    /// Whether a mode is held by one live binding of a goal at a time.
    fn one_per_mode(&self) -> bool {
        true
    }

    /// Whether a stopped or superseded binding stays final.
    fn final_is_final(&self) -> bool {
        true
    }

    /// Whether a lookup of a goal's attention checks its owner.
    fn checks_owner(&self) -> bool {
        true
    }

    /// The status the fail-closed check before a binding's run sees.
    fn dispatch_status(&self, status: BindingStatus) -> BindingStatus {
        status
    }

    /// What an answer of a binding in `mode` may do.
    fn powers(&self, mode: AttentionMode) -> Powers {
        mode.powers()
    }

    /// Whether a binding's run is held to its goal's bounds (refused, and
    /// the goal closed, once they are used up).
    fn bounds_binding_runs(&self) -> bool {
        true
    }

    /// The projection a binding's arm is sent.
    fn projection(&self, _goal: &Goal, projection: Value) -> Value {
        projection
    }

    /// Approving verdicts a quorum counts at `revision`.
    fn approvals(&self, state: &AttentionState, revision: u64) -> usize {
        approvals(state, Some(revision))
    }

    /// The policy's answer to a request to close, given the faithful one.
    fn closure(
        &self,
        _state: &AttentionState,
        decision: Result<(), Vec<Missing>>,
    ) -> Result<(), Vec<Missing>> {
        decision
    }

    /// A binding's run as recorded, just before it is written.
    fn recorded(&self, _change: &mut Change) {}

    /// Whether the tick wakes timed pauses whose instant has come.
    fn wakes_timed_pauses(&self) -> bool {
        true
    }

    /// The authority a tenant's own credential carries where confirmations
    /// are taken: none.
    fn tenant_authority(&self) -> Option<Authority> {
        None
    }

    /// The filter the tenant-wide list applies.
    fn list_filter(&self, filter: BindingFilter) -> BindingFilter {
        filter
    }
}

/// The faithful rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAttentionFaults;

impl AttentionFaults for NoAttentionFaults {}
