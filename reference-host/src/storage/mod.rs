//! Durable state behind the [`Store`] trait. Only this module knows SQL.
//!
//! Every state change of a goal is one call and one transaction: the goal,
//! its new events and its evaluation are written together or not at all, and
//! only if nobody changed the goal since it was read (optimistic concurrency
//! on the goal's version).
//!
//! # Layout: one trait per aggregate
//!
//! The store is cut along what it keeps, one trait per aggregate, each in
//! the file of its name with the types its calls answer with:
//! [`Goals`] (`goals.rs`: create, read, list, the versioned change and its
//! guarded kin, tenant counts, retention; attention lives in the goal's
//! record, so whether a store serves it is asked here too), [`Runs`]
//! (`runs.rs`), [`Events`] (`events.rs`: events, evaluations, the tenant
//! feed, the commit sink), [`Schedule`] (`schedule.rs`: what the scheduler
//! asks), [`Verifiers`] (`verifiers.rs`: verifiers and scripted judges),
//! [`Keys`] (`keys.rs`: idempotency keys) and [`Deliveries`]
//! (`deliveries.rs`: event-webhook claims and cursors).
//!
//! Each backend has the same layout: `sqlite/<aggregate>.rs` and
//! `postgres/<aggregate>.rs` hold that aggregate's queries and its `impl`,
//! and each backend's `mod.rs` holds the store itself (connections,
//! runtime, lease) and the helpers every aggregate uses. A write changed on
//! one backend has its twin at the parallel path.
//!
//! [`Store`] is the one object the engine holds: the sum of the aggregate
//! traits, with a blanket impl. Supertraits rather than a struct of
//! per-aggregate handles keep every call site as it was (`store.goal(id)`
//! on a `dyn Store` needs no import and no accessor); only code that calls
//! a concrete store (tests, benchmarks) imports the aggregate trait it
//! uses. A transaction that crosses aggregates (a change writes the goal,
//! its events, its evaluation and ends its run) belongs to the aggregate
//! that starts it, so it stays one transaction.

mod attention_record;
mod checkpoint;
mod deliveries;
mod events;
mod goal_cache;
mod goal_log;
mod goals;
mod group_commit;
mod keys;
mod migrations;
mod next_due;
mod postgres;
mod prepared;
mod readers;
mod record;
mod runs;
mod schedule;
mod sqlite;
mod verifiers;

use std::fmt;
use std::path::PathBuf;

pub use deliveries::{Deliveries, DeliveryState};
pub use events::{ClosedWatcher, EventSink, Events};
pub use goals::{CreateGuard, Goals, Inserted, WriteGuard, Written, WrittenIfIdle};
pub use keys::{Keys, StoredKey};
pub use runs::{RunEnd, RunReservation, Runs, StoredRun};
pub use schedule::Schedule;
pub use verifiers::{Registered, Verifiers};

pub use group_commit::Pending;
pub use postgres::{PostgresStore, REPLICA_LEASE};
pub use sqlite::SqliteStore;

/// Where the database lives: `:memory:`, a file, or a PostgreSQL server
/// (`postgres://…`) that several replicas may share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbLocation {
    Memory,
    File(PathBuf),
    Postgres(String),
}

impl DbLocation {
    pub fn parse(text: &str) -> DbLocation {
        if text == ":memory:" {
            DbLocation::Memory
        } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            DbLocation::Postgres(text.to_string())
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
            DbLocation::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// A database URL fit for logs and errors: without its password.
pub(crate) fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "postgres://(unreadable URL)".to_string(),
    }
}

/// Opens the store `location` names: SQLite for `:memory:` and files,
/// PostgreSQL for a `postgres://` URL. Blocks (call it off the async
/// workers).
pub fn open(location: &DbLocation) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    Ok(match location {
        DbLocation::Postgres(url) => std::sync::Arc::new(PostgresStore::open(url)?),
        other => std::sync::Arc::new(SqliteStore::open(other)?),
    })
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The shared transaction this write was part of failed to begin or
    /// commit; nothing of it was written.
    #[error("the write was not committed: {0}")]
    GroupCommit(String),
    #[error("cannot start the WAL checkpoint thread: {0}")]
    Checkpointer(String),
    #[error("cannot open the database at {location}: {source}")]
    Open {
        location: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// PostgreSQL refused a statement or could not be reached.
    #[error("database error: {0}")]
    Postgres(String),
    /// The run's verdict was to be recorded, but the run had already ended:
    /// another replica closed it when this one's lease lapsed. Nothing of
    /// the write was kept, so the run has one verdict.
    #[error("run {0} had already ended")]
    RunEnded(String),
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> StoreError {
        match error.as_db_error() {
            Some(db) => StoreError::Postgres(format!("{}: {}", db.code().code(), db.message())),
            None => StoreError::Postgres(error.to_string()),
        }
    }
}

