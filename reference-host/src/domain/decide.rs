//! SPEC §3's decision order, as pure functions of a goal and a clock reading.

use super::bounds::CostReading;
use super::goal::{Goal, GoalState};
use super::timestamp::Timestamp;
use super::verdict::{RunOutcome, Verdict};

/// Which bound a goal crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Iterations,
    Cost,
    WallClock,
}

/// What happens after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Escalate,
    Satisfy,
    Exceed(Bound),
    Continue,
}

impl Decision {
    /// The state a goal closes in, or `None` when it stays active.
    pub fn closing_state(self) -> Option<GoalState> {
        match self {
            Decision::Escalate => Some(GoalState::Escalated),
            Decision::Satisfy => Some(GoalState::Satisfied),
            Decision::Exceed(_) => Some(GoalState::BoundExceeded),
            Decision::Continue => None,
        }
    }
}

/// The first bound the goal has used up, if any: iterations reached, the
/// cost bound crossed (as `cost` reads it), or the deadline reached.
pub fn exhausted(goal: &Goal, now: Timestamp, cost: CostReading) -> Option<Bound> {
    let bounds = &goal.bounds;
    if bounds
        .max_loop_iterations()
        .is_some_and(|max| goal.progress.iterations >= max)
    {
        return Some(Bound::Iterations);
    }
    if bounds
        .max_cost()
        .is_some_and(|cap| cost.crossed(goal.spent, cap.micros()))
    {
        return Some(Bound::Cost);
    }
    if goal.deadline().is_some_and(|deadline| now >= deadline) {
        return Some(Bound::WallClock);
    }
    None
}

/// How a dispatched run ended. Escalation comes first (row 1): a run whose
/// worker raised one ended escalated whatever a verdict says, so it needs
/// none and none is asked for. `None`: the run awaits its verdict.
pub fn run_outcome(escalated: bool, verdict: Option<Verdict>) -> Option<RunOutcome> {
    match (escalated, verdict) {
        (true, _) => Some(RunOutcome::Escalated),
        (false, verdict) => verdict.map(RunOutcome::Judged),
    }
}

/// Decides after a run. `goal` already counts the run (its iteration, run id
/// and cost); `outcome` is how the run ended.
pub fn decide(goal: &Goal, outcome: &RunOutcome, now: Timestamp, cost: CostReading) -> Decision {
    match outcome {
        RunOutcome::Escalated => Decision::Escalate,
        RunOutcome::Judged(verdict) if verdict.satisfied() => Decision::Satisfy,
        RunOutcome::Judged(_) => match exhausted(goal, now, cost) {
            Some(bound) => Decision::Exceed(bound),
            None => Decision::Continue,
        },
    }
}

/// Why a goal may not get a run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Terminal,
    Escalated,
    Paused,
    /// Active, but a bound is used up: the goal must close instead.
    Exhausted(Bound),
}

/// The fail-closed check made on a fresh read before every dispatch.
pub fn may_dispatch(goal: &Goal, now: Timestamp, cost: CostReading) -> Result<(), Refusal> {
    match goal.state {
        GoalState::Active => {}
        GoalState::Escalated => return Err(Refusal::Escalated),
        _ => return Err(Refusal::Terminal),
    }
    if let Some(bound) = exhausted(goal, now, cost) {
        return Err(Refusal::Exhausted(bound));
    }
    if goal.paused {
        return Err(Refusal::Paused);
    }
    Ok(())
}
