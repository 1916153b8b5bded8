//! The SQLite [`Store`]: one write connection shared by group commit
//! (`group_commit.rs`: concurrent writes share a transaction, each answered
//! only once it committed), read-only connections for file databases
//! (`readers.rs`), WAL for file databases.

use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};

use std::sync::Arc;

use super::checkpoint::{self, Checkpointer};
use super::goal_cache::{GoalCache, Ticket};
use super::goal_log;
use super::group_commit::{GroupCommit, Pending};
use super::migrations::migrate;
use super::prepared::{failed, written_only, PreparedChange};
use super::readers::Readers;
use super::record::{from_json, to_json, EvaluationRecord, EventRecord, GoalRecord};
use super::{
    CreateGuard, DbLocation, DeliveryState, EventSink, Inserted, Registered, RunEnd,
    RunReservation, Store, StoreError, StoredKey, StoredRun, WriteGuard, Written, WrittenIfIdle,
};
use crate::domain::{
    parse_verifier, wire, Change, CriteriaVerifier, Evaluation, Event, EventPayload, Goal, GoalId,
    GoalState, Mode, RunId, RunIds, Tenant, Timestamp, VerifierName,
};

/// More than the distinct statements this store runs.
const STATEMENT_CACHE: usize = 64;

// A text parameter compared with an indexed column is written
// `CAST(?n AS TEXT)` where the statement also sorts or aggregates: with the
// bare parameter, this SQLite build re-prepares the statement on every run
// (the planner looked at the bound value), and the statement cache saves
// nothing: `sqlite3Reprepare` was 14% of a GET, and nine of the fourteen
// parameterised statements re-prepared on 19 runs of 20.
// `tests::no_statement_is_prepared_twice` holds every statement to it.

/// How much of a file database the write connection maps into memory
/// (address space, not resident memory). Read connections map none
/// (`readers.rs` says why). Measured at 100k goals: 192 MiB held the same
/// resident memory as 256 (280 MiB, within the noise: `RssFile` counts a
/// page once per connection mapping it); no map and a 128 MiB goal cache
/// held 80 MiB less but cost 12% more CPU per fire. Page sizes of 1,024 or
/// 2,048 bytes instead of 4,096 were worse or no better.
const MMAP_BYTES: i64 = 256 << 20;

/// About how much memory goals kept in memory may take (`goal_cache.rs`):
/// some 16,000 small goals.
const GOAL_CACHE_BYTES: usize = 16 << 20;

pub struct SqliteStore {
    writer: Arc<GroupCommit>,
    /// Goals as last committed; every goal write goes through this store.
    cache: Arc<GoalCache>,
    /// `None` for an in-memory database, which only the write connection
    /// can see.
    readers: Option<Readers>,
    /// WAL checkpoints, for a file database in WAL mode.
    _checkpointer: Option<Checkpointer>,
    /// Told about committed events, in commit order.
    sink: Arc<std::sync::RwLock<Option<Arc<dyn EventSink>>>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

fn int(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{value} does not fit SQLite")))
}

fn unsigned(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("negative count {value}")))
}

