//! A person's transitions (PATCH, resume, abandon) as a careless host
//! applies them.

use serde_json::Value;

use super::requests::claimed_verdict;
use crate::mutants::{Mutant, Switch};
use goalpost_host::domain::request::MAX_OBJECTIVE_BYTES;
use goalpost_host::domain::transition::{self, Change};
use goalpost_host::domain::{
    parse_patch, Bounds, CostCap, Goal, GoalState, MicroUsd, Objective, RequestContext,
    RequestError, Tenant, Timestamp,
};
use goalpost_host::engine::EngineError;

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

/// Where `post-put-state-applied` passes the state of a POST or PUT to
/// `{base}/{id}` on to PATCH (see `mutants::http`).
pub(crate) const UPSERT_STATE: &str = "upsertState";

/// The refs a PATCH edits: what `patch-refs-unsaved` answers but drops,
/// and what `patch-refs-dropped` drops without a word.
const REFS: [&str; 2] = ["/completion/verifierRef", "/continuation"];

/// What RFC 0097 lets PATCH edit: `patch-clears-verdict` starts the
/// goal's judging over when any of them changes.
const EDITABLE: [&str; 3] = ["/objective", "/completion", "/continuation"];

/// `patch-bounds-merged`: the goal's bounds with `patch` merged in (JSON
/// merge patch: `null` removes a bound), or `None` when a value is not a
/// bound or nothing would be left.
fn merged_bounds(bounds: &Bounds, patch: &Value) -> Option<Bounds> {
    let patch = match patch {
        Value::Null => return None,
        Value::Object(patch) => patch,
        _ => return None,
    };
    let mut iterations = bounds.max_loop_iterations();
    let mut timeout = bounds.run_timeout_ms();
    let mut cost = bounds.max_cost().cloned();
    for (key, value) in patch {
        match (key.as_str(), value) {
            ("maxLoopIterations", Value::Null) => iterations = None,
            ("maxLoopIterations", value) => iterations = Some(value.as_u64()?),
            ("runTimeoutMs", Value::Null) => timeout = None,
            ("runTimeoutMs", value) => timeout = Some(value.as_u64()?),
            ("maxCostUsd", Value::Null) => cost = None,
            ("maxCostUsd", Value::Number(number)) => {
                cost = Some(CostCap::from_number(number.clone())?);
            }
            _ => return None,
        }
    }
    Bounds::new(iterations, timeout, cost)
}

/// A change with `goal` as its goal and nothing else.
fn only(goal: Goal) -> Option<Result<Option<Change>, EngineError>> {
    Some(Ok(Some(Change {
        goal,
        events: Vec::new(),
        evaluation: None,
    })))
}

