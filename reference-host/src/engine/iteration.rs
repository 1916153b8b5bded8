//! One iteration, exactly as DESIGN "Engine" describes it: under the goal's
//! lock, re-read and check the goal may run (fail closed), reserve the run
//! (iteration and run id written first), dispatch it, judge it, and record
//! verdict, events and decision in one transaction. A close by a person or
//! the deadline cancels the dispatch; nothing is recorded for it then.

use std::sync::Arc;
use std::time::Duration;

use super::goals::MAX_ATTEMPTS;
use super::{CancelWatch, ContinueOutcome, Engine, EngineError};
use crate::arms::{Escalation, RunExtras, RunReport, RunRequest};
use crate::choices::{ArmRequestBody, EscalatedContinue};
use crate::domain::transition::{close_if_exhausted, note_escalation, record_run, FinishedRun};
use crate::domain::{
    may_dispatch, run_outcome, Evaluation, Goal, GoalId, MicroUsd, Mode, Refusal, RunId,
    RunOutcome, Tenant, Timestamp, Verdict, VerifierSpec,
};
use crate::judge::{CriteriaJudge, Verifier, VerifyRequest};
use crate::storage::{RunReservation, StoreError, Written, WrittenIfIdle};

/// How often the scheduler looks for runs that dead replicas left in
/// flight ([`Engine::recover_orphans`]).
pub const ORPHAN_SWEEP_EVERY: Duration = Duration::from_secs(1);

/// What a scheduled fire did.
#[derive(Debug, Clone, PartialEq)]
pub enum FireOutcome {
    /// A run was dispatched and its verdict (or escalation) recorded.
    Ran { iteration: u64 },
    /// The goal was not due, not active, paused or gone: nothing dispatched.
    Skipped,
    /// The goal's bounds were used up: it was closed without a run.
    Closed,
    /// The goal closed under the run; nothing was recorded.
    Discarded,
    /// A heartbeat probe said not to fire: nothing dispatched.
    Quiet,
}

/// Who asked for the iteration.
#[derive(Debug, Clone)]
pub(super) enum Trigger {
    /// `POST {base}/{id}/continue` by the goal's owner.
    Continue(Tenant),
    /// The scheduler found the goal due.
    Schedule,
    /// A heartbeat probe of the goal said to fire.
    Heartbeat,
    /// `POST {base}/{id}/runs` by the goal's owner: the run happened
    /// elsewhere; the host judges and records it under `run_id`.
    Report(Box<Reported>),
}

/// A run executed elsewhere and reported to its goal.
#[derive(Debug, Clone)]
pub(super) struct Reported {
    pub tenant: Tenant,
    pub run_id: RunId,
    /// The report's fingerprint, stored with the run when it has a `runId`.
    pub fingerprint: Option<String>,
    pub report: RunReport,
}

pub(super) enum Iteration {
    Recorded {
        goal: Box<Goal>,
        evaluation: Option<Evaluation>,
        iteration: u64,
    },
    Discarded,
    Closed,
    Skipped,
}

/// The outcome of the fail-closed check.
enum Reserved {
    /// The goal may run: this run is reserved for it.
    Run(Box<Goal>, RunReservation),
    /// The goal's bounds were used up: it was closed instead.
    Closed,
    /// A scheduled fire that is no longer due (or whose goal is gone).
    Skip,
}

/// Whether a fire by the scheduler still applies to the goal as it is now.
fn due(goal: &Goal, trigger: &Trigger, now: Timestamp) -> bool {
    match trigger {
        Trigger::Continue(_) => true,
        Trigger::Schedule => {
            (goal.continuation.mode == Mode::Schedule
                && !goal.paused
                && goal.next_fire_at.is_none_or(|at| at <= now))
                || goal.commitment_due(now)
        }
        Trigger::Heartbeat => goal.continuation.mode == Mode::Heartbeat && !goal.paused,
        Trigger::Report(_) => true,
    }
}

