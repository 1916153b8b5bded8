//! Every change a goal's attention goes through, as pure functions that
//! return the goal's [`Change`]: the attention record lives with the goal,
//! so a change of it is one write of the goal, with its events.
//!
//! Attention never moves a goal's RFC 0097 state, except in two places the
//! profile names: a closure the completion policy grants closes the goal
//! `satisfied`, and a satisfied verdict the policy (or unresolved blocking
//! evidence) does not allow is held, so the goal stays `active`.

use super::answer::Admitted;
use super::binding::{AttentionMode, Binding, BindingStatus, PauseWake};
use super::closure::Missing;
use super::event::AttentionEvent;
use super::policy::{Authority, Policy, MAX_QUORUM};
use super::state::{
    AttentionState, Confirmation, Evidence, Vote, MAX_BINDINGS, MAX_CONFIRMATIONS, MAX_EVIDENCE,
};
use crate::domain::bounds::CostReading;
use crate::domain::decide::exhausted;
use crate::domain::event::EventPayload;
use crate::domain::goal::{Goal, GoalState, Mode};
use crate::domain::ids::{BindingId, EvidenceId, RunId};
use crate::domain::money::MicroUsd;
use crate::domain::refs::ArmRef;
use crate::domain::timestamp::Timestamp;
use crate::domain::transition::Change;

/// Why an attention change was refused (nothing changes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttentionError {
    #[error("the goal is in a terminal state")]
    Terminal,
    #[error("the goal is escalated")]
    Escalated,
    #[error("the goal is paused")]
    GoalPaused,
    #[error("no such binding")]
    BindingNotFound,
    #[error("no such evidence")]
    EvidenceNotFound,
    #[error("another binding of the goal holds mode {mode}")]
    ModeTaken {
        mode: &'static str,
        holder: BindingId,
    },
    #[error("the binding is {status}: it takes no transition and no run")]
    BindingFinal { status: &'static str },
    #[error("the binding is paused")]
    BindingPaused,
    #[error("a goal keeps at most {max} bindings")]
    TooManyBindings { max: usize },
    #[error("the completion policy does not allow closing the goal now")]
    ClosureRefused(Vec<Missing>),
    #[error("{pointer}: {message}")]
    Invalid { pointer: String, message: String },
}

/// A binding as a create or supersede asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBinding {
    pub mode: AttentionMode,
    pub arm: ArmRef,
}

/// A person's change of one binding's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusChange {
    Pause { until: Option<Timestamp> },
    Resume,
    Stop,
}

/// The goal as a change starts from: its attention record (a new one when
/// it has none), and a next version. A pure attention change leaves the
/// goal's wire object (and `updatedAt`) alone; only the version moves.
fn draft(goal: &Goal) -> (Goal, AttentionState) {
    let mut next = goal.clone();
    let mut state = next
        .notes
        .attention
        .take()
        .map(|boxed| *boxed)
        .unwrap_or_else(|| AttentionState::new(goal));
    state.rebase(goal);
    (next, state)
}

fn finish(mut goal: Goal, state: AttentionState, events: Vec<EventPayload>) -> Change {
    goal.notes.attention = Some(Box::new(state));
    goal.version += 1;
    Change {
        goal,
        events,
        evaluation: None,
    }
}

fn event(event: AttentionEvent) -> EventPayload {
    EventPayload::Attention(event)
}

fn refuse_closed(goal: &Goal) -> Result<(), AttentionError> {
    if goal.state.is_terminal() {
        Err(AttentionError::Terminal)
    } else {
        Ok(())
    }
}

fn new_binding(new: &NewBinding, supersedes: Option<BindingId>, now: Timestamp) -> Binding {
    Binding {
        id: BindingId::generate(),
        mode: new.mode,
        arm: new.arm.clone(),
        status: BindingStatus::Active,
        supersedes,
        created_at: now,
        updated_at: now,
        runs: 0,
        last_run_at: None,
    }
}

/// Adds a binding, refused while `holder` names a live binding holding its
/// mode ([`AttentionState::holder_of`]: a mode is held by one at a time).
pub fn create_binding(
    goal: &Goal,
    new: &NewBinding,
    now: Timestamp,
    holder: impl Fn(&AttentionState, AttentionMode) -> Option<BindingId>,
) -> Result<(Change, BindingId), AttentionError> {
    refuse_closed(goal)?;
    let (next, mut state) = draft(goal);
    if state.bindings.len() >= MAX_BINDINGS {
        return Err(AttentionError::TooManyBindings { max: MAX_BINDINGS });
    }
    if let Some(holder) = holder(&state, new.mode) {
        return Err(AttentionError::ModeTaken {
            mode: new.mode.as_str(),
            holder,
        });
    }
    let binding = new_binding(new, None, now);
    let id = binding.id.clone();
    let events = vec![event(AttentionEvent::created(&goal.id, &id, new.mode))];
    state.bindings.push(binding);
    Ok((finish(next, state, events), id))
}

