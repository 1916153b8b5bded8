//! Reported runs (`POST {base}/{id}/runs`) as a host that forgot whose
//! runs they may be gets them.

use crate::domain::Mode;
use crate::mutants::{Mutant, Switch};

/// The continuation mode the reported-run check sees: under
/// `reported-runs-any-mode` every goal looks like a `manual` one.
pub(crate) fn reported_mode(switch: &Switch, mode: Mode) -> Mode {
    if switch.is(Mutant::ReportedRunsAnyMode) {
        Mode::Manual
    } else {
        mode
    }
}
