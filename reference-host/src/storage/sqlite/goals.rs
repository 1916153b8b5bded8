//! Goals on SQLite ([`Goals`]): reads through the goal cache, the
//! versioned change (goal, events, evaluation and run in one transaction),
//! the guarded create, the tenant's kept counts, and retention.

use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};

use super::keys::stored_key;
use super::{ids, unsigned, SqliteStore};
use crate::domain::{
    Change, Event, EventPayload, Goal, GoalId, GoalState, RunId, Tenant, Timestamp,
};
use crate::storage::goal_cache::Ticket;
use crate::storage::goal_log;
use crate::storage::group_commit::Pending;
use crate::storage::prepared::{failed, GoalRow, PreparedChange, PreparedCreate};
use crate::storage::record::{from_json, GoalRecord};
use crate::storage::{
    CreateGuard, EventSink, Goals, Inserted, StoreError, WriteGuard, WrittenIfIdle,
};

/// Updates the goal if it is still at `expected_version`; `false` when it
/// is not (nothing written).
///
/// Only the columns that changed are set: SQLite rewrites the entry of
/// every index on a column an `UPDATE` sets, changed or not, and an
/// iteration changes the record and, for a scheduled goal, the next fire —
/// not the state, mode or pause that three other indexes hold. Rewriting
/// those was two or three more random pages per iteration: setting only
/// what changed took the scheduler at 100k goals from 8.8k to 9.9k fires
/// a second, and `continue` from 7.6k to 8.3k req/s.
fn write_goal_columns(
    connection: &Connection,
    row: &GoalRow,
    expected_version: i64,
) -> Result<bool, StoreError> {
    type Indexed = (String, bool, String, Option<i64>, Option<i64>);
    let current: Option<Indexed> = connection
        .prepare_cached(
            "SELECT state, paused, mode, deadline_ms, next_fire_ms FROM goals
             WHERE id = ?1 AND version = ?2",
        )?
        .query_row(params![row.id, expected_version], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?;
    let Some((state, paused, mode, deadline_ms, next_fire_ms)) = current else {
        return Ok(false);
    };
    let same_state = state == row.state
        && paused == row.paused
        && mode == row.mode
        && deadline_ms == row.deadline_ms;
    let updated = if same_state && next_fire_ms == row.next_fire_ms {
        connection
            .prepare_cached("UPDATE goals SET version = ?2, record = ?3 WHERE id = ?1")?
            .execute(params![row.id, row.version, row.record])?
    } else if same_state {
        connection
            .prepare_cached(
                "UPDATE goals SET next_fire_ms = ?2, version = ?3, record = ?4 WHERE id = ?1",
            )?
            .execute(params![row.id, row.next_fire_ms, row.version, row.record])?
    } else {
        connection
            .prepare_cached(
                "UPDATE goals SET state = ?2, paused = ?3, mode = ?4, deadline_ms = ?5,
                                  next_fire_ms = ?6, version = ?7, record = ?8, closed_ms = ?9
                 WHERE id = ?1",
            )?
            .execute(params![
                row.id,
                row.state,
                row.paused,
                row.mode,
                row.deadline_ms,
                row.next_fire_ms,
                row.version,
                row.record,
                row.closed_ms,
            ])?
    };
    if updated != 1 {
        return Err(StoreError::Corrupt(format!(
            "goal {} vanished inside its own write",
            row.id
        )));
    }
    Ok(true)
}

/// A query of goals: each row is a goal's record and its contributing run
/// ids as `position run_id` pairs, read in one statement so both are of one
/// commit. The pairs are put in order in Rust: an aggregate's input order
/// is not something SQL promises, and `ORDER BY` inside the aggregate costs
/// a sort per goal.
macro_rules! select_goals {
    ($where:literal) => {
        concat!(
            "SELECT record, ",
            goal_log::run_pairs!(),
            " FROM goals ",
            $where
        )
    };
}

/// A goal's columns from a [`select_goals`] row.
fn goal_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Option<String>)> {
    Ok((row.get(0)?, row.get(1)?))
}

fn into_goal((record, pairs): (String, Option<String>)) -> Result<Goal, StoreError> {
    let mut numbered = Vec::new();
    let mut words = pairs.as_deref().unwrap_or("").split_ascii_whitespace();
    while let Some(position) = words.next() {
        let position: u64 = position
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("run position {position:?}")))?;
        let run_id = words
            .next()
            .ok_or_else(|| StoreError::Corrupt("a run position without its id".to_string()))?;
        numbered.push((position, run_id));
    }
    // Stored in order, so this is a check more than a sort.
    numbered.sort_unstable_by_key(|(position, _)| *position);
    // The runs before the first stored one were forgotten with their
    // history (`--max-history-per-goal`).
    let skipped = numbered.first().map_or(0, |(position, _)| {
        usize::try_from(*position).unwrap_or(usize::MAX)
    });
    let run_ids: Vec<String> = numbered.into_iter().map(|(_, id)| id.to_string()).collect();
    from_json::<GoalRecord>(&record)?.into_goal(skipped, &run_ids)
}