/// Pauses (optionally until an instant), resumes or stops a binding.
/// `Ok(None)` when it is already so. The goal itself never changes.
pub fn change_status(
    goal: &Goal,
    id: &BindingId,
    change: &StatusChange,
    now: Timestamp,
    wake: PauseWake,
) -> Result<Option<Change>, AttentionError> {
    refuse_closed(goal)?;
    let (next, mut state) = draft(goal);
    let binding = state
        .binding_mut(id)
        .ok_or(AttentionError::BindingNotFound)?;
    if binding.status.is_final() {
        return Err(AttentionError::BindingFinal {
            status: binding.status.as_str(),
        });
    }
    let current = binding.status_at(now, wake);
    let status = match change {
        StatusChange::Pause { until } => BindingStatus::Paused { until: *until },
        StatusChange::Resume => BindingStatus::Active,
        StatusChange::Stop => BindingStatus::Stopped,
    };
    if current == status {
        return Ok(None);
    }
    binding.status = status.clone();
    binding.updated_at = now;
    let events = vec![event(AttentionEvent::status(&goal.id, id, &status))];
    Ok(Some(finish(next, state, events)))
}

/// Replaces a live binding by a new one (its mode unless another is
/// named); the old one ends `superseded` and is never dispatched again.
/// Refused while `holder` names another live binding holding the mode.
pub fn supersede(
    goal: &Goal,
    id: &BindingId,
    arm: ArmRef,
    mode: Option<AttentionMode>,
    now: Timestamp,
    holder: impl Fn(&AttentionState, AttentionMode) -> Option<BindingId>,
) -> Result<(Change, BindingId), AttentionError> {
    refuse_closed(goal)?;
    let (next, mut state) = draft(goal);
    let old = state.binding(id).ok_or(AttentionError::BindingNotFound)?;
    if old.status.is_final() {
        return Err(AttentionError::BindingFinal {
            status: old.status.as_str(),
        });
    }
    let mode = mode.unwrap_or(old.mode);
    if state.bindings.len() >= MAX_BINDINGS {
        return Err(AttentionError::TooManyBindings { max: MAX_BINDINGS });
    }
    if let Some(holder) = holder(&state, mode).filter(|holder| holder != id) {
        return Err(AttentionError::ModeTaken {
            mode: mode.as_str(),
            holder,
        });
    }
    let replacement = new_binding(&NewBinding { mode, arm }, Some(id.clone()), now);
    let new_id = replacement.id.clone();
    let superseded = BindingStatus::Superseded { by: new_id.clone() };
    if let Some(old) = state.binding_mut(id) {
        old.status = superseded.clone();
        old.updated_at = now;
    }
    let events = vec![
        event(AttentionEvent::status(&goal.id, id, &superseded)),
        event(AttentionEvent::created(&goal.id, &new_id, mode)),
    ];
    state.bindings.push(replacement);
    Ok((finish(next, state, events), new_id))
}

/// Sets the completion policy. `Ok(None)` when it is the policy already.
pub fn set_policy(goal: &Goal, policy: &Policy) -> Result<Option<Change>, AttentionError> {
    refuse_closed(goal)?;
    let (next, state) = draft(goal);
    match policy {
        Policy::Quorum { threshold } if *threshold == 0 || *threshold > MAX_QUORUM => {
            return Err(AttentionError::Invalid {
                pointer: "/threshold".into(),
                message: format!(
                    "a quorum counts the goal's review and judge bindings: 1 to {MAX_QUORUM}"
                ),
            })
        }
        Policy::Supervisor { binding } => {
            let supervises = state.binding(binding).is_some_and(|supervisor| {
                supervisor.mode == AttentionMode::Coordinate && supervisor.status.is_live()
            });
            if !supervises {
                return Err(AttentionError::Invalid {
                    pointer: "/binding".into(),
                    message: "the supervisor is a live coordinate binding of the goal".into(),
                });
            }
        }
        _ => {}
    }
    if state.policy == *policy && goal.notes.attention.is_some() {
        return Ok(None);
    }
    let mut state = state;
    state.policy = policy.clone();
    let events = vec![event(AttentionEvent::policy_set(&goal.id, policy))];
    Ok(Some(finish(next, state, events)))
}

