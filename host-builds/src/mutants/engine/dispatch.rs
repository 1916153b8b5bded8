//! Before and around a dispatch: the fail-closed check's view of the goal,
//! the scheduler's private timers, and the worker and verifier as a buggy
//! host calls them.

use std::sync::Arc;

use serde_json::{Number, Value};

use crate::mutants::{Mutant, Switch};
use goalpost_host::arms::{ProbeRequest, RunError, RunReport, RunRequest, Worker};
use goalpost_host::domain::refs::{ArmSpec, VerifierSpec};
use goalpost_host::domain::{
    exhausted, Bounds, CostCap, Goal, GoalId, GoalState, MicroUsd, Timestamp,
};
use goalpost_host::future::BoxFuture;
use goalpost_host::judge::{JudgeError, Verifier, VerifyRequest};

/// `Bounds` with another cost cap, in micro-dollars.
pub(super) fn with_cost(bounds: &Bounds, micros: u64) -> Bounds {
    #[allow(clippy::cast_precision_loss)]
    let usd = micros as f64 / 1_000_000.0;
    let cap = Number::from_f64(usd).and_then(CostCap::from_number);
    Bounds::new(
        bounds.max_loop_iterations(),
        bounds.run_timeout_ms(),
        cap.or_else(|| bounds.max_cost().cloned()),
    )
    .unwrap_or_else(|| bounds.clone())
}

/// Whether the goal, were it still active, has used up its cost budget.
pub(super) fn cost_spent(goal: &Goal, now: Timestamp) -> bool {
    let mut view = goal.clone();
    view.state = GoalState::Active;
    exhausted(&view, now, goalpost_host::domain::CostReading::Budget)
        == Some(goalpost_host::domain::Bound::Cost)
}

/// `Bounds` with another iteration limit.
pub(super) fn with_iterations(bounds: &Bounds, max: Option<u64>) -> Bounds {
    Bounds::new(max, bounds.run_timeout_ms(), bounds.max_cost().cloned())
        .unwrap_or_else(|| bounds.clone())
}