/// What a tenant holds open, all of it and on an arm, and what it holds
/// at all, closed goals included (the quota definitions of
/// `engine::quota`): kept by migration 9's and 10's triggers in the
/// transaction of every goal write, so reading it is one row however many
/// goals the tenant has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Held {
    open: u64,
    armed: u64,
    total: u64,
}

fn held(connection: &Connection, tenant: &Tenant) -> Result<Held, StoreError> {
    let row: Option<(i64, i64, i64)> = connection
        .prepare_cached("SELECT open, armed, total FROM tenant_counts WHERE tenant = ?1")?
        .query_row(params![tenant.as_str()], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let Some((open, armed, total)) = row else {
        return Ok(Held::default());
    };
    Ok(Held {
        open: unsigned(open)?,
        armed: unsigned(armed)?,
        total: unsigned(total)?,
    })
}

/// The tenant's open goals in an armed mode ([`Mode::is_armed`](crate::domain::Mode::is_armed)): the
/// `schedule` and `heartbeat` ones its counts row keeps, and its open
/// `commitment` goals, counted from its open goals' index. The counts
/// triggers (migration 9) predate commitment goals counting as armed; a
/// count here keeps the schema as it is. Read only for a write that arms
/// a goal.
fn armed_goals(connection: &Connection, tenant: &Tenant) -> Result<u64, StoreError> {
    let committed: i64 = connection
        .prepare_cached(
            "SELECT COUNT(*) FROM goals WHERE tenant = ?1
             AND (state = 'active' OR state = 'escalated') AND mode = 'commitment'",
        )?
        .query_row(params![tenant.as_str()], |row| row.get(0))?;
    Ok(held(connection, tenant)?.armed + unsigned(committed)?)
}

fn insert_goal_row(connection: &Connection, row: &GoalRow) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "INSERT INTO goals (id, tenant, state, paused, mode, deadline_ms, next_fire_ms, created_ms, version, record, closed_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            row.id,
            row.tenant,
            row.state,
            row.paused,
            row.mode,
            row.deadline_ms,
            row.next_fire_ms,
            row.created_ms,
            row.version,
            row.record,
            row.closed_ms,
        ])?;
    goal_log::Tail::default().runs(connection, &row.id, &row.run_ids)
}

impl Goals for SqliteStore {
    /// One process owns a SQLite database: it sees every attention write.
    fn serves_attention(&self) -> bool {
        true
    }

    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError> {
        let rows = goals
            .iter()
            .map(GoalRow::new)
            .collect::<Result<Vec<_>, _>>()?;
        self.writer.write(move |connection| {
            rows.iter()
                .try_for_each(|row| insert_goal_row(connection, row))
        })
    }

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError> {
        if let Some(goal) = self.cache.get(id) {
            return Ok(Some(Goal::clone(&goal)));
        }
        let ticket = self.cache.ticket(id);
        let row = self.read(|connection| {
            Ok(connection
                .prepare_cached(select_goals!("WHERE id = ?1"))?
                .query_row(params![id.as_str()], goal_from_row)
                .optional()?)
        })?;
        let Some(row) = row else {
            return Ok(None);
        };
        let record_len = row.0.len();
        let goal = into_goal(row)?;
        self.cache.fill(ticket, goal.clone(), record_len);
        Ok(Some(goal))
    }

    /// One read transaction for the batch: each read of its own starts a
    /// transaction, and under writes a new transaction finds its
    /// connection's page cache stale and fetches every page again, the
    /// B-trees' upper levels included. Per fire that read was 21.6% of the
    /// scheduler's samples at 100k goals; warmed in one batch by the tick,
    /// 0.1%, and capacity rose from 11.7k–12.1k to 12.5k–14.6k fires/s.
    fn warm(&self, ids: &[GoalId]) -> Result<usize, StoreError> {
        let missing: Vec<(&GoalId, Ticket)> = ids
            .iter()
            .filter(|id| self.cache.get(id).is_none())
            .map(|id| (id, self.cache.ticket(id)))
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let rows = self.read(|connection| {
            let transaction = connection.unchecked_transaction()?;
            let mut statement = transaction.prepare_cached(select_goals!("WHERE id = ?1"))?;
            let mut rows = Vec::with_capacity(missing.len());
            for (id, ticket) in &missing {
                if let Some(row) = statement
                    .query_row(params![id.as_str()], goal_from_row)
                    .optional()?
                {
                    rows.push((*ticket, row));
                }
            }
            drop(statement);
            transaction.commit()?;
            Ok(rows)
        })?;
        let read = rows.len();
        for (ticket, row) in rows {
            let record_len = row.0.len();
            self.cache.fill(ticket, into_goal(row)?, record_len);
        }
        Ok(read)
    }

