//! Attention as the wire shows it: bindings, evidence, the closure state,
//! and the typed projection a binding's arm is sent.

use serde_json::{json, Value};

use super::binding::{Binding, BindingStatus, PauseWake};
use super::closure::Missing;
use super::state::{AttentionState, Evidence};
use crate::domain::goal::Goal;
use crate::domain::ids::RunId;
use crate::domain::money::MicroUsd;
use crate::domain::timestamp::Timestamp;

/// Most evidence refs one projection carries (the newest): the projection
/// is bounded whatever the goal gathered.
pub const MAX_PROJECTED_EVIDENCE: usize = 32;

/// A binding, read at `now`. A binding of a closed goal reads `stopped`:
/// a terminal goal ends all attention on it. `eligible` is the fail-closed
/// check a dispatch would make now (the goal open, active and unpaused,
/// the binding active); the bounds are checked when a run is reserved.
pub fn binding(goal: &Goal, item: &Binding, now: Timestamp, wake: PauseWake) -> Value {
    let status = match item.status_at(now, wake) {
        status if goal.state.is_terminal() && status.is_live() => BindingStatus::Stopped,
        status => status,
    };
    let (until, superseded_by) = match &status {
        BindingStatus::Paused { until } => (until.map(Timestamp::to_wire), None),
        BindingStatus::Superseded { by } => (None, Some(by.as_str())),
        _ => (None, None),
    };
    json!({
        "id": item.id.as_str(),
        "goalId": goal.id.as_str(),
        "mode": item.mode.as_str(),
        "armRef": item.arm.as_str(),
        "status": status.as_str(),
        "until": until,
        "supersededBy": superseded_by,
        "supersedes": item.supersedes.as_ref().map(|id| id.as_str()),
        "eligible": AttentionState::eligible(goal, item, now, wake),
        "authority": item.mode.powers().names(),
        "runs": item.runs,
        "lastRunAt": item.last_run_at.map(Timestamp::to_wire),
        "createdAt": item.created_at.to_wire(),
        "updatedAt": item.updated_at.to_wire(),
    })
}

pub fn evidence(item: &Evidence) -> Value {
    json!({
        "id": item.id.as_str(),
        "bindingId": item.binding.as_str(),
        "mode": item.mode.as_str(),
        "kind": item.kind,
        "ref": item.reference,
        "label": item.label,
        "summary": item.summary,
        "blocking": item.blocking,
        "resolved": item.resolved,
        "revision": item.revision,
        "at": item.at.to_wire(),
    })
}

/// Where the goal's closure stands: its policy, its revision, whether a
/// request to close would be granted now and, if not, what is missing
/// (`decision`, the policy's answer at the current revision).
pub fn closure_state(
    goal: &Goal,
    state: &AttentionState,
    decision: Result<(), Vec<Missing>>,
    approved: usize,
) -> Value {
    let revision = state.revision_of(goal);
    let missing = if goal.state.is_open() {
        decision.err().unwrap_or_default()
    } else {
        Vec::new()
    };
    json!({
        "goalId": goal.id.as_str(),
        "goalState": goal.state.as_str(),
        "policy": state.policy.to_json(),
        "revision": revision,
        "grantable": goal.state == crate::domain::GoalState::Active && missing.is_empty(),
        "missing": missing.iter().map(Missing::to_json).collect::<Vec<_>>(),
        "approvals": approved,
        "verdicts": state.votes.iter().map(|vote| json!({
            "bindingId": vote.binding.as_str(),
            "mode": vote.mode.as_str(),
            "approve": vote.approve,
            "revision": vote.revision,
            "at": vote.at.to_wire(),
        })).collect::<Vec<_>>(),
        "confirmations": state.confirmations.iter().map(|confirmation| json!({
            "authority": confirmation.authority.as_str(),
            "revision": confirmation.revision,
            "at": confirmation.at.to_wire(),
        })).collect::<Vec<_>>(),
        "unresolved": state.unresolved_blocking().iter().map(|id| id.as_str()).collect::<Vec<_>>(),
    })
}

/// What a binding's arm is sent for one run (schema
/// `attention-arm-request`): its mode, stance and authority, the goal's
/// revision, the evidence refs gathered so far (the newest, bounded), the
/// completion policy, what is left of the goal's bounds, and the claim.
/// The objective travels only as `claim.objective`: data to attend to,
/// never spliced into the host's own instructions (`stance`).
pub fn projection(
    goal: &Goal,
    state: &AttentionState,
    item: &Binding,
    run: &RunId,
    iteration: u64,
) -> Value {
    let skip = state.evidence.len().saturating_sub(MAX_PROJECTED_EVIDENCE);
    let evidence: Vec<Value> = state
        .evidence
        .iter()
        .skip(skip)
        .map(|item| {
            json!({
                "id": item.id.as_str(),
                "kind": item.kind,
                "ref": item.reference,
                "mode": item.mode.as_str(),
                "blocking": item.blocking,
                "resolved": item.resolved,
                "revision": item.revision,
            })
        })
        .collect();
    let remaining = goal.remaining();
    json!({
        "goalId": goal.id.as_str(),
        "bindingId": item.id.as_str(),
        "runId": run.as_str(),
        "iteration": iteration,
        "mode": item.mode.as_str(),
        "stance": item.mode.stance(),
        "authority": item.mode.powers().names(),
        "revision": state.revision_of(goal),
        "claim": { "objective": goal.objective.as_str() },
        "evidence": evidence,
        "policy": state.policy.to_json(),
        "remaining": {
            "iterations": remaining.iterations,
            "costUsd": remaining.cost.map(MicroUsd::as_usd),
            "deadline": remaining.deadline.map(Timestamp::to_wire),
        },
    })
}
