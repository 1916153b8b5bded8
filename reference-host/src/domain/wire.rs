//! The JSON the wire shows for domain values (SPEC §1, §4). Host-private
//! fields never appear here.

use serde::Serialize;
use serde_json::{json, Value};

use super::criteria::{CriteriaVerifier, Rule};
use super::event::{Event, EventPayload};
use super::goal::Goal;
use super::ids::RunId;
use super::run_ids::RunIds;
use super::verdict::{Criterion, Evaluation};

/// A goal as the wire shows it. Serialized straight from the goal rather
/// than through a `Value`: a `Value` copies every contributing run id into
/// a string of its own, and a long-lived goal has thousands.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireGoal<'a> {
    id: &'a str,
    objective: &'a str,
    state: &'static str,
    completion: WireCompletion<'a>,
    continuation: WireContinuation<'a>,
    bounds: WireBounds<'a>,
    owner: WireOwner<'a>,
    created_at: String,
    updated_at: String,
    progress: WireProgress<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireCompletion<'a> {
    check: &'static str,
    verifier_ref: Option<&'a str>,
    last_verdict: Option<WireVerdict<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireVerdict<'a> {
    satisfied: bool,
    confidence: f64,
    run_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireContinuation<'a> {
    mode: &'static str,
    arm_ref: Option<&'a str>,
}

/// Only the bounds the goal declares.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireBounds<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_loop_iterations: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_cost_usd: Option<&'a serde_json::Number>,
}

#[derive(Serialize)]
struct WireOwner<'a> {
    tenant: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireProgress<'a> {
    iterations: u64,
    contributing_run_ids: ShownRunIds<'a>,
}

/// The most recent contributing run ids a goal body lists when nothing
/// says otherwise (`--run-ids-shown`; PROFILE.md, "Goal bodies of long
/// histories"): a goal's body does not grow with its history.
pub const DEFAULT_RUN_IDS_SHOWN: usize = 100;

/// The most recent `most` of a goal's run ids.
struct ShownRunIds<'a> {
    ids: &'a RunIds,
    most: usize,
}

impl Serialize for ShownRunIds<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.ids.last_n(self.most).map(RunId::as_str))
    }
}

/// [`goal_shown`] with [`DEFAULT_RUN_IDS_SHOWN`].
pub fn goal(goal: &Goal) -> WireGoal<'_> {
    goal_shown(goal, DEFAULT_RUN_IDS_SHOWN)
}

/// A goal as the wire shows it, listing its most recent `shown`
/// contributing run ids (`progress.iterations` counts them all).
pub fn goal_shown(goal: &Goal, shown: usize) -> WireGoal<'_> {
    WireGoal {
        id: goal.id.as_str(),
        objective: goal.objective.as_str(),
        state: goal.state.as_str(),
        completion: WireCompletion {
            check: goal.completion.check.as_str(),
            verifier_ref: goal.completion.verifier_ref.as_ref().map(|r| r.as_str()),
            last_verdict: goal
                .completion
                .last_verdict
                .as_ref()
                .map(|verdict| WireVerdict {
                    satisfied: verdict.satisfied,
                    confidence: verdict.confidence,
                    run_id: verdict.run_id.as_str(),
                }),
        },
        continuation: WireContinuation {
            mode: goal.continuation.mode.as_str(),
            arm_ref: goal.continuation.arm_ref.as_ref().map(|r| r.as_str()),
        },
        bounds: WireBounds {
            max_loop_iterations: goal.bounds.max_loop_iterations(),
            run_timeout_ms: goal.bounds.run_timeout_ms(),
            max_cost_usd: goal.bounds.max_cost().map(|cap| cap.written()),
        },
        owner: WireOwner {
            tenant: goal.owner.as_str(),
        },
        created_at: goal.created_at.to_wire(),
        updated_at: goal.updated_at.to_wire(),
        progress: WireProgress {
            iterations: goal.progress.iterations,
            contributing_run_ids: ShownRunIds {
                ids: &goal.progress.contributing_run_ids,
                most: shown,
            },
        },
    }
}

#[derive(Serialize)]
pub struct GoalList<'a> {
    goals: Vec<WireGoal<'a>>,
}

pub fn goal_list<'a>(goals: impl IntoIterator<Item = &'a Goal>, shown: usize) -> GoalList<'a> {
    GoalList {
        goals: goals
            .into_iter()
            .map(|one| goal_shown(one, shown))
            .collect(),
    }
}

/// An event as the wire shows it, serialized straight from the event: the
/// live stream renders every event it publishes, so the rendering is on
/// the path of every commit that has a subscriber. Members are declared in
/// name order, the order a `Value` writes them in, so every rendering of
/// an event is the same text.
#[derive(Serialize)]
struct WireEvent<'a> {
    at: String,
    payload: WirePayload<'a>,
    sequence: u64,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WirePayload<'a> {
    #[serde(rename_all = "camelCase")]
    Evaluated {
        confidence: f64,
        goal_id: &'a str,
        iterations: u64,
        run_id: &'a str,
        satisfied: bool,
    },
    #[serde(rename_all = "camelCase")]
    Closed {
        final_state: &'static str,
        goal_id: &'a str,
    },
    /// An attention event's payload, members in name order.
    Attention(Value),
}

