//! Every change a goal can go through, as pure functions returning the new
//! goal and the events it emits. Storage applies a [`Change`] atomically.

use super::bounds::CostReading;
use super::commitment::next_check_in;
use super::decide::{decide, exhausted, Decision};
use super::event::EventPayload;
use super::goal::{Goal, GoalState, Mode};
use super::ids::RunId;
use super::money::MicroUsd;
use super::notes::{Escalation, Feedback, OpenEscalation, Resolution};
use super::request::GoalPatch;
use super::timestamp::Timestamp;
use super::verdict::{Evaluation, LastVerdict, RunOutcome};

/// A stored change of one goal: the goal after it (version already bumped),
/// the events to append and the evaluation to record, all in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub goal: Goal,
    pub events: Vec<EventPayload>,
    pub evaluation: Option<Evaluation>,
}

/// Why a person's transition was refused (nothing changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("the goal is in a terminal state")]
    Terminal,
    #[error("the goal is escalated")]
    Escalated,
}

/// A run that the host dispatched and that has now finished.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedRun {
    pub run_id: RunId,
    pub cost: MicroUsd,
    pub outcome: RunOutcome,
    /// For a `commitment` goal: how long after this run the agent committed
    /// to check in next (validated by whoever read the answer).
    pub commitment_ms: Option<u64>,
}

struct Draft {
    goal: Goal,
    events: Vec<EventPayload>,
    evaluation: Option<Evaluation>,
}

impl Draft {
    fn from(goal: &Goal) -> Draft {
        Draft {
            goal: goal.clone(),
            events: Vec::new(),
            evaluation: None,
        }
    }

    fn close(&mut self, state: GoalState) {
        self.goal.state = state;
        self.events.push(EventPayload::Closed {
            goal_id: self.goal.id.clone(),
            final_state: state,
        });
    }

    fn finish(mut self, now: Timestamp) -> Change {
        self.goal.version += 1;
        self.goal.updated_at = now;
        Change {
            goal: self.goal,
            events: self.events,
            evaluation: self.evaluation,
        }
    }
}

fn refuse_terminal(goal: &Goal) -> Result<(), TransitionError> {
    if goal.state.is_terminal() {
        Err(TransitionError::Terminal)
    } else {
        Ok(())
    }
}

/// Disarms continuation; `state` stays `active`. `Ok(None)` when already
/// paused.
pub fn pause(goal: &Goal, now: Timestamp) -> Result<Option<Change>, TransitionError> {
    refuse_terminal(goal)?;
    if goal.state == GoalState::Escalated {
        return Err(TransitionError::Escalated);
    }
    if goal.paused {
        return Ok(None);
    }
    let mut draft = Draft::from(goal);
    draft.goal.paused = true;
    Ok(Some(draft.finish(now)))
}

/// Re-arms continuation (a `schedule` arm fires at once), or brings an
/// escalated goal back to `active` keeping its progress and spent cost. A
/// goal whose bounds are used up closes as `bound-exceeded` at once.
/// `Ok(None)` when the goal is already active and armed.
pub fn resume(
    goal: &Goal,
    now: Timestamp,
    cost: CostReading,
) -> Result<Option<Change>, TransitionError> {
    refuse_terminal(goal)?;
    if goal.state == GoalState::Active && !goal.paused {
        return Ok(None);
    }
    let mut draft = Draft::from(goal);
    draft.goal.state = GoalState::Active;
    draft.goal.paused = false;
    // A schedule goal fires at once (`None`); a commitment goal asks its
    // agent at once for a new check-in, as at create: what it committed to
    // before the pause or escalation is stale.
    draft.goal.next_fire_at = match draft.goal.continuation.mode {
        Mode::Commitment => Some(now),
        _ => None,
    };
    if exhausted(&draft.goal, now, cost).is_some() {
        draft.close(GoalState::BoundExceeded);
    }
    Ok(Some(draft.finish(now)))
}

/// Completes a `resume`'s change: the goal's escalation is resolved, and
/// when it was escalated, its next run is told how (the escalation's kind
/// and the person's note, if any). A resume of a paused goal keeps no note.
pub fn resolve(goal: &Goal, change: &mut Change, note: Option<String>) {
    change.goal.notes.escalation = None;
    if goal.state == GoalState::Escalated {
        change.goal.notes.resolution = goal.notes.escalation.as_ref().map(|open| Resolution {
            kind: open.escalation.kind.clone(),
            note,
        });
    }
}

/// Keeps why a run escalated the goal, on the change that records it.
pub fn note_escalation(
    change: &mut Change,
    escalation: &Escalation,
    run_id: &RunId,
    at: Timestamp,
) {
    if change.goal.state == GoalState::Escalated {
        change.goal.notes.escalation = Some(OpenEscalation {
            escalation: escalation.clone(),
            run_id: run_id.clone(),
            at,
        });
    }
}

