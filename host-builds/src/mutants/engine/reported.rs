//! Reported runs (`POST {base}/{id}/runs`) as a host that forgot whose
//! runs they may be gets them.

use serde_json::Value;

use crate::mutants::{Mutant, Switch};
use goalpost_host::domain::commitment::MIN_COMMITMENT_MS;
use goalpost_host::domain::transition::FinishedRun;
use goalpost_host::domain::{Change, GoalState, Judgement, Mode, Timestamp};

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

/// What a host that gets commitments wrong arms after a commitment goal's
/// run: `commitment-fired-at-once` arms the committed check-in for now,
/// `uncommitted-goal-refired` re-arms a goal whose run committed to nothing
/// after the shortest commitment. `None`: not such a mutant, or not such a
/// run; the change stands.
pub(crate) fn commitment(
    mutant: Mutant,
    run: &FinishedRun,
    now: Timestamp,
    change: &Option<Change>,
) -> Option<Change> {
    let change = change.as_ref()?;
    let goal = &change.goal;
    if goal.continuation.mode != Mode::Commitment || goal.state != GoalState::Active {
        return None;
    }
    let next_fire_at = match (mutant, run.commitment_ms) {
        (Mutant::CommitmentFiredAtOnce, Some(_)) => Some(now),
        (Mutant::UncommittedGoalRefired, None) => Some(now.saturating_add_ms(MIN_COMMITMENT_MS)),
        _ => return None,
    };
    let mut change = change.clone();
    change.goal.next_fire_at = next_fire_at;
    Some(change)
}