/// The goal as the fail-closed check before a dispatch sees it.
pub(crate) fn dispatch_view(
    switch: &Switch,
    mut goal: Goal,
    scheduled: bool,
    continued: bool,
) -> Goal {
    let max = goal.bounds.max_loop_iterations();
    let real = goal.bounds.clone();
    let cap = goal.bounds.max_cost().map(|cap| cap.micros().micros());
    match switch.active() {
        Some(Mutant::OffByOneIterations) => {
            goal.bounds = with_iterations(&goal.bounds, max.map(|max| max.saturating_add(1)));
        }
        Some(Mutant::ScheduleIgnoresIterationBound)
            if goal.continuation.mode == goalpost_host::domain::Mode::Schedule =>
        {
            goal.bounds = with_iterations(&goal.bounds, max.map(|_| u64::MAX));
        }
        Some(Mutant::EnvironmentalUncounted) => {
            let failed = switch
                .memory()
                .environmental
                .get(&goal.id)
                .copied()
                .unwrap_or(0);
            goal.bounds = with_iterations(&goal.bounds, max.map(|max| max.saturating_add(failed)));
        }
        Some(Mutant::StaleTimerAfterPause) if scheduled => goal.paused = false,
        // The queued fire runs once, from the goal as it was queued.
        Some(Mutant::StaleFireAfterPause | Mutant::StaleFireAfterAbandon)
            if scheduled
                && (goal.paused || goal.state != GoalState::Active)
                && switch.memory().stale_fires.remove(&goal.id).is_some() =>
        {
            goal.paused = false;
            goal.state = GoalState::Active;
            goal.next_fire_at = None;
        }
        Some(Mutant::DeadlineCloseLeavesQueuedFire) if scheduled => {
            fire_queued_at_deadline(switch, &mut goal);
        }
        // The check looks at the count and the budget only; the deadline is
        // left to the sweep.
        Some(Mutant::DeadlineUncheckedAtDispatch) => {
            goal.bounds = Bounds::new(
                max.or(Some(u64::MAX)),
                None,
                goal.bounds.max_cost().cloned(),
            )
            .unwrap_or_else(|| goal.bounds.clone());
        }
        // A cap of 0 is taken for "no cap".
        Some(Mutant::ZeroCostBoundIgnored) if cap == Some(0) => {
            goal.bounds = Bounds::new(max.or(Some(u64::MAX)), goal.bounds.run_timeout_ms(), None)
                .unwrap_or_else(|| goal.bounds.clone());
        }
        // Only manual and schedule goals are held to their bounds.
        Some(Mutant::HeartbeatCommitmentUnbounded) if off_schedule(&goal) => {
            if let Some(bounds) = Bounds::new(Some(u64::MAX), None, None) {
                goal.bounds = bounds;
            }
        }
        // The scheduler's timer outlived the mode it was set for: the fire
        // goes out as if the goal were still on its schedule.
        Some(Mutant::ModeSwitchKeepsTimer)
            if scheduled
                && goal.continuation.mode == goalpost_host::domain::Mode::Manual
                && switch.memory().timers.contains(&goal.id) =>
        {
            goal.continuation.mode = goalpost_host::domain::Mode::Schedule;
            goal.next_fire_at = None;
        }
        Some(Mutant::ContinueWhilePaused) if continued => goal.paused = false,
        Some(Mutant::NoFailClosedCheck) if scheduled => {
            goal.state = GoalState::Active;
            goal.paused = false;
            if let Some(bounds) = Bounds::new(Some(u64::MAX), None, None) {
                goal.bounds = bounds;
            }
        }
        Some(Mutant::CostExceedsNotReaches) => {
            if let Some(cap) = cap.filter(|cap| goal.spent.micros() == *cap) {
                goal.bounds = with_cost(&goal.bounds, cap.saturating_add(1));
            }
        }
        Some(Mutant::CostSummedAsFloat) => {
            let float = switch.memory().float_spend.get(&goal.id).copied();
            #[allow(clippy::cast_precision_loss)]
            let under = match (float, cap) {
                (Some(float), Some(cap)) => float < cap as f64 / 1_000_000.0,
                _ => false,
            };
            if under && cost_spent(&goal, goal.created_at) {
                goal.bounds = with_cost(&goal.bounds, goal.spent.micros().saturating_add(1));
            }
        }
        _ => {}
    }
    if goal.bounds != real {
        switch.memory().bounds.insert(goal.id.clone(), real);
    }
    goal
}

/// Whether `goal` runs on a heartbeat or a commitment (the modes
/// `heartbeat-commitment-unbounded` forgets the bounds of).
pub(super) fn off_schedule(goal: &Goal) -> bool {
    matches!(
        goal.continuation.mode,
        goalpost_host::domain::Mode::Heartbeat | goalpost_host::domain::Mode::Commitment
    )
}

/// How late after its deadline the sweep of `deadline-unchecked-at-dispatch`
/// closes an idle goal: late, but within the 1 s the profile allows.
const LATE_SWEEP_MS: i64 = 700;

/// The clock reading the deadline sweep closes an idle goal by; `None`
/// leaves it open.
pub(crate) fn deadline_sweep(switch: &Switch, goal: &Goal, now: Timestamp) -> Option<Timestamp> {
    match switch.active() {
        Some(Mutant::DeadlineIgnoredWhenIdle) => None,
        Some(Mutant::HeartbeatCommitmentUnbounded) if off_schedule(goal) => None,
        Some(Mutant::DeadlineUncheckedAtDispatch) => {
            Timestamp::from_unix_ms(now.unix_ms().saturating_sub(LATE_SWEEP_MS))
        }
        _ => Some(now),
    }
}