impl SqliteStore {
    /// Opens (creating if needed) and migrates the database.
    pub fn open(location: &DbLocation) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(location, checkpoint::Thresholds::default())
    }

    fn open_with(
        location: &DbLocation,
        thresholds: checkpoint::Thresholds,
    ) -> Result<SqliteStore, StoreError> {
        let opened = match location {
            DbLocation::Memory => Connection::open_in_memory(),
            DbLocation::File(path) => Connection::open(path),
            DbLocation::Postgres(url) => {
                return Err(StoreError::Open {
                    location: super::redact(url),
                    source: "a PostgreSQL URL is opened by the PostgreSQL store".into(),
                })
            }
        };
        let mut connection = opened.map_err(|source| StoreError::Open {
            location: location.to_string(),
            source: Box::new(source),
        })?;
        connection.busy_timeout(Duration::from_secs(5))?;
        // Every statement below is prepared once and reused: parsing SQL on
        // each call was a quarter of a `continue`'s instructions
        // (`sqlite3Prepare` 24.5%; per `continue` 1,108k → 795k with the
        // cache, create 422k → 308k, callgrind).
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let mut readers = None;
        let mut checkpointer = None;
        if let DbLocation::File(path) = location {
            // `journal_mode` answers with the mode in effect.
            let mode: String =
                connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
            if mode.eq_ignore_ascii_case("wal") {
                readers = Some(Readers::new(path));
                let started = Checkpointer::start(path)?;
                let ask = started.ask();
                // Replaces SQLite's automatic checkpoint (`checkpoint.rs`).
                connection.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: i32| {
                    checkpoint::after_commit(wal, pages, &ask, thresholds);
                    Ok(())
                }))?;
                checkpointer = Some(started);
            } else {
                // Without WAL a reader would block the writer: reads share
                // the write connection instead.
                tracing::warn!(mode, "SQLite refused WAL mode");
            }
            connection.pragma_update(None, "synchronous", "NORMAL")?;
            // Pages are read through a memory map rather than a `pread`
            // each: another connection's commit empties a connection's
            // page cache, so reads fetch pages often.
            connection.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        }
        connection.pragma_update(None, "foreign_keys", "ON")?;
        migrate(&mut connection)?;
        Ok(SqliteStore {
            writer: Arc::new(GroupCommit::new(connection)),
            cache: Arc::new(GoalCache::new(GOAL_CACHE_BYTES)),
            readers,
            sink: Arc::default(),
            _checkpointer: checkpointer,
        })
    }

    /// Runs a read on a read connection, or on the write connection when
    /// there is no other.
    fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &self.readers {
            Some(readers) => readers.read(read),
            None => read(&self.writer.connection()),
        }
    }

    /// Writes `change` ([`Store::apply`]), checking `guard` in the same
    /// write transaction: no run of the goal in flight
    /// ([`Store::apply_unless_run_in_flight`]; the one writer orders it with
    /// every reservation), or the owner's armed goals below a quota
    /// ([`Store::apply_arming`]; the one writer orders it with every other
    /// arming write).
    fn write_change(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let owner = change.goal.owner.clone();
        let prepared = PreparedChange::new(change, expected_version, run, at, GoalRow::new);
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
}

/// A goal's columns, computed before the write so the JSON work happens
/// outside the shared transaction.
struct GoalRow {
    id: String,
    tenant: String,
    state: &'static str,
    paused: bool,
    mode: &'static str,
    deadline_ms: Option<i64>,
    next_fire_ms: Option<i64>,
    created_ms: i64,
    /// When a closed goal closed (its last update: it never changes
    /// again); `None` while open. Retention reads it.
    closed_ms: Option<i64>,
    version: i64,
    record: String,
    run_ids: RunIds,
}

impl GoalRow {
    fn new(goal: &Goal) -> Result<GoalRow, StoreError> {
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
            version: int(goal.version)?,
            record: to_json(&GoalRecord::from_goal(goal))?,
            // Shares the goal's ids: copying them grew with the goal's age.
            run_ids: goal.progress.contributing_run_ids.clone(),
        })
    }
}

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

