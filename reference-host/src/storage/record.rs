//! How domain values are laid out in the database's JSON `record` columns,
//! and the checked way back. Stored refs are re-parsed with fixtures on: a
//! goal keeps working whatever seams the host restarts with.

use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::domain::{
    parse_verifier, ArmRef, Bounds, Check, Completion, Continuation, CostCap, CriteriaVerifier,
    Criterion, Escalation, EscalationKind, Evaluation, EventPayload, FailureClass, Feedback, Goal,
    GoalId, GoalState, LastVerdict, MicroUsd, Mode, Notes, Objective, OpenEscalation, Progress,
    Resolution, RunId, RunIds, Tenant, Timestamp, Verdict, VerifierRef,
};

fn corrupt(what: impl Into<String>) -> StoreError {
    StoreError::Corrupt(what.into())
}

fn goal_id(text: &str) -> Result<GoalId, StoreError> {
    GoalId::parse(text).ok_or_else(|| corrupt(format!("goal id {text:?}")))
}

fn run_id(text: &str) -> Result<RunId, StoreError> {
    RunId::parse(text).ok_or_else(|| corrupt(format!("run id {text:?}")))
}

fn timestamp(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_ms(ms).ok_or_else(|| corrupt(format!("timestamp {ms}")))
}

fn state(text: &str) -> Result<GoalState, StoreError> {
    GoalState::parse(text).ok_or_else(|| corrupt(format!("state {text:?}")))
}

fn failure_class(text: Option<&str>) -> Result<Option<FailureClass>, StoreError> {
    text.map(|text| {
        FailureClass::parse(text).ok_or_else(|| corrupt(format!("failure class {text:?}")))
    })
    .transpose()
}

#[derive(Debug, Serialize, Deserialize)]
struct LastVerdictRecord {
    satisfied: bool,
    confidence: f64,
    run_id: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct GoalRecord {
    id: String,
    objective: String,
    state: String,
    check: String,
    verifier_ref: Option<String>,
    last_verdict: Option<LastVerdictRecord>,
    mode: String,
    arm_ref: Option<String>,
    max_loop_iterations: Option<u64>,
    run_timeout_ms: Option<u64>,
    max_cost_usd: Option<serde_json::Number>,
    tenant: String,
    created_ms: i64,
    updated_ms: i64,
    iterations: u64,
    // The contributing run ids live in the goal log (migrations 5 and 7),
    // an entry per run: a goal's record stays the same size however long
    // it runs.
    paused: bool,
    spent_micros: u64,
    next_fire_ms: Option<i64>,
    version: u64,
    // A goal's notes (escalation, resolution, last outcome); absent in
    // records written before they existed, and left out while empty so a
    // plain goal's record does not grow.
    #[serde(default, skip_serializing_if = "NotesRecord::is_empty")]
    notes: NotesRecord,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct NotesRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    escalation: Option<EscalationRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resolution: Option<ResolutionRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feedback: Option<FeedbackRecord>,
    // The goal's attention (`storage/attention_record.rs`); absent for a
    // goal nobody attends through the attention extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attention: Option<super::attention_record::AttentionRecord>,
}

impl NotesRecord {
    fn is_empty(&self) -> bool {
        self.escalation.is_none()
            && self.resolution.is_none()
            && self.feedback.is_none()
            && self.attention.is_none()
    }

    fn from_notes(notes: &Notes) -> NotesRecord {
        NotesRecord {
            escalation: notes.escalation.as_ref().map(|open| EscalationRecord {
                kind: open.escalation.kind.as_str().to_string(),
                reason: open.escalation.reason.clone(),
                run_id: open.run_id.as_str().to_string(),
                at_ms: open.at.unix_ms(),
            }),
            resolution: notes
                .resolution
                .as_ref()
                .map(|resolution| ResolutionRecord {
                    kind: resolution.kind.as_str().to_string(),
                    note: resolution.note.clone(),
                }),
            feedback: notes.feedback.as_ref().map(|feedback| FeedbackRecord {
                satisfied: feedback.satisfied,
                failing_criteria: feedback.failing_criteria.clone(),
                failure_class: feedback
                    .failure_class
                    .map(|class| class.as_str().to_string()),
            }),
            attention: notes
                .attention
                .as_deref()
                .map(super::attention_record::AttentionRecord::from_state),
        }
    }