/// `deadline-close-leaves-queued-fire`: the scheduler keeps a timer for
/// every schedule goal with a deadline, and the deadline close does not take
/// it down. The one fire it had queued goes out after the close, and its
/// check sees the goal as the scheduler last knew it: open, with its
/// deadline not looked at again.
fn fire_queued_at_deadline(switch: &Switch, goal: &mut Goal) {
    let Some(deadline) = goal.deadline() else {
        return;
    };
    if goal.continuation.mode != goalpost_host::domain::Mode::Schedule {
        return;
    }
    let mut memory = switch.memory();
    if goal.state == GoalState::Active {
        memory
            .deadline_fires
            .entry(goal.id.clone())
            .or_insert((deadline, false));
        return;
    }
    let closed_by_deadline = goal.state == GoalState::BoundExceeded && goal.updated_at >= deadline;
    let Some((_, dispatched)) = memory.deadline_fires.get_mut(&goal.id) else {
        return;
    };
    if *dispatched {
        return;
    }
    let open = Bounds::new(
        goal.bounds.max_loop_iterations(),
        None,
        goal.bounds.max_cost().cloned(),
    );
    match open {
        Some(open) if closed_by_deadline => {
            *dispatched = true;
            goal.state = GoalState::Active;
            goal.next_fire_at = None;
            goal.bounds = open;
        }
        // Closed some other way: its timer is simply dropped.
        _ => {
            memory.deadline_fires.remove(&goal.id);
        }
    }
}

/// Schedule goals due at `now`, as the scheduler sees them.
pub(crate) fn due(switch: &Switch, mut due: Vec<GoalId>, now: Timestamp) -> Vec<GoalId> {
    let memory = switch.memory();
    // Timers whose deadline has passed and whose queued fire has not gone
    // out yet (`deadline-close-leaves-queued-fire`).
    let queued = memory
        .deadline_fires
        .iter()
        .filter(|(_, (deadline, dispatched))| !dispatched && *deadline <= now)
        .map(|(goal, _)| goal);
    for goal in queued {
        if !due.contains(goal) {
            due.push(goal.clone());
        }
    }
    let stale = memory
        .stale_fires
        .iter()
        .filter(|(_, at)| **at <= now)
        .map(|(goal, _)| goal);
    for goal in memory.timers.iter().chain(stale) {
        if !due.contains(goal) {
            due.push(goal.clone());
        }
    }
    due
}

/// Inside pause's or abandon's versioned write, with the goal as it was:
/// under `stale-fire-after-pause` / `-abandon` the fire the scheduler had
/// queued for it stays queued.
pub(crate) fn queued_fire(switch: &Switch, goal: &Goal, abandon: bool) {
    let mutant = if abandon {
        Mutant::StaleFireAfterAbandon
    } else {
        Mutant::StaleFireAfterPause
    };
    if !switch.is(mutant)
        || goal.continuation.mode != goalpost_host::domain::Mode::Schedule
        || goal.state != GoalState::Active
        || goal.paused
    {
        return;
    }
    if let Some(at) = goal.next_fire_at {
        switch.memory().stale_fires.insert(goal.id.clone(), at);
    }
}

/// The goal a dispatch works from: its real bounds whatever its check saw,
/// and its refs as first resolved under `refs-cached-at-first-run`.
pub(crate) fn dispatched(switch: &Switch, goal: &Goal) -> Goal {
    let mut goal = goal.clone();
    if let Some(bounds) = switch.memory().bounds.get(&goal.id) {
        goal.bounds = bounds.clone();
    }
    if switch.is(Mutant::RefsCachedAtFirstRun) {
        let mut memory = switch.memory();
        let (verifier, arm) = memory.refs.entry(goal.id.clone()).or_insert_with(|| {
            (
                goal.completion.verifier_ref.clone(),
                goal.continuation.arm_ref.clone(),
            )
        });
        goal.completion.verifier_ref = verifier.clone();
        goal.continuation.arm_ref = arm.clone();
    }
    goal
}

