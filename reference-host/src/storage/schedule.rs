//! The scheduler's queries: the [`Schedule`] trait.

use crate::domain::{GoalId, Timestamp};
use crate::storage::StoreError;

/// What the scheduler asks: goals due to fire, past their deadline, or on a
/// heartbeat.
pub trait Schedule {
    /// Active, unpaused `schedule` goals whose next fire is due at `now`,
    /// longest due first, then active, unpaused `commitment` goals whose
    /// committed check-in is due (those without one are never due), longest
    /// due first: at most `limit` in all.
    fn due_schedule_goals(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError>;

    /// Active goals (paused or not) whose deadline is at or before `now`.
    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError>;

    /// The earliest instant strictly after `after` at which an active,
    /// unpaused `schedule` goal fires or an active goal reaches its
    /// deadline: when the scheduler next has something to do.
    fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, StoreError>;

    /// Active, unpaused `heartbeat` goals, oldest first.
    fn heartbeat_goals(&self) -> Result<Vec<GoalId>, StoreError>;
}
