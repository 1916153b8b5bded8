//! One binding's run, the way the goal's own iteration runs (DESIGN
//! "Engine"): under the goal's lock, re-read the goal and its attention and
//! check the run may happen (fail closed: the goal open, active and
//! unpaused with bounds left, the binding active), reserve it as the goal's
//! next iteration, send the binding's projection, admit what its mode
//! allows of the answer, and record all of it in one write of the goal.

use std::sync::Arc;

use super::{lift, Engine, EngineError, MAX_ATTEMPTS};
use crate::arms::RunReport;
use crate::domain::attention::{
    self, wire, AttentionError, AttentionMode, BindingAnswer, BindingRun, BindingStatus, Policy,
};
use crate::domain::transition::{record_run, FinishedRun};
use crate::domain::{
    BindingId, Evaluation, Goal, GoalId, MicroUsd, Refusal, RunId, RunOutcome, Tenant, Verdict,
};
use crate::engine::FireOutcome;
use crate::storage::{RunReservation, Written};

/// Who asked for the run.
#[derive(Debug, Clone)]
enum Trigger {
    /// `POST …/bindings/{binding}/continue` (a conformance seam).
    Continue(Tenant),
    /// The scheduler found the binding's interval due.
    Schedule,
}

/// What one binding's run did, as `continue` answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingOutcome {
    pub goal: Goal,
    pub binding: BindingId,
    pub run_id: RunId,
    pub iteration: u64,
    /// The RFC 0097 verdict, for a pursuer's run judged under `verifier`.
    pub evaluation: Option<Evaluation>,
    /// What the answer claimed beyond its mode's authority.
    pub refused: Vec<&'static str>,
    /// The run had no usable answer.
    pub failed: bool,
}

enum Reserved {
    Run(Box<Goal>, RunReservation),
    Closed,
    Skip,
}

enum Ran {
    Recorded(Box<BindingOutcome>),
    Discarded,
    Closed,
    Skipped,
}

/// How the arm's answer turned out.
struct Answered {
    cost: MicroUsd,
    answer: Option<BindingAnswer>,
    /// The judge's verdict of a pursuer's output under `verifier`.
    verdict: Option<Verdict>,
}

impl Engine {
    /// Runs one binding now (the `continue` seam for bindings). In its own
    /// task, so a caller that goes away cannot leave a run unrecorded.
    pub async fn continue_binding(
        self: &Arc<Self>,
        tenant: &Tenant,
        id: &GoalId,
        binding: &BindingId,
    ) -> Result<BindingOutcome, EngineError> {
        self.served()?;
        let engine = Arc::clone(self);
        let (id, binding) = (id.clone(), binding.clone());
        let trigger = Trigger::Continue(tenant.clone());
        let task = tokio::spawn(async move { engine.run_binding(&id, &binding, &trigger).await });
        let ran = task
            .await
            .map_err(|error| EngineError::Internal(format!("binding run failed: {error}")))??;
        match ran {
            Ran::Recorded(outcome) => Ok(*outcome),
            Ran::Discarded | Ran::Closed => Err(EngineError::Terminal),
            Ran::Skipped => Err(EngineError::Internal("a continue was skipped".into())),
        }
    }

    /// A run of an interval binding the tick found due (and marked
    /// running); re-checks everything under the goal's lock.
    pub async fn fire_binding(&self, id: &GoalId, binding: &BindingId) -> FireOutcome {
        let _running = self.firing_of(binding);
        match self.run_binding(id, binding, &Trigger::Schedule).await {
            Ok(Ran::Recorded(outcome)) => FireOutcome::Ran {
                iteration: outcome.iteration,
            },
            Ok(Ran::Discarded) => FireOutcome::Discarded,
            Ok(Ran::Closed) => FireOutcome::Closed,
            Ok(Ran::Skipped) | Err(_) => FireOutcome::Skipped,
        }
    }

