//! The mutants behind the host's fault seams: one value, built at the one
//! wiring point ([`super::wire`]), that the engine, the webhook client and
//! the router each hold as their hooks. Every hook hands its input to the
//! mutant code of its layer, which changes it only when its mutant is on.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use serde_json::Value;

use super::{engine, http, notes, webhook, Mutant, Switch};
use goalpost_host::arms::Worker;
use goalpost_host::domain::egress::{EgressDenied, EgressPolicy};
use goalpost_host::domain::transition::{Change, FinishedRun};
use goalpost_host::domain::{
    Event, Goal, GoalId, GoalState, Judgement, Mode, OpenEscalation, RequestContext, Tenant,
    Timestamp,
};
use goalpost_host::engine::{
    Cancels, Decision, EngineError, EngineSettings, Faults, GoalLocks, IterationLock, Lookup,
    NoFaults,
};
use goalpost_host::http::{AppState, RouteFaults};
use goalpost_host::judge::Verifier;
use goalpost_host::webhook::{checked_answer, CallFaults, WebhookError};

/// A host's mutant, as every layer sees it.
pub(crate) struct MutantFaults {
    switch: Arc<Switch>,
}

impl MutantFaults {
    pub(crate) fn new(switch: Switch) -> Arc<MutantFaults> {
        Arc::new(MutantFaults {
            switch: Arc::new(switch),
        })
    }
}

impl Faults for MutantFaults {
    fn attention(&self) -> Arc<dyn goalpost_host::engine::AttentionFaults> {
        Arc::new(super::attention::AttentionMutant(self.switch.active()))
    }

    fn settings(&self, settings: EngineSettings) -> EngineSettings {
        engine::settings(self.switch.active(), settings)
    }

    fn calls(&self) -> Option<Arc<dyn CallFaults>> {
        Some(Arc::new(MutantCalls(self.switch.active())))
    }

