//! A goal's log (migration 7): its contributing run ids, events and
//! evaluations, as entries of one table clustered by goal in the order
//! they were written.
//!
//! Why one table: an iteration adds a run id, a `goal.evaluated` event and
//! an evaluation. In three tables keyed by goal, that was three index
//! leaves at three random places, and every such page costs a WAL frame,
//! a checkpoint copy and B-tree work. In one, the three entries are
//! neighbours: one leaf. Leaving out the run-id row alone took the
//! scheduler at 100k goals from about 9.2k to 12k fires a second.
//!
//! Measured layouts, alternated pairs of the scheduler at 100k overdue
//! goals: events and evaluations inline in a `WITHOUT ROWID` table were
//! slower than three tables (whole rows in the tree, a few per leaf, which
//! split often: 9.3k fires/s against 10.0k); the same in a rowid table
//! keyed `(goal_id, entry)` won (7.8k against 6.7k, 193 µs of CPU per fire
//! against 221); small entries with the JSON in `log_records`, run ids
//! included, won again (11.6k against 10.5k, 134 µs against 145).
//!
//! Entries are small (the JSON of events and evaluations sits in
//! `log_records`, appended in time order), so a goal's run ids, read with
//! every goal, are a short range scan. Each entry carries the goal's event
//! and run counts so far: the last entry tells a write where to go on.

use rusqlite::{params, Connection, OptionalExtension};

use super::StoreError;
use crate::domain::RunIds;

/// The goal's run ids as `position run_id` pairs, a column of a query of
/// `goals` (a macro, so queries can `concat!` it).
macro_rules! run_pairs {
    () => {
        "(SELECT group_concat((runs - 1) || ' ' || run_id, ' ')
          FROM goal_log WHERE goal_id = goals.id AND kind = 'run')"
    };
}
pub(super) use run_pairs;

/// A goal's events after a sequence: `sequence, at_ms, record, cursor`.
pub(super) const EVENTS_AFTER: &str = "SELECT log.events, log.at_ms, records.record, log.record_id
     FROM goal_log AS log JOIN log_records AS records ON records.id = log.record_id
     WHERE log.goal_id = CAST(?1 AS TEXT) AND log.kind = 'event' AND log.events > ?2
     ORDER BY log.entry";

/// A tenant's events after a cursor, oldest first, at most `?3`:
/// `sequence, at_ms, record, cursor`. One range of `tenant_feed`'s key.
pub(super) const TENANT_EVENTS_AFTER: &str =
    "SELECT feed.sequence, feed.at_ms, records.record, feed.cursor
     FROM tenant_feed AS feed JOIN log_records AS records ON records.id = feed.cursor
     WHERE feed.tenant = CAST(?1 AS TEXT) AND feed.cursor > ?2
     ORDER BY feed.cursor LIMIT ?3";

/// One goal's events after a cursor, oldest first, at most `?3`: the same
/// columns, from the goal's own log (its record ids grow with its entries).
pub(super) const GOAL_EVENTS_AFTER_CURSOR: &str =
    "SELECT log.events, log.at_ms, records.record, log.record_id
     FROM goal_log AS log JOIN log_records AS records ON records.id = log.record_id
     WHERE log.goal_id = CAST(?1 AS TEXT) AND log.kind = 'event' AND log.record_id > ?2
     ORDER BY log.entry LIMIT ?3";

/// At most `?3` of a goal's events after a sequence, in order.
pub(super) const EVENTS_PAGE: &str = "SELECT log.events, log.at_ms, records.record, log.record_id
     FROM goal_log AS log JOIN log_records AS records ON records.id = log.record_id
     WHERE log.goal_id = CAST(?1 AS TEXT) AND log.kind = 'event' AND log.events > ?2
     ORDER BY log.entry LIMIT ?3";

