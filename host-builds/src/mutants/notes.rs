//! The mutants of what a goal tells the person resolving its escalation
//! (`GET {base}/{id}/escalation`). The worker's side (`previous`,
//! `resolution` in the arm request) is in `webhook.rs`.

use super::{Mutant, Switch};
use goalpost_host::domain::OpenEscalation;

/// The escalation as answered: under `escalation-reason-dropped`, without
/// its reason.
pub(crate) fn shown_escalation(switch: &Switch, mut open: OpenEscalation) -> OpenEscalation {
    if switch.is(Mutant::EscalationReasonDropped) {
        open.escalation.reason.clear();
    }
    open
}
