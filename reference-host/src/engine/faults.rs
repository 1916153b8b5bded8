//! The seam a deliberately broken build of this host plugs into (the
//! suite's kill matrix: `crate::mutants`). Every hook's default is the
//! faithful behaviour, so the engine calls each one unconditionally and a
//! host without a mutant ([`NoFaults`]) runs the code it always ran. A
//! rule a mutant breaks is a hook named after the rule whose default is
//! the rule's answer (who may see a goal, whether egress allows a URL), so
//! the engine calls the rule, never a switch that turns a guard off.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::locks::GoalGuard;
use super::{Cancels, EngineError, EngineSettings, GoalLocks};
use crate::arms::Worker;
use crate::domain::egress::{EgressDenied, EgressPolicy};
use crate::domain::transition::{Change, FinishedRun};
use crate::domain::{
    Event, Goal, GoalId, GoalState, Judgement, Mode, OpenEscalation, RequestContext, Tenant,
    Timestamp,
};
use crate::judge::Verifier;
use crate::webhook::CallFaults;

/// What a patch or abandon hook answers in place of the faithful decision.
pub type Decision = Result<Option<Change>, EngineError>;

/// The lock an iteration holds while it runs ([`Faults::iteration_lock`]).
pub type IterationLock<'a> = Pin<Box<dyn Future<Output = Option<GoalGuard>> + Send + 'a>>;

/// Which request looks a goal up for a tenant ([`Faults::visible_to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// GET of the goal itself.
    Goal,
    /// The goal's escalation view.
    Escalation,
    /// Every other request about one goal (its writes, events, runs).
    Other,
}

/// Where the engine lets a bug in: one hook per place a real
/// implementation gets a rule wrong.
pub trait Faults: Send + Sync {
    /// The settings the engine is built with.
    fn settings(&self, settings: EngineSettings) -> EngineSettings {
        settings
    }

    /// How the webhook client gets its calls wrong; `None`: it does not.
    fn calls(&self) -> Option<Arc<dyn CallFaults>> {
        None
    }

    /// A create body as the host reads it.
    fn create_body<'a>(&self, body: &'a Value) -> Cow<'a, Value> {
        Cow::Borrowed(body)
    }

    /// The goal a create stores, given the body as the client sent it.
    fn created(&self, _claims: &Value, goal: Goal) -> Goal {
        goal
    }

    /// Whether `tenant` may see `goal` (in `lookup`): only its owner may;
    /// to anyone else it does not exist.
    fn visible_to(&self, goal: &Goal, tenant: &Tenant, _lookup: Lookup) -> bool {
        goal.owner == *tenant
    }

    /// The state filter a list applies.
    fn list_filter(&self, state: Option<GoalState>) -> Option<GoalState> {
        state
    }

    /// The cursor events are read after, and the one the answer is cut at.
    fn events_after(&self, after: u64) -> (u64, u64) {
        (after, after)
    }

    /// The events a read answers, given the cut from [`Faults::events_after`].
    fn events(&self, events: Vec<Event>, _after: u64) -> Vec<Event> {
        events
    }

    /// A PATCH applied another way; `None`: the faithful decision.
    fn patch(
        &self,
        _context: RequestContext,
        _goal: &Goal,
        _body: &Value,
        _now: Timestamp,
    ) -> Option<Decision> {
        None
    }

    /// The goal a PATCH answers with.
    fn patch_answer(
        &self,
        _context: RequestContext,
        _body: &Value,
        goal: Goal,
    ) -> Result<Goal, EngineError> {
        Ok(goal)
    }

    /// Inside pause's or abandon's write, with the goal as it was.
    fn closing(&self, _goal: &Goal, _abandon: bool) {}

    /// A resume applied another way; `None`: the faithful one.
    fn resume(&self, _goal: &Goal, _now: Timestamp) -> Option<Change> {
        None
    }

    /// An abandon decided another way; `None`: the faithful one.
    fn abandon(&self, _goal: &Goal, _now: Timestamp) -> Option<Decision> {
        None
    }

    /// A closed goal's run in flight is cancelled, and its verdict is
    /// recorded nowhere.
    fn cancel_closed_run(&self, cancels: &Cancels, goal: &GoalId) {
        cancels.cancel(goal);
    }

    /// The schedule goals the scheduler fires at `now`.
    fn due(&self, due: Vec<GoalId>, _now: Timestamp) -> Vec<GoalId> {
        due
    }

    /// The scheduler fired `goal`.
    fn fired(&self, _goal: &GoalId) {}

    /// The clock reading the deadline sweep closes an idle `goal` by;
    /// `None`: the sweep leaves it open.
    fn deadline_sweep(&self, _goal: &Goal, now: Timestamp) -> Option<Timestamp> {
        Some(now)
    }

    /// The lock an iteration of `goal` runs under: the goal's own, so its
    /// iterations take turns.
    fn iteration_lock<'a>(&'a self, locks: &'a GoalLocks, goal: &'a GoalId) -> IterationLock<'a> {
        Box::pin(async move { Some(locks.lock(goal).await) })
    }

    /// The goal as the fail-closed check before a dispatch sees it.
    fn dispatch_view(&self, goal: Goal, _scheduled: bool, _continued: bool) -> Goal {
        goal
    }

    /// The goal a finished run's record starts from: the goal as it was
    /// reserved (`None`: the stored goal, re-read, for a host whose hooks
    /// may have altered the view it reserved from).
    fn record_base(&self, reserved: Goal) -> Option<Goal> {
        Some(reserved)
    }

    /// The goal a dispatch works from.
    fn dispatched<'a>(&self, goal: &'a Goal) -> Cow<'a, Goal> {
        Cow::Borrowed(goal)
    }

    /// The worker as this host calls it.
    fn worker(&self, _goal: &Goal, _now: Timestamp, inner: Arc<dyn Worker>) -> Arc<dyn Worker> {
        inner
    }

    /// The verifier as this host calls it.
    fn verifier(&self, _goal: &Goal, inner: Arc<dyn Verifier>) -> Arc<dyn Verifier> {
        inner
    }

    /// The change a finished run records (`None`: it is discarded).
    fn record(
        &self,
        _before: Option<&Goal>,
        _run: &FinishedRun,
        _now: Timestamp,
        change: Option<Change>,
    ) -> Option<Change> {
        change
    }

    /// Whether the egress policy allows a webhook ref's `url`, checked
    /// when the ref is written.
    fn egress_allows(&self, policy: &EgressPolicy, url: &url::Url) -> Result<(), EgressDenied> {
        policy.check_url(url)
    }

    /// An open escalation as the escalation view answers it.
    fn shown_escalation(&self, open: OpenEscalation) -> OpenEscalation {
        open
    }

    /// The continuation mode the reported-run check sees.
    fn reported_mode(&self, mode: Mode) -> Mode {
        mode
    }

    /// A verdict for a run nothing can judge (its goal names no
    /// verifier); `None`: it stays unjudged, an environmental failure.
    fn unjudged_verdict(&self, _output: &Value) -> Option<Judgement> {
        None
    }

    /// How the attention extension gets its rules wrong, if it does.
    fn attention(&self) -> Arc<dyn super::AttentionFaults> {
        Arc::new(super::NoAttentionFaults)
    }
}

/// The faithful host: every hook its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFaults;

impl Faults for NoFaults {}
