//! Reported runs (`POST {base}/{id}/runs`, PROFILE.md "Reported runs"): a
//! run a person or another system executed is judged and recorded exactly
//! as one the host dispatched. It goes through the same iteration (the
//! fail-closed check, the reservation, the judge, the decision order, one
//! verdict per run); only the worker call is replaced by the report.

use std::sync::Arc;

use super::goals::MAX_ATTEMPTS;
use super::idempotency::fingerprint;
use super::iteration::{Iteration, Reported, Trigger};
use super::{Engine, EngineError};
use crate::arms::{Escalation, RunReport};
use crate::domain::{Evaluation, Goal, GoalId, Mode, ReportedRun, RunId, Tenant};
use crate::storage::RunEnd;

/// The modes whose goals take reported runs. A `manual` goal has no
/// runs but the ones somebody starts; the other modes' runs come from the
/// host's own schedule, heartbeat or commitment, and a run from outside
/// would run beside them.
pub const TAKES_REPORTED_RUNS: [Mode; 1] = [Mode::Manual];

/// The answer to a report: the run as recorded and the goal after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOutcome {
    pub run_id: RunId,
    pub iteration: u64,
    pub goal: Goal,
    /// `None` when the run escalated (no verdict).
    pub evaluation: Option<Evaluation>,
    /// The run was reported before: this is that answer again.
    pub replayed: bool,
}

impl Engine {
    /// Judges and records a reported run. `body` is the request body the
    /// report was parsed from (its fingerprint makes a report with a
    /// `runId` idempotent). Runs in its own task, like `continue`, so a
    /// caller that goes away cannot leave the run unrecorded.
    pub async fn report_run(
        self: &Arc<Self>,
        tenant: &Tenant,
        id: &GoalId,
        report: ReportedRun,
        body: &serde_json::Value,
    ) -> Result<ReportOutcome, EngineError> {
        let (run_id, fingerprint) = match &report.key {
            Some(key) => (
                RunId::for_reported(id, key.as_str()),
                Some(fingerprint(body)),
            ),
            None => (RunId::generate(), None),
        };
        let reported = Reported {
            tenant: tenant.clone(),
            run_id,
            fingerprint,
            report: RunReport {
                output: report.output,
                cost: report.cost,
                escalation: report
                    .escalation
                    .map(|escalation| Escalation::parse(&escalation.kind, &escalation.reason))
                    .transpose()
                    .map_err(|message| {
                        EngineError::Internal(format!("a parsed escalation was refused: {message}"))
                    })?,
                // Only manual goals take reported runs: nothing to commit.
                commitment_ms: None,
            },
        };
        let engine = Arc::clone(self);
        let id = id.clone();
        tokio::spawn(async move { engine.report_locked(&id, reported).await })
            .await
            .map_err(|error| EngineError::Internal(format!("report task failed: {error}")))?
    }

    async fn report_locked(
        &self,
        id: &GoalId,
        reported: Reported,
    ) -> Result<ReportOutcome, EngineError> {
        let _guard = self.locks.lock(id).await;
        // The goal's lock orders this process's reports; across replicas
        // the same report can arrive at two at once. The one that reserves
        // the run records it; the others wait for that and answer it again,
        // as one host answers a report sent twice.
        for _ in 0..MAX_ATTEMPTS {
            let mut cancel = self.cancels.watch(id);
            let goal = self.load_owned(&reported.tenant, id).await?;
            match self.reported_before(&goal, &reported).await? {
                Before::Answered(replay) => return Ok(*replay),
                Before::InFlight => {
                    self.wait_for_run(&reported.run_id).await?;
                    continue;
                }
                Before::New => {}
            }
            let mode = goal.continuation.mode;
            let mode = self.faults.reported_mode(mode);
            if !TAKES_REPORTED_RUNS.contains(&mode) {
                return Err(EngineError::RunsNotAccepted {
                    mode: goal.continuation.mode.as_str(),
                });
            }
            // Judging a run is outbound work (a verifier call) or the
            // judge's: the tenant's rate applies, as to its fires. A report
            // answered again above costs nothing.
            self.start_outbound(&reported.tenant)?;
            let run_id = reported.run_id.clone();
            let trigger = Trigger::Report(Box::new(reported.clone()));
            return match self.iterate_locked(id, &trigger, &mut cancel).await {
                Ok(Iteration::Recorded {
                    goal,
                    evaluation,
                    iteration,
                }) => Ok(ReportOutcome {
                    run_id,
                    iteration,
                    goal: *goal,
                    evaluation,
                    replayed: false,
                }),
                // Closed under the run (abandoned, deadline) or just now
                // (bounds used up): as `continue` answers.
                Ok(Iteration::Discarded | Iteration::Closed) => Err(EngineError::Terminal),
                Ok(Iteration::Skipped) => Err(EngineError::Internal("a report was skipped".into())),
                Err(EngineError::ReportedElsewhere) => {
                    self.wait_for_run(&run_id).await?;
                    continue;
                }
                Err(error) => Err(error),
            };
        }
        Err(EngineError::Internal(format!(
            "run {} kept being reported elsewhere",
            reported.run_id
        )))
    }

