//! A person's transitions (PATCH, resume, abandon) as a careless host
//! applies them.

use serde_json::Value;

use super::requests::claimed_verdict;
use crate::domain::transition::{self, Change};
use crate::domain::{
    parse_patch, Goal, GoalState, MicroUsd, Objective, RequestContext, RequestError, Timestamp,
};
use crate::engine::EngineError;
use crate::mutants::{Mutant, Switch};

pub(super) fn bumped(goal: &Goal, now: Timestamp) -> Goal {
    let mut goal = goal.clone();
    goal.version += 1;
    goal.updated_at = now;
    goal
}

pub(super) fn without(body: &Value, pointers: &[&str]) -> Value {
    let mut body = body.clone();
    for pointer in pointers {
        let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        if let Some(object) = body.pointer_mut(parent).and_then(Value::as_object_mut) {
            object.remove(key);
        }
    }
    body
}

const JUDGE_OWNED: [&str; 5] = [
    "/state",
    "/progress",
    "/owner",
    "/id",
    "/completion/lastVerdict",
];

pub(super) fn names_judge_owned(body: &Value) -> bool {
    JUDGE_OWNED
        .iter()
        .any(|pointer| body.pointer(pointer).is_some())
}

/// A PATCH applied with `drop` left out of its body; `None` when the rest
/// is refused (the caller then answers as usual).
pub(super) fn patched_without(
    goal: &Goal,
    body: &Value,
    drop: &[&str],
    context: RequestContext,
    now: Timestamp,
) -> Option<Result<Option<Change>, EngineError>> {
    let edit = parse_patch(&without(body, drop), context).ok()?;
    Some(transition::patch(goal, &edit, now).map_err(EngineError::from))
}

/// Inside PATCH's versioned write: `Some` answers instead of the
/// refusal-checking patch.
pub(crate) fn patch(
    switch: &Switch,
    context: RequestContext,
    goal: &Goal,
    body: &Value,
    now: Timestamp,
) -> Option<Result<Option<Change>, EngineError>> {
    match switch.active()? {
        Mutant::PatchStateApplied => {
            let state = body
                .get("state")
                .and_then(Value::as_str)
                .and_then(GoalState::parse)?;
            let mut goal = match patched_without(goal, body, &["/state"], context, now)? {
                Ok(Some(change)) => change.goal,
                Ok(None) => bumped(goal, now),
                Err(error) => return Some(Err(error)),
            };
            goal.state = state;
            Some(Ok(Some(Change {
                goal,
                events: Vec::new(),
                evaluation: None,
            })))
        }
        Mutant::PatchVerdictApplied => {
            let verdict = claimed_verdict(body.pointer("/completion/lastVerdict")?)?;
            let drop = ["/completion/lastVerdict"];
            let mut goal = match patched_without(goal, body, &drop, context, now)? {
                Ok(Some(change)) => change.goal,
                Ok(None) => bumped(goal, now),
                Err(error) => return Some(Err(error)),
            };
            goal.completion.last_verdict = Some(verdict);
            Some(Ok(Some(Change {
                goal,
                events: Vec::new(),
                evaluation: None,
            })))
        }
        Mutant::PatchProgressIgnored => patched_without(goal, body, &["/progress"], context, now),
        Mutant::PatchIdentityIgnored => {
            patched_without(goal, body, &["/owner", "/id"], context, now)
        }
        Mutant::RefusalStillWrites if names_judge_owned(body) => {
            patched_without(goal, body, &JUDGE_OWNED, context, now)
        }
        Mutant::PatchAnswersUnsaved if body.get("objective").is_some() => {
            patched_without(goal, body, &["/objective"], context, now)
        }
        Mutant::TerminalPatchAllowed if goal.state.is_terminal() => {
            let edit = parse_patch(body, context).ok()?;
            let mut open = goal.clone();
            open.state = GoalState::Active;
            let change = transition::patch(&open, &edit, now).ok()?;
            Some(Ok(change.map(|mut change| {
                change.goal.state = goal.state;
                change
            })))
        }
        _ => None,
    }
}

/// PATCH's answer after its write.
pub(crate) fn patch_answer(
    switch: &Switch,
    context: RequestContext,
    body: &Value,
    mut goal: Goal,
) -> Result<Goal, EngineError> {
    match switch.active() {
        Some(Mutant::RefusalStillWrites) => {
            if let Err(error @ RequestError::JudgeOwned { .. }) = parse_patch(body, context) {
                return Err(EngineError::Request(error));
            }
        }
        Some(Mutant::PatchAnswersUnsaved) => {
            if let Some(objective) = body.get("objective").and_then(Value::as_str) {
                goal.objective = Objective::new(objective.to_string());
            }
        }
        _ => {}
    }
    Ok(goal)
}

/// Inside resume's versioned write.
pub(crate) fn resume(switch: &Switch, goal: &Goal, now: Timestamp) -> Option<Change> {
    match switch.active()? {
        Mutant::TerminalResumeAllowed if goal.state.is_terminal() => {
            let mut goal = bumped(goal, now);
            goal.state = GoalState::Active;
            goal.paused = false;
            goal.next_fire_at = None;
            Some(Change {
                goal,
                events: Vec::new(),
                evaluation: None,
            })
        }
        Mutant::ResumeResetsProgress if goal.state == GoalState::Escalated => {
            let mut change =
                transition::resume(goal, now, crate::domain::CostReading::Budget).ok()??;
            change.goal.progress = Default::default();
            change.goal.spent = MicroUsd::ZERO;
            Some(change)
        }
        _ => None,
    }
}

/// Inside abandon's versioned write.
pub(crate) fn abandon(
    switch: &Switch,
    goal: &Goal,
    now: Timestamp,
) -> Option<Result<Option<Change>, EngineError>> {
    match switch.active()? {
        Mutant::EscalatedAbandonRefused if goal.state == GoalState::Escalated => {
            Some(Err(EngineError::Escalated))
        }
        Mutant::ClosedEventTwice => {
            let change = transition::abandon(goal, now).map(|mut change| {
                change.events.extend(change.events.clone());
                Some(change)
            });
            Some(change.map_err(EngineError::from))
        }
        _ => None,
    }
}

/// Whether abandon cancels the run in flight.
pub(crate) fn abandon_cancels(switch: &Switch) -> bool {
    !switch.is(Mutant::LateVerdictRecorded)
}
