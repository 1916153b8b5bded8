//! What a write of a change stores, worked out before its transaction by
//! either store: the JSON and the conversions happen outside the shared
//! transaction (SQLite's group, PostgreSQL's row locks), and a change that
//! cannot be stored fails before anything is queued.

use super::group_commit::Pending;
use super::record::{to_json, ChangeRecords, GoalRecord};
use super::{CreateGuard, StoreError};
use crate::domain::{
    wire, Change, CriteriaVerifier, EventPayload, Goal, RunId, RunIds, Tenant, Timestamp,
};

/// A goal's columns, as both stores keep them.
pub(super) struct GoalRow {
    pub id: String,
    pub tenant: String,
    pub state: &'static str,
    pub paused: bool,
    pub mode: &'static str,
    pub deadline_ms: Option<i64>,
    pub next_fire_ms: Option<i64>,
    pub created_ms: i64,
    /// When a closed goal closed (its last update: it never changes
    /// again); `None` while open. Retention reads it.
    pub closed_ms: Option<i64>,
    pub version: i64,
    pub record: String,
    /// Shares the goal's ids: copying them grew with the goal's age.
    pub run_ids: RunIds,
}

impl GoalRow {
    pub(super) fn new(goal: &Goal) -> Result<GoalRow, StoreError> {
        Ok(GoalRow {
            id: goal.id.as_str().to_string(),
            tenant: goal.owner.as_str().to_string(),
            state: goal.state.as_str(),
            paused: goal.paused,
            mode: goal.continuation.mode.as_str(),
            deadline_ms: goal.deadline().map(Timestamp::unix_ms),
            next_fire_ms: goal.next_fire_at.map(Timestamp::unix_ms),
            created_ms: goal.created_at.unix_ms(),
            closed_ms: goal.state.is_terminal().then(|| goal.updated_at.unix_ms()),
            version: i64::try_from(goal.version).map_err(|_| {
                StoreError::Corrupt(format!("version {} does not fit", goal.version))
            })?,
            record: to_json(&GoalRecord::from_goal(goal))?,
            run_ids: goal.progress.contributing_run_ids.clone(),
        })
    }
}

/// A guarded create as a store writes it.
pub(super) struct PreparedCreate {
    pub row: GoalRow,
    /// What the guard's key remembers, when it has one: the create's
    /// answer and its etag.
    pub remembered: Option<(String, String)>,
}

impl PreparedCreate {
    pub(super) fn new(goal: &Goal, guard: &CreateGuard) -> Result<PreparedCreate, StoreError> {
        let remembered = match &guard.key {
            Some(_) => Some((to_json(&wire::goal(goal))?, goal.etag())),
            None => None,
        };
        Ok(PreparedCreate {
            row: GoalRow::new(goal)?,
            remembered,
        })
    }
}

/// A verifier registration as a store writes it.
pub(super) struct PreparedVerifier {
    pub tenant: String,
    pub name: String,
    pub created_ms: i64,
    /// The registration as the wire shows it.
    pub record: String,
}

impl PreparedVerifier {
    pub(super) fn new(
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
    ) -> Result<PreparedVerifier, StoreError> {
        Ok(PreparedVerifier {
            tenant: tenant.as_str().to_string(),
            name: verifier.name.as_str().to_string(),
            created_ms: verifier.created_at.unix_ms(),
            record: to_json(&wire::verifier_registration(verifier))?,
        })
    }
}

/// A change as a store writes it.
pub(super) struct PreparedChange {
    pub row: GoalRow,
    /// The version the stored goal must still be at.
    pub expected_version: i64,
    /// The new events' records, in order.
    pub records: Vec<String>,
    /// The evaluation's run id, iteration and record.
    pub evaluation: Option<(String, i64, String)>,
    /// The run the change records, ended in the same transaction.
    pub run: Option<String>,
    pub at_ms: i64,
    /// The new events as the writer is answered with them, numbered once
    /// committed.
    pub payloads: Vec<EventPayload>,
    pub tenant: Tenant,
}

impl PreparedChange {
    pub(super) fn new(
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Result<PreparedChange, StoreError> {
        let ChangeRecords { events, evaluation } = ChangeRecords::of(change)?;
        Ok(PreparedChange {
            row: GoalRow::new(&change.goal)?,
            expected_version: i64::try_from(expected_version).map_err(|_| {
                StoreError::Corrupt(format!("version {expected_version} does not fit"))
            })?,
            records: events,
            evaluation,
            run: run.map(|run| run.as_str().to_string()),
            at_ms: at.unix_ms(),
            payloads: change.events.clone(),
            tenant: change.goal.owner.clone(),
        })
    }
}

/// A write that failed before it was queued.
pub(super) fn failed<T: Send + 'static>(error: StoreError) -> Pending<T> {
    Box::pin(std::future::ready(Err(error)))
}