    /// Waits until a run reserved elsewhere has ended (recorded, discarded,
    /// or closed by the orphan sweep if its replica died), polling the
    /// database as [`Engine::wait_while_held`] does: there is no signal
    /// across replicas.
    async fn wait_for_run(&self, run: &RunId) -> Result<(), EngineError> {
        let longest = self.settings.run_limit
            + self.settings.judge_limit
            + crate::storage::REPLICA_LEASE
            + super::ORPHAN_SWEEP_EVERY * 2;
        let deadline = tokio::time::Instant::now() + longest;
        let mut pause = std::time::Duration::from_millis(5);
        loop {
            let ended = self
                .lookup(|store| store.run(run))?
                .is_none_or(|stored| stored.end.is_some());
            if ended {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::Internal(format!(
                    "run {run} stayed in flight elsewhere for {longest:?}"
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(100));
        }
    }

    /// The answer to a report sent before under the same `runId`: the
    /// same run and verdict (the goal as it is now), a conflict when the
    /// body differs, `None` when the run is new. Checked before the goal's
    /// state, so a report that closed its goal is answered again rather
    /// than refused as terminal.
    async fn reported_before(
        &self,
        goal: &Goal,
        reported: &Reported,
    ) -> Result<Before, EngineError> {
        let Some(fingerprint) = &reported.fingerprint else {
            return Ok(Before::New);
        };
        let Some(stored) = self.lookup(|store| store.run(&reported.run_id))? else {
            return Ok(Before::New);
        };
        if stored.goal_id != goal.id || stored.report.as_ref() != Some(fingerprint) {
            return Err(EngineError::RunConflict);
        }
        match stored.end {
            Some(RunEnd::Recorded) => {}
            // The goal closed under the run: the first report was refused
            // as terminal, and so is this one.
            Some(RunEnd::Discarded) => return Err(EngineError::Terminal),
            // In flight under this process's lock: another replica took
            // the same report (or one that died left it, for the orphan
            // sweep to close). Its answer comes once it ends.
            None => return Ok(Before::InFlight),
        }
        // Its evaluation is the one of its iteration, if it has one (an
        // escalated run has none): one row, however long the goal's
        // history.
        let id = goal.id.clone();
        let before = stored.iteration.saturating_sub(1);
        let evaluations = self
            .db(move |store| store.evaluations_page(&id, before, 1))
            .await?;
        let evaluation = evaluations
            .into_iter()
            .find(|evaluation| evaluation.run_id == reported.run_id);
        Ok(Before::Answered(Box::new(ReportOutcome {
            run_id: reported.run_id.clone(),
            iteration: stored.iteration,
            goal: goal.clone(),
            evaluation,
            replayed: true,
        })))
    }
}

/// What a report's `runId` says before it is judged.
enum Before {
    /// Reported before and recorded (or refused): this answer again.
    Answered(Box<ReportOutcome>),
    /// Reserved and not yet ended, by another replica.
    InFlight,
    /// Never reported.
    New,
}
