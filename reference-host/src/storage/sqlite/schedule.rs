//! What the scheduler asks SQLite ([`Schedule`]): due, past-deadline and
//! heartbeat goals, each answered from its own index.

use rusqlite::params;

use super::{ids, SqliteStore};
use crate::domain::{GoalId, Mode, Timestamp};
use crate::storage::{Schedule, StoreError};

/// Due schedule goals, longest due first. `COALESCE` is the expression the
/// index `goals_due` holds: written as `IS NULL OR <=`, SQLite would scan
/// every active schedule goal. The index holds every column read here, in
/// this order, so no row of `goals` is read. Built once: the scheduler
/// asks up to a thousand times a second.
fn due_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        format!(
            "SELECT id FROM goals
             WHERE state = 'active' AND paused = 0 AND mode = '{}'
               AND COALESCE(next_fire_ms, 0) <= ?1
             ORDER BY COALESCE(next_fire_ms, 0), created_ms
             LIMIT CAST(?2 AS INTEGER)",
            Mode::Schedule.as_str()
        )
    })
}

/// Due commitment goals (a run committed to a check-in that has come),
/// longest due first, with when each was due. Answered from the partial
/// index `goals_committed` alone.
fn committed_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        format!(
            "SELECT id, next_fire_ms FROM goals
             WHERE state = 'active' AND paused = 0 AND mode = '{}'
               AND next_fire_ms IS NOT NULL AND next_fire_ms <= ?1
             ORDER BY next_fire_ms, created_ms
             LIMIT CAST(?2 AS INTEGER)",
            Mode::Commitment.as_str()
        )
    })
}

impl Schedule for SqliteStore {
    fn due_schedule_goals(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|connection| {
            let scheduled = ids(connection, due_sql(), params![now.unix_ms(), limit])?;
            // Commitments come after the schedule goals due in the same
            // read, each kind longest due first; a tick that is full of
            // schedule goals leaves them to the next (the scheduler asks
            // again at once when it filled a tick).
            let room = limit.saturating_sub(i64::try_from(scheduled.len()).unwrap_or(i64::MAX));
            if room == 0 {
                return Ok(scheduled);
            }
            let mut due = scheduled;
            let mut statement = connection.prepare_cached(committed_sql())?;
            let rows =
                statement.query_map(params![now.unix_ms(), room], |row| row.get::<_, String>(0))?;
            for row in rows {
                let id = row?;
                due.push(
                    GoalId::parse(&id)
                        .ok_or_else(|| StoreError::Corrupt(format!("goal id {id:?}")))?,
                );
            }
            Ok(due)
        })
    }

    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        self.read(|connection| {
            ids(
                connection,
                "SELECT id FROM goals WHERE state = 'active' AND deadline_ms IS NOT NULL AND deadline_ms <= ?1
                 ORDER BY deadline_ms",
                params![now.unix_ms()],
            )
        })
    }

    fn heartbeat_goals(&self) -> Result<Vec<GoalId>, StoreError> {
        self.read(|connection| {
            ids(
                connection,
                "SELECT id FROM goals WHERE state = 'active' AND paused = 0 AND mode = CAST(?1 AS TEXT)
                 ORDER BY created_ms, rowid",
                params![Mode::Heartbeat.as_str()],
            )
        })
    }

    fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        self.read(|connection| crate::storage::next_due::next_due_after(connection, after))
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use crate::domain::{Goal, GoalId, Mode};
    use crate::storage::{DbLocation, Goals};

    #[test]
    fn the_due_listing_reads_only_its_index_in_order() {
        let text = crate::storage::query_plan(due_sql(), params![0, 10]);
        assert!(
            text.contains("SEARCH goals USING COVERING INDEX goals_due"),
            "{text}"
        );
        assert!(!text.contains("TEMP B-TREE"), "sorts: {text}");
    }

    #[test]
    fn the_due_listing_is_longest_due_first_and_bounded() {
        use crate::domain::fixture::{at, goal};
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let goals: Vec<Goal> = [30, 10, 50, 20, 40]
            .into_iter()
            .map(|due_ms| {
                let mut stored = goal(Some(10), None, None);
                stored.continuation.mode = Mode::Schedule;
                stored.next_fire_at = Some(at(due_ms));
                stored
            })
            .collect();
        store.insert_goals(&goals).expect("stored");
        let listed = store.due_schedule_goals(at(45), 3).expect("listed");
        let expected: Vec<GoalId> = [1, 3, 0].iter().map(|&i| goals[i].id.clone()).collect();
        assert_eq!(listed, expected);
        let all = store.due_schedule_goals(at(45), 100).expect("listed");
        assert_eq!(all.len(), 4, "the goal due at 50 is not due at 45");
    }
}
