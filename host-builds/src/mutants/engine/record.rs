//! Recording a finished run: counts, verdicts, events and the decision as
//! a buggy host writes them.

use super::dispatch::{cost_spent, off_schedule, with_iterations};
use super::transitions::bumped;
use crate::mutants::{Mutant, Switch};
use goalpost_host::domain::transition::{self, Change, FinishedRun};
use goalpost_host::domain::{
    exhausted, Bounds, Evaluation, EventPayload, FailureClass, Goal, GoalState, RunId, RunOutcome,
    Timestamp, Verdict,
};

fn evaluated(change: &Change) -> Option<(usize, &EventPayload)> {
    change
        .events
        .iter()
        .enumerate()
        .find(|(_, event)| matches!(event, EventPayload::Evaluated { .. }))
}

/// Whether `run` is a reported run's: the host minted its id from the
/// reporter's key (a version 8 UUID), not for a run of its own (version 7).
fn reported(run: &RunId) -> bool {
    run.as_str()
        .strip_prefix("run-")
        .and_then(|uuid| uuid::Uuid::try_parse(uuid).ok())
        .is_some_and(|uuid| uuid.get_version_num() == 8)
}

pub(super) fn previous_run(goal: &Goal) -> Option<RunId> {
    goal.progress.contributing_run_ids.last().cloned()
}

pub(super) fn closing_state(change: &Change) -> Option<GoalState> {
    change.events.iter().find_map(|event| match event {
        EventPayload::Closed { final_state, .. } => Some(*final_state),
        EventPayload::Evaluated { .. } | EventPayload::Attention(_) => None,
    })
}

pub(super) fn set_closing_state(change: &mut Change, state: GoalState) {
    change.goal.state = state;
    for event in &mut change.events {
        if let EventPayload::Closed { final_state, .. } = event {
            *final_state = state;
        }
    }
}

/// Reopens a change that closed the goal: it stays active and fires next
/// as a continuing run would.
pub(super) fn reopen(change: &mut Change, now: Timestamp) {
    change.goal.state = GoalState::Active;
    change
        .events
        .retain(|event| !matches!(event, EventPayload::Closed { .. }));
    change.goal.next_fire_at = Some(now.saturating_add_ms(change.goal.interval_ms()));
}

/// A verdict recorded on a goal that closed before it came: its evaluation
/// and `goal.evaluated`, the goal itself left closed and its count alone.
fn late_verdict(
    before: &Goal,
    run: &FinishedRun,
    verdict: &Verdict,
    now: Timestamp,
) -> Option<Change> {
    let iteration = before.progress.iterations.saturating_add(1);
    Some(Change {
        goal: bumped(before, now),
        events: vec![EventPayload::Evaluated {
            goal_id: before.id.clone(),
            satisfied: verdict.satisfied(),
            confidence: verdict.confidence(),
            run_id: run.run_id.clone(),
            iterations: iteration,
        }],
        evaluation: Some(Evaluation {
            run_id: run.run_id.clone(),
            iteration,
            verdict: verdict.clone(),
            cost: run.cost,
            at: now,
        }),
    })
}