/// The goal after `body` without `drop`, bumped even when that is a no-op;
/// `None` when the rest is refused.
fn edited_without(
    goal: &Goal,
    body: &Value,
    drop: &[&str],
    context: RequestContext,
    now: Timestamp,
) -> Option<Result<Goal, EngineError>> {
    Some(match patched_without(goal, body, drop, context, now)? {
        Ok(Some(change)) => Ok(change.goal),
        Ok(None) => Ok(bumped(goal, now)),
        Err(error) => Err(error),
    })
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
        Mutant::PatchProgressApplied => {
            let iterations = body.pointer("/progress/iterations")?.as_u64()?;
            let mut goal = match edited_without(goal, body, &["/progress"], context, now)? {
                Ok(goal) => goal,
                Err(error) => return Some(Err(error)),
            };
            goal.progress.iterations = iterations;
            only(goal)
        }
        Mutant::PatchIdentityApplied => {
            let owner = body
                .pointer("/owner/tenant")
                .and_then(Value::as_str)
                .and_then(Tenant::parse)?;
            let mut goal = match edited_without(goal, body, &["/owner", "/id"], context, now)? {
                Ok(goal) => goal,
                Err(error) => return Some(Err(error)),
            };
            goal.owner = owner;
            only(goal)
        }
        Mutant::PatchIdentityIgnored => {
            patched_without(goal, body, &["/owner", "/id"], context, now)
        }
        Mutant::RefusalStillWrites if names_judge_owned(body) => {
            patched_without(goal, body, &JUDGE_OWNED, context, now)
        }
        Mutant::PatchAnswersUnsaved if body.get("objective").is_some() => {
            patched_without(goal, body, &["/objective"], context, now)
        }
        Mutant::PatchClearsVerdict
            if EDITABLE
                .iter()
                .any(|pointer| body.pointer(pointer).is_some()) =>
        {
            let patched = patched_without(goal, body, &[], context, now)?;
            Some(patched.map(|change| {
                change.map(|mut change| {
                    change.goal.completion.last_verdict = None;
                    change
                })
            }))
        }
        Mutant::PostPutStateApplied | Mutant::CompleteRouteServed => {
            let state = body
                .get(UPSERT_STATE)
                .and_then(Value::as_str)
                .and_then(GoalState::parse)?;
            let mut goal = match edited_without(goal, body, &["/upsertState"], context, now)? {
                Ok(goal) => goal,
                Err(error) => return Some(Err(error)),
            };
            goal.state = state;
            only(goal)
        }
        Mutant::PatchBoundsMerged if body.get("bounds").is_some() => {
            let bounds = merged_bounds(&goal.bounds, body.get("bounds")?)
                .unwrap_or_else(|| goal.bounds.clone());
            let mut goal = match edited_without(goal, body, &["/bounds"], context, now)? {
                Ok(goal) => goal,
                Err(error) => return Some(Err(error)),
            };
            goal.bounds = bounds;
            only(goal)
        }
        Mutant::PatchRefsUnsaved if REFS.iter().any(|pointer| body.pointer(pointer).is_some()) => {
            patched_without(goal, body, &REFS, context, now)
        }
        // Not even shown in the answer: the rest of the body is applied
        // and answered as if it were the whole edit.
        Mutant::PatchRefsDropped if REFS.iter().any(|pointer| body.pointer(pointer).is_some()) => {
            patched_without(goal, body, &REFS, context, now)
        }
        Mutant::BodyLimitMissing => {
            let long = body
                .get("objective")
                .and_then(Value::as_str)
                .filter(|objective| objective.len() > MAX_OBJECTIVE_BYTES)?;
            let mut goal = match edited_without(goal, body, &["/objective"], context, now)? {
                Ok(goal) => goal,
                Err(error) => return Some(Err(error)),
            };
            goal.objective = Objective::new(long.to_string());
            only(goal)
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
        Some(Mutant::PatchRefsUnsaved) => {
            // The answer shows the edit the write dropped.
            if let Ok(edit) = parse_patch(body, context) {
                if let Some(verifier_ref) = edit.verifier_ref {
                    goal.completion.verifier_ref = verifier_ref;
                }
                if let Some(mode) = edit.mode {
                    goal.continuation.mode = mode;
                }
                if let Some(arm_ref) = edit.arm_ref {
                    goal.continuation.arm_ref = arm_ref;
                }
            }
        }
        _ => {}
    }
    Ok(goal)
}

/// How far away `resume-forgets-schedule` leaves a resumed goal's next fire.
const FORGOTTEN_MS: u64 = 3_600_000;

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
        Mutant::ResumeForgetsSchedule
            if goal.paused && goal.continuation.mode == goalpost_host::domain::Mode::Schedule =>
        {
            let mut change =
                transition::resume(goal, now, goalpost_host::domain::CostReading::Budget)
                    .ok()??;
            change.goal.next_fire_at = Some(now.saturating_add_ms(FORGOTTEN_MS));
            Some(change)
        }
        Mutant::ResumeResetsProgress if goal.state == GoalState::Escalated => {
            let mut change =
                transition::resume(goal, now, goalpost_host::domain::CostReading::Budget)
                    .ok()??;
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