/// Marks blocking evidence resolved: it no longer holds closure.
/// `Ok(None)` when it already was.
pub fn resolve_evidence(goal: &Goal, id: &EvidenceId) -> Result<Option<Change>, AttentionError> {
    refuse_closed(goal)?;
    let (next, mut state) = draft(goal);
    let item = state
        .evidence
        .iter_mut()
        .find(|item| item.id == *id)
        .ok_or(AttentionError::EvidenceNotFound)?;
    if item.resolved {
        return Ok(None);
    }
    item.resolved = true;
    let events = vec![event(AttentionEvent::evidence_resolved(&goal.id, id))];
    Ok(Some(finish(next, state, events)))
}

/// Records confirmation evidence under `authority` (the credential's) on
/// the goal's current revision.
pub fn confirm(
    goal: &Goal,
    authority: Authority,
    evidence: Option<(String, String)>,
    now: Timestamp,
) -> Result<Change, AttentionError> {
    refuse_closed(goal)?;
    let (next, mut state) = draft(goal);
    let revision = state.revision;
    state.confirmations.push(Confirmation {
        authority,
        revision,
        at: now,
        evidence,
    });
    if state.confirmations.len() > MAX_CONFIRMATIONS {
        state.confirmations.remove(0);
    }
    let events = vec![event(AttentionEvent::confirmation(
        &goal.id, authority, revision,
    ))];
    Ok(finish(next, state, events))
}

/// A request to close the goal, answered by its policy: granted, the goal
/// closes `satisfied`; refused, nothing changes and the error says what
/// is missing. `decide` is the policy's answer for a revision
/// ([`closure`], as the host counts approvals).
pub fn request_close(
    goal: &Goal,
    now: Timestamp,
    decide: impl Fn(&AttentionState, u64) -> Result<(), Vec<Missing>>,
) -> Result<Change, AttentionError> {
    match goal.state {
        GoalState::Active => {}
        GoalState::Escalated => return Err(AttentionError::Escalated),
        _ => return Err(AttentionError::Terminal),
    }
    let (mut next, state) = draft(goal);
    let revision = state.revision;
    decide(&state, revision).map_err(AttentionError::ClosureRefused)?;
    let mut events = vec![event(AttentionEvent::closure_requested(
        &goal.id, None, true,
    ))];
    close_satisfied(&mut next, &mut events, now);
    Ok(finish(next, state, events))
}

fn close_satisfied(goal: &mut Goal, events: &mut Vec<EventPayload>, now: Timestamp) {
    goal.state = GoalState::Satisfied;
    goal.updated_at = now;
    events.push(EventPayload::Closed {
        goal_id: goal.id.clone(),
        final_state: GoalState::Satisfied,
    });
}

/// Wakes every timed pause whose instant has come (the tick's way). `None`
/// when there is none, or the goal is closed.
pub fn wake(goal: &Goal, now: Timestamp) -> Option<Change> {
    if goal.state.is_terminal() {
        return None;
    }
    let (next, mut state) = draft(goal);
    let mut events = Vec::new();
    for binding in &mut state.bindings {
        if binding.wake_due(now) {
            binding.status = BindingStatus::Active;
            binding.updated_at = now;
            events.push(event(AttentionEvent::woken(&goal.id, &binding.id)));
        }
    }
    (!events.is_empty()).then(|| finish(next, state, events))
}

/// How one binding run ended, for its record.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingRun {
    pub binding: BindingId,
    pub run_id: RunId,
    /// The answer's cost, or 0 for a run without a usable answer.
    pub cost: MicroUsd,
    /// `None`: the run failed (transport, timeout, an unreadable answer).
    pub admitted: Option<Admitted>,
}