/// Reads answer at once (they are short, and never wait for a writer on a
/// file database). Writes that the engine makes while serving are
/// [`Pending`]: futures that resolve once the write committed, so a task
/// waits for a shared commit without holding a thread (`group_commit.rs`).
///
/// The one object the engine holds: every aggregate's trait at once. The
/// aggregates are supertraits with a blanket impl, so a backend implements
/// each in its own file and `dyn Store` answers all of their methods
/// without any import at the call site.
pub trait Store:
    Goals + Runs + Events + Schedule + Verifiers + Keys + Deliveries + Send + Sync
{
}

impl<T> Store for T where
    T: Goals + Runs + Events + Schedule + Verifiers + Keys + Deliveries + Send + Sync + ?Sized
{
}

/// How many of the `known` migrations this host ships a database at
/// schema version `applied` has had; a database that is corrupt (a
/// negative version) or newer than this host is refused, not migrated.
fn applied_migrations(applied: i64, known: usize) -> Result<usize, StoreError> {
    let applied = usize::try_from(applied)
        .map_err(|_| StoreError::Corrupt(format!("negative schema version {applied}")))?;
    if applied > known {
        return Err(StoreError::Corrupt(format!(
            "the database has schema version {applied}, newer than this host ({known})"
        )));
    }
    Ok(applied)
}

/// "`column` holds an open state" as SQL, built from the domain's rule
/// ([`GoalState::is_open`]): `(state = 'active' OR state = 'escalated')`.
/// The quota triggers state it in a shipped migration, which never
/// changes; the tests hold that text to this one.
#[cfg(test)]
fn open_state_sql(column: &str) -> String {
    use crate::domain::GoalState;

    let states: Vec<String> = GoalState::ALL
        .into_iter()
        .filter(|state| state.is_open())
        .map(|state| format!("{column} = '{}'", state.as_str()))
        .collect();
    format!("({})", states.join(" OR "))
}

/// `EXPLAIN QUERY PLAN` of `sql` on a freshly migrated in-memory database,
/// one plan line each, for tests that hold a query to its index.
#[cfg(test)]
fn query_plan(sql: &str, params: impl rusqlite::Params) -> String {
    let mut connection = rusqlite::Connection::open_in_memory().expect("in-memory database");
    migrations::migrate(&mut connection).expect("the schema migrates");
    let mut statement = connection
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .expect("the query prepares");
    let plan: Vec<String> = statement
        .query_map(params, |row| row.get::<_, String>(3))
        .expect("the plan is readable")
        .collect::<Result<_, _>>()
        .expect("the plan rows are text");
    plan.join("\n")
}

/// Every row `sql` reads on `connection` with `params`, each as the tuple
/// of its columns: what a test reads back of what was written.
#[cfg(test)]
fn rows<T>(connection: &rusqlite::Connection, sql: &str, params: impl rusqlite::Params) -> Vec<T>
where
    T: for<'a> TryFrom<&'a rusqlite::Row<'a>, Error = rusqlite::Error>,
{
    connection
        .prepare(sql)
        .expect("prepares")
        .query_map(params, |row| T::try_from(row))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads")
}

/// The opcodes of `sql`'s program on `connection` (`EXPLAIN`), its
/// parameters left unbound: the program does not depend on them.
#[cfg(test)]
fn opcodes(connection: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut explain = connection
        .prepare(&format!("EXPLAIN {sql}"))
        .expect("explains");
    let mut rows = explain.raw_query();
    let mut program = Vec::new();
    while let Some(row) = rows.next().expect("the program is readable") {
        program.push(row.get::<_, String>(1).expect("an opcode"));
    }
    program
}