    /// Two statements rather than `?2 IS NULL OR state = ?2`: with that,
    /// SQLite can use neither index and sorts the tenant's goals for
    /// every page. The cursor is a bare id compared as text: ids of one
    /// prefix and canonical form sort as their UUIDs do.
    fn goals_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<&GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.map_or("", GoalId::as_str);
        let rows = self.read(|connection| {
            let rows = match state {
                None => connection
                    .prepare_cached(select_goals!(
                        "WHERE tenant = CAST(?1 AS TEXT) AND id > CAST(?2 AS TEXT)
                         ORDER BY id LIMIT CAST(?3 AS INTEGER)"
                    ))?
                    .query_map(params![tenant.as_str(), after, limit], goal_from_row)?
                    .collect::<Result<Vec<_>, _>>()?,
                Some(state) => connection
                    .prepare_cached(select_goals!(
                        "WHERE tenant = CAST(?1 AS TEXT) AND state = CAST(?2 AS TEXT)
                           AND id > CAST(?3 AS TEXT)
                         ORDER BY id LIMIT CAST(?4 AS INTEGER)"
                    ))?
                    .query_map(
                        params![tenant.as_str(), state.as_str(), after, limit],
                        goal_from_row,
                    )?
                    .collect::<Result<Vec<_>, _>>()?,
            };
            Ok(rows)
        })?;
        rows.into_iter().map(into_goal).collect()
    }

    /// Writes `change` ([`Goals::apply`]), checking `guard` in the same
    /// write transaction: no run of the goal in flight
    /// ([`Goals::apply_unless_run_in_flight`]; the one writer orders it with
    /// every reservation), or the owner's armed goals below a quota
    /// ([`Goals::apply_arming`]; the one writer orders it with every other
    /// arming write).
    fn apply_guarded(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let owner = change.goal.owner.clone();
        let prepared = PreparedChange::new(change, expected_version, run, at);
        let PreparedChange {
            row,
            expected_version,
            records,
            evaluation,
            run,
            at_ms,
            payloads,
            tenant,
        } = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return failed(error),
        };
        let (cache, goal, record_len) = (
            Arc::clone(&self.cache),
            change.goal.clone(),
            row.record.len(),
        );
        let sink = Arc::clone(&self.sink);
        // Runs on the writer thread once the group committed, hooks in
        // commit order: so the sink sees a tenant's events in cursor order
        // (the live stream's resume depends on it), before any writer of
        // the group is answered.
        let on_commit = Box::new(move |written: &WrittenIfIdle<Result<Vec<Event>, String>>| {
            let WrittenIfIdle::Done(events) = written else {
                return;
            };
            cache.committed(goal, record_len);
            if let (Ok(events), Some(sink)) = (events, read_sink(&sink).as_ref()) {
                if !events.is_empty() {
                    sink.committed(&tenant, events);
                }
            }
        });
        let write = self.writer.submit_then(move |connection| {
            if let WriteGuard::ArmedBelow(most) = guard {
                if armed_goals(connection, &owner)? >= most {
                    return Ok(WrittenIfIdle::TooManyArmed);
                }
            }
            if guard == WriteGuard::NoRunInFlight {
                let in_flight = connection
                    .prepare_cached(
                        "SELECT 1 FROM runs WHERE goal_id = ?1 AND status = 'in-flight' LIMIT 1",
                    )?
                    .query_row(params![row.id], |_| Ok(()))
                    .optional()?;
                if in_flight.is_some() {
                    return Ok(WrittenIfIdle::RunInFlight);
                }
            }
            if !write_goal_columns(connection, &row, expected_version)? {
                return Ok(WrittenIfIdle::Conflict);
            }
            let mut tail = goal_log::Tail::read(connection, &row.id)?;
            tail.runs(connection, &row.id, &row.run_ids)?;
            let last = tail.events;
            let mut cursors = Vec::with_capacity(records.len());
            for record in &records {
                let cursor = tail.event(connection, &row.id, at_ms, record)?;
                connection
                    .prepare_cached(
                        "INSERT INTO tenant_feed (tenant, cursor, goal_id, sequence, at_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?
                    .execute(params![row.tenant, cursor, row.id, tail.events, at_ms])?;
                cursors.push(cursor);
            }
            if let Some((run_id, iteration, record)) = &evaluation {
                tail.evaluation(connection, &row.id, run_id, *iteration, record)?;
            }
            if let Some(run) = &run {
                connection
                    .prepare_cached(
                        "UPDATE runs SET status = 'recorded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
                    )?
                    .execute(params![run, at_ms])?;
            }
            if row.run_ids.trimmed() {
                let through = i64::try_from(row.run_ids.skipped()).unwrap_or(i64::MAX);
                goal_log::forget_runs(connection, &row.tenant, &row.id, through)?;
            }
            // A numbering that cannot be read back is reported after the
            // commit rather than failing a write that is already whole.
            Ok(WrittenIfIdle::Done(
                numbered(&payloads, last, &cursors, at).map_err(|error| error.to_string()),
            ))
        }, Some(on_commit));
        Box::pin(async move {
            match write.await? {
                WrittenIfIdle::Done(Ok(events)) => Ok(WrittenIfIdle::Done(events)),
                WrittenIfIdle::Done(Err(error)) => Err(StoreError::Corrupt(error)),
                WrittenIfIdle::Conflict => Ok(WrittenIfIdle::Conflict),
                WrittenIfIdle::RunInFlight => Ok(WrittenIfIdle::RunInFlight),
                WrittenIfIdle::TooManyArmed => Ok(WrittenIfIdle::TooManyArmed),
            }
        })
    }

    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted> {
        let PreparedCreate { row, remembered } = match PreparedCreate::new(goal, guard) {
            Ok(prepared) => prepared,
            Err(error) => return failed(error),
        };
        let owner = goal.owner.clone();
        let armed = goal.continuation.mode.is_armed();
        let guard = guard.clone();
        let (cache, created, record_len) =
            (Arc::clone(&self.cache), goal.clone(), row.record.len());
        let on_commit = Box::new(move |inserted: &Inserted| {
            if *inserted == Inserted::Done {
                cache.committed(created, record_len);
            }
        });
        self.writer.submit_then(move |connection| {
            if let Some((key, _)) = &guard.key {
                if let Some(stored) =
                    stored_key(connection, &owner, key, guard.keys_expire_at_or_before)?
                {
                    return Ok(Inserted::KeyTaken(stored));
                }
            }
            let held = held(connection, &owner)?;
            if held.open >= guard.max_open_goals {
                return Ok(Inserted::TooManyGoals);
            }
            if held.total >= guard.max_stored_goals {
                return Ok(Inserted::TooManyStored);
            }
            if armed && armed_goals(connection, &owner)? >= guard.max_open_armed {
                return Ok(Inserted::TooManyArmed);
            }
            insert_goal_row(connection, &row)?;
            if let Some(verifier_ref) = &guard.judge_script {
                connection
                    .prepare_cached(
                        "INSERT INTO judge_scripts (goal_id, verifier_ref) VALUES (?1, ?2)",
                    )?
                    .execute(params![row.id, verifier_ref])?;
            }
            if let (Some((key, fingerprint)), Some((answer, etag))) = (&guard.key, &remembered) {
                // An expired row of the same key is replaced.
                connection
                    .prepare_cached(
                        "INSERT INTO idempotency_keys
                             (tenant, key, fingerprint, goal_id, answer, etag, created_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                         ON CONFLICT (tenant, key) DO UPDATE
                         SET fingerprint = ?3, goal_id = ?4, answer = ?5, etag = ?6, created_ms = ?7",
                    )?
                    .execute(params![
                        row.tenant,
                        key,
                        fingerprint,
                        row.id,
                        answer,
                        etag,
                        row.created_ms
                    ])?;
            }
            Ok(Inserted::Done)
        }, Some(on_commit))
    }

    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        self.read(|connection| armed_goals(connection, tenant))
    }

    fn purge_closed_goals(
        &self,
        closed_at_or_before: Timestamp,
        limit: usize,
    ) -> Pending<Vec<GoalId>> {
        let at_ms = closed_at_or_before.unix_ms();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let cache = Arc::clone(&self.cache);
        let on_commit = Box::new(move |purged: &Vec<GoalId>| {
            for id in purged {
                cache.forgotten(id);
            }
        });
        self.writer.submit_then(
            move |connection| {
                let purged = ids(connection, PURGEABLE, params![at_ms, limit])?;
                // Children first: with foreign keys on, a goal that rows
                // still name cannot go. The goal's delete trigger takes it
                // off its tenant's total.
                for id in &purged {
                    let id = id.as_str();
                    for sql in [
                        // The tenant's event feed names the goal's events by
                        // their record ids: read through its primary key.
                        "DELETE FROM tenant_feed
                         WHERE tenant = (SELECT tenant FROM goals WHERE id = ?1)
                           AND cursor IN (SELECT record_id FROM goal_log
                                          WHERE goal_id = CAST(?1 AS TEXT)
                                            AND kind = 'event' AND record_id IS NOT NULL)",
                        // The newest record keeps its id, emptied: SQLite
                        // numbers a record one past the largest id, so
                        // deleting the newest would hand its id (a tenant
                        // cursor) out again, and a stream or event webhook
                        // already past that cursor would skip the new event.
                        "UPDATE log_records SET record = ''
                         WHERE id = (SELECT MAX(id) FROM log_records)
                           AND id IN (SELECT record_id FROM goal_log
                                      WHERE goal_id = CAST(?1 AS TEXT) AND record_id IS NOT NULL)",
                        "DELETE FROM log_records WHERE id IN
                             (SELECT record_id FROM goal_log
                              WHERE goal_id = CAST(?1 AS TEXT) AND record_id IS NOT NULL)
                           AND id < (SELECT MAX(id) FROM log_records)",
                        "DELETE FROM goal_log WHERE goal_id = CAST(?1 AS TEXT)",
                        "DELETE FROM runs WHERE goal_id = ?1",
                        "DELETE FROM judge_scripts WHERE goal_id = ?1",
                        "DELETE FROM idempotency_keys WHERE goal_id = ?1",
                        "DELETE FROM goals WHERE id = ?1",
                    ] {
                        connection.prepare_cached(sql)?.execute(params![id])?;
                    }
                }
                Ok(purged)
            },
            Some(on_commit),
        )
    }
}

