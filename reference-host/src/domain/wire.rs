//! The JSON the wire shows for domain values (SPEC §1, §4). Host-private
//! fields never appear here.

use serde_json::{json, Map, Value};

use super::criteria::{CriteriaVerifier, Rule};
use super::event::{Event, EventPayload};
use super::goal::Goal;
use super::verdict::{Criterion, Evaluation};

pub fn goal(goal: &Goal) -> Value {
    let last_verdict = goal.completion.last_verdict.as_ref().map(|verdict| {
        json!({
            "satisfied": verdict.satisfied,
            "confidence": verdict.confidence,
            "runId": verdict.run_id.as_str(),
        })
    });
    let mut bounds = Map::new();
    if let Some(iterations) = goal.bounds.max_loop_iterations() {
        bounds.insert("maxLoopIterations".into(), iterations.into());
    }
    if let Some(timeout) = goal.bounds.run_timeout_ms() {
        bounds.insert("runTimeoutMs".into(), timeout.into());
    }
    if let Some(cap) = goal.bounds.max_cost() {
        bounds.insert("maxCostUsd".into(), Value::Number(cap.written().clone()));
    }
    let run_ids: Vec<&str> = goal
        .progress
        .contributing_run_ids
        .iter()
        .map(|run| run.as_str())
        .collect();
    json!({
        "id": goal.id.as_str(),
        "objective": goal.objective.as_str(),
        "state": goal.state.as_str(),
        "completion": {
            "check": goal.completion.check.as_str(),
            "verifierRef": goal.completion.verifier_ref.as_ref().map(|r| r.as_str()),
            "lastVerdict": last_verdict,
        },
        "continuation": {
            "mode": goal.continuation.mode.as_str(),
            "armRef": goal.continuation.arm_ref.as_ref().map(|r| r.as_str()),
        },
        "bounds": bounds,
        "owner": { "tenant": goal.owner.as_str() },
        "createdAt": goal.created_at.to_wire(),
        "updatedAt": goal.updated_at.to_wire(),
        "progress": {
            "iterations": goal.progress.iterations,
            "contributingRunIds": run_ids,
        },
    })
}

pub fn goal_list<'a>(goals: impl IntoIterator<Item = &'a Goal>) -> Value {
    let goals: Vec<Value> = goals.into_iter().map(goal).collect();
    json!({ "goals": goals })
}

pub fn event_payload(payload: &EventPayload) -> Value {
    match payload {
        EventPayload::Evaluated {
            goal_id,
            satisfied,
            confidence,
            run_id,
            iterations,
        } => json!({
            "goalId": goal_id.as_str(),
            "satisfied": satisfied,
            "confidence": confidence,
            "runId": run_id.as_str(),
            "iterations": iterations,
        }),
        EventPayload::Closed {
            goal_id,
            final_state,
        } => json!({
            "goalId": goal_id.as_str(),
            "finalState": final_state.as_str(),
        }),
    }
}

pub fn event(event: &Event) -> Value {
    json!({
        "sequence": event.sequence,
        "type": event.payload.kind(),
        "at": event.at.to_wire(),
        "payload": event_payload(&event.payload),
    })
}

pub fn event_list<'a>(events: impl IntoIterator<Item = &'a Event>) -> Value {
    let events: Vec<Value> = events.into_iter().map(event).collect();
    json!({ "events": events })
}

fn criterion(criterion: &Criterion) -> Value {
    json!({
        "id": criterion.id,
        "verdict": if criterion.pass { "pass" } else { "fail" },
        "failureClass": criterion.failure_class.map(|class| class.as_str()),
    })
}

pub fn evaluation(evaluation: &Evaluation) -> Value {
    let verdict = &evaluation.verdict;
    let mut value = json!({
        "runId": evaluation.run_id.as_str(),
        "iteration": evaluation.iteration,
        "satisfied": verdict.satisfied(),
        "confidence": verdict.confidence(),
        "costUsd": evaluation.cost.as_usd(),
        "at": evaluation.at.to_wire(),
    });
    if let Some(object) = value.as_object_mut() {
        if let Some(criteria) = verdict.criteria() {
            let criteria: Vec<Value> = criteria.iter().map(criterion).collect();
            object.insert("criteria".into(), criteria.into());
        }
        if let Some(class) = verdict.failure_class() {
            object.insert("failureClass".into(), class.as_str().into());
        }
    }
    value
}

pub fn evaluation_list<'a>(evaluations: impl IntoIterator<Item = &'a Evaluation>) -> Value {
    let evaluations: Vec<Value> = evaluations.into_iter().map(evaluation).collect();
    json!({ "evaluations": evaluations })
}

pub fn continue_response(goal_now: &Goal, evaluation_now: Option<&Evaluation>) -> Value {
    json!({
        "goal": goal(goal_now),
        "evaluation": evaluation_now.map(evaluation),
    })
}

pub fn attention(goal: &Goal) -> Value {
    json!({
        "goalId": goal.id.as_str(),
        "status": goal.attention().as_str(),
    })
}

fn rule(rule: &Rule) -> Value {
    json!({
        "id": rule.id,
        "pointer": rule.pointer,
        "op": rule.predicate.op().as_str(),
        "value": rule.predicate.operand(),
        "failureClass": rule.failure_class.as_str(),
    })
}

/// A criteria verifier as registered (schema `verifier-registration`, every
/// default filled in): also how storage keeps it.
pub fn verifier_registration(verifier: &CriteriaVerifier) -> Value {
    let criteria: Vec<Value> = verifier.rules.iter().map(rule).collect();
    json!({ "name": verifier.name.as_str(), "criteria": criteria })
}

/// Schema `verifier-definition`.
pub fn verifier(verifier: &CriteriaVerifier) -> Value {
    let mut value = verifier_registration(verifier);
    if let Some(object) = value.as_object_mut() {
        object.insert("createdAt".into(), verifier.created_at.to_wire().into());
    }
    value
}

pub fn verifier_list<'a>(verifiers: impl IntoIterator<Item = &'a CriteriaVerifier>) -> Value {
    let verifiers: Vec<Value> = verifiers.into_iter().map(verifier).collect();
    json!({ "verifiers": verifiers })
}