    async fn run_binding(
        &self,
        id: &GoalId,
        binding: &BindingId,
        trigger: &Trigger,
    ) -> Result<Ran, EngineError> {
        let _guard = self.locks.lock(id).await;
        let mut cancel = self.cancels.watch(id);
        let (goal, reservation) = match self.reserve_binding_run(id, binding, trigger).await? {
            Reserved::Run(goal, reservation) => (goal, reservation),
            Reserved::Closed => return Ok(Ran::Closed),
            Reserved::Skip => return Ok(Ran::Skipped),
        };
        let answered = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            answered = self.dispatch_binding(&goal, binding, &reservation) => Some(answered),
        };
        let Some(answered) = answered else {
            tracing::info!(goal = %id, run = %reservation.run_id, "the goal closed under a binding's run; it is dropped");
            self.store
                .discard_run(&reservation.run_id, self.clock.now())
                .await?;
            return Ok(Ran::Discarded);
        };
        self.record_binding(id, binding, &reservation, answered)
            .await
    }

    /// The fail-closed check and the reservation, retried if the goal
    /// changes in between.
    async fn reserve_binding_run(
        &self,
        id: &GoalId,
        binding: &BindingId,
        trigger: &Trigger,
    ) -> Result<Reserved, EngineError> {
        let wake = self.pause_wake();
        for _ in 0..MAX_ATTEMPTS {
            let goal = match trigger {
                Trigger::Continue(tenant) => self.load_owned(tenant, id).await?,
                Trigger::Schedule => match self.load(id).await? {
                    Some(goal) => goal,
                    None => return Ok(Reserved::Skip),
                },
            };
            let now = self.clock.now();
            let Some(item) = goal
                .notes
                .attention
                .as_deref()
                .and_then(|state| state.binding(binding))
            else {
                return match trigger {
                    Trigger::Continue(_) => Err(lift(AttentionError::BindingNotFound)),
                    Trigger::Schedule => Ok(Reserved::Skip),
                };
            };
            let status = self
                .attention
                .faults
                .dispatch_status(item.status_at(now, wake));
            let refused = match &status {
                BindingStatus::Active => None,
                BindingStatus::Paused { .. } => Some(AttentionError::BindingPaused),
                final_status => Some(AttentionError::BindingFinal {
                    status: final_status.as_str(),
                }),
            };
            if let Some(refused) = refused {
                return match trigger {
                    Trigger::Continue(_) if goal.state.is_terminal() => Err(EngineError::Terminal),
                    Trigger::Continue(_) => Err(lift(refused)),
                    Trigger::Schedule => Ok(Reserved::Skip),
                };
            }
            if matches!(trigger, Trigger::Schedule) && item.next_fire().is_none_or(|at| at > now) {
                return Ok(Reserved::Skip);
            }
            let cost_reading = self.choices().cost_reading;
            match self
                .attention
                .faults
                .dispatch_check(&goal, now, cost_reading)
            {
                Ok(()) => {}
                Err(Refusal::Exhausted(_)) => {
                    if self.close_exhausted(&goal, now, cost_reading).await? {
                        return Ok(Reserved::Closed);
                    }
                    continue;
                }
                Err(refusal) if matches!(trigger, Trigger::Schedule) => {
                    let _ = refusal;
                    return Ok(Reserved::Skip);
                }
                Err(Refusal::Terminal) => return Err(EngineError::Terminal),
                Err(Refusal::Escalated) => return Err(EngineError::Escalated),
                Err(Refusal::Paused) => return Err(EngineError::Paused),
            }
            let reservation = RunReservation {
                run_id: RunId::generate(),
                goal_id: goal.id.clone(),
                iteration: goal.next_iteration(),
                started_at: now,
                report: None,
            };
            match self.store.reserve_run(&reservation, goal.version).await? {
                Written::Done(()) => return Ok(Reserved::Run(Box::new(goal), reservation)),
                Written::Conflict => {}
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing before a binding's run"
        )))
    }

    /// Sends the projection and reads the answer. Never fails: a run
    /// without a usable answer is recorded as such (and, for a pursuer
    /// judged under `verifier`, as an environmental failure, as any run).
    async fn dispatch_binding(
        &self,
        goal: &Goal,
        binding: &BindingId,
        reservation: &RunReservation,
    ) -> Answered {
        let failed = Answered {
            cost: MicroUsd::ZERO,
            answer: None,
            verdict: None,
        };
        let Some(state) = goal.notes.attention.as_deref() else {
            return failed;
        };
        let Some(item) = state.binding(binding) else {
            return failed;
        };
        let judged = item.mode.powers().judged_output && state.policy == Policy::Verifier;
        let failed = Answered {
            verdict: judged.then(Verdict::environmental),
            ..failed
        };
        let Some(arm) = self.arms.binding_arm(&item.arm, &goal.owner) else {
            return failed;
        };
        let projection = self.attention.faults.projection(
            goal,
            wire::projection(
                goal,
                state,
                item,
                &reservation.run_id,
                reservation.iteration,
            ),
        );
        let called = tokio::time::timeout(self.settings.run_limit, arm.call(&goal.id, &projection));
        let answer = match called.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => {
                tracing::info!(goal = %goal.id, %binding, %error, "a binding's run failed");
                return failed;
            }
            Err(_) => {
                tracing::info!(goal = %goal.id, %binding, "a binding's run timed out");
                return failed;
            }
        };
        let answer = match BindingAnswer::from_json(&answer) {
            Ok(answer) => answer,
            Err(error) => {
                tracing::info!(goal = %goal.id, %binding, %error, "a binding's answer is unusable");
                return failed;
            }
        };
        let verdict = if judged {
            let report = RunReport {
                output: answer.output.clone(),
                cost: answer.cost,
                escalation: None,
                commitment_ms: None,
            };
            match self.judge(goal, reservation, report).await.outcome {
                RunOutcome::Judged(verdict) => Some(verdict),
                RunOutcome::Escalated => Some(Verdict::environmental()),
            }
        } else {
            None
        };
        Answered {
            cost: answer.cost,
            answer: Some(answer),
            verdict,
        }
    }

    /// Records the run on a fresh read of the goal, retried if the goal
    /// changed meanwhile (a pause or an edit does not undo the run; a close
    /// does: nothing is recorded after it).
    async fn record_binding(
        &self,
        id: &GoalId,
        binding: &BindingId,
        reservation: &RunReservation,
        answered: Answered,
    ) -> Result<Ran, EngineError> {
        let cost_reading = self.choices().cost_reading;
        for _ in 0..MAX_ATTEMPTS {
            let now = self.clock.now();
            let goal = self.load(id).await?;
            let Some(goal) = goal else {
                self.store.discard_run(&reservation.run_id, now).await?;
                return Ok(Ran::Discarded);
            };
            let Some(item) = goal
                .notes
                .attention
                .as_deref()
                .and_then(|state| state.binding(binding).cloned())
            else {
                self.store.discard_run(&reservation.run_id, now).await?;
                return Ok(Ran::Discarded);
            };
            let supervises = goal.notes.attention.as_deref().is_some_and(|state| {
                matches!(&state.policy, Policy::Supervisor { binding } if *binding == item.id)
                    && item.mode == AttentionMode::Coordinate
            });
            let powers = self.attention.faults.powers(item.mode);
            let admitted = answered
                .answer
                .as_ref()
                .map(|answer| answer.admit(powers, supervises));
            let counted = match &answered.verdict {
                Some(verdict) => record_run(
                    &goal,
                    &FinishedRun {
                        run_id: reservation.run_id.clone(),
                        cost: answered.cost,
                        outcome: RunOutcome::Judged(verdict.clone()),
                        commitment_ms: None,
                    },
                    now,
                    cost_reading,
                ),
                None => self.attention.faults.count_run(
                    &goal,
                    &reservation.run_id,
                    answered.cost,
                    now,
                    cost_reading,
                ),
            };
            let run = BindingRun {
                binding: binding.clone(),
                run_id: reservation.run_id.clone(),
                cost: answered.cost,
                admitted: admitted.clone(),
            };
            let change = counted.and_then(|change| {
                attention::record_binding_run(&goal, change, &run, now, cost_reading, |s, r| {
                    self.decide_closure(s, r)
                })
            });
            let Some(mut change) = change else {
                self.store.discard_run(&reservation.run_id, now).await?;
                return Ok(Ran::Discarded);
            };
            self.attention.faults.recorded(&mut change);
            let written = self
                .store
                .apply(&change, goal.version, Some(&reservation.run_id), now)
                .await?;
            if let Written::Done(_) = written {
                self.armed(&change.goal, now, false);
                return Ok(Ran::Recorded(Box::new(BindingOutcome {
                    iteration: change.goal.progress.iterations,
                    goal: change.goal,
                    binding: binding.clone(),
                    run_id: reservation.run_id.clone(),
                    evaluation: change.evaluation,
                    refused: admitted
                        .as_ref()
                        .map(|admitted| admitted.refused.clone())
                        .unwrap_or_default(),
                    failed: answered.answer.is_none(),
                })));
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing under a binding's record"
        )))
    }
}