/// Retention's batch: the longest closed goals, except any whose newest
/// event (a closed goal's last `event` entry) its tenant's event webhook
/// has not delivered yet.
const PURGEABLE: &str = "SELECT id FROM goals WHERE closed_ms <= ?1
       AND NOT EXISTS (
           SELECT 1 FROM event_deliveries AS d
           WHERE d.tenant = goals.tenant
             AND d.delivered < (SELECT log.record_id FROM goal_log AS log
                                WHERE log.goal_id = goals.id AND log.kind = 'event'
                                ORDER BY log.entry DESC LIMIT 1))
     ORDER BY closed_ms LIMIT ?2";

/// The events of one write: sequences on from the goal's `last`, cursors
/// as their records were numbered.
fn numbered(
    payloads: &[EventPayload],
    last: i64,
    cursors: &[i64],
    at: Timestamp,
) -> Result<Vec<Event>, StoreError> {
    let mut sequence = unsigned(last)?;
    payloads
        .iter()
        .zip(cursors)
        .map(|(payload, cursor)| {
            sequence += 1;
            Ok(Event {
                sequence,
                cursor: unsigned(*cursor)?,
                at,
                payload: payload.clone(),
            })
        })
        .collect()
}

fn read_sink(sink: &std::sync::RwLock<Option<Arc<dyn EventSink>>>) -> Option<Arc<dyn EventSink>> {
    // A poisoned lock still holds a usable sink: setting it cannot panic
    // half-way.
    match sink.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

#[cfg(test)]
mod warm_tests {
    use super::*;
    use crate::domain::fixture::{at, goal, unsatisfied, usd};
    use crate::domain::transition::record_run;
    use crate::domain::RunId;
    use crate::domain::{CostReading, FinishedRun};
    use crate::storage::{DbLocation, Goals, Written};

    /// Warming reads what is stored into memory once, and a write after
    /// it is what the next read answers.
    #[tokio::test]
    async fn warmed_goals_are_read_from_memory_and_stay_current() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store =
            SqliteStore::open(&DbLocation::File(dir.path().join("host.db"))).expect("opens");
        let stored: Vec<Goal> = (0..3).map(|_| goal(Some(10), None, None)).collect();
        store.insert_goals(&stored).expect("stored");
        assert!(
            store.cache.get(&stored[0].id).is_none(),
            "bulk inserts skip the cache"
        );

        let unknown = GoalId::generate();
        let ids = [stored[0].id.clone(), stored[1].id.clone(), unknown.clone()];
        assert_eq!(store.warm(&ids).expect("warms"), 2);
        for warmed in &stored[..2] {
            assert_eq!(store.cache.get(&warmed.id).as_deref(), Some(warmed));
        }
        assert!(store.cache.get(&stored[2].id).is_none(), "not asked for");
        assert_eq!(store.warm(&ids).expect("warms"), 0, "already in memory");
        assert_eq!(store.goal(&unknown).expect("reads"), None);

        let finished = FinishedRun {
            run_id: RunId::generate(),
            cost: usd(0.01),
            outcome: unsatisfied(),
            commitment_ms: None,
        };
        let change =
            record_run(&stored[0], &finished, at(5), CostReading::Budget).expect("a change");
        let written = store
            .apply(&change, stored[0].version, None, at(5))
            .await
            .expect("applies");
        assert!(matches!(written, Written::Done(_)));
        assert_eq!(store.warm(&ids).expect("warms"), 0);
        assert_eq!(store.goal(&stored[0].id).expect("reads"), Some(change.goal));
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;
    use crate::domain::fixture::{at, goal};
    use crate::domain::{Mode, Tenant};
    use crate::storage::{CreateGuard, DbLocation, Goals, Inserted, Written};
    use rusqlite::{params, Connection};

    /// What the tenants hold, counted from the goals themselves.
    fn recount(connection: &Connection) -> Vec<Counts> {
        let open = crate::storage::open_state_sql("state");
        crate::storage::rows(
            connection,
            &format!(
                "SELECT tenant, SUM({open}),
                        SUM({open} AND (mode = 'schedule' OR mode = 'heartbeat')),
                        COUNT(*)
                 FROM goals GROUP BY tenant ORDER BY tenant"
            ),
            [],
        )
    }

    /// A tenant's open, armed and total counts.
    pub(super) type Counts = (String, i64, i64, i64);

    fn kept(connection: &Connection) -> Vec<Counts> {
        crate::storage::rows(
            connection,
            "SELECT tenant, open, armed, total FROM tenant_counts ORDER BY tenant",
            [],
        )
    }

    /// Writes `goal` as changed by `edit`, from its stored version.
    async fn change(store: &SqliteStore, stored: &mut Goal, edit: impl FnOnce(&mut Goal)) {
        let mut next = stored.clone();
        edit(&mut next);
        next.version = stored.version + 1;
        let change = Change {
            goal: next.clone(),
            events: Vec::new(),
            evaluation: None,
        };
        let written = store
            .apply(&change, stored.version, None, at(1))
            .await
            .expect("applies");
        assert!(matches!(written, Written::Done(_)));
        *stored = next;
    }

    /// The kept counts are what a recount finds after creates (guarded and
    /// not), closes, escalations, pauses and mode changes across tenants,
    /// and again after the database is closed and opened.
    #[tokio::test]
    async fn the_kept_counts_equal_a_recount_after_every_kind_of_write_and_a_restart() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let location = DbLocation::File(dir.path().join("host.db"));
        let store = SqliteStore::open(&location).expect("opens");
        let tenants = ["acme", "globex", "initech"].map(|t| Tenant::parse(t).expect("tenant"));
        let modes = [
            Mode::Manual,
            Mode::Schedule,
            Mode::Heartbeat,
            Mode::Commitment,
        ];
        let mut goals = Vec::new();
        for n in 0..24 {
            let mut created = goal(Some(10), None, None);
            created.owner = tenants[n % 3].clone();
            created.continuation.mode = modes[n % 4];
            if n % 2 == 0 {
                store.insert_goals(&[created.clone()]).expect("stored");
            } else {
                let guard = CreateGuard::quotas(100, 100, 100);
                let inserted = store.insert_goal_guarded(&created, &guard).await;
                assert_eq!(inserted.expect("inserts"), Inserted::Done);
            }
            goals.push(created);
        }
        let counted = recount(&store.writer.connection());
        assert_eq!(kept(&store.writer.connection()), counted);
        let states = [
            GoalState::Abandoned,
            GoalState::Escalated,
            GoalState::Satisfied,
            GoalState::BoundExceeded,
        ];
        for (n, stored) in goals.iter_mut().enumerate() {
            match n % 6 {
                0 => change(&store, stored, |g| g.state = states[n % 4]).await,
                1 => change(&store, stored, |g| g.paused = true).await,
                2 => change(&store, stored, |g| g.continuation.mode = Mode::Schedule).await,
                3 => change(&store, stored, |g| g.continuation.mode = Mode::Manual).await,
                4 => {
                    change(&store, stored, |g| g.state = GoalState::Escalated).await;
                    change(&store, stored, |g| g.state = GoalState::Active).await;
                }
                _ => change(&store, stored, |g| g.progress.iterations += 1).await,
            }
        }
        let before = recount(&store.writer.connection());
        assert_eq!(kept(&store.writer.connection()), before);
        assert!(
            before
                .iter()
                .any(|(_, open, armed, _)| *open > 0 && *armed > 0)
                && before.iter().any(|(_, open, _, total)| total > open),
            "the mix leaves something counted: {before:?}"
        );
        drop(store);
        let reopened = SqliteStore::open(&location).expect("opens again");
        assert_eq!(kept(&reopened.writer.connection()), before);
        // Armed: the counted `schedule` and `heartbeat` goals and the open
        // `commitment` ones.
        let committed: i64 = reopened
            .writer
            .connection()
            .query_row(
                "SELECT COUNT(*) FROM goals WHERE tenant = ?1
                 AND (state = 'active' OR state = 'escalated') AND mode = 'commitment'",
                params![tenants[1].as_str()],
                |row| row.get(0),
            )
            .expect("counts");
        assert_eq!(
            reopened.open_armed_goals(&tenants[1]).expect("counts"),
            u64::try_from(before[1].2 + committed).expect("small")
        );
    }

    /// A create's quota check is one row of `tenant_counts`, however
    /// many goals the tenant holds.
    #[test]
    fn the_quota_check_reads_one_row() {
        let text = crate::storage::query_plan(
            "SELECT open, armed, total FROM tenant_counts WHERE tenant = ?1",
            params!["acme"],
        );
        assert!(
            text.contains("SEARCH tenant_counts USING PRIMARY KEY (tenant=?)"),
            "{text}"
        );
    }

    /// A guarded create refuses at the quota from the kept count, and a
    /// goal that closes frees its place.
    #[tokio::test]
    async fn the_guard_reads_the_kept_counts() {
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let guard = CreateGuard::quotas(2, 1, 100);
        let mut first = goal(Some(10), None, None);
        first.continuation.mode = Mode::Schedule;
        let inserted = store.insert_goal_guarded(&first, &guard).await;
        assert_eq!(inserted.expect("inserts"), Inserted::Done);
        let mut armed = goal(Some(10), None, None);
        armed.continuation.mode = Mode::Heartbeat;
        let inserted = store.insert_goal_guarded(&armed, &guard).await;
        assert_eq!(inserted.expect("inserts"), Inserted::TooManyArmed);
        let plain = goal(Some(10), None, None);
        let inserted = store.insert_goal_guarded(&plain, &guard).await;
        assert_eq!(inserted.expect("inserts"), Inserted::Done);
        let inserted = store
            .insert_goal_guarded(&goal(Some(10), None, None), &guard)
            .await;
        assert_eq!(inserted.expect("inserts"), Inserted::TooManyGoals);
        let mut closing = first.clone();
        change(&store, &mut closing, |g| g.state = GoalState::Abandoned).await;
        let inserted = store.insert_goal_guarded(&armed, &guard).await;
        assert_eq!(inserted.expect("inserts"), Inserted::Done);
    }

    /// The stored-goals quota counts closed goals too: closing one frees
    /// no place, and only forgetting it does.
    #[tokio::test]
    async fn closed_goals_keep_their_place_in_the_stored_quota() {
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let guard = CreateGuard::quotas(10, 10, 2);
        let mut first = goal(Some(10), None, None);
        for created in [&first, &goal(Some(10), None, None)] {
            let inserted = store.insert_goal_guarded(created, &guard).await;
            assert_eq!(inserted.expect("inserts"), Inserted::Done);
        }
        let inserted = store
            .insert_goal_guarded(&goal(Some(10), None, None), &guard)
            .await;
        assert_eq!(inserted.expect("inserts"), Inserted::TooManyStored);
        change(&store, &mut first, |g| g.state = GoalState::Abandoned).await;
        let inserted = store
            .insert_goal_guarded(&goal(Some(10), None, None), &guard)
            .await;
        assert_eq!(
            inserted.expect("inserts"),
            Inserted::TooManyStored,
            "a closed goal still takes its place"
        );
        let connection = store.writer.connection();
        assert_eq!(kept(&connection), recount(&connection));
    }
}