/// At most `?3` of a goal's evaluations of an iteration after `?2`, by
/// iteration: `record`.
pub(super) const EVALUATIONS_PAGE: &str = "SELECT records.record
     FROM goal_log AS log JOIN log_records AS records ON records.id = log.record_id
     WHERE log.goal_id = CAST(?1 AS TEXT) AND log.kind = 'evaluation' AND log.iteration > ?2
     ORDER BY log.iteration, log.entry LIMIT ?3";

/// A goal's evaluations, by iteration: `record`.
pub(super) const EVALUATIONS: &str = "SELECT records.record
     FROM goal_log AS log JOIN log_records AS records ON records.id = log.record_id
     WHERE log.goal_id = CAST(?1 AS TEXT) AND log.kind = 'evaluation'
     ORDER BY log.iteration, log.entry";

/// Where a goal's log ends: its last entry, events and run ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Tail {
    entry: i64,
    /// The goal's last event sequence.
    pub(super) events: i64,
    runs: i64,
}

impl Tail {
    /// The end of `goal`'s log (all zero for a goal without one): one
    /// seek to its last entry.
    pub(super) fn read(connection: &Connection, goal: &str) -> Result<Tail, StoreError> {
        Ok(connection
            .prepare_cached(
                "SELECT entry, events, runs FROM goal_log WHERE goal_id = CAST(?1 AS TEXT)
                 ORDER BY entry DESC LIMIT 1",
            )?
            .query_row(params![goal], |row| {
                Ok(Tail {
                    entry: row.get(0)?,
                    events: row.get(1)?,
                    runs: row.get(2)?,
                })
            })
            .optional()?
            .unwrap_or_default())
    }

    /// Appends the run ids of `run_ids` past those already logged. The
    /// list only grows (an iteration appends its run); a shorter one is
    /// refused, since the log keeps every entry.
    pub(super) fn runs(
        &mut self,
        connection: &Connection,
        goal: &str,
        run_ids: &RunIds,
    ) -> Result<(), StoreError> {
        let logged = usize::try_from(self.runs)
            .map_err(|_| StoreError::Corrupt(format!("run count {}", self.runs)))?;
        if run_ids.len() < logged {
            return Err(StoreError::Corrupt(format!(
                "goal {goal} would drop logged run ids ({} of {logged} left)",
                run_ids.len()
            )));
        }
        for run_id in run_ids.iter_from(logged) {
            self.entry += 1;
            self.runs += 1;
            connection
                .prepare_cached(
                    "INSERT INTO goal_log (goal_id, entry, kind, events, runs, run_id)
                     VALUES (?1, ?2, 'run', ?3, ?4, ?5)",
                )?
                .execute(params![
                    goal,
                    self.entry,
                    self.events,
                    self.runs,
                    run_id.as_str()
                ])?;
        }
        Ok(())
    }

    /// Appends an event, numbered one past the goal's last; returns the id
    /// of its record (the tenant-wide cursor, see migration 10).
    pub(super) fn event(
        &mut self,
        connection: &Connection,
        goal: &str,
        at_ms: i64,
        record: &str,
    ) -> Result<i64, StoreError> {
        let record_id = insert_record(connection, record)?;
        self.entry += 1;
        self.events += 1;
        connection
            .prepare_cached(
                "INSERT INTO goal_log (goal_id, entry, kind, events, runs, at_ms, record_id)
                 VALUES (?1, ?2, 'event', ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                goal,
                self.entry,
                self.events,
                self.runs,
                at_ms,
                record_id
            ])?;
        Ok(record_id)
    }

    /// Appends an evaluation.
    pub(super) fn evaluation(
        &mut self,
        connection: &Connection,
        goal: &str,
        run_id: &str,
        iteration: i64,
        record: &str,
    ) -> Result<(), StoreError> {
        let record_id = insert_record(connection, record)?;
        self.entry += 1;
        connection
            .prepare_cached(
                "INSERT INTO goal_log (goal_id, entry, kind, events, runs, run_id, iteration, record_id)
                 VALUES (?1, ?2, 'evaluation', ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                goal,
                self.entry,
                self.events,
                self.runs,
                run_id,
                iteration,
                record_id
            ])?;
        Ok(())
    }
}

