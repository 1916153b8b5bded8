//! Durable state behind the [`Store`] trait. Only this module knows SQL.
//!
//! Every state change of a goal is one call and one transaction: the goal,
//! its new events and its evaluation are written together or not at all, and
//! only if nobody changed the goal since it was read (optimistic concurrency
//! on the goal's version).

mod migrations;
mod record;
mod sqlite;

use std::fmt;
use std::path::PathBuf;

use crate::domain::{Change, Evaluation, Event, Goal, GoalId, GoalState, RunId, Tenant, Timestamp};

pub use sqlite::SqliteStore;

/// Where the database lives: `:memory:` or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbLocation {
    Memory,
    File(PathBuf),
}

impl DbLocation {
    pub fn parse(text: &str) -> DbLocation {
        if text == ":memory:" {
            DbLocation::Memory
        } else {
            DbLocation::File(PathBuf::from(text))
        }
    }
}

impl Default for DbLocation {
    fn default() -> DbLocation {
        DbLocation::File(PathBuf::from("goalpost-host.db"))
    }
}

impl fmt::Display for DbLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbLocation::Memory => f.write_str(":memory:"),
            DbLocation::File(path) => write!(f, "{}", path.display()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot open the database at {location}: {source}")]
    Open {
        location: String,
        #[source]
        source: rusqlite::Error,
    },
}

/// Whether a versioned write happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Written<T> {
    Done(T),
    /// The goal changed (or vanished) since it was read; nothing was written.
    Conflict,
}

/// A run the host dispatched, reserved before dispatch so a crash can never
/// hand out an extra run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReservation {
    pub run_id: RunId,
    pub goal_id: GoalId,
    pub iteration: u64,
    pub started_at: Timestamp,
}

/// What becomes of a reserved run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Its verdict or escalation was recorded.
    Recorded,
    /// The goal closed while it was in flight; nothing was recorded.
    Discarded,
}

pub trait Store: Send + Sync {
    /// Stores a new goal (version 1).
    fn insert_goal(&self, goal: &Goal) -> Result<(), StoreError>;

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError>;

    /// A tenant's goals in creation order, optionally of one state.
    fn goals(&self, tenant: &Tenant, state: Option<GoalState>) -> Result<Vec<Goal>, StoreError>;

    /// Writes `change` if the stored goal is still at `expected_version`,
    /// appending its events (each with the next per-goal sequence) and its
    /// evaluation, and ending `run` as recorded, in one transaction.
    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Result<Written<Vec<Event>>, StoreError>;

    /// Reserves a run if the stored goal is still at `expected_version`.
    fn reserve_run(
        &self,
        run: &RunReservation,
        expected_version: u64,
    ) -> Result<Written<()>, StoreError>;

    /// Ends a reserved run without recording anything for it.
    fn discard_run(&self, run: &RunId, at: Timestamp) -> Result<(), StoreError>;

    /// Runs reserved but never ended (a crash or shutdown in flight).
    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError>;

    /// A goal's events with a sequence greater than `after`, in order.
    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError>;

    /// A goal's evaluations in iteration order.
    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError>;

    /// Active, unpaused `schedule` goals whose next fire is due at `now`.
    fn due_schedule_goals(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError>;

    /// Active goals (paused or not) whose deadline is at or before `now`.
    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError>;
}