#[cfg(test)]
mod retention_tests {
    use super::*;
    use crate::domain::fixture::{at, goal, unsatisfied, usd};
    use crate::domain::transition::record_run;
    use crate::domain::RunId;
    use crate::domain::{CostReading, FinishedRun};
    use crate::storage::{CreateGuard, DbLocation, Goals, Inserted, RunReservation, Runs, Written};
    use rusqlite::{params, Connection};

    fn count(connection: &Connection, sql: &str) -> i64 {
        connection
            .query_row(sql, [], |row| row.get(0))
            .expect("counts")
    }

    /// Retention forgets the longest closed goals first, a bounded batch
    /// at a time, with every row that names them (log entries and their
    /// records, runs recorded or discarded, idempotency keys); what is
    /// left, the kept counts and memory all agree.
    #[tokio::test]
    async fn closed_goals_go_with_everything_that_names_them() {
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let mut goals = Vec::new();
        for n in 0..4 {
            let created = goal(Some(10), None, None);
            let guard = CreateGuard::quotas(10, 10, 10).keyed(n);
            let inserted = store.insert_goal_guarded(&created, &guard).await;
            assert_eq!(inserted.expect("inserts"), Inserted::Done);
            let mut current = created;
            // One recorded run (a run id, an event, an evaluation) and one
            // discarded.
            for recorded in [true, false] {
                let reservation = RunReservation {
                    run_id: RunId::generate(),
                    goal_id: current.id.clone(),
                    iteration: current.next_iteration(),
                    started_at: at(1),
                    report: None,
                };
                let reserved = store.reserve_run(&reservation, current.version).await;
                assert_eq!(reserved.expect("reserves"), Written::Done(()));
                if recorded {
                    let finished = FinishedRun {
                        run_id: reservation.run_id.clone(),
                        cost: usd(0.01),
                        outcome: unsatisfied(),
                        commitment_ms: None,
                    };
                    let change = record_run(&current, &finished, at(2), CostReading::Budget)
                        .expect("a change");
                    let written = store
                        .apply(&change, current.version, Some(&reservation.run_id), at(2))
                        .await;
                    assert!(matches!(written.expect("applies"), Written::Done(_)));
                    current = change.goal;
                } else {
                    store
                        .discard_run(&reservation.run_id, at(3))
                        .await
                        .expect("discards");
                }
            }
            goals.push(current);
        }
        // Goals 0, 1 and 2 close at 10, 20 and 30; goal 3 stays open.
        for (n, current) in goals.iter_mut().take(3).enumerate() {
            let mut closed = current.clone();
            closed.state = GoalState::Abandoned;
            closed.updated_at = at(10 * (i64::try_from(n).expect("small") + 1));
            closed.version += 1;
            let change = Change {
                goal: closed.clone(),
                events: Vec::new(),
                evaluation: None,
            };
            let written = store.apply(&change, current.version, None, at(5)).await;
            assert!(matches!(written.expect("applies"), Written::Done(_)));
            *current = closed;
        }
        let forgotten = store.purge_closed_goals(at(20), 1).await.expect("purges");
        assert_eq!(forgotten, vec![goals[0].id.clone()], "longest closed first");
        let forgotten = store.purge_closed_goals(at(20), 10).await.expect("purges");
        assert_eq!(
            forgotten,
            vec![goals[1].id.clone()],
            "only up to the cutoff"
        );
        for (n, current) in goals.iter().enumerate() {
            let read = store.goal(&current.id).expect("reads");
            assert_eq!(read.is_some(), n >= 2, "goal {n}");
        }
        let connection = store.writer.connection();
        let remaining = |table_sql: &str| count(&connection, table_sql);
        assert_eq!(remaining("SELECT COUNT(*) FROM goals"), 2);
        assert_eq!(remaining("SELECT COUNT(DISTINCT goal_id) FROM goal_log"), 2);
        assert_eq!(remaining("SELECT COUNT(DISTINCT goal_id) FROM runs"), 2);
        assert_eq!(remaining("SELECT COUNT(*) FROM runs"), 4);
        assert_eq!(remaining("SELECT COUNT(*) FROM idempotency_keys"), 2);
        assert_eq!(
            remaining(
                "SELECT COUNT(*) FROM log_records
                 WHERE id NOT IN (SELECT record_id FROM goal_log WHERE record_id IS NOT NULL)"
            ),
            0,
            "no record is left without its entry"
        );
        assert!(remaining("SELECT COUNT(*) FROM log_records") > 0);
        assert_eq!(
            connection
                .query_row(
                    "SELECT open, total FROM tenant_counts WHERE tenant = ?1",
                    params![goals[0].owner.as_str()],
                    |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
                )
                .expect("counted"),
            (1, 2)
        );
    }