/// The worker as this host calls it.
pub(crate) fn worker(
    switch: &Switch,
    goal: &Goal,
    now: Timestamp,
    inner: Arc<dyn Worker>,
) -> Arc<dyn Worker> {
    match switch.active() {
        Some(
            mutant @ (Mutant::EscalationIgnored
            | Mutant::ArmFailureJudged
            | Mutant::RemainingIterationsOffByOne
            | Mutant::RemainingCostIgnoresSpend
            | Mutant::RemainingDeadlineMoving
            | Mutant::HeartbeatIgnoresProbe
            | Mutant::ProbeErrorFires
            | Mutant::ObjectiveCachedAtFirstRun),
        ) => Arc::new(MutantWorker {
            mutant,
            inner,
            first_objective: switch
                .memory()
                .objectives
                .entry(goal.id.clone())
                .or_insert_with(|| goal.objective.clone())
                .clone(),
            max_cost: goal.bounds.max_cost().map(|cap| cap.micros()),
            moving_deadline: goal
                .bounds
                .run_timeout_ms()
                .and_then(|ms| now.checked_add_ms(ms)),
        }),
        Some(Mutant::WebhookCommitmentIgnored)
            if goal
                .continuation
                .arm_ref
                .as_ref()
                .is_some_and(|arm| matches!(arm.spec(), ArmSpec::Webhook(_))) =>
        {
            Arc::new(CommitmentDropped { inner })
        }
        _ => inner,
    }
}

/// `webhook-commitment-ignored`: a URL arm's answer read as if it had no
/// `commitment` member (a parser that predates commitments). Fixture arms
/// keep theirs, so only a scenario whose worker is a webhook can tell.
struct CommitmentDropped {
    inner: Arc<dyn Worker>,
}

impl Worker for CommitmentDropped {
    fn run(&self, request: RunRequest) -> BoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(async move {
            self.inner.run(request).await.map(|report| RunReport {
                commitment_ms: None,
                ..report
            })
        })
    }

    fn probe(&self, request: ProbeRequest) -> BoxFuture<'_, Result<bool, RunError>> {
        self.inner.probe(request)
    }
}

struct MutantWorker {
    mutant: Mutant,
    inner: Arc<dyn Worker>,
    /// The objective as the goal's first run was sent it.
    first_objective: goalpost_host::domain::Objective,
    max_cost: Option<MicroUsd>,
    /// Dispatch time + runTimeoutMs: a deadline that moves with every run.
    moving_deadline: Option<Timestamp>,
}

impl Worker for MutantWorker {
    fn run(&self, mut request: RunRequest) -> BoxFuture<'_, Result<RunReport, RunError>> {
        match self.mutant {
            Mutant::RemainingIterationsOffByOne => {
                request.remaining.iterations = request
                    .remaining
                    .iterations
                    .map(|left| left.saturating_sub(1));
            }
            Mutant::RemainingCostIgnoresSpend => request.remaining.cost = self.max_cost,
            Mutant::RemainingDeadlineMoving => request.remaining.deadline = self.moving_deadline,
            Mutant::ObjectiveCachedAtFirstRun => request.objective = self.first_objective.clone(),
            _ => {}
        }
        Box::pin(async move {
            let report = self.inner.run(request).await;
            match (self.mutant, report) {
                (Mutant::EscalationIgnored, Ok(mut report)) => {
                    report.escalation = None;
                    Ok(report)
                }
                (Mutant::ArmFailureJudged, Err(_)) => Ok(RunReport {
                    output: Value::Null,
                    cost: MicroUsd::ZERO,
                    escalation: None,
                    commitment_ms: None,
                }),
                (_, report) => report,
            }
        })
    }

    fn probe(&self, request: ProbeRequest) -> BoxFuture<'_, Result<bool, RunError>> {
        Box::pin(async move {
            let fire = self.inner.probe(request).await;
            match self.mutant {
                Mutant::HeartbeatIgnoresProbe => fire.map(|_| true),
                Mutant::ProbeErrorFires => Ok(fire.unwrap_or(true)),
                _ => fire,
            }
        })
    }
}