/// What recording a finished run writes. `before` is the goal as read
/// fresh, `change` what the correct host would write.
pub(crate) fn record(
    switch: &Switch,
    before: Option<&Goal>,
    run: &FinishedRun,
    now: Timestamp,
    change: Option<Change>,
) -> Option<Change> {
    let Some(mutant) = switch.active() else {
        return change;
    };
    let Some(before) = before else {
        return change;
    };
    if let Some(change) = super::reported::commitment(mutant, run, now, &change) {
        return Some(change);
    }
    let verdict = match &run.outcome {
        RunOutcome::Judged(verdict) => Some(verdict),
        RunOutcome::Escalated => None,
    };
    match mutant {
        Mutant::LateVerdictRecorded if before.state != GoalState::Active => {
            return late_verdict(before, run, verdict?, now);
        }
        // The run its queued fire started after the deadline close.
        Mutant::DeadlineCloseLeavesQueuedFire
            if before.state == GoalState::BoundExceeded
                && switch
                    .memory()
                    .deadline_fires
                    .get(&before.id)
                    .is_some_and(|(_, dispatched)| *dispatched) =>
        {
            switch.memory().deadline_fires.remove(&before.id);
            return late_verdict(before, run, verdict?, now);
        }
        Mutant::SatisfiedKeepsRunning
            if before.state == GoalState::Active
                && before
                    .completion
                    .last_verdict
                    .as_ref()
                    .is_some_and(|verdict| verdict.satisfied) =>
        {
            // The close that was due lands now; this run counts for nothing.
            let mut goal = bumped(before, now);
            goal.state = GoalState::Satisfied;
            return Some(Change {
                events: vec![EventPayload::Closed {
                    goal_id: goal.id.clone(),
                    final_state: GoalState::Satisfied,
                }],
                goal,
                evaluation: None,
            });
        }
        _ => {}
    }
    let mut change = change?;
    match mutant {
        Mutant::OffByOneIterations if closing_state(&change) == Some(GoalState::BoundExceeded) => {
            let max = before.bounds.max_loop_iterations();
            let mut view = before.clone();
            view.bounds = with_iterations(&before.bounds, max.map(|max| max.saturating_add(1)));
            if let Some(mut recounted) =
                transition::record_run(&view, run, now, goalpost_host::domain::CostReading::Budget)
            {
                recounted.goal.bounds = before.bounds.clone();
                change = recounted;
            }
        }
        // Recorded as if the goal had no bounds, which it keeps.
        Mutant::HeartbeatCommitmentUnbounded
            if off_schedule(before) && closing_state(&change) == Some(GoalState::BoundExceeded) =>
        {
            let mut view = before.clone();
            if let Some(unbounded) = Bounds::new(Some(u64::MAX), None, None) {
                view.bounds = unbounded;
            }
            if let Some(mut recounted) =
                transition::record_run(&view, run, now, goalpost_host::domain::CostReading::Budget)
            {
                recounted.goal.bounds = before.bounds.clone();
                change = recounted;
            }
        }
        Mutant::ScheduleIgnoresIterationBound
            if before.continuation.mode == goalpost_host::domain::Mode::Schedule
                && closing_state(&change) == Some(GoalState::BoundExceeded)
                && exhausted(
                    &change.goal,
                    now,
                    goalpost_host::domain::CostReading::Budget,
                ) == Some(goalpost_host::domain::Bound::Iterations) =>
        {
            reopen(&mut change, now);
        }
        Mutant::CostCheckedBeforeAdding
            if closing_state(&change) == Some(GoalState::BoundExceeded) =>
        {
            let mut view = change.goal.clone();
            view.state = GoalState::Active;
            view.spent = before.spent;
            if exhausted(&view, now, goalpost_host::domain::CostReading::Budget).is_none() {
                reopen(&mut change, now);
            }
        }
        Mutant::EnvironmentalUncounted => {
            let environmental = verdict.is_some_and(|verdict| {
                verdict.criteria().is_none()
                    && verdict.failure_class() == Some(FailureClass::Environmental)
            });
            let failed = {
                let mut memory = switch.memory();
                let failed = memory.environmental.entry(before.id.clone()).or_insert(0);
                if environmental {
                    *failed += 1;
                }
                *failed
            };
            if closing_state(&change) == Some(GoalState::BoundExceeded) {
                let mut view = change.goal.clone();
                view.state = GoalState::Active;
                let max = view.bounds.max_loop_iterations();
                view.bounds =
                    with_iterations(&view.bounds, max.map(|max| max.saturating_add(failed)));
                if exhausted(&view, now, goalpost_host::domain::CostReading::Budget).is_none() {
                    reopen(&mut change, now);
                }
            }
        }
        Mutant::EscalationJudged if verdict.is_none() => {
            let iteration = change.goal.progress.iterations;
            let failed = Verdict::environmental();
            change.events.insert(
                0,
                EventPayload::Evaluated {
                    goal_id: before.id.clone(),
                    satisfied: false,
                    confidence: failed.confidence(),
                    run_id: run.run_id.clone(),
                    iterations: iteration,
                },
            );
            change.evaluation = Some(Evaluation {
                run_id: run.run_id.clone(),
                iteration,
                verdict: failed,
                cost: run.cost,
                at: now,
            });
        }
        Mutant::EscalationUncounted if verdict.is_none() => {
            change.goal.progress = before.progress.clone();
        }
        Mutant::BoundBeforeVerdict if closing_state(&change) == Some(GoalState::Satisfied) => {
            let mut view = change.goal.clone();
            view.state = GoalState::Active;
            if exhausted(&view, now, goalpost_host::domain::CostReading::Budget).is_some() {
                set_closing_state(&mut change, GoalState::BoundExceeded);
            }
        }
        Mutant::SatisfiedKeepsRunning if closing_state(&change) == Some(GoalState::Satisfied) => {
            reopen(&mut change, now);
        }
        Mutant::LastVerdictPreviousRun => {
            if let (Some(verdict), Some(previous)) = (
                change.goal.completion.last_verdict.as_mut(),
                previous_run(before),
            ) {
                verdict.run_id = previous;
            }
        }
        Mutant::EvaluatedWrongRun => {
            if let Some(previous) = previous_run(before) {
                for event in &mut change.events {
                    if let EventPayload::Evaluated { run_id, .. } = event {
                        *run_id = previous.clone();
                    }
                }
            }
        }
        Mutant::EvaluatedIterationsBeforeRun => {
            for event in &mut change.events {
                if let EventPayload::Evaluated { iterations, .. } = event {
                    *iterations = iterations.saturating_sub(1);
                }
            }
        }
        Mutant::EvaluatedMissingOnClose if closing_state(&change).is_some() => {
            if let Some((index, _)) = evaluated(&change) {
                change.events.remove(index);
            }
        }
        Mutant::CriteriaIgnored => {
            let flag = switch.memory().flags.remove(&run.run_id);
            if let (Some(flag), Some(verdict)) = (flag, verdict) {
                if flag && !verdict.satisfied() {
                    let holistic = Verdict::restore(
                        true,
                        verdict.confidence(),
                        verdict.criteria().map(<[_]>::to_vec),
                        None,
                    );
                    let judged = FinishedRun {
                        run_id: run.run_id.clone(),
                        cost: run.cost,
                        outcome: RunOutcome::Judged(holistic),
                        commitment_ms: None,
                    };
                    return transition::record_run(
                        before,
                        &judged,
                        now,
                        goalpost_host::domain::CostReading::Budget,
                    );
                }
            }
        }
        Mutant::EtagUnchangedByRuns => change.goal.version = before.version,
        Mutant::ZeroCostBoundIgnored
            if closing_state(&change) == Some(GoalState::BoundExceeded)
                && before.bounds.max_cost().map(|cap| cap.micros().micros()) == Some(0) =>
        {
            let mut view = change.goal.clone();
            view.state = GoalState::Active;
            view.bounds = Bounds::new(
                view.bounds.max_loop_iterations(),
                view.bounds.run_timeout_ms(),
                None,
            )
            .unwrap_or_else(|| view.bounds.clone());
            if exhausted(&view, now, goalpost_host::domain::CostReading::Budget).is_none() {
                reopen(&mut change, now);
            }
        }
        Mutant::EnvironmentalUnannounced
            if verdict.is_some_and(|verdict| {
                verdict.criteria().is_none()
                    && verdict.failure_class() == Some(FailureClass::Environmental)
            }) =>
        {
            change
                .events
                .retain(|event| !matches!(event, EventPayload::Evaluated { .. }));
        }
        // A reported run's id is the host's version 8 UUID of the
        // reporter's key (`RunId::for_reported`).
        Mutant::ReportedRunUnannounced if reported(&run.run_id) => change
            .events
            .retain(|event| !matches!(event, EventPayload::Evaluated { .. })),
        Mutant::CostExceedsNotReaches
            if closing_state(&change) == Some(GoalState::BoundExceeded)
                && cost_spent(&change.goal, now)
                && change.goal.bounds.max_cost().map(|cap| cap.micros())
                    == Some(change.goal.spent) =>
        {
            reopen(&mut change, now);
        }
        Mutant::CostSummedAsFloat => {
            let float = {
                let mut memory = switch.memory();
                let float = memory.float_spend.entry(before.id.clone()).or_insert(0.0);
                *float += run.cost.as_usd();
                *float
            };
            let cap = change
                .goal
                .bounds
                .max_cost()
                .map(|cap| cap.micros().as_usd());
            if closing_state(&change) == Some(GoalState::BoundExceeded)
                && cost_spent(&change.goal, now)
                && cap.is_some_and(|cap| float < cap)
            {
                reopen(&mut change, now);
            }
        }
        Mutant::CriteriaNotRecorded => {
            if let Some(evaluation) = change.evaluation.as_mut() {
                let verdict = &evaluation.verdict;
                evaluation.verdict = Verdict::restore(
                    verdict.satisfied(),
                    verdict.confidence(),
                    None,
                    verdict.failure_class(),
                );
            }
        }
        _ => {}
    }
    Some(change)
}