    /// The batch is found from the partial index on `closed_ms`, oldest
    /// first, without reading open goals or sorting.
    #[test]
    fn the_batch_seeks_the_closed_index() {
        let text = crate::storage::query_plan(PURGEABLE, params![0, 10]);
        assert!(
            text.contains("USING INDEX goals_closed (closed_ms<?)"),
            "{text}"
        );
        assert!(!text.contains("TEMP B-TREE"), "{text}");
    }
}

#[cfg(test)]
mod page_tests {
    use super::*;
    use crate::domain::fixture::goal;
    use crate::domain::Tenant;
    use crate::storage::{DbLocation, Goals};

    /// Pages walk the tenant's goals in id order, each from where the
    /// last ended, filtered or not, and never show another tenant's.
    #[test]
    fn pages_follow_the_id_order_from_the_cursor() {
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let acme = Tenant::parse("acme").expect("tenant");
        let other = Tenant::parse("other").expect("tenant");
        let mut goals: Vec<Goal> = (0..7)
            .map(|n| {
                let mut created = goal(Some(10), None, None);
                if n % 3 == 0 {
                    created.state = GoalState::Abandoned;
                }
                created
            })
            .collect();
        let mut foreign = goal(Some(10), None, None);
        foreign.owner = other.clone();
        // Stored out of id order: the order is the ids', not the rows'.
        goals.reverse();
        store.insert_goals(&goals).expect("stored");
        store.insert_goals(&[foreign]).expect("stored");
        goals.reverse();
        let ids = |page: &[Goal]| page.iter().map(|g| g.id.clone()).collect::<Vec<_>>();
        let all = ids(&goals);
        assert_eq!(ids(&store.goals(&acme, None).expect("lists")), all);
        let first = store.goals_page(&acme, None, None, 3).expect("a page");
        assert_eq!(ids(&first), all[..3]);
        let second = store
            .goals_page(&acme, None, Some(&all[2]), 3)
            .expect("a page");
        assert_eq!(ids(&second), all[3..6]);
        let last = store
            .goals_page(&acme, None, Some(&all[5]), 3)
            .expect("a page");
        assert_eq!(ids(&last), all[6..]);
        let active: Vec<GoalId> = goals
            .iter()
            .filter(|g| g.state == GoalState::Active)
            .map(|g| g.id.clone())
            .collect();
        let filtered = store
            .goals_page(&acme, Some(GoalState::Active), Some(&all[0]), 2)
            .expect("a page");
        assert_eq!(ids(&filtered), active[..2]);
        // A cursor need not be a goal: a page starts after it wherever it
        // falls.
        let unknown = GoalId::generate();
        assert!(store
            .goals_page(&acme, None, Some(&unknown), 3)
            .expect("a page")
            .is_empty());
        assert_eq!(store.goals(&other, None).expect("lists").len(), 1);
    }

    /// A page reads its index from the cursor on: no sort of the tenant's
    /// goals, no scan past the page.
    #[test]
    fn a_page_seeks_its_index_and_sorts_nothing() {
        for (sql, params) in [
            (
                select_goals!(
                    "WHERE tenant = CAST(?1 AS TEXT) AND id > CAST(?2 AS TEXT)
                     ORDER BY id LIMIT CAST(?3 AS INTEGER)"
                ),
                vec!["acme", "goal-", "10"],
            ),
            (
                select_goals!(
                    "WHERE tenant = CAST(?1 AS TEXT) AND state = CAST(?2 AS TEXT)
                       AND id > CAST(?3 AS TEXT)
                     ORDER BY id LIMIT CAST(?4 AS INTEGER)"
                ),
                vec!["acme", "active", "goal-", "10"],
            ),
        ] {
            let text = crate::storage::query_plan(sql, rusqlite::params_from_iter(params));
            assert!(
                text.contains("SEARCH goals USING INDEX goals_by_tenant"),
                "{text}"
            );
            assert!(!text.contains("TEMP B-TREE"), "sorts: {text}");
        }
    }
}