impl<'a> WireEvent<'a> {
    fn new(event: &'a Event) -> WireEvent<'a> {
        let payload = match &event.payload {
            EventPayload::Evaluated {
                goal_id,
                satisfied,
                confidence,
                run_id,
                iterations,
            } => WirePayload::Evaluated {
                confidence: *confidence,
                goal_id: goal_id.as_str(),
                iterations: *iterations,
                run_id: run_id.as_str(),
                satisfied: *satisfied,
            },
            EventPayload::Closed {
                goal_id,
                final_state,
            } => WirePayload::Closed {
                final_state: final_state.as_str(),
                goal_id: goal_id.as_str(),
            },
            EventPayload::Attention(attention) => WirePayload::Attention(attention.payload()),
        };
        WireEvent {
            at: event.at.to_wire(),
            payload,
            sequence: event.sequence,
            kind: event.payload.kind(),
        }
    }
}

pub fn event(event: &Event) -> Value {
    // Serializing plain fields into a `Value` cannot fail.
    serde_json::to_value(WireEvent::new(event)).unwrap_or(Value::Null)
}

/// [`event`] as JSON text, without building the `Value` first.
pub fn event_text(event: &Event) -> String {
    // Serializing plain fields cannot fail.
    serde_json::to_string(&WireEvent::new(event)).unwrap_or_default()
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

/// The `confidence` an evaluation shows when no judge gave its verdict (the
/// run or the judge failed). The seam contract allows either: there was no
/// judgement to be confident about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ConfidenceWithoutVerdict {
    /// `0`, the confidence the recorded verdict holds.
    #[default]
    Zero,
    /// `null`.
    Null,
}

pub fn evaluation(evaluation: &Evaluation, unjudged: ConfidenceWithoutVerdict) -> Value {
    let verdict = &evaluation.verdict;
    let confidence = match unjudged {
        ConfidenceWithoutVerdict::Null if verdict.without_judgement() => Value::Null,
        _ => verdict.confidence().into(),
    };
    let mut value = json!({
        "runId": evaluation.run_id.as_str(),
        "iteration": evaluation.iteration,
        "satisfied": verdict.satisfied(),
        "confidence": confidence,
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

pub fn evaluation_list<'a>(
    evaluations: impl IntoIterator<Item = &'a Evaluation>,
    unjudged: ConfidenceWithoutVerdict,
) -> Value {
    let evaluations: Vec<Value> = evaluations
        .into_iter()
        .map(|one| evaluation(one, unjudged))
        .collect();
    json!({ "evaluations": evaluations })
}

#[derive(Serialize)]
pub struct ContinueResponse<'a> {
    goal: WireGoal<'a>,
    evaluation: Option<Value>,
}

pub fn continue_response<'a>(
    goal_now: &'a Goal,
    evaluation_now: Option<&Evaluation>,
    unjudged: ConfidenceWithoutVerdict,
    shown: usize,
) -> ContinueResponse<'a> {
    ContinueResponse {
        goal: goal_shown(goal_now, shown),
        evaluation: evaluation_now.map(|one| evaluation(one, unjudged)),
    }
}

/// `POST {base}/{id}/runs`: the reported run as recorded (schema
/// `run-report-response`) and the goal after it.
pub fn run_report_response(
    run_id: &RunId,
    iteration: u64,
    goal_now: &Goal,
    evaluation_now: Option<&Evaluation>,
    unjudged: ConfidenceWithoutVerdict,
    shown: usize,
) -> Value {
    json!({
        "runId": run_id.as_str(),
        "iteration": iteration,
        "goal": goal_shown(goal_now, shown),
        "evaluation": evaluation_now.map(|one| evaluation(one, unjudged)),
    })
}

/// What `GET {base}/{id}/attention` carries. The seam contract requires
/// `status` only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AttentionBody {
    /// `{goalId, status}`.
    #[default]
    GoalIdAndStatus,
    /// `{status}`.
    StatusOnly,
}

pub fn attention(goal: &Goal, body: AttentionBody) -> Value {
    let status = goal.attention().as_str();
    match body {
        AttentionBody::GoalIdAndStatus => json!({ "goalId": goal.id.as_str(), "status": status }),
        AttentionBody::StatusOnly => json!({ "status": status }),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{GoalId, GoalState, Timestamp};

    fn with_payload(payload: EventPayload) -> Event {
        Event {
            sequence: 3,
            cursor: 17,
            at: Timestamp::from_unix_ms(1_781_308_800_123).expect("in range"),
            payload,
        }
    }

    /// The wire shape of both event types, and the text: the live stream's
    /// rendering is the same text the list's `Value` writes.
    #[test]
    fn an_event_renders_its_members_and_the_same_text_either_way() {
        let goal = GoalId::generate();
        let run = RunId::generate();
        let evaluated = with_payload(EventPayload::Evaluated {
            goal_id: goal.clone(),
            satisfied: false,
            confidence: 0.25,
            run_id: run.clone(),
            iterations: 4,
        });
        let closed = with_payload(EventPayload::Closed {
            goal_id: goal.clone(),
            final_state: GoalState::Satisfied,
        });
        let expected = [
            json!({
                "sequence": 3,
                "type": "goal.evaluated",
                "at": "2026-06-13T00:00:00.123Z",
                "payload": {
                    "goalId": goal.as_str(),
                    "satisfied": false,
                    "confidence": 0.25,
                    "runId": run.as_str(),
                    "iterations": 4,
                },
            }),
            json!({
                "sequence": 3,
                "type": "goal.closed",
                "at": "2026-06-13T00:00:00.123Z",
                "payload": { "goalId": goal.as_str(), "finalState": "satisfied" },
            }),
        ];
        for (stored, expected) in [evaluated, closed].iter().zip(expected) {
            assert_eq!(event(stored), expected);
            assert_eq!(event_text(stored), expected.to_string());
        }
    }
}
