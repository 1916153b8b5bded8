//! The `heartbeat` continuation: a probe of the goal's arm (a webhook
//! answering `{fire}`, the fixture's `fireOn`) that dispatches a run only
//! when it says so. Probe and run happen under the goal's lock, so a pause
//! answers only once neither is in flight, and abandon or the deadline
//! cancel both.

use super::iteration::{fire_outcome, Trigger};
use super::{Engine, EngineError, FireOutcome};
use crate::arms::ProbeRequest;
use crate::domain::goal::DEFAULT_HEARTBEAT_MS;
use crate::domain::{may_dispatch, GoalId, Mode, Refusal};

/// What one heartbeat did, and how long until the next probe.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub outcome: FireOutcome,
    pub every_ms: u64,
}

impl Engine {
    /// Probes a heartbeat goal (`number` counts its probes from 1) and, if
    /// the probe says fire, runs one iteration. A failed or slow probe fires
    /// nothing.
    pub async fn heartbeat(&self, id: &GoalId, number: u64) -> Result<Heartbeat, EngineError> {
        let _guard = self.locks.lock(id).await;
        let mut cancel = self.cancels.watch(id);
        let Some(goal) = self.load(id).await? else {
            return Ok(Heartbeat {
                outcome: FireOutcome::Skipped,
                every_ms: DEFAULT_HEARTBEAT_MS,
            });
        };
        let every_ms = goal.heartbeat_ms();
        let done = |outcome| Ok(Heartbeat { outcome, every_ms });
        if goal.continuation.mode != Mode::Heartbeat {
            return done(FireOutcome::Skipped);
        }
        match may_dispatch(&goal, self.clock.now(), self.choices().cost_reading) {
            Ok(()) => {}
            // The iteration's own check closes it.
            Err(Refusal::Exhausted(_)) => {
                let iteration = self
                    .iterate_locked(id, &Trigger::Heartbeat, &mut cancel)
                    .await;
                return done(fire_outcome(iteration)?);
            }
            Err(_) => return done(FireOutcome::Skipped),
        }
        let worker = self
            .arms
            .worker_for(goal.continuation.arm_ref.as_ref(), &goal.owner);
        let worker = self.faults.worker(&goal, self.clock.now(), worker);
        let probe = ProbeRequest {
            goal_id: goal.id.clone(),
            iteration: goal.next_iteration(),
            remaining: goal.remaining(),
            number,
        };
        let fire = tokio::select! {
            biased;
            () = cancel.cancelled() => return done(FireOutcome::Skipped),
            answer = tokio::time::timeout(self.settings.run_limit, worker.probe(probe)) => match answer {
                Ok(Ok(fire)) => fire,
                Ok(Err(error)) => {
                    tracing::info!(goal = %id, %error, "heartbeat probe failed; nothing fires");
                    false
                }
                Err(_) => {
                    tracing::info!(goal = %id, "heartbeat probe timed out; nothing fires");
                    false
                }
            },
        };
        if !fire {
            return done(FireOutcome::Quiet);
        }
        let iteration = self
            .iterate_locked(id, &Trigger::Heartbeat, &mut cancel)
            .await;
        done(fire_outcome(iteration)?)
    }

    pub async fn heartbeat_goals(&self) -> Result<Vec<GoalId>, EngineError> {
        self.db(|store| store.heartbeat_goals()).await
    }
}
