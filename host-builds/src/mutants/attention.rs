//! The attention extension's mutants: each breaks one of its rules
//! through the hooks of [`AttentionFaults`], the way a real host gets it
//! wrong.

use serde_json::Value;

use super::Mutant;
use goalpost_host::domain::attention::{
    approvals, AttentionMode, AttentionState, Authority, BindingStatus, EventKind, Missing, Powers,
};
use goalpost_host::domain::transition::Change;
use goalpost_host::domain::{EventPayload, Goal};
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

    fn one_per_mode(&self) -> bool {
        !self.is(Mutant::AttentionModeTwice)
    }

    fn final_is_final(&self) -> bool {
        !self.is(Mutant::AttentionStopReversible)
    }

    fn checks_owner(&self) -> bool {
        !self.is(Mutant::AttentionOwnerUnchecked)
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

    fn bounds_binding_runs(&self) -> bool {
        !self.is(Mutant::AttentionRunsUnbounded)
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

    fn wakes_timed_pauses(&self) -> bool {
        !self.is(Mutant::AttentionPauseNeverWakes)
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