/// Closes an active or escalated goal as `abandoned`.
pub fn abandon(goal: &Goal, now: Timestamp) -> Result<Change, TransitionError> {
    refuse_terminal(goal)?;
    let mut draft = Draft::from(goal);
    draft.close(GoalState::Abandoned);
    Ok(draft.finish(now))
}

/// Applies a person's edit. `Ok(None)` when it changes nothing.
pub fn patch(
    goal: &Goal,
    edit: &GoalPatch,
    now: Timestamp,
) -> Result<Option<Change>, TransitionError> {
    refuse_terminal(goal)?;
    let mut draft = Draft::from(goal);
    if let Some(objective) = &edit.objective {
        draft.goal.objective = objective.clone();
    }
    if let Some(verifier_ref) = &edit.verifier_ref {
        draft.goal.completion.verifier_ref = verifier_ref.clone();
    }
    if let Some(mode) = edit.mode {
        // A goal switched to commitment asks its agent at once for a
        // check-in, as at create: it has no commitment yet.
        if mode == Mode::Commitment && draft.goal.continuation.mode != Mode::Commitment {
            draft.goal.next_fire_at = Some(now);
        }
        // A goal switched to schedule starts its schedule at once, as at
        // create: a fire planned under another mode (a run recorded under
        // `manual` plans one a default interval away) is not its schedule.
        if mode == Mode::Schedule && draft.goal.continuation.mode != Mode::Schedule {
            draft.goal.next_fire_at = None;
        }
        draft.goal.continuation.mode = mode;
    }
    if let Some(arm_ref) = &edit.arm_ref {
        draft.goal.continuation.arm_ref = arm_ref.clone();
    }
    // A schedule goal's next fire comes within its (new) interval: an arm
    // edited to a shorter one does not wait out the old. A fire held at the
    // end of time (an armless schedule that waits for an arm) is not a plan.
    if draft.goal.continuation.mode == Mode::Schedule {
        let cap = now.saturating_add_ms(draft.goal.interval_ms());
        if let Some(at) = draft.goal.next_fire_at {
            if at > cap && at != Timestamp::max() {
                draft.goal.next_fire_at = Some(cap);
            }
        }
    }
    if draft.goal == *goal {
        return Ok(None);
    }
    Ok(Some(draft.finish(now)))
}

/// Closes an active goal whose bounds are used up (the deadline passed, or a
/// budget is spent). `None` when there is nothing to close. Escalated goals
/// are left for a person.
pub fn close_if_exhausted(goal: &Goal, now: Timestamp, cost: CostReading) -> Option<Change> {
    if goal.state != GoalState::Active {
        return None;
    }
    exhausted(goal, now, cost)?;
    let mut draft = Draft::from(goal);
    draft.close(GoalState::BoundExceeded);
    Some(draft.finish(now))
}

/// Records a finished run: counts the iteration, records the verdict (one
/// `goal.evaluated`), then decides (SPEC §3). `None` when the goal is no
/// longer active (it was closed while the run was in flight): nothing is
/// recorded after a goal closed.
pub fn record_run(
    goal: &Goal,
    run: &FinishedRun,
    now: Timestamp,
    cost: CostReading,
) -> Option<Change> {
    if goal.state != GoalState::Active {
        return None;
    }
    let mut draft = Draft::from(goal);
    let progress = &mut draft.goal.progress;
    progress.iterations = goal.next_iteration();
    progress.contributing_run_ids.push(run.run_id.clone());
    let iterations = progress.iterations;
    draft.goal.spent = draft.goal.spent.saturating_add(run.cost);
    // The resolution note was for this run; it has had it.
    draft.goal.notes.resolution = None;
    if let RunOutcome::Judged(verdict) = &run.outcome {
        draft.goal.notes.feedback = Some(Feedback::of(verdict));
        draft.goal.completion.last_verdict = Some(LastVerdict {
            satisfied: verdict.satisfied(),
            confidence: verdict.confidence(),
            run_id: run.run_id.clone(),
        });
        draft.events.push(EventPayload::Evaluated {
            goal_id: draft.goal.id.clone(),
            satisfied: verdict.satisfied(),
            confidence: verdict.confidence(),
            run_id: run.run_id.clone(),
            iterations,
        });
        draft.evaluation = Some(Evaluation {
            run_id: run.run_id.clone(),
            iteration: iterations,
            verdict: verdict.clone(),
            cost: run.cost,
            at: now,
        });
    }
    match decide(&draft.goal, &run.outcome, now, cost) {
        Decision::Continue => {
            draft.goal.next_fire_at = match draft.goal.continuation.mode {
                Mode::Commitment => next_check_in(now, run.commitment_ms),
                _ => Some(now.saturating_add_ms(draft.goal.interval_ms())),
            };
        }
        closing => {
            if let Some(state) = closing.closing_state() {
                draft.close(state);
            }
        }
    }
    Some(draft.finish(now))
}
