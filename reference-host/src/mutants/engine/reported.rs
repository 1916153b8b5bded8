//! Reported runs (`POST {base}/{id}/runs`) as a host that forgot whose
//! runs they may be gets them.

use serde_json::Value;

use crate::domain::{Judgement, Mode};
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

/// Under `unjudged-run-trusts-claims`, a run nothing can judge (its goal
/// names no verifier) is judged by what its output claims.
pub(crate) fn claimed_verdict(switch: &Switch, output: &Value) -> Option<Judgement> {
    if !switch.is(Mutant::UnjudgedRunTrustsClaims) {
        return None;
    }
    let claims = |key: &str| output.get(key).and_then(Value::as_bool) == Some(true);
    Some(Judgement {
        satisfied: claims("done") || claims("satisfied"),
        confidence: 1.0,
        criteria: None,
    })
}
