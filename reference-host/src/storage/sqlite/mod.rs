//! The SQLite store: one write connection shared by group commit
//! (`group_commit.rs`: concurrent writes share a transaction, each answered
//! only once it committed), read-only connections for file databases
//! (`readers.rs`), WAL for file databases.
//!
//! [`SqliteStore`] and what every aggregate shares (opening, reads, the
//! number conversions) live here; each aggregate's queries live in the file
//! of its name, beside the PostgreSQL store's file of the same name
//! (`storage/postgres/`).

mod deliveries;
mod events;
mod goals;
mod keys;
mod runs;
mod schedule;
mod verifiers;

use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use super::checkpoint::{self, Checkpointer};
use super::goal_cache::GoalCache;
use super::group_commit::GroupCommit;
use super::migrations::migrate;
use super::readers::Readers;
use super::{DbLocation, EventSink, StoreError};
use crate::domain::GoalId;

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

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use rusqlite::ffi;

    use super::*;
    use crate::domain::fixture::{at, goal, unsatisfied, usd};
    use crate::domain::transition::{pause, record_run, resume};
    use crate::domain::{CostReading, FinishedRun, GoalState};
    use crate::domain::{RunId, Tenant};
    use crate::storage::{
        CreateGuard, DbLocation, Events, Goals, Inserted, Keys, RunReservation, Runs, Schedule,
        Verifiers, Written,
    };
    use rusqlite::Connection;

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
            let guard = CreateGuard::quotas(10, 10, 10).keyed(n);
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
mod file_tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::domain::fixture::goal;
    use crate::domain::Objective;

    use crate::storage::{DbLocation, Goals};

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