    fn create_body<'a>(&self, body: &'a Value) -> Cow<'a, Value> {
        Cow::Owned(engine::create_body(&self.switch, body))
    }

    fn created(&self, claims: &Value, goal: Goal) -> Goal {
        engine::created(&self.switch, claims, goal)
    }

    /// Another tenant's goal shown: by every lookup (no owner check), by
    /// GET of the goal, or by the escalation view.
    fn visible_to(&self, goal: &Goal, tenant: &Tenant, lookup: Lookup) -> bool {
        let across = match lookup {
            Lookup::Goal => Mutant::CrossTenantRead,
            Lookup::Escalation => Mutant::EscalationOtherTenant,
            Lookup::Other => Mutant::OwnerCheckMissing,
        };
        self.switch.is(Mutant::OwnerCheckMissing)
            || self.switch.is(across)
            || NoFaults.visible_to(goal, tenant, lookup)
    }

    fn list_filter(&self, state: Option<GoalState>) -> Option<GoalState> {
        engine::list_filter(&self.switch, state)
    }

    fn events_after(&self, after: u64) -> (u64, u64) {
        engine::events_after(&self.switch, after)
    }

    fn events(&self, events: Vec<Event>, after: u64) -> Vec<Event> {
        engine::events(&self.switch, events, after)
    }

    fn patch(
        &self,
        context: RequestContext,
        goal: &Goal,
        body: &Value,
        now: Timestamp,
    ) -> Option<Decision> {
        engine::patch(&self.switch, context, goal, body, now)
    }

    fn patch_answer(
        &self,
        context: RequestContext,
        body: &Value,
        goal: Goal,
    ) -> Result<Goal, EngineError> {
        engine::patch_answer(&self.switch, context, body, goal)
    }

    fn closing(&self, goal: &Goal, abandon: bool) {
        engine::queued_fire(&self.switch, goal, abandon);
    }

    fn resume(&self, goal: &Goal, now: Timestamp) -> Option<Change> {
        engine::resume(&self.switch, goal, now)
    }

    fn abandon(&self, goal: &Goal, now: Timestamp) -> Option<Decision> {
        engine::abandon(&self.switch, goal, now)
    }

    fn cancel_closed_run(&self, cancels: &Cancels, goal: &GoalId) {
        if engine::abandon_cancels(&self.switch) {
            NoFaults.cancel_closed_run(cancels, goal);
        }
    }

    fn due(&self, due: Vec<GoalId>, now: Timestamp) -> Vec<GoalId> {
        engine::due(&self.switch, due, now)
    }

    fn fired(&self, goal: &GoalId) {
        self.switch.remember_timer(goal);
    }

    fn deadline_sweep(&self, goal: &Goal, now: Timestamp) -> Option<Timestamp> {
        engine::deadline_sweep(&self.switch, goal, now)
    }

    fn iteration_lock<'a>(&'a self, locks: &'a GoalLocks, goal: &'a GoalId) -> IterationLock<'a> {
        if engine::iterations_serialised(&self.switch) {
            return NoFaults.iteration_lock(locks, goal);
        }
        Box::pin(std::future::ready(None))
    }

    fn dispatch_view(&self, goal: Goal, scheduled: bool, continued: bool) -> Goal {
        engine::dispatch_view(&self.switch, goal, scheduled, continued)
    }

    /// Any mutant may have altered the view a run was reserved from.
    fn record_base(&self, reserved: Goal) -> Option<Goal> {
        self.switch.active().is_none().then_some(reserved)
    }

    fn dispatched<'a>(&self, goal: &'a Goal) -> Cow<'a, Goal> {
        Cow::Owned(engine::dispatched(&self.switch, goal))
    }

    fn worker(&self, goal: &Goal, now: Timestamp, inner: Arc<dyn Worker>) -> Arc<dyn Worker> {
        engine::worker(&self.switch, goal, now, inner)
    }

    fn verifier(&self, goal: &Goal, inner: Arc<dyn Verifier>) -> Arc<dyn Verifier> {
        engine::verifier(&self.switch, goal, inner)
    }

    fn record(
        &self,
        before: Option<&Goal>,
        run: &FinishedRun,
        now: Timestamp,
        change: Option<Change>,
    ) -> Option<Change> {
        engine::record(&self.switch, before, run, now, change)
    }

    fn egress_allows(&self, policy: &EgressPolicy, url: &url::Url) -> Result<(), EgressDenied> {
        if self.switch.is(Mutant::EgressRefsAccepted) {
            return Ok(());
        }
        NoFaults.egress_allows(policy, url)
    }

    fn shown_escalation(&self, open: OpenEscalation) -> OpenEscalation {
        notes::shown_escalation(&self.switch, open)
    }

    fn reported_mode(&self, mode: Mode) -> Mode {
        engine::reported_mode(&self.switch, mode)
    }

    fn unjudged_verdict(&self, output: &Value) -> Option<Judgement> {
        engine::claimed_verdict(&self.switch, output)
    }
}

impl RouteFaults for MutantFaults {
    fn body_limit(&self, limit: usize) -> usize {
        http::body_limit(&self.switch, limit)
    }

    fn layer(&self, routes: Router<AppState>, state: &AppState) -> Router<AppState> {
        http::layer(routes, state, &self.switch)
    }
}

/// The webhook client's side: it needs only which mutant is on.
struct MutantCalls(Option<super::Mutant>);

impl CallFaults for MutantCalls {
    fn request_body<'a>(&self, body: &'a Value) -> Cow<'a, Value> {
        Cow::Owned(webhook::request_body(self.0, body))
    }

    fn status(&self, status: reqwest::StatusCode) -> reqwest::StatusCode {
        webhook::status(self.0, status)
    }

    fn answer(&self, schema: &'static str, answer: Value) -> Result<Value, WebhookError> {
        match webhook::lenient_answer(self.0, schema, &answer) {
            Some(taken) => Ok(taken),
            None => checked_answer(schema, answer),
        }
    }
}