    fn into_notes(self) -> Result<Notes, StoreError> {
        let kind = |text: &str| EscalationKind::parse(text).map_err(corrupt);
        Ok(Notes {
            escalation: self
                .escalation
                .map(|record| -> Result<OpenEscalation, StoreError> {
                    Ok(OpenEscalation {
                        escalation: Escalation {
                            kind: kind(&record.kind)?,
                            reason: record.reason,
                        },
                        run_id: run_id(&record.run_id)?,
                        at: timestamp(record.at_ms)?,
                    })
                })
                .transpose()?,
            resolution: self
                .resolution
                .map(|record| -> Result<Resolution, StoreError> {
                    Ok(Resolution {
                        kind: kind(&record.kind)?,
                        note: record.note,
                    })
                })
                .transpose()?,
            feedback: self
                .feedback
                .map(|record| -> Result<Feedback, StoreError> {
                    Ok(Feedback {
                        satisfied: record.satisfied,
                        failing_criteria: record.failing_criteria,
                        failure_class: failure_class(record.failure_class.as_deref())?,
                    })
                })
                .transpose()?,
            attention: self
                .attention
                .map(|record| record.into_state().map(Box::new))
                .transpose()?,
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct EscalationRecord {
    kind: String,
    reason: String,
    run_id: String,
    at_ms: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct ResolutionRecord {
    kind: String,
    note: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct FeedbackRecord {
    satisfied: bool,
    failing_criteria: Vec<String>,
    failure_class: Option<String>,
}

impl GoalRecord {
    pub(super) fn from_goal(goal: &Goal) -> GoalRecord {
        GoalRecord {
            id: goal.id.as_str().to_string(),
            objective: goal.objective.as_str().to_string(),
            state: goal.state.as_str().to_string(),
            check: goal.completion.check.as_str().to_string(),
            verifier_ref: goal
                .completion
                .verifier_ref
                .as_ref()
                .map(|r| r.as_str().to_string()),
            last_verdict: goal
                .completion
                .last_verdict
                .as_ref()
                .map(|verdict| LastVerdictRecord {
                    satisfied: verdict.satisfied,
                    confidence: verdict.confidence,
                    run_id: verdict.run_id.as_str().to_string(),
                }),
            mode: goal.continuation.mode.as_str().to_string(),
            arm_ref: goal
                .continuation
                .arm_ref
                .as_ref()
                .map(|r| r.as_str().to_string()),
            max_loop_iterations: goal.bounds.max_loop_iterations(),
            run_timeout_ms: goal.bounds.run_timeout_ms(),
            max_cost_usd: goal.bounds.max_cost().map(|cap| cap.written().clone()),
            tenant: goal.owner.as_str().to_string(),
            created_ms: goal.created_at.unix_ms(),
            updated_ms: goal.updated_at.unix_ms(),
            iterations: goal.progress.iterations,
            paused: goal.paused,
            spent_micros: goal.spent.micros(),
            next_fire_ms: goal.next_fire_at.map(Timestamp::unix_ms),
            version: goal.version,
            notes: NotesRecord::from_notes(&goal.notes),
        }
    }

    /// The goal, with its contributing run ids (as stored, in order; the
    /// first `skipped` no longer kept).
    pub(super) fn into_goal(self, skipped: usize, run_ids: &[String]) -> Result<Goal, StoreError> {
        let verifier_ref = self
            .verifier_ref
            .map(|text| VerifierRef::parse(&text, true).map_err(|error| corrupt(error.to_string())))
            .transpose()?;
        let arm_ref = self
            .arm_ref
            .map(|text| ArmRef::parse(&text, true).map_err(|error| corrupt(error.to_string())))
            .transpose()?;
        let last_verdict = self
            .last_verdict
            .map(|verdict| -> Result<LastVerdict, StoreError> {
                Ok(LastVerdict {
                    satisfied: verdict.satisfied,
                    confidence: verdict.confidence,
                    run_id: run_id(&verdict.run_id)?,
                })
            })
            .transpose()?;
        let max_cost = self
            .max_cost_usd
            .map(|number| CostCap::from_number(number).ok_or_else(|| corrupt("cost cap")))
            .transpose()?;
        let bounds = Bounds::new(self.max_loop_iterations, self.run_timeout_ms, max_cost)
            .ok_or_else(|| corrupt("bounds"))?;
        Ok(Goal {
            id: goal_id(&self.id)?,
            objective: Objective::new(self.objective),
            state: state(&self.state)?,
            completion: Completion {
                check: Check::parse(&self.check).ok_or_else(|| corrupt("check"))?,
                verifier_ref,
                last_verdict,
            },
            continuation: Continuation {
                mode: Mode::parse(&self.mode).ok_or_else(|| corrupt("mode"))?,
                arm_ref,
            },
            bounds,
            owner: Tenant::parse(&self.tenant).ok_or_else(|| corrupt("tenant"))?,
            created_at: timestamp(self.created_ms)?,
            updated_at: timestamp(self.updated_ms)?,
            progress: Progress {
                iterations: self.iterations,
                contributing_run_ids: RunIds::with_skipped(
                    skipped,
                    run_ids
                        .iter()
                        .map(|run| run_id(run))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            },
            paused: self.paused,
            spent: MicroUsd::from_micros(self.spent_micros),
            next_fire_at: self.next_fire_ms.map(timestamp).transpose()?,
            version: self.version,
            notes: self.notes.into_notes()?,
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(super) enum EventRecord {
    #[serde(rename = "goal.evaluated")]
    Evaluated {
        goal_id: String,
        satisfied: bool,
        confidence: f64,
        run_id: String,
        iterations: u64,
    },
    #[serde(rename = "goal.closed")]
    Closed {
        goal_id: String,
        final_state: String,
    },
    /// An attention event (`domain::attention`): its type and payload as
    /// the wire shows them.
    #[serde(rename = "attention")]
    Attention {
        kind: String,
        goal_id: String,
        fields: serde_json::Map<String, serde_json::Value>,
    },
}

impl EventRecord {
    pub(super) fn from_payload(payload: &EventPayload) -> EventRecord {
        match payload {
            EventPayload::Evaluated {
                goal_id,
                satisfied,
                confidence,
                run_id,
                iterations,
            } => EventRecord::Evaluated {
                goal_id: goal_id.as_str().to_string(),
                satisfied: *satisfied,
                confidence: *confidence,
                run_id: run_id.as_str().to_string(),
                iterations: *iterations,
            },
            EventPayload::Closed {
                goal_id,
                final_state,
            } => EventRecord::Closed {
                goal_id: goal_id.as_str().to_string(),
                final_state: final_state.as_str().to_string(),
            },
            EventPayload::Attention(event) => EventRecord::Attention {
                kind: event.kind.as_str().to_string(),
                goal_id: event.goal_id.as_str().to_string(),
                fields: event.fields.clone(),
            },
        }
    }

    pub(super) fn into_payload(self) -> Result<EventPayload, StoreError> {
        Ok(match self {
            EventRecord::Evaluated {
                goal_id: goal,
                satisfied,
                confidence,
                run_id: run,
                iterations,
            } => EventPayload::Evaluated {
                goal_id: goal_id(&goal)?,
                satisfied,
                confidence,
                run_id: run_id(&run)?,
                iterations,
            },
            EventRecord::Closed {
                goal_id: goal,
                final_state,
            } => EventPayload::Closed {
                goal_id: goal_id(&goal)?,
                final_state: state(&final_state)?,
            },
            EventRecord::Attention {
                kind,
                goal_id: goal,
                fields,
            } => EventPayload::Attention(crate::domain::attention::AttentionEvent {
                kind: crate::domain::attention::EventKind::parse(&kind)
                    .ok_or_else(|| corrupt(format!("attention event {kind:?}")))?,
                goal_id: goal_id(&goal)?,
                fields,
            }),
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct CriterionRecord {
    id: String,
    pass: bool,
    failure_class: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct EvaluationRecord {
    run_id: String,
    iteration: u64,
    satisfied: bool,
    confidence: f64,
    criteria: Option<Vec<CriterionRecord>>,
    failure_class: Option<String>,
    cost_micros: u64,
    at_ms: i64,
}

impl EvaluationRecord {
    pub(super) fn from_evaluation(evaluation: &Evaluation) -> EvaluationRecord {
        let verdict = &evaluation.verdict;
        EvaluationRecord {
            run_id: evaluation.run_id.as_str().to_string(),
            iteration: evaluation.iteration,
            satisfied: verdict.satisfied(),
            confidence: verdict.confidence(),
            criteria: verdict.criteria().map(|criteria| {
                criteria
                    .iter()
                    .map(|criterion| CriterionRecord {
                        id: criterion.id.clone(),
                        pass: criterion.pass,
                        failure_class: criterion
                            .failure_class
                            .map(|class| class.as_str().to_string()),
                    })
                    .collect()
            }),
            failure_class: verdict
                .failure_class()
                .map(|class| class.as_str().to_string()),
            cost_micros: evaluation.cost.micros(),
            at_ms: evaluation.at.unix_ms(),
        }
    }

    pub(super) fn into_evaluation(self) -> Result<Evaluation, StoreError> {
        let criteria = self
            .criteria
            .map(|criteria| {
                criteria
                    .into_iter()
                    .map(|criterion| -> Result<Criterion, StoreError> {
                        Ok(Criterion {
                            id: criterion.id,
                            pass: criterion.pass,
                            failure_class: failure_class(criterion.failure_class.as_deref())?,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        Ok(Evaluation {
            run_id: run_id(&self.run_id)?,
            iteration: self.iteration,
            verdict: Verdict::restore(
                self.satisfied,
                self.confidence,
                criteria,
                failure_class(self.failure_class.as_deref())?,
            ),
            cost: MicroUsd::from_micros(self.cost_micros),
            at: timestamp(self.at_ms)?,
        })
    }
}

/// What a change writes beside its goal row, serialised the same for every
/// store: its events' records, and its evaluation as (run id, iteration,
/// record).
pub(super) struct ChangeRecords {
    pub events: Vec<String>,
    pub evaluation: Option<(String, i64, String)>,
}

impl ChangeRecords {
    pub(super) fn of(change: &crate::domain::Change) -> Result<ChangeRecords, StoreError> {
        let events = change
            .events
            .iter()
            .map(|payload| to_json(&EventRecord::from_payload(payload)))
            .collect::<Result<Vec<_>, _>>()?;
        let evaluation = change
            .evaluation
            .as_ref()
            .map(|evaluation| -> Result<_, StoreError> {
                let iteration = i64::try_from(evaluation.iteration).map_err(|_| {
                    corrupt(format!("iteration {} too large", evaluation.iteration))
                })?;
                Ok((
                    evaluation.run_id.as_str().to_string(),
                    iteration,
                    to_json(&EvaluationRecord::from_evaluation(evaluation))?,
                ))
            })
            .transpose()?;
        Ok(ChangeRecords { events, evaluation })
    }
}

/// A registered verifier from its stored registration and creation time.
pub(super) fn verifier_from_record(
    record: &str,
    created_ms: i64,
) -> Result<CriteriaVerifier, StoreError> {
    let value: serde_json::Value = from_json(record)?;
    let created_at = timestamp(created_ms)?;
    parse_verifier(&value)
        .map(|new| new.into_verifier(created_at))
        .map_err(|error| corrupt(format!("verifier: {error}")))
}

pub(super) fn to_json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| corrupt(error.to_string()))
}

pub(super) fn from_json<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|error| corrupt(error.to_string()))
}