/// A scheduled fire's result as the scheduler sees it: a goal that cannot
/// run is simply skipped.
pub(super) fn fire_outcome(
    iteration: Result<Iteration, EngineError>,
) -> Result<FireOutcome, EngineError> {
    Ok(match iteration {
        Ok(Iteration::Recorded { iteration, .. }) => FireOutcome::Ran { iteration },
        Ok(Iteration::Discarded) => FireOutcome::Discarded,
        Ok(Iteration::Closed) => FireOutcome::Closed,
        Ok(Iteration::Skipped) => FireOutcome::Skipped,
        Err(
            EngineError::NotFound
            | EngineError::Terminal
            | EngineError::Escalated
            | EngineError::Paused,
        ) => FireOutcome::Skipped,
        Err(error) => return Err(error),
    })
}

fn environmental(run_id: &RunId, cost: MicroUsd) -> FinishedRun {
    FinishedRun {
        run_id: run_id.clone(),
        cost,
        outcome: RunOutcome::Judged(Verdict::environmental()),
        commitment_ms: None,
    }
}

impl Engine {
    /// Runs exactly one iteration now (the `continue` seam). The iteration
    /// runs in its own task, so a caller that goes away (timeout, closed
    /// connection) cannot leave a dispatched run unrecorded.
    pub async fn continue_once(
        self: &Arc<Self>,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<ContinueOutcome, EngineError> {
        // A dispatch is outbound work: the tenant's rate applies, as to
        // its scheduled fires.
        self.start_outbound(tenant)?;
        let engine = Arc::clone(self);
        let trigger = Trigger::Continue(tenant.clone());
        let id = id.clone();
        let task = tokio::spawn(async move { engine.iterate(&id, trigger).await });
        let iteration = task
            .await
            .map_err(|error| EngineError::Internal(format!("iteration task failed: {error}")))?;
        let iteration = match (iteration, self.choices().escalated_continue) {
            (Err(EngineError::Escalated), EscalatedContinue::GoalTerminal) => {
                Err(EngineError::Terminal)
            }
            (iteration, _) => iteration,
        }?;
        match iteration {
            Iteration::Recorded {
                goal, evaluation, ..
            } => Ok(ContinueOutcome {
                goal: *goal,
                evaluation,
            }),
            // Closed under the run (abandoned, deadline) or just now (bounds
            // used up).
            Iteration::Discarded | Iteration::Closed => Err(EngineError::Terminal),
            Iteration::Skipped => Err(EngineError::Internal("a continue was skipped".into())),
        }
    }

    /// A scheduled fire of a goal the scheduler found due. Re-checks
    /// everything under the goal's lock: a stale fire never produces a run.
    pub async fn fire(&self, id: &GoalId) -> Result<FireOutcome, EngineError> {
        self.faults.fired(id);
        fire_outcome(self.iterate(id, Trigger::Schedule).await)
    }

    /// Closes an idle goal past its deadline. A goal with an iteration
    /// under way is left to it: its run was reserved before the deadline
    /// and dispatched, so it gets its verdict, and recording it closes the
    /// goal. Never waits for the goal's lock, so a slow run does not hold
    /// up the tick.
    pub async fn close_if_past_deadline(&self, id: &GoalId) -> Result<bool, EngineError> {
        // Only an idle goal is closed here. An iteration under way was
        // reserved before the deadline (the fail-closed check refuses one
        // after it), so its run is out and gets its verdict; recording it
        // closes the goal, since the decision checks the deadline. Closing
        // under it would drop a run the worker already saw. Held through
        // the close, so no iteration starts meanwhile.
        let Some(_idle) = self.locks.try_lock(id) else {
            return Ok(false);
        };
        for _ in 0..MAX_ATTEMPTS {
            let Some(goal) = self.load(id).await? else {
                return Ok(false);
            };
            let now = self.clock.now();
            let Some(swept) = self.faults.deadline_sweep(&goal, now) else {
                return Ok(false);
            };
            let Some(change) = close_if_exhausted(&goal, swept, self.choices().cost_reading) else {
                return Ok(false);
            };
            // The same for a run in flight on another replica (the lock
            // above is this process's only), or left by one that died (the
            // orphan sweep records it). The store looks for it in the
            // close's own write, ordered with every reservation: looked for
            // before the write, a reservation committing in between was
            // closed under (the arm saw the run, the goal never counted it).
            match self
                .write_unless_run_in_flight(change, goal.version, now)
                .await?
            {
                WrittenIfIdle::Done(_) => {
                    self.cancels.cancel(id);
                    return Ok(true);
                }
                WrittenIfIdle::RunInFlight => return Ok(false),
                // Never from this write; as a conflict, it is looked at again.
                WrittenIfIdle::Conflict | WrittenIfIdle::TooManyArmed => {}
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing under a close"
        )))
    }

