//! Create, read and a person's transitions. Each transition is one
//! versioned write: read, decide in the domain, write if unchanged, retry on
//! a race.

use serde_json::Value;

use super::{Engine, EngineError, IfMatch};
use crate::domain::transition::{self, Change, TransitionError};
use crate::domain::{
    parse_create, parse_patch, Evaluation, Event, Goal, GoalId, GoalState, Tenant, Timestamp,
};
use crate::storage::Written;

/// A versioned write loses only to another write of the same goal; that
/// cannot happen forever, but a bound keeps a bug from spinning.
pub(super) const MAX_ATTEMPTS: usize = 32;

impl From<TransitionError> for EngineError {
    fn from(error: TransitionError) -> EngineError {
        match error {
            TransitionError::Terminal => EngineError::Terminal,
            TransitionError::Escalated => EngineError::Escalated,
        }
    }
}

impl Engine {
    pub async fn create(&self, tenant: &Tenant, body: &Value) -> Result<Goal, EngineError> {
        let new = parse_create(body, self.request_context())?;
        let goal = new.into_goal(GoalId::generate(), tenant.clone(), self.clock.now());
        let stored = goal.clone();
        self.db(move |store| store.insert_goal(&stored)).await?;
        Ok(goal)
    }

    /// Any goal, whoever owns it (for the scheduler and the engine itself).
    pub(super) async fn load(&self, id: &GoalId) -> Result<Option<Goal>, EngineError> {
        let id = id.clone();
        self.db(move |store| store.goal(&id)).await
    }

    /// The caller's goal; another tenant's goal does not exist for them.
    pub(super) async fn load_owned(
        &self,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<Goal, EngineError> {
        match self.load(id).await? {
            Some(goal) if goal.owner == *tenant => Ok(goal),
            _ => Err(EngineError::NotFound),
        }
    }

    pub async fn get(&self, tenant: &Tenant, id: &GoalId) -> Result<Goal, EngineError> {
        self.load_owned(tenant, id).await
    }

    pub async fn list(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
    ) -> Result<Vec<Goal>, EngineError> {
        let tenant = tenant.clone();
        self.db(move |store| store.goals(&tenant, state)).await
    }

    pub async fn events(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        after: u64,
    ) -> Result<Vec<Event>, EngineError> {
        self.load_owned(tenant, id).await?;
        let id = id.clone();
        self.db(move |store| store.events(&id, after)).await
    }

    pub async fn evaluations(
        &self,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<Vec<Evaluation>, EngineError> {
        self.load_owned(tenant, id).await?;
        let id = id.clone();
        self.db(move |store| store.evaluations(&id)).await
    }

    pub async fn patch(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        body: &Value,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        let edit = parse_patch(body, self.request_context());
        self.transition(tenant, id, if_match, |goal, now| {
            let edit = edit
                .as_ref()
                .map_err(|error| EngineError::Request(error.clone()))?;
            Ok(transition::patch(goal, edit, now)?)
        })
        .await
    }

    /// Waits for an iteration under way to be recorded, so once pause
    /// answers no run of this goal is in flight and none will start.
    pub async fn pause(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        let _guard = self.locks.lock(id).await;
        self.transition(tenant, id, if_match, |goal, now| {
            Ok(transition::pause(goal, now)?)
        })
        .await
    }

    pub async fn resume(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        self.transition(tenant, id, if_match, |goal, now| {
            Ok(transition::resume(goal, now)?)
        })
        .await
    }

    /// Waits for an iteration under way to be recorded: every dispatched run
    /// gets its verdict before the goal closes.
    pub async fn abandon(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        let _guard = self.locks.lock(id).await;
        self.transition(tenant, id, if_match, |goal, now| {
            Ok(Some(transition::abandon(goal, now)?))
        })
        .await
    }

    /// Read (404), check `If-Match` (412), decide (`decide` refuses with
    /// 400/409/422), write if unchanged. `decide` returning `None` is a no-op
    /// answered with the goal as it is.
    async fn transition<F>(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
        decide: F,
    ) -> Result<Goal, EngineError>
    where
        F: Fn(&Goal, Timestamp) -> Result<Option<Change>, EngineError>,
    {
        for _ in 0..MAX_ATTEMPTS {
            let goal = self.load_owned(tenant, id).await?;
            if if_match.is_some_and(|expected| !expected.matches(goal.version)) {
                return Err(EngineError::PreconditionFailed);
            }
            let now = self.clock.now();
            let Some(change) = decide(&goal, now)? else {
                return Ok(goal);
            };
            if let Written::Done(_) = self.write(change.clone(), goal.version, now).await? {
                return Ok(change.goal);
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing under a write"
        )))
    }

    pub(super) async fn write(
        &self,
        change: Change,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<Written<Vec<Event>>, EngineError> {
        self.db(move |store| store.apply(&change, expected_version, None, now))
            .await
    }
}

impl Engine {
    pub async fn due_schedule_goals(&self, now: Timestamp) -> Result<Vec<GoalId>, EngineError> {
        self.db(move |store| store.due_schedule_goals(now)).await
    }

    pub async fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, EngineError> {
        self.db(move |store| store.goals_past_deadline(now)).await
    }
}