/// Forgets a goal's first `through` runs with their history: their run
/// ids, and the evaluations and events written with them (every entry
/// that counts `through` runs or fewer), their records and their places
/// in the tenant's feed. The newest record is never among them (this
/// write's come later), so record ids (cursors) still only grow.
pub(super) fn forget_runs(
    connection: &Connection,
    tenant: &str,
    goal: &str,
    through: i64,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "DELETE FROM tenant_feed WHERE tenant = ?1 AND cursor IN
                 (SELECT record_id FROM goal_log
                  WHERE goal_id = CAST(?2 AS TEXT) AND kind = 'event' AND runs <= ?3)",
        )?
        .execute(params![tenant, goal, through])?;
    connection
        .prepare_cached(
            "DELETE FROM log_records WHERE id IN
                 (SELECT record_id FROM goal_log
                  WHERE goal_id = CAST(?1 AS TEXT) AND runs <= ?2 AND record_id IS NOT NULL)",
        )?
        .execute(params![goal, through])?;
    connection
        .prepare_cached("DELETE FROM goal_log WHERE goal_id = CAST(?1 AS TEXT) AND runs <= ?2")?
        .execute(params![goal, through])?;
    Ok(())
}

fn insert_record(connection: &Connection, record: &str) -> Result<i64, StoreError> {
    connection
        .prepare_cached("INSERT INTO log_records (record) VALUES (?1)")?
        .execute(params![record])?;
    Ok(connection.last_insert_rowid())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::RunId;
    use crate::storage::migrations::migrate;

    fn log(connection: &Connection, goal: &str) -> Vec<(i64, String, i64, i64)> {
        crate::storage::rows(
            connection,
            "SELECT entry, kind, events, runs FROM goal_log WHERE goal_id = ?1 ORDER BY entry",
            [goal],
        )
    }

    #[test]
    fn entries_go_on_from_the_tail_and_carry_the_counts() {
        let mut connection = Connection::open_in_memory().expect("opens");
        migrate(&mut connection).expect("migrates");
        connection
            .execute_batch(
                "INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g1', 't', 'active', 0, 'manual', 0, 1, '{}')",
            )
            .expect("a goal");
        assert_eq!(
            Tail::read(&connection, "g1").expect("reads"),
            Tail::default()
        );

        let (a, b) = (RunId::generate(), RunId::generate());
        let mut tail = Tail::default();
        tail.runs(&connection, "g1", &[a.clone()].into_iter().collect())
            .expect("a run");
        tail.event(&connection, "g1", 5, "e1").expect("an event");
        assert_eq!(tail.events, 1);
        tail.evaluation(&connection, "g1", a.as_str(), 1, "v1")
            .expect("an evaluation");

        // A later write starts from what is stored, not from memory.
        let mut tail = Tail::read(&connection, "g1").expect("reads");
        tail.runs(
            &connection,
            "g1",
            &[a.clone(), b.clone()].into_iter().collect(),
        )
        .expect("one more run");
        tail.event(&connection, "g1", 6, "e2").expect("an event");
        assert_eq!(tail.events, 2);
        let shrunk = Tail::read(&connection, "g1").expect("reads").runs(
            &connection,
            "g1",
            &RunIds::default(),
        );
        assert!(shrunk.is_err(), "{shrunk:?}");

        let entry = |entry, kind: &str, events, runs| (entry, kind.to_string(), events, runs);
        assert_eq!(
            log(&connection, "g1"),
            vec![
                entry(1, "run", 0, 1),
                entry(2, "event", 1, 1),
                entry(3, "evaluation", 1, 1),
                entry(4, "run", 1, 2),
                entry(5, "event", 2, 2),
            ]
        );
        let pairs: String = connection
            .query_row(
                concat!("SELECT ", run_pairs!(), " FROM goals WHERE id = 'g1'"),
                [],
                |row| row.get(0),
            )
            .expect("run pairs");
        assert_eq!(pairs, format!("0 {} 1 {}", a.as_str(), b.as_str()));
    }
}
