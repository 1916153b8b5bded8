//! The attention extension's mutants: each breaks one of its rules
//! through the hooks of [`AttentionFaults`], the way a real host gets it
//! wrong.

use serde_json::Value;

use super::Mutant;
use goalpost_host::domain::attention::{
    self, approvals, AttentionMode, AttentionState, Authority, BindingStatus, EventKind, Missing,
    Powers, StatusChange,
};
use goalpost_host::domain::transition::Change;
use goalpost_host::domain::{
    may_dispatch, BindingId, CostReading, EventPayload, Goal, MicroUsd, Refusal, RunId, Tenant,
    Timestamp,
};
use goalpost_host::engine::{AttentionFaults, BindingFilter};

pub(crate) struct AttentionMutant(pub Option<Mutant>);

impl AttentionMutant {
    fn is(&self, mutant: Mutant) -> bool {
        self.0 == Some(mutant)
    }
}

impl AttentionFaults for AttentionMutant {
    fn advertised_modes(&self, mut modes: Vec<&'static str>) -> Vec<&'static str> {
        if self.is(Mutant::AttentionModesUnderAdvertised) {
            modes.retain(|mode| *mode != AttentionMode::Observe.as_str());
        }
        modes
    }

    fn mode_holder(&self, state: &AttentionState, mode: AttentionMode) -> Option<BindingId> {
        if self.is(Mutant::AttentionModeTwice) {
            return None;
        }
        state.holder_id(mode)
    }

    /// A faulty host resumes a binding whatever ended it.
    fn status_before_change(&self, status: BindingStatus, change: &StatusChange) -> BindingStatus {
        if self.is(Mutant::AttentionStopReversible)
            && *change == StatusChange::Resume
            && status.is_final()
        {
            return BindingStatus::Paused { until: None };
        }
        status
    }

    fn visible_to(&self, goal: &Goal, tenant: &Tenant) -> bool {
        self.is(Mutant::AttentionOwnerUnchecked) || goal.owner == *tenant
    }

    fn dispatch_status(&self, status: BindingStatus) -> BindingStatus {
        match status {
            BindingStatus::Superseded { .. } if self.is(Mutant::AttentionSupersededDispatched) => {
                BindingStatus::Active
            }
            status => status,
        }
    }

    fn powers(&self, mode: AttentionMode) -> Powers {
        let powers = mode.powers();
        match mode {
            AttentionMode::Falsify if self.is(Mutant::AttentionFalsifierCloses) => Powers {
                request_close: true,
                ..powers
            },
            AttentionMode::Observe if self.is(Mutant::AttentionObserverAdds) => {
                AttentionMode::Review.powers()
            }
            _ => powers,
        }
    }

    /// A faulty host lets bindings run past the goal's bounds.
    fn dispatch_check(
        &self,
        goal: &Goal,
        now: Timestamp,
        cost: CostReading,
    ) -> Result<(), Refusal> {
        match may_dispatch(goal, now, cost) {
            Err(Refusal::Exhausted(_)) if self.is(Mutant::AttentionRunsUnbounded) => Ok(()),
            check => check,
        }
    }

    /// A faulty host counts the run but never closes the goal on a
    /// binding's run.
    fn count_run(
        &self,
        goal: &Goal,
        run_id: &RunId,
        spent: MicroUsd,
        now: Timestamp,
        cost: CostReading,
    ) -> Option<Change> {
        let mut change = attention::count_run(goal, run_id, spent, now, cost)?;
        if self.is(Mutant::AttentionRunsUnbounded) {
            change.goal.state = goal.state;
            change
                .events
                .retain(|event| !matches!(event, EventPayload::Closed { .. }));
        }
        Some(change)
    }

    fn projection(&self, goal: &Goal, mut projection: Value) -> Value {
        if self.is(Mutant::AttentionObjectiveInStance) {
            let stance = projection["stance"].as_str().unwrap_or_default();
            projection["stance"] =
                Value::from(format!("Your goal: {} {stance}", goal.objective.as_str()));
        }
        projection
    }

    fn approvals(&self, state: &AttentionState, revision: u64) -> usize {
        if self.is(Mutant::AttentionQuorumAcrossRevisions) {
            approvals(state, None)
        } else {
            approvals(state, Some(revision))
        }
    }

    fn closure(
        &self,
        state: &AttentionState,
        decision: Result<(), Vec<Missing>>,
    ) -> Result<(), Vec<Missing>> {
        let Err(mut missing) = decision else {
            return Ok(());
        };
        if self.is(Mutant::AttentionCloseUnderVerifier) {
            missing.retain(|missing| *missing != Missing::Judge);
        }
        if self.is(Mutant::AttentionBlockingIgnored) {
            missing.retain(|missing| !matches!(missing, Missing::Unresolved(_)));
        }
        if self.is(Mutant::AttentionConfirmationAnyAuthority) && !state.confirmations.is_empty() {
            missing.retain(|missing| !matches!(missing, Missing::Confirmation(_)));
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing)
        }
    }

    fn recorded(&self, change: &mut Change) {
        if !self.is(Mutant::AttentionEventsCarryLabels) {
            return;
        }
        let Some(state) = change.goal.notes.attention.as_deref() else {
            return;
        };
        for event in &mut change.events {
            let EventPayload::Attention(event) = event else {
                continue;
            };
            if event.kind != EventKind::EvidenceAdded {
                continue;
            }
            let label = event
                .fields
                .get("evidenceId")
                .and_then(Value::as_str)
                .and_then(|id| state.evidence.iter().find(|item| item.id.as_str() == id))
                .and_then(|item| item.label.clone());
            event.fields.insert("label".into(), Value::from(label));
        }
    }

    fn woken(&self, goal: &Goal, now: Timestamp) -> Option<Change> {
        if self.is(Mutant::AttentionPauseNeverWakes) {
            return None;
        }
        attention::wake(goal, now)
    }

    fn tenant_authority(&self) -> Option<Authority> {
        self.is(Mutant::AttentionTenantConfirms)
            .then_some(Authority::Principal)
    }

    fn list_filter(&self, filter: BindingFilter) -> BindingFilter {
        if self.is(Mutant::AttentionListFilterIgnored) {
            BindingFilter {
                mode: None,
                status: None,
                ..filter
            }
        } else {
            filter
        }
    }
}