/// The verifier as this host calls it.
pub(crate) fn verifier(
    switch: &Arc<Switch>,
    goal: &Goal,
    inner: Arc<dyn Verifier>,
) -> Arc<dyn Verifier> {
    match switch.active() {
        Some(Mutant::ClosingVerdictAskedTwice)
            if goal
                .completion
                .verifier_ref
                .as_ref()
                .is_some_and(|verifier| matches!(verifier.spec(), VerifierSpec::Webhook(_)))
                && goal.bounds.max_loop_iterations() == Some(goal.next_iteration()) =>
        {
            Arc::new(AskedTwice { inner })
        }
        Some(
            mutant @ (Mutant::VerifierGetsObjective
            | Mutant::WorkerClaimCounted
            | Mutant::CriteriaIgnored
            | Mutant::JudgeGetsPreviousOutput),
        ) => Arc::new(MutantVerifier {
            mutant,
            inner,
            objective: goal.objective.as_str().to_string(),
            switch: Arc::clone(switch),
        }),
        _ => inner,
    }
}

/// `closing-verdict-asked-twice`: the run that uses the goal's last
/// allowed iteration is judged; when its verdict is not satisfied (so the
/// iteration bound closes the goal), the verifier is asked once more for a
/// closing verdict, which nothing records.
struct AskedTwice {
    inner: Arc<dyn Verifier>,
}

impl Verifier for AskedTwice {
    fn verify(
        &self,
        request: VerifyRequest,
    ) -> BoxFuture<'_, Result<goalpost_host::domain::Judgement, JudgeError>> {
        Box::pin(async move {
            let judgement = self.inner.verify(request.clone()).await?;
            if !goalpost_host::domain::Verdict::aggregate(judgement.clone()).satisfied() {
                // Whatever the closing verdict says, the run's own stands.
                let _closing = self.inner.verify(request).await;
            }
            Ok(judgement)
        })
    }
}

struct MutantVerifier {
    mutant: Mutant,
    inner: Arc<dyn Verifier>,
    objective: String,
    switch: Arc<Switch>,
}

impl Verifier for MutantVerifier {
    fn verify(
        &self,
        mut request: VerifyRequest,
    ) -> BoxFuture<'_, Result<goalpost_host::domain::Judgement, JudgeError>> {
        Box::pin(async move {
            match self.mutant {
                Mutant::WorkerClaimCounted
                    if request.output.get("done").and_then(Value::as_bool) == Some(true) =>
                {
                    return Ok(goalpost_host::domain::Judgement {
                        satisfied: true,
                        confidence: 1.0,
                        criteria: None,
                    });
                }
                Mutant::JudgeGetsPreviousOutput => {
                    let previous = self
                        .switch
                        .memory()
                        .outputs
                        .insert(request.goal_id.clone(), request.output.clone());
                    if let Some(previous) = previous {
                        request.output = previous;
                    }
                }
                Mutant::VerifierGetsObjective => {
                    if let Some(output) = request.output.as_object_mut() {
                        output.insert("objective".into(), Value::from(self.objective.clone()));
                    }
                }
                _ => {}
            }
            let run = request.run_id.clone();
            let judgement = self.inner.verify(request).await?;
            if self.mutant == Mutant::CriteriaIgnored {
                self.switch.memory().flags.insert(run, judgement.satisfied);
            }
            Ok(judgement)
        })
    }
}

/// Whether an iteration takes the goal's lock (it always should).
pub(crate) fn iterations_serialised(switch: &Switch) -> bool {
    !switch.is(Mutant::ContinueWithoutLock)
}