fn verifier_from_row(record: &str, created_ms: i64) -> Result<CriteriaVerifier, StoreError> {
    let value: serde_json::Value = from_json(record)?;
    let created_at = Timestamp::from_unix_ms(created_ms)
        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {created_ms}")))?;
    parse_verifier(&value)
        .map(|new| new.into_verifier(created_at))
        .map_err(|error| StoreError::Corrupt(format!("verifier: {error}")))
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

/// The tenant's open goals in an armed mode ([`Mode::is_armed`]): the
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

fn stored_key(
    connection: &Connection,
    tenant: &Tenant,
    key: &str,
    expired_at_or_before: Timestamp,
) -> Result<Option<StoredKey>, StoreError> {
    let row: Option<(String, String, String, String)> = connection
        .prepare_cached(
            "SELECT goal_id, fingerprint, answer, etag FROM idempotency_keys
             WHERE tenant = ?1 AND key = ?2 AND created_ms > ?3",
        )?
        .query_row(
            params![tenant.as_str(), key, expired_at_or_before.unix_ms()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()?;
    row.map(|(goal_id, fingerprint, answer, etag)| {
        Ok(StoredKey {
            goal_id: GoalId::parse(&goal_id)
                .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
            fingerprint,
            answer: from_json(&answer)?,
            etag,
        })
    })
    .transpose()
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

/// The goal ids a query of one `id` column answers, in its order.
fn ids(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<GoalId>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let rows = statement.query_map(params, |row| row.get::<_, String>(0))?;
    rows.map(|row| {
        let text = row?;
        GoalId::parse(&text).ok_or_else(|| StoreError::Corrupt(format!("goal id {text:?}")))
    })
    .collect()
}

impl Store for SqliteStore {
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

    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Pending<Written<Vec<Event>>> {
        written_only(self.write_change(change, expected_version, run, at, WriteGuard::Nothing))
    }

    fn apply_unless_run_in_flight(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        self.write_change(
            change,
            expected_version,
            None,
            at,
            WriteGuard::NoRunInFlight,
        )
    }

    fn apply_arming(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
        max_armed: u64,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        self.write_change(
            change,
            expected_version,
            None,
            at,
            WriteGuard::ArmedBelow(max_armed),
        )
    }

    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>> {
        let run_id = run.run_id.as_str().to_string();
        let goal_id = run.goal_id.as_str().to_string();
        let started_ms = run.started_at.unix_ms();
        let report = run.report.clone();
        let (iteration, expected_version) = match (int(run.iteration), int(expected_version)) {
            (Ok(iteration), Ok(expected)) => (iteration, expected),
            (Err(error), _) | (_, Err(error)) => return failed(error),
        };
        self.writer.submit(move |connection| {
            let version: Option<i64> = connection
                .prepare_cached("SELECT version FROM goals WHERE id = ?1")?
                .query_row(params![goal_id], |row| row.get(0))
                .optional()?;
            if version != Some(expected_version) {
                return Ok(Written::Conflict);
            }
            connection
                .prepare_cached(
                    "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, report) VALUES (?1, ?2, ?3, 'in-flight', ?4, ?5)",
                )?
                .execute(params![run_id, goal_id, iteration, started_ms, report])?;
            Ok(Written::Done(()))
        })
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()> {
        let run = run.as_str().to_string();
        let at_ms = at.unix_ms();
        self.writer.submit(move |connection| {
            connection
                .prepare_cached(
                    "UPDATE runs SET status = 'discarded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
                )?
                .execute(params![run, at_ms])?;
            Ok(())
        })
    }

    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError> {
        self.read(|connection| {
            let row = connection
                .prepare_cached(
                    "SELECT goal_id, iteration, status, report FROM runs WHERE run_id = ?1",
                )?
                .query_row(params![run.as_str()], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                    ))
                })
                .optional()?;
            let Some((goal_id, iteration, status, report)) = row else {
                return Ok(None);
            };
            let end = RunEnd::from_status(&status)?;
            Ok(Some(StoredRun {
                goal_id: GoalId::parse(&goal_id)
                    .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
                iteration: unsigned(iteration)?,
                end,
                report,
            }))
        })
    }

    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT run_id, goal_id, iteration, started_ms FROM runs WHERE status = 'in-flight' ORDER BY started_ms",
            )?;
            let rows = statement.query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                ))
            })?;
            rows.map(|row| {
                let (run_id, goal_id, iteration, started_ms) = row?;
                Ok(RunReservation {
                    run_id: RunId::parse(&run_id)
                        .ok_or_else(|| StoreError::Corrupt(format!("run id {run_id:?}")))?,
                    goal_id: GoalId::parse(&goal_id)
                        .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
                    iteration: unsigned(iteration)?,
                    started_at: Timestamp::from_unix_ms(started_ms)
                        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {started_ms}")))?,
                    // Recovery records the run; its report is not needed.
                    report: None,
                })
            })
            .collect()
        })
    }

    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError> {
        self.read(|connection| {
            // Sequences past i64 cannot exist, so clamping keeps the meaning.
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            event_rows(
                connection,
                goal_log::EVENTS_AFTER,
                params![goal.as_str(), after],
            )
        })
    }

    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.read(|connection| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            event_rows(
                connection,
                goal_log::EVENTS_PAGE,
                params![goal.as_str(), after, limit],
            )
        })
    }

    fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        let mut slot = match self.sink.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *slot = Some(sink);
    }

    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        // Cursors past i64 cannot exist, so clamping keeps the meaning.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|connection| match goal {
            // The caller checked the goal is the tenant's.
            Some(goal) => event_rows(
                connection,
                goal_log::GOAL_EVENTS_AFTER_CURSOR,
                params![goal.as_str(), after, limit],
            ),
            None => event_rows(
                connection,
                goal_log::TENANT_EVENTS_AFTER,
                params![tenant.as_str(), after, limit],
            ),
        })
    }

    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(goal_log::EVALUATIONS)?;
            let rows =
                statement.query_map(params![goal.as_str()], |row| row.get::<_, String>(0))?;
            rows.map(|row| from_json::<EvaluationRecord>(&row?)?.into_evaluation())
                .collect()
        })
    }

    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|connection| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut statement = connection.prepare_cached(goal_log::EVALUATIONS_PAGE)?;
            let rows = statement.query_map(params![goal.as_str(), after, limit], |row| {
                row.get::<_, String>(0)
            })?;
            rows.map(|row| from_json::<EvaluationRecord>(&row?)?.into_evaluation())
                .collect()
        })
    }

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

    fn put_verifier(
        &self,
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
        replace: bool,
        max: Option<u64>,
    ) -> Pending<Registered> {
        let record = match to_json(&wire::verifier_registration(verifier)) {
            Ok(record) => record,
            Err(error) => return failed(error),
        };
        let sql = if replace {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, name) DO UPDATE SET created_ms = ?3, record = ?4"
        } else {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, name) DO NOTHING"
        };
        let tenant = tenant.as_str().to_string();
        let name = verifier.name.as_str().to_string();
        let created_ms = verifier.created_at.unix_ms();
        // The one writer serialises registrations: the count below is the
        // tenant's as it is when the row goes in.
        self.writer.submit(move |connection| {
            if let Some(most) = max {
                let taken = connection
                    .prepare_cached("SELECT 1 FROM verifiers WHERE tenant = ?1 AND name = ?2")?
                    .query_row(params![tenant, name], |_| Ok(()))
                    .optional()?
                    .is_some();
                let held: i64 = connection
                    .prepare_cached("SELECT COUNT(*) FROM verifiers WHERE tenant = ?1")?
                    .query_row(params![tenant], |row| row.get(0))?;
                if !taken && unsigned(held)? >= most {
                    return Ok(Registered::Full);
                }
            }
            let written = connection
                .prepare_cached(sql)?
                .execute(params![tenant, name, created_ms, record])?;
            Ok(if written == 1 {
                Registered::Done
            } else {
                Registered::Taken
            })
        })
    }

    fn verifier(
        &self,
        tenant: &Tenant,
        name: &VerifierName,
    ) -> Result<Option<CriteriaVerifier>, StoreError> {
        let row: Option<(String, i64)> = self.read(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT record, created_ms FROM verifiers WHERE tenant = ?1 AND name = ?2",
                )?
                .query_row(params![tenant.as_str(), name.as_str()], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()?)
        })?;
        row.map(|(record, created_ms)| verifier_from_row(&record, created_ms))
            .transpose()
    }

    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, created_ms FROM verifiers WHERE tenant = CAST(?1 AS TEXT) ORDER BY name",
            )?;
            let rows = statement.query_map(params![tenant.as_str()], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            rows.map(|row| {
                let (record, created_ms) = row?;
                verifier_from_row(&record, created_ms)
            })
            .collect()
        })
    }

    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool> {
        let goal = goal.as_str().to_string();
        let verifier_ref = verifier_ref.to_string();
        self.writer.submit(move |connection| {
            let written = connection
                .prepare_cached(
                    "INSERT INTO judge_scripts (goal_id, verifier_ref)
                     SELECT id, ?2 FROM goals WHERE id = ?1
                     ON CONFLICT (goal_id) DO UPDATE SET verifier_ref = excluded.verifier_ref",
                )?
                .execute(params![goal, verifier_ref])?;
            Ok(written == 1)
        })
    }

    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached("SELECT verifier_ref FROM judge_scripts WHERE goal_id = ?1")?
                .query_row(params![goal.as_str()], |row| row.get(0))
                .optional()?)
        })
    }

    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted> {
        let prepared = (|| -> Result<_, StoreError> {
            // What the key remembers: the create's answer, computed up front.
            let remembered = match &guard.key {
                Some(_) => Some((to_json(&wire::goal(goal))?, goal.etag())),
                None => None,
            };
            Ok((GoalRow::new(goal)?, remembered))
        })();
        let (row, remembered) = match prepared {
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

    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError> {
        self.read(|connection| stored_key(connection, tenant, key, expired_at_or_before))
    }

    fn purge_idempotency_keys(&self, at: Timestamp) -> Pending<usize> {
        let at_ms = at.unix_ms();
        self.writer.submit(move |connection| {
            Ok(connection
                .prepare_cached("DELETE FROM idempotency_keys WHERE created_ms <= ?1")?
                .execute(params![at_ms])?)
        })
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

    fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        self.read(|connection| super::next_due::next_due_after(connection, after))
    }

    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()> {
        let subscriptions: Vec<(String, String)> = subscriptions
            .iter()
            .map(|(tenant, url)| (tenant.as_str().to_string(), url.clone()))
            .collect();
        self.writer.submit(move |connection| {
            for (tenant, url) in &subscriptions {
                connection
                    .prepare_cached(
                        "INSERT INTO event_deliveries (tenant, url, delivered, failures, retry_at_ms)
                         VALUES (?1, ?2,
                                 COALESCE((SELECT MAX(cursor) FROM tenant_feed
                                           WHERE tenant = CAST(?1 AS TEXT)), 0),
                                 0, NULL)
                         ON CONFLICT (tenant) DO UPDATE
                         SET url = excluded.url, delivered = excluded.delivered,
                             failures = 0, retry_at_ms = NULL
                         WHERE event_deliveries.url <> excluded.url",
                    )?
                    .execute(params![tenant, url])?;
            }
            let stored: Vec<String> = connection
                .prepare_cached("SELECT tenant FROM event_deliveries")?
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            for tenant in stored {
                if !subscriptions.iter().any(|(kept, _)| *kept == tenant) {
                    connection
                        .prepare_cached("DELETE FROM event_deliveries WHERE tenant = ?1")?
                        .execute(params![tenant])?;
                }
            }
            Ok(())
        })
    }

    /// One process owns a SQLite file: nobody else can hold the claim.
    fn claim_event_delivery(&self, tenant: &Tenant, url: &str) -> Pending<Option<DeliveryState>> {
        let read = self.read(|connection| {
            let row = connection
                .prepare_cached(
                    "SELECT delivered, failures, retry_at_ms FROM event_deliveries
                     WHERE tenant = ?1 AND url = ?2",
                )?
                .query_row(params![tenant.as_str(), url], delivery_state)
                .optional()?;
            row.map(into_delivery_state).transpose()
        });
        Box::pin(std::future::ready(read))
    }

    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &DeliveryState,
    ) -> Pending<bool> {
        let (tenant, url) = (tenant.as_str().to_string(), url.to_string());
        let delivered = match int(state.delivered) {
            Ok(delivered) => delivered,
            Err(error) => return failed(error),
        };
        let failures = i64::from(state.failures);
        let retry_at_ms = state.retry_at.map(Timestamp::unix_ms);
        self.writer.submit(move |connection| {
            let written = connection
                .prepare_cached(
                    "UPDATE event_deliveries
                     SET delivered = MAX(delivered, ?3), failures = ?4, retry_at_ms = ?5
                     WHERE tenant = ?1 AND url = ?2",
                )?
                .execute(params![tenant, url, delivered, failures, retry_at_ms])?;
            Ok(written == 1)
        })
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

fn delivery_state(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, i64, Option<i64>)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

fn into_delivery_state(
    (delivered, failures, retry_at_ms): (i64, i64, Option<i64>),
) -> Result<DeliveryState, StoreError> {
    Ok(DeliveryState {
        delivered: unsigned(delivered)?,
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        retry_at: match retry_at_ms {
            None => None,
            Some(ms) => Some(
                Timestamp::from_unix_ms(ms)
                    .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms}")))?,
            ),
        },
    })
}

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

/// Events from a query answering `sequence, at_ms, record, cursor`.
fn event_rows(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Event>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let rows = statement.query_map(params, |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
        ))
    })?;
    rows.map(|row| {
        let (sequence, at_ms, record, cursor) = row?;
        Ok(Event {
            sequence: unsigned(sequence)?,
            cursor: unsigned(cursor)?,
            at: Timestamp::from_unix_ms(at_ms)
                .ok_or_else(|| StoreError::Corrupt(format!("timestamp {at_ms}")))?,
            payload: from_json::<EventRecord>(&record)?.into_payload()?,
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use rusqlite::ffi;

    use super::*;
    use crate::domain::fixture::{at, goal, unsatisfied, usd};
    use crate::domain::transition::{pause, record_run, resume};
    use crate::domain::{CostReading, FinishedRun};

    /// Every statement prepared on the connection and how often SQLite
    /// had to prepare it again.
    fn reprepares(connection: &Connection) -> Vec<(String, i32)> {
        let mut found = Vec::new();
        // SAFETY: the handle is live while `connection` is borrowed, and
        // statements are only walked and read, never finalized or stepped.
        unsafe {
            let db = connection.handle();
            let mut statement = ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
            while !statement.is_null() {
                let count =
                    ffi::sqlite3_stmt_status(statement, ffi::SQLITE_STMTSTATUS_REPREPARE, 0);
                let sql = CStr::from_ptr(ffi::sqlite3_sql(statement))
                    .to_string_lossy()
                    .into_owned();
                found.push((sql, count));
                statement = ffi::sqlite3_next_stmt(db, statement);
            }
        }
        found
    }

    /// The statement cache only helps if SQLite keeps the prepared plan:
    /// a statement whose plan depends on a bound value is prepared again
    /// on every run. Every store call runs here on several goals and
    /// tenants (so the bound values change), then no statement may have
    /// been prepared twice.
    #[tokio::test]
    async fn no_statement_is_prepared_twice() {
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let tenants = [
            Tenant::parse("acme").expect("tenant"),
            Tenant::parse("other").expect("tenant"),
        ];
        let mut goals = Vec::new();
        for (n, tenant) in tenants.iter().cycle().take(4).enumerate() {
            let mut created = goal(Some(50), Some(60_000), None);
            created.owner = tenant.clone();
            let guard = CreateGuard {
                max_open_goals: 10,
                max_open_armed: 10,
                max_stored_goals: 10,
                key: Some((format!("key-{n}"), format!("print-{n}"))),
                keys_expire_at_or_before: at(-1),
                judge_script: None,
            };
            assert_eq!(
                store
                    .insert_goal_guarded(&created, &guard)
                    .await
                    .expect("inserts"),
                Inserted::Done
            );
            goals.push(created);
        }
        for round in 1..=3i64 {
            for current in &mut goals {
                let now = at(round * 1000);
                let reservation = RunReservation {
                    run_id: RunId::generate(),
                    goal_id: current.id.clone(),
                    iteration: current.progress.iterations + 1,
                    started_at: now,
                    report: None,
                };
                let reserved = store.reserve_run(&reservation, current.version).await;
                assert_eq!(reserved.expect("reserves"), Written::Done(()));
                let finished = FinishedRun {
                    run_id: reservation.run_id.clone(),
                    cost: usd(0.01),
                    outcome: unsatisfied(),
                    commitment_ms: None,
                };
                let change =
                    record_run(current, &finished, now, CostReading::Budget).expect("a change");
                let written = store
                    .apply(&change, current.version, Some(&reservation.run_id), now)
                    .await
                    .expect("applies");
                assert!(matches!(written, Written::Done(_)));
                *current = change.goal;
                let paused = pause(current, now).expect("allowed").expect("a change");
                let written = store.apply(&paused, current.version, None, now).await;
                assert!(matches!(written.expect("applies"), Written::Done(_)));
                let resumed = resume(&paused.goal, now, CostReading::Budget)
                    .expect("allowed")
                    .expect("a change");
                let written = store.apply(&resumed, paused.goal.version, None, now).await;
                assert!(matches!(written.expect("applies"), Written::Done(_)));
                *current = store.goal(&current.id).expect("reads").expect("there");
                let spare = RunId::generate();
                store.discard_run(&spare, now).await.expect("discards");
                store.events(&current.id, 1).expect("events");
                store.evaluations(&current.id).expect("evaluations");
            }
            for tenant in &tenants {
                store.goals(tenant, None).expect("lists");
                store.goals(tenant, Some(GoalState::Active)).expect("lists");
                store.open_armed_goals(tenant).expect("counts");
                store.verifiers(tenant).expect("lists");
                store
                    .idempotency_key(tenant, "key-0", at(-1))
                    .expect("reads");
            }
            store
                .due_schedule_goals(at(round * 1000), 100)
                .expect("due");
            store.goals_past_deadline(at(round * 1000)).expect("past");
            store.heartbeat_goals().expect("heartbeats");
            store.next_due_after(at(round * 1000)).expect("next");
            store.runs_in_flight().expect("in flight");
            store
                .purge_idempotency_keys(at(-10 - round))
                .await
                .expect("purges");
        }
        let counts = reprepares(&store.writer.connection());
        assert!(
            counts.len() > 20,
            "the calls above prepared the store's statements: {counts:?}"
        );
        let statements: Vec<String> = counts.iter().map(|(sql, _)| sql.clone()).collect();
        let again: Vec<_> = counts.into_iter().filter(|(_, count)| *count > 0).collect();
        assert!(again.is_empty(), "prepared again on every run: {again:#?}");

        // Nor may a write build a temporary B-tree each run (an `IN` list
        // of three or more constants did, in two tables' CHECKs: migration
        // 8). Reads may: the quota counts walk an index once per value of
        // their `IN` lists, which SQLite keeps in one.
        let connection = store.writer.connection();
        let ephemeral: Vec<&String> = statements
            .iter()
            .filter(|sql| {
                let verb = sql.split_whitespace().next().unwrap_or("");
                ["INSERT", "UPDATE", "DELETE"].contains(&verb.to_ascii_uppercase().as_str())
            })
            .filter(|sql| {
                crate::storage::opcodes(&connection, sql)
                    .iter()
                    .any(|op| op == "OpenEphemeral")
            })
            .collect();
        assert!(ephemeral.is_empty(), "temporary B-trees: {ephemeral:#?}");
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;

    /// A resume reads one range of the tenant's feed, in cursor order,
    /// however many tenants and goals there are.
    #[test]
    fn the_tenant_feed_is_read_from_its_index_in_order() {
        let text = crate::storage::query_plan(goal_log::TENANT_EVENTS_AFTER, params!["t", 0, 10]);
        assert!(
            text.contains("SEARCH feed USING PRIMARY KEY (tenant=? AND cursor>?)"),
            "{text}"
        );
        assert!(!text.contains("TEMP B-TREE"), "sorts: {text}");
    }

    /// The tenant's events after a cursor: in commit order across goals,
    /// at most `limit`, one goal's when asked, never another tenant's, and
    /// each with the cursor the write reported.
    #[tokio::test]
    async fn tenant_events_follow_the_cursor() {
        use crate::domain::fixture::{at, goal, unsatisfied};
        use crate::domain::transition::record_run;
        use crate::domain::{CostReading, FinishedRun, MicroUsd};
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let (mut first, mut second) = (goal(Some(10), None, None), goal(Some(10), None, None));
        let mut other = goal(Some(10), None, None);
        let stranger = Tenant::parse("other").expect("a tenant");
        other.owner = stranger.clone();
        store
            .insert_goals(&[first.clone(), second.clone(), other.clone()])
            .expect("stored");
        let mut written = Vec::new();
        for round in 0..3 {
            for current in [&mut first, &mut other, &mut second] {
                let finished = FinishedRun {
                    run_id: RunId::generate(),
                    cost: MicroUsd::ZERO,
                    outcome: unsatisfied(),
                    commitment_ms: None,
                };
                let now = at(round * 10);
                let change =
                    record_run(current, &finished, now, CostReading::Budget).expect("a change");
                let Written::Done(events) = store
                    .apply(&change, current.version, None, now)
                    .await
                    .expect("applies")
                else {
                    panic!("no conflict here");
                };
                if current.owner != stranger {
                    written.extend(events);
                }
                *current = change.goal;
            }
        }
        let tenant = first.owner.clone();
        let all = store
            .tenant_events_after(&tenant, None, 0, 100)
            .expect("reads");
        assert_eq!(all, written, "the tenant's, in commit order, as written");
        assert!(all.windows(2).all(|pair| pair[0].cursor < pair[1].cursor));
        let page = store
            .tenant_events_after(&tenant, None, all[1].cursor, 2)
            .expect("reads");
        assert_eq!(page, all[2..4].to_vec());
        let mine = store
            .tenant_events_after(&tenant, Some(&second.id), all[0].cursor, 100)
            .expect("reads");
        let expected: Vec<Event> = all
            .iter()
            .filter(|event| {
                matches!(&event.payload, crate::domain::EventPayload::Evaluated { goal_id, .. } if *goal_id == second.id)
            })
            .cloned()
            .collect();
        assert_eq!(mine, expected);
        let last = all.last().expect("some").cursor;
        assert!(store
            .tenant_events_after(&tenant, None, last, 100)
            .expect("reads")
            .is_empty());
    }

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

#[cfg(test)]
mod warm_tests {
    use super::*;
    use crate::domain::fixture::{at, goal, unsatisfied, usd};
    use crate::domain::transition::record_run;
    use crate::domain::{CostReading, FinishedRun};

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
mod file_tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::domain::fixture::goal;
    use crate::domain::Objective;

    /// SQLite's own automatic checkpoint is replaced (`checkpoint.rs`): the
    /// database file must still take in the WAL's pages while the store
    /// writes, not only when the last connection closes.
    #[test]
    fn the_wal_is_checkpointed_into_the_database_while_writing() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("host.db");
        // Small thresholds, so a few thousand pages cross them many times.
        let thresholds = checkpoint::Thresholds {
            ask: 250,
            catch_up: 1000,
        };
        let store =
            SqliteStore::open_with(&DbLocation::File(path.clone()), thresholds).expect("opens");
        let store = Arc::new(store);
        let wal = path.with_extension("db-wal");
        // Writers without a pause between commits: two threads, one small
        // commit after another, about 10,000 pages in all.
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let store = Arc::clone(&store);
                let wal = wal.clone();
                std::thread::spawn(move || {
                    let text = "x".repeat(4000);
                    let mut largest = 0;
                    for _ in 0..1500 {
                        let mut stored = goal(Some(10), None, None);
                        stored.objective = Objective::new(text.clone());
                        store.insert_goals(&[stored]).expect("stored");
                        largest =
                            largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
                    }
                    largest
                })
            })
            .collect();
        let largest_wal = writers
            .into_iter()
            .map(|writer| writer.join().expect("no writer panicked"))
            .max()
            .unwrap_or(0);
        // The WAL starts over instead of growing without end. Not close to
        // the catch-up point: on a loaded machine a catch-up can end busy
        // and leave the WAL to the next one (once 5,400 pages, under CI's
        // parallel tests). Without the catch-up it grows past 20,000 pages
        // here, and the bound is well below that.
        let bound = 8 * thresholds.catch_up as u64 * 4120;
        assert!(
            largest_wal <= bound,
            "the WAL grew to {largest_wal} bytes (bound {bound})"
        );
        // A checkpoint copies the pages into the file. Polled: the
        // checkpoint runs on its own thread.
        let deadline = Instant::now() + Duration::from_secs(30);
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        while size() < 8 << 20 {
            assert!(
                Instant::now() < deadline,
                "the database file is still {} bytes (WAL {:?}): nothing was checkpointed",
                size(),
                std::fs::metadata(path.with_extension("db-wal")).map(|m| m.len())
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;
    use crate::domain::fixture::{at, goal};

    /// What the tenants hold, counted from the goals themselves.
    fn recount(connection: &Connection) -> Vec<Counts> {
        let open = crate::storage::open_state_sql("state");
        connection
            .prepare(&format!(
                "SELECT tenant, SUM({open}),
                        SUM({open} AND (mode = 'schedule' OR mode = 'heartbeat')),
                        COUNT(*)
                 FROM goals GROUP BY tenant ORDER BY tenant"
            ))
            .expect("prepares")
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads")
    }

    /// A tenant's open, armed and total counts.
    pub(super) type Counts = (String, i64, i64, i64);

    fn kept(connection: &Connection) -> Vec<Counts> {
        connection
            .prepare("SELECT tenant, open, armed, total FROM tenant_counts ORDER BY tenant")
            .expect("prepares")
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads")
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
                let guard = CreateGuard {
                    max_open_goals: 100,
                    max_open_armed: 100,
                    max_stored_goals: 100,
                    key: None,
                    keys_expire_at_or_before: at(-1),
                    judge_script: None,
                };
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
        let guard = CreateGuard {
            max_open_goals: 2,
            max_open_armed: 1,
            max_stored_goals: 100,
            key: None,
            keys_expire_at_or_before: at(-1),
            judge_script: None,
        };
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
        let guard = CreateGuard {
            max_open_goals: 10,
            max_open_armed: 10,
            max_stored_goals: 2,
            key: None,
            keys_expire_at_or_before: at(-1),
            judge_script: None,
        };
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
    use crate::domain::{CostReading, FinishedRun};

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
            let guard = CreateGuard {
                max_open_goals: 10,
                max_open_armed: 10,
                max_stored_goals: 10,
                key: Some((format!("key-{n}"), format!("print-{n}"))),
                keys_expire_at_or_before: at(-1),
                judge_script: None,
            };
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
