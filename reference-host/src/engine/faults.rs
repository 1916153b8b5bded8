//! The seam a deliberately broken build of this host plugs into (the
//! suite's kill matrix: `crate::mutants`). Every hook's default is the
//! faithful behaviour, so the engine calls each one unconditionally and a
//! host without a mutant ([`NoFaults`]) runs the code it always ran.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::{EngineError, EngineSettings};
use crate::arms::Worker;
use crate::domain::transition::{Change, FinishedRun};
use crate::domain::{
    Event, Goal, GoalId, GoalState, Judgement, Mode, OpenEscalation, RequestContext, Timestamp,
};
use crate::judge::Verifier;
use crate::webhook::CallFaults;

/// What a patch or abandon hook answers in place of the faithful decision.
pub type Decision = Result<Option<Change>, EngineError>;

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

    /// Whether a lookup by id serves another tenant's goal.
    fn ignores_owner(&self) -> bool {
        false
    }

    /// Whether GET of one goal skips the owner check.
    fn reads_across_tenants(&self) -> bool {
        false
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

    /// Whether an abandon cancels the run in flight.
    fn abandon_cancels_run(&self) -> bool {
        true
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

    /// Whether an iteration takes the goal's lock.
    fn serialises_iterations(&self) -> bool {
        true
    }

    /// The goal as the fail-closed check before a dispatch sees it.
    fn dispatch_view(&self, goal: Goal, _scheduled: bool, _continued: bool) -> Goal {
        goal
    }

    /// Whether a run's record may start from the goal as reserved: not
    /// when a hook may have altered the view it was reserved from.
    fn records_on_reserved(&self) -> bool {
        true
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

    /// Whether webhook refs are checked against the egress policy when
    /// they are written.
    fn checks_egress(&self) -> bool {
        true
    }

    /// Whether the escalation view skips the owner check.
    fn shows_escalations_across_tenants(&self) -> bool {
        false
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