    /// Records every run left in flight by a crash or shutdown as an
    /// environmental failure (it was dispatched, so it gets its one verdict),
    /// or discards it when its goal closed meanwhile. Call once at start.
    pub async fn recover(&self) -> Result<usize, EngineError> {
        let runs = self.db(|store| store.runs_in_flight()).await?;
        self.close_runs(runs).await
    }

    /// Whether the goal is still at `version`: after a refused
    /// reservation, that it is held by a run of another replica.
    async fn held_elsewhere(&self, id: &GoalId, version: u64) -> Result<bool, EngineError> {
        Ok(self
            .load(id)
            .await?
            .is_some_and(|goal| goal.version == version))
    }

    /// Waits until the goal moves past `version` (the other replica's run
    /// was recorded, or its lease lapsed and a replica closed it), polling
    /// the database: there is no signal across replicas. Bounded by the
    /// longest a run can hold a goal: its run and judge limits, or the
    /// replica lease and the orphan sweep after a crash.
    async fn wait_while_held(&self, id: &GoalId, version: u64) -> Result<(), EngineError> {
        let longest = self.settings.run_limit
            + self.settings.judge_limit
            + crate::storage::REPLICA_LEASE
            + ORPHAN_SWEEP_EVERY * 2;
        let deadline = tokio::time::Instant::now() + longest;
        let mut pause = Duration::from_millis(5);
        while self.held_elsewhere(id, version).await? {
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::Internal(format!(
                    "goal {id} stayed held by a run elsewhere for {longest:?}"
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
        Ok(())
    }

    /// Records the runs that replicas which died left in flight (their
    /// lease lapsed), each by the restart rule of [`Engine::recover`].
    /// Any replica may sweep at any time: a run another replica closed
    /// first is left alone. Returns how many this one closed.
    pub async fn recover_orphans(&self) -> Result<usize, EngineError> {
        let runs = self.db(|store| store.runs_orphaned()).await?;
        self.close_runs(runs).await
    }

    async fn close_runs(&self, runs: Vec<RunReservation>) -> Result<usize, EngineError> {
        let mut closed = 0;
        for run in runs {
            let _guard = self.locks.lock(&run.goal_id).await;
            let finished = FinishedRun {
                run_id: run.run_id.clone(),
                cost: MicroUsd::ZERO,
                outcome: RunOutcome::Judged(Verdict::environmental()),
                commitment_ms: None,
            };
            match self.record(&run.goal_id, &finished, None, None).await {
                Ok(_) => closed += 1,
                Err(EngineError::Store(StoreError::RunEnded(_))) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(closed)
    }

    async fn iterate(&self, id: &GoalId, trigger: Trigger) -> Result<Iteration, EngineError> {
        let _guard = self.faults.iteration_lock(&self.locks, id).await;
        let mut cancel = self.cancels.watch(id);
        self.iterate_locked(id, &trigger, &mut cancel).await
    }

    /// The iteration proper; the caller holds the goal's lock and watches
    /// it for a cancel (registered before this reads the goal).
    pub(super) async fn iterate_locked(
        &self,
        id: &GoalId,
        trigger: &Trigger,
        cancel: &mut CancelWatch,
    ) -> Result<Iteration, EngineError> {
        match self.reserve(id, trigger).await? {
            Reserved::Run(goal, reservation) => {
                // Biased: a close that came before the first poll stops the
                // run before any byte of it is sent.
                let (finished, escalation) = tokio::select! {
                    biased;
                    () = cancel.cancelled() => {
                        tracing::info!(goal = %id, run = %reservation.run_id, "the goal closed under its run; the run is dropped");
                        (environmental(&reservation.run_id, MicroUsd::ZERO), None)
                    }
                    finished = async {
                        match trigger {
                            Trigger::Report(reported) => {
                                let report = reported.report.clone();
                                let escalation = report.escalation.clone();
                                (self.judge(&goal, &reservation, report).await, escalation)
                            }
                            _ => self.dispatch(&goal, &reservation).await,
                        }
                    } => finished,
                };
                // The goal keeps the interrupt only of a run that escalated
                // it, for the person who resolves it.
                let escalation =
                    escalation.filter(|_| matches!(finished.outcome, RunOutcome::Escalated));
                // A faulty host may have dispatched from an altered view of
                // the goal; its record starts from the stored goal instead.
                let reserved = self.faults.record_base(*goal);
                self.record(id, &finished, reserved, escalation.as_ref())
                    .await
            }
            Reserved::Closed => Ok(Iteration::Closed),
            Reserved::Skip => Ok(Iteration::Skipped),
        }
    }

    /// The fail-closed check and the reservation, retried if the goal
    /// changes in between.
    async fn reserve(&self, id: &GoalId, trigger: &Trigger) -> Result<Reserved, EngineError> {
        for _ in 0..MAX_ATTEMPTS {
            let goal = match trigger {
                Trigger::Continue(tenant) => self.load_owned(tenant, id).await?,
                Trigger::Report(reported) => self.load_owned(&reported.tenant, id).await?,
                Trigger::Schedule | Trigger::Heartbeat => match self.load(id).await? {
                    Some(goal) => goal,
                    None => return Ok(Reserved::Skip),
                },
            };
            let goal = self.faults.dispatch_view(
                goal,
                matches!(trigger, Trigger::Schedule),
                matches!(trigger, Trigger::Continue(_)),
            );
            let now = self.clock.now();
            if !due(&goal, trigger, now) {
                return Ok(Reserved::Skip);
            }
            let cost_reading = self.choices().cost_reading;
            match may_dispatch(&goal, now, cost_reading) {
                Ok(()) => {}
                Err(Refusal::Exhausted(_)) => {
                    if self.close_exhausted(&goal, now, cost_reading).await? {
                        return Ok(Reserved::Closed);
                    }
                    continue;
                }
                Err(Refusal::Terminal) => return Err(EngineError::Terminal),
                Err(Refusal::Escalated) => return Err(EngineError::Escalated),
                Err(Refusal::Paused) => return Err(EngineError::Paused),
            }
            let (run_id, report) = match trigger {
                Trigger::Report(reported) => {
                    (reported.run_id.clone(), reported.fingerprint.clone())
                }
                _ => (RunId::generate(), None),
            };
            let reservation = RunReservation {
                run_id,
                goal_id: goal.id.clone(),
                iteration: goal.next_iteration(),
                started_at: now,
                report,
            };
            match self.store.reserve_run(&reservation, goal.version).await? {
                Written::Done(()) => return Ok(Reserved::Run(Box::new(goal), reservation)),
                Written::Conflict => {}
            }
            // A reported run whose id another replica reserved first (the
            // same report sent to both at once): that run is the report's,
            // and its answer the caller's once it is recorded.
            if let Trigger::Report(reported) = trigger {
                if self.lookup(|store| store.run(&reported.run_id))?.is_some() {
                    return Err(EngineError::ReportedElsewhere);
                }
            }
            // A refused reservation of a goal whose version did not move
            // means a run is in flight for it elsewhere: another replica
            // on a shared database holds the goal. A fire leaves it to
            // that run; a continue waits for it, as it waits for the lock
            // in one process.
            if self.held_elsewhere(id, goal.version).await? {
                match trigger {
                    Trigger::Schedule | Trigger::Heartbeat => return Ok(Reserved::Skip),
                    Trigger::Continue(_) | Trigger::Report(_) => {
                        self.wait_while_held(id, goal.version).await?
                    }
                }
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing before a dispatch"
        )))
    }

    /// Runs the worker, then the judge. Never fails: every failure is an
    /// environmental verdict for this run. An escalated run comes back with
    /// its interrupt, which the goal keeps for the person who resolves it.
    async fn dispatch(
        &self,
        goal: &Goal,
        reservation: &RunReservation,
    ) -> (FinishedRun, Option<Escalation>) {
        let goal = &*self.faults.dispatched(goal);
        let worker = self
            .arms
            .worker_for(goal.continuation.arm_ref.as_ref(), &goal.owner);
        let worker = self.faults.worker(goal, self.clock.now(), worker);
        let request = RunRequest {
            goal_id: goal.id.clone(),
            run_id: reservation.run_id.clone(),
            iteration: reservation.iteration,
            objective: goal.objective.clone(),
            remaining: goal.remaining(),
            previous: goal.notes.feedback.clone(),
            resolution: goal.notes.resolution.clone(),
            extras: (self.choices().arm_request == ArmRequestBody::WithRevision).then_some(
                RunExtras {
                    revision: goal.version,
                    mode: goal.continuation.mode,
                },
            ),
        };
        let environmental = |cost| (environmental(&reservation.run_id, cost), None);
        let report = match tokio::time::timeout(self.settings.run_limit, worker.run(request)).await
        {
            Ok(Ok(report)) => report,
            Ok(Err(error)) => {
                tracing::info!(goal = %goal.id, run = %reservation.run_id, %error, "run failed");
                return environmental(MicroUsd::ZERO);
            }
            Err(_) => {
                tracing::info!(goal = %goal.id, run = %reservation.run_id, "run timed out");
                return environmental(MicroUsd::ZERO);
            }
        };
        let escalation = report.escalation.clone();
        (self.judge(goal, reservation, report).await, escalation)
    }

    /// Judges a finished run's report: an escalation has no verdict; any
    /// failure to judge is an environmental verdict for the run.
    pub(super) async fn judge(
        &self,
        goal: &Goal,
        reservation: &RunReservation,
        report: RunReport,
    ) -> FinishedRun {
        // The run answered: whatever its verdict, its commitment stands
        // (a judge that fails does not undo the agent's word).
        let committed = report.commitment_ms;
        let environmental = |cost| FinishedRun {
            commitment_ms: committed,
            ..environmental(&reservation.run_id, cost)
        };
        let escalated = report.escalation.is_some();
        if let Some(outcome) = run_outcome(escalated, None) {
            return FinishedRun {
                run_id: reservation.run_id.clone(),
                cost: report.cost,
                outcome,
                commitment_ms: None,
            };
        }
        let verifier = self
            .verifier_for(goal)
            .await
            .map(|inner| self.faults.verifier(goal, inner));
        let Some(verifier) = verifier else {
            if let Some(judgement) = self.faults.unjudged_verdict(&report.output) {
                return FinishedRun {
                    run_id: reservation.run_id.clone(),
                    cost: report.cost,
                    outcome: RunOutcome::Judged(
                        Verdict::aggregate(judgement).kept(self.settings.kept_criteria),
                    ),
                    commitment_ms: committed,
                };
            }
            tracing::info!(goal = %goal.id, run = %reservation.run_id, "no verifier to judge the run");
            return environmental(report.cost);
        };
        let request = VerifyRequest {
            goal_id: goal.id.clone(),
            run_id: reservation.run_id.clone(),
            iteration: reservation.iteration,
            output: report.output,
        };
        let verdict = if verifier.time_limited() {
            tokio::time::timeout(self.settings.judge_limit, verifier.verify(request)).await
        } else {
            Ok(verifier.verify(request).await)
        };
        match verdict {
            Ok(Ok(judgement)) => FinishedRun {
                run_id: reservation.run_id.clone(),
                cost: report.cost,
                outcome: RunOutcome::Judged(
                    Verdict::aggregate(judgement).kept(self.settings.kept_criteria),
                ),
                commitment_ms: committed,
            },
            Ok(Err(error)) => {
                tracing::info!(goal = %goal.id, run = %reservation.run_id, %error, "judge failed");
                environmental(report.cost)
            }
            Err(_) => {
                tracing::info!(goal = %goal.id, run = %reservation.run_id, "judge timed out");
                environmental(report.cost)
            }
        }
    }

    /// The goal's verifier: the one the seam `scriptedJudge` set for a
    /// goal the host judges, else a fixture, a URL, or its tenant's
    /// registered criteria verifier of that name. `None` when none is
    /// attached or the named one cannot be read.
    async fn verifier_for(&self, goal: &Goal) -> Option<Arc<dyn Verifier>> {
        if let Some(scripted) = self.scripted_verifier(goal) {
            return Some(scripted);
        }
        let spec = goal.completion.verifier_ref.as_ref()?.spec();
        let VerifierSpec::Named(name) = spec else {
            return self.judges.verifier_for(spec, &goal.owner);
        };
        match self.lookup(|store| store.verifier(&goal.owner, name)) {
            Ok(found) => found.map(|verifier| {
                let pool = self.judge_pool.clone();
                Arc::new(CriteriaJudge::new(verifier, pool, goal.owner.clone()))
                    as Arc<dyn Verifier>
            }),
            Err(error) => {
                tracing::warn!(goal = %goal.id, %error, "cannot read the goal's verifier");
                None
            }
        }
    }

    /// Records a finished run on a fresh read of the goal, retried if a
    /// person changed the goal meanwhile (a pause or an edit does not undo
    /// the run; an abandon does: nothing is recorded after a close).
    ///
    /// `reserved` is the goal as it was when the run was reserved: the first
    /// attempt records on it without reading the goal again, since the
    /// write's version check refuses it if anything changed during the run,
    /// and the next attempt then reads the goal afresh.
    async fn record(
        &self,
        id: &GoalId,
        finished: &FinishedRun,
        mut reserved: Option<Goal>,
        escalation: Option<&Escalation>,
    ) -> Result<Iteration, EngineError> {
        for _ in 0..MAX_ATTEMPTS {
            let now = self.clock.now();
            let goal = match reserved.take() {
                Some(goal) => Some(goal),
                None => self.load(id).await?,
            };
            let cost_reading = self.choices().cost_reading;
            let change = goal
                .as_ref()
                .and_then(|goal| record_run(goal, finished, now, cost_reading));
            let change = self.faults.record(goal.as_ref(), finished, now, change);
            let (Some(goal), Some(mut change)) = (goal, change) else {
                self.store.discard_run(&finished.run_id, now).await?;
                return Ok(Iteration::Discarded);
            };
            if let Some(escalation) = escalation {
                note_escalation(&mut change, escalation, &finished.run_id, now);
            }
            if let Some(most) = self.settings.history_per_goal {
                // The oldest runs' history goes, a batch at a time; the
                // store forgets their evaluations and events with them.
                change.goal.progress.contributing_run_ids.keep_last(most);
            }
            // A goal with attention closes only as its completion policy
            // allows (PROFILE.md "Profile `attention`").
            crate::domain::attention::hold_own_run(&mut change, now, cost_reading);
            self.hold_armless_schedule(&mut change.goal);
            let written = self
                .store
                .apply(&change, goal.version, Some(&finished.run_id), now)
                .await?;
            if let Written::Done(_) = written {
                self.armed(&change.goal, now, false);
                return Ok(Iteration::Recorded {
                    iteration: change.goal.progress.iterations,
                    goal: Box::new(change.goal),
                    evaluation: change.evaluation,
                });
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing under a record"
        )))
    }
}
