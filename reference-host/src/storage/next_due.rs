//! When the scheduler next has something to do: the earliest
//! scheduled fire or deadline after a given instant. The scheduler asks after
//! every tick, so it must cost an index lookup, not a scan of the goals.

use rusqlite::{params, Connection};

use super::StoreError;
use crate::domain::{Mode, Timestamp};

/// Two `MIN`s, each the first entry of a range of one of the partial
/// indexes of migration 4, so each is a single index seek. `mode` is a
/// literal, not a parameter, so SQLite can see that the query implies the
/// partial index's `WHERE`; `COALESCE` is the expression `goals_due` holds.
fn sql() -> String {
    format!(
        "SELECT MIN(due) FROM (
             SELECT MIN(COALESCE(next_fire_ms, 0)) AS due FROM goals
              WHERE state = 'active' AND paused = 0 AND mode = '{}'
                AND COALESCE(next_fire_ms, 0) > ?1
             UNION ALL
             SELECT MIN(deadline_ms) FROM goals
              WHERE state = 'active' AND deadline_ms IS NOT NULL AND deadline_ms > ?1
             UNION ALL
             SELECT MIN(next_fire_ms) FROM goals
              WHERE state = 'active' AND paused = 0 AND mode = '{}'
                AND next_fire_ms IS NOT NULL AND next_fire_ms > ?1
         )",
        Mode::Schedule.as_str(),
        Mode::Commitment.as_str()
    )
}

/// The earliest instant strictly after `after` at which an active, unpaused
/// `schedule` goal fires or an active goal (paused or not) reaches its
/// deadline; `None` when there is none. Strictly after: whatever was due at
/// `after` is what the tick at `after` already handled, and goals it
/// queued keep their past due time until their fire is recorded.
pub(super) fn next_due_after(
    connection: &Connection,
    after: Timestamp,
) -> Result<Option<Timestamp>, StoreError> {
    let due: Option<i64> = connection
        .prepare_cached(&sql())?
        .query_row(params![after.unix_ms()], |row| row.get(0))?;
    due.map(|ms| {
        Timestamp::from_unix_ms(ms)
            .ok_or_else(|| StoreError::Corrupt(format!("due time {ms} out of range")))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookup_seeks_the_partial_indexes_and_scans_nothing() {
        let text = crate::storage::query_plan(&sql(), params![0]);
        assert!(
            text.contains("SEARCH goals USING COVERING INDEX goals_due"),
            "{text}"
        );
        assert!(text.contains("INDEX goals_deadline"), "{text}");
        assert!(text.contains("INDEX goals_committed"), "{text}");
        assert!(!text.contains("SCAN goals"), "{text}");
    }
}
