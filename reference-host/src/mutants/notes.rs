//! The mutants of what a goal tells the person resolving its escalation
//! (`GET {base}/{id}/escalation`). The worker's side (`previous`,
//! `resolution` in the arm request) is in `webhook.rs`.

use super::Mutant;
use crate::domain::{GoalId, OpenEscalation, Tenant};
use crate::engine::Engine;

/// Whose escalation the caller reads: under `escalation-other-tenant`, the
/// goal's owner's, whoever asks.
pub(crate) async fn escalation_reader(engine: &Engine, caller: Tenant, id: &GoalId) -> Tenant {
    if !engine.mutants().is(Mutant::EscalationOtherTenant) {
        return caller;
    }
    match engine.mutant_load(id).await {
        Ok(Some(goal)) => goal.owner,
        _ => caller,
    }
}

/// The escalation as answered: under `escalation-reason-dropped`, without
/// its reason.
pub(crate) fn shown_escalation(engine: &Engine, mut open: OpenEscalation) -> OpenEscalation {
    if engine.mutants().is(Mutant::EscalationReasonDropped) {
        open.escalation.reason.clear();
    }
    open
}
