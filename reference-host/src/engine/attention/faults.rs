//! Where a deliberately broken build lets a bug into the attention rules
//! (the kill matrix; `crate::mutants`). Every hook's default is the
//! faithful rule, so the engine calls each one unconditionally.

use serde_json::Value;

use super::BindingFilter;
use crate::domain::attention::{
    self, approvals, AttentionMode, AttentionState, Authority, BindingStatus, Missing, Powers,
    StatusChange,
};
use crate::domain::transition::Change;
use crate::domain::{
    may_dispatch, BindingId, CostReading, Goal, MicroUsd, Refusal, RunId, Tenant, Timestamp,
};

pub trait AttentionFaults: Send + Sync {
    /// The modes discovery lists.
    fn advertised_modes(&self, modes: Vec<&'static str>) -> Vec<&'static str> {
        modes
    }

    /// The live binding that holds `mode` on a goal: a mode is held by one
    /// at a time, so a new binding of it is refused while there is one.
    fn mode_holder(&self, state: &AttentionState, mode: AttentionMode) -> Option<BindingId> {
        state.holder_id(mode)
    }

    /// The status a binding's status change starts from: its own (a
    /// stopped or superseded binding stays final).
    fn status_before_change(&self, status: BindingStatus, _change: &StatusChange) -> BindingStatus {
        status
    }

    /// Whether `tenant` may see and change `goal`'s attention: its owner
    /// only.
    fn visible_to(&self, goal: &Goal, tenant: &Tenant) -> bool {
        goal.owner == *tenant
    }

    /// The status the fail-closed check before a binding's run sees.
    fn dispatch_status(&self, status: BindingStatus) -> BindingStatus {
        status
    }

    /// What an answer of a binding in `mode` may do.
    fn powers(&self, mode: AttentionMode) -> Powers {
        mode.powers()
    }

    /// The fail-closed check before a binding's run, the goal's own
    /// ([`may_dispatch`]): its bounds hold the binding's runs too.
    fn dispatch_check(
        &self,
        goal: &Goal,
        now: Timestamp,
        cost: CostReading,
    ) -> Result<(), Refusal> {
        may_dispatch(goal, now, cost)
    }

    /// A binding's run that brought no verdict, counted against the goal's
    /// bounds ([`attention::count_run`]): it closes the goal when they are
    /// used up.
    fn count_run(
        &self,
        goal: &Goal,
        run_id: &RunId,
        spent: MicroUsd,
        now: Timestamp,
        cost: CostReading,
    ) -> Option<Change> {
        attention::count_run(goal, run_id, spent, now, cost)
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

    /// The change that wakes a goal's timed pauses whose instant has come
    /// ([`attention::wake`]).
    fn woken(&self, goal: &Goal, now: Timestamp) -> Option<Change> {
        attention::wake(goal, now)
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