/// Records a binding's run on the goal as `record` (the goal's own
/// bookkeeping: the judged verdict of a pursuer under `verifier`, or
/// [`count_run`]) left it: the binding's run, what its answer was allowed
/// to add, and the policy's answer to a request to close. `None` when the
/// goal closed under the run: nothing is recorded after a close.
pub fn record_binding_run(
    before: &Goal,
    mut change: Change,
    run: &BindingRun,
    now: Timestamp,
    cost: CostReading,
    decide: impl Fn(&AttentionState, u64) -> Result<(), Vec<Missing>>,
) -> Option<Change> {
    if before.state != GoalState::Active {
        return None;
    }
    let mut state = change
        .goal
        .notes
        .attention
        .take()
        .map(|boxed| *boxed)
        .unwrap_or_else(|| AttentionState::new(before));
    state.rebase(before);
    let revision = state.revision;
    let goal_id = before.id.clone();
    let binding = state.binding_mut(&run.binding)?;
    binding.runs = binding.runs.saturating_add(1);
    binding.last_run_at = Some(now);
    let mode = binding.mode;
    let iteration = change.goal.progress.iterations;
    let admitted = run.admitted.clone().unwrap_or_default();
    change.events.push(event(AttentionEvent::ran(
        &goal_id,
        &run.binding,
        mode,
        &run.run_id,
        iteration,
        admitted.refused.len(),
        run.admitted.is_none(),
    )));
    for item in admitted.evidence {
        if state.evidence.len() >= MAX_EVIDENCE {
            break;
        }
        let id = EvidenceId::generate();
        change.events.push(event(AttentionEvent::evidence_added(
            &goal_id,
            &run.binding,
            &id,
            item.blocking,
        )));
        state.evidence.push(Evidence {
            id,
            binding: run.binding.clone(),
            mode,
            kind: item.kind,
            reference: item.reference,
            label: item.label,
            summary: item.summary,
            blocking: item.blocking,
            resolved: false,
            revision,
            at: now,
        });
    }
    if let Some(approve) = admitted.verdict {
        state.votes.retain(|vote| vote.binding != run.binding);
        state.votes.push(Vote {
            binding: run.binding.clone(),
            mode,
            approve,
            revision,
            at: now,
        });
        change.events.push(event(AttentionEvent::verdict(
            &goal_id,
            &run.binding,
            approve,
            revision,
        )));
    }
    hold(&state, &mut change, now, cost);
    if admitted.request_close && change.goal.state == GoalState::Active {
        let granted = decide(&state, revision).is_ok();
        change.events.push(event(AttentionEvent::closure_requested(
            &goal_id,
            Some(&run.binding),
            granted,
        )));
        if granted {
            close_satisfied(&mut change.goal, &mut change.events, now);
        }
    }
    change.goal.notes.attention = Some(Box::new(state));
    Some(change)
}

/// The goal's bookkeeping for a binding run that no RFC 0097 judge
/// evaluates: one more iteration, its run id and cost counted toward the
/// goal's one set of bounds, and `bound-exceeded` once they are used up.
/// No evaluation and no `goal.evaluated`: nothing judged it.
pub fn count_run(
    goal: &Goal,
    run_id: &RunId,
    spent: MicroUsd,
    now: Timestamp,
    cost: CostReading,
) -> Option<Change> {
    if goal.state != GoalState::Active {
        return None;
    }
    let mut next = goal.clone();
    next.progress.iterations = goal.next_iteration();
    next.progress.contributing_run_ids.push(run_id.clone());
    next.spent = next.spent.saturating_add(spent);
    next.version += 1;
    next.updated_at = now;
    let mut events = Vec::new();
    if exhausted(&next, now, cost).is_some() {
        next.state = GoalState::BoundExceeded;
        events.push(EventPayload::Closed {
            goal_id: next.id.clone(),
            final_state: GoalState::BoundExceeded,
        });
    }
    Some(Change {
        goal: next,
        events,
        evaluation: None,
    })
}

/// Holds a closure the judge's satisfied verdict made when the goal's
/// attention does not allow it: under a policy other than `verifier`, or
/// with blocking evidence unresolved. The verdict stays recorded; the goal
/// stays `active` (or closes `bound-exceeded` when its bounds are used
/// up, as if the verdict had not been satisfied).
pub fn hold(state: &AttentionState, change: &mut Change, now: Timestamp, cost: CostReading) {
    let satisfied = change.goal.state == GoalState::Satisfied;
    let allowed = state.policy == Policy::Verifier && state.unresolved_blocking().is_empty();
    if !satisfied || allowed {
        return;
    }
    change
        .events
        .retain(|event| !matches!(event, EventPayload::Closed { .. }));
    let run = change
        .goal
        .completion
        .last_verdict
        .as_ref()
        .map(|verdict| verdict.run_id.clone());
    if let Some(run) = run {
        change
            .events
            .push(event(AttentionEvent::closure_held(&change.goal.id, &run)));
    }
    change.goal.state = GoalState::Active;
    if exhausted(&change.goal, now, cost).is_some() {
        change.goal.state = GoalState::BoundExceeded;
        change.events.push(EventPayload::Closed {
            goal_id: change.goal.id.clone(),
            final_state: GoalState::BoundExceeded,
        });
    } else if change.goal.continuation.mode != Mode::Commitment {
        change.goal.next_fire_at = Some(now.saturating_add_ms(change.goal.interval_ms()));
    }
}

/// [`hold`] for a change of the goal's own iteration (its own arm, a
/// `continue`, a reported run): only goals with attention are held.
pub fn hold_own_run(change: &mut Change, now: Timestamp, cost: CostReading) {
    let Some(state) = change.goal.notes.attention.clone() else {
        return;
    };
    hold(&state, change, now, cost);
}
