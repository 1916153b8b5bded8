//! Durable state behind the [`Store`] trait. Only this module knows SQL.
//!
//! Every state change of a goal is one call and one transaction: the goal,
//! its new events and its evaluation are written together or not at all, and
//! only if nobody changed the goal since it was read (optimistic concurrency
//! on the goal's version).

mod attention_record;
mod checkpoint;
mod goal_cache;
mod goal_log;
mod group_commit;
mod migrations;
mod next_due;
mod postgres;
mod prepared;
mod readers;
mod record;
mod sqlite;

use std::fmt;
use std::path::PathBuf;

use crate::domain::{
    Change, CriteriaVerifier, Evaluation, Event, Goal, GoalId, GoalState, RunId, Tenant, Timestamp,
    VerifierName,
};

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

/// Whether a versioned write happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Written<T> {
    Done(T),
    /// The goal changed (or vanished) since it was read; nothing was written.
    Conflict,
}

/// Whether a write that waits for the goal's runs
/// ([`Store::apply_unless_run_in_flight`]) happened.
#[derive(Debug, Clone, PartialEq)]
pub enum WrittenIfIdle<T> {
    Done(T),
    /// The goal changed (or vanished) since it was read; nothing was written.
    Conflict,
    /// A run of the goal is in flight; nothing was written.
    RunInFlight,
    /// Only from [`Store::apply_arming`]: the goal's owner holds as many
    /// open armed goals as it may; nothing was written.
    TooManyArmed,
}

/// What a write checks in its own transaction besides the goal's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteGuard {
    Nothing,
    /// No run of the goal is in flight ([`Store::apply_unless_run_in_flight`]).
    NoRunInFlight,
    /// The owner holds fewer open armed goals than this ([`Store::apply_arming`]).
    ArmedBelow(u64),
}

/// Whether a verifier registration happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    Done,
    /// The tenant has a verifier of that name (and it was not replaced).
    Taken,
    /// The tenant holds as many verifiers as it may.
    Full,
}

/// A run the host dispatched, reserved before dispatch so a crash can never
/// hand out an extra run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReservation {
    pub run_id: RunId,
    pub goal_id: GoalId,
    pub iteration: u64,
    pub started_at: Timestamp,
    /// For a run reported through `POST {base}/{id}/runs` with a `runId`:
    /// the fingerprint of the report, so the same report sent again is
    /// recognised and a different one under the same `runId` refused.
    pub report: Option<String>,
}

/// A reserved run as stored, read back to answer a report sent again.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub goal_id: GoalId,
    pub iteration: u64,
    /// `None` while in flight.
    pub end: Option<RunEnd>,
    pub report: Option<String>,
}

/// What becomes of a reserved run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Its verdict or escalation was recorded.
    Recorded,
    /// The goal closed while it was in flight; nothing was recorded.
    Discarded,
}

impl RunEnd {
    /// How a run ended, from its stored `status` (the same words in both
    /// stores): `None` while `in-flight`.
    pub(crate) fn from_status(status: &str) -> Result<Option<RunEnd>, StoreError> {
        match status {
            "in-flight" => Ok(None),
            "recorded" => Ok(Some(RunEnd::Recorded)),
            "discarded" => Ok(Some(RunEnd::Discarded)),
            other => Err(StoreError::Corrupt(format!("run status {other:?}"))),
        }
    }
}

/// An `Idempotency-Key` as stored: what it made, the body it came with, and
/// the answer (goal JSON and `ETag`) the create got.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredKey {
    pub goal_id: GoalId,
    pub fingerprint: String,
    pub answer: serde_json::Value,
    pub etag: String,
}

/// What a guarded create checks and writes in the same transaction as the
/// insert, so concurrent creates can neither share a key nor overshoot a
/// quota, and no run of the goal comes before its scripted judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateGuard {
    /// Most open (`active`/`escalated`) goals the owner may have, this one
    /// included.
    pub max_open_goals: u64,
    /// Most open `schedule`/`heartbeat` goals the owner may have, this one
    /// included; checked only when the new goal is in such a mode.
    pub max_open_armed: u64,
    /// Most goals the owner may hold in any state, closed ones included,
    /// this one included.
    pub max_stored_goals: u64,
    /// The key to remember with the goal.
    pub key: Option<(String, String)>,
    /// Keys stored at or before this have expired and are replaced.
    pub keys_expire_at_or_before: Timestamp,
    /// The verifier ref the seam `scriptedJudge` names for the goal
    /// ([`Store::put_judge_script`]), stored with it.
    pub judge_script: Option<String>,
}

/// The outcome of a guarded create.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    Done,
    /// The key is already in use (unexpired); nothing was written.
    KeyTaken(StoredKey),
    /// The owner holds `max_open_goals` open goals already.
    TooManyGoals,
    /// The owner holds `max_open_armed` open armed goals already.
    TooManyArmed,
    /// The owner holds `max_stored_goals` goals already, open or closed.
    TooManyStored,
}

/// Told the id of a goal another replica closed (`Store::watch_closes`); it
/// must not block or do I/O.
pub type ClosedWatcher = std::sync::Arc<dyn Fn(&GoalId) + Send + Sync>;

/// Told about every write's events once it committed, in commit order
/// (so in cursor order for each tenant), on the thread that committed it,
/// before the writer is answered: it must not block or do I/O.
pub trait EventSink: Send + Sync {
    fn committed(&self, tenant: &Tenant, events: &[Event]);

    /// Whether anybody listens to the tenant's events here: a store that
    /// reads other replicas' events for the sink reads only those.
    fn listening(&self, _tenant: &Tenant) -> bool {
        true
    }

    /// Events may have committed that the sink will never be told about
    /// (a store lost its notices of other replicas' commits): whoever
    /// listens must catch up from storage.
    fn interrupted(&self) {}
}

/// Reads answer at once (they are short, and never wait for a writer on a
/// file database). Writes that the engine makes while serving are
/// [`Pending`]: futures that resolve once the write committed, so a task
/// waits for a shared commit without holding a thread (`group_commit.rs`).
pub trait Store: Send + Sync {
    /// Whether this store can serve the attention extension
    /// (`domain::attention`). Attention is kept in the goal's record, which
    /// every store persists; what it needs beyond that is one process that
    /// sees every attention write (its due timers are kept in memory), so a
    /// store several replicas share says no, and discovery then does not
    /// advertise it.
    fn serves_attention(&self) -> bool {
        false
    }

    /// Stores new goals (version 1), all or none, with no quota or key
    /// check: for tests and the benchmarks (which seed a million goals with
    /// it). Creates go through [`Store::insert_goal_guarded`].
    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError>;

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError>;

    /// Reads the goals of `ids` that are not in memory, in one read
    /// transaction, and keeps them in memory for the reads that follow
    /// (the scheduler, before it fires them). Only a speed-up: a later
    /// [`Store::goal`] answers as it would have without it. Returns how
    /// many it read.
    fn warm(&self, ids: &[GoalId]) -> Result<usize, StoreError>;

    /// A tenant's goals in id order (creation order: ids are time-ordered),
    /// optionally of one state.
    fn goals(&self, tenant: &Tenant, state: Option<GoalState>) -> Result<Vec<Goal>, StoreError> {
        self.goals_page(tenant, state, None, usize::MAX)
    }

    /// At most `limit` of a tenant's goals in id order, optionally of one
    /// state, starting after the id `after` (which need not be a goal):
    /// a page costs the same wherever it starts.
    fn goals_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<&GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, StoreError>;

    /// Writes `change` if the stored goal is still at `expected_version`,
    /// appending its events (each with the next per-goal sequence) and its
    /// evaluation, and ending `run` as recorded, in one transaction.
    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Pending<Written<Vec<Event>>>;

    /// [`Store::apply`] of a change that records no run, unless a run of
    /// the goal is in flight (reserved and not ended) in any process that
    /// shares the store, a dead one's included. The runs are looked at in
    /// the write's own transaction, after taking the goal's row lock, which
    /// [`Store::reserve_run`] holds until its run is stored: a reservation
    /// that committed first is seen here, and one that comes after finds
    /// the goal changed. Nothing is written when a run is in flight.
    fn apply_unless_run_in_flight(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
    ) -> Pending<WrittenIfIdle<Vec<Event>>>;

    /// [`Store::apply`] of a change that puts the goal on an arm (a PATCH
    /// into an armed mode), only if its owner holds fewer than `max_armed`
    /// open armed goals, counted in the write's own transaction with the
    /// owner's counts locked: arming PATCHes on any number of replicas
    /// cannot overshoot the quota together.
    fn apply_arming(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
        max_armed: u64,
    ) -> Pending<WrittenIfIdle<Vec<Event>>>;

    /// Reserves a run if the stored goal is still at `expected_version`.
    /// Holds the goal's row lock (on SQLite, the one writer) from that
    /// check until the run is stored ([`Store::apply_unless_run_in_flight`]
    /// depends on it).
    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>>;

    /// Ends a reserved run without recording anything for it.
    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()>;

    /// A reserved run, however it ended.
    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError>;

    /// Runs reserved but never ended (a crash or shutdown in flight).
    /// On a database several replicas share: only those of replicas that
    /// are gone.
    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError>;

    /// Runs a replica reserved and left in flight when it died, found
    /// while this one runs (its lease lapsed). A store only one process
    /// uses has none: that process finds its own at start
    /// ([`Store::runs_in_flight`]).
    fn runs_orphaned(&self) -> Result<Vec<RunReservation>, StoreError> {
        Ok(Vec::new())
    }

    /// A goal's events with a sequence greater than `after`, in order.
    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError>;

    /// At most `limit` of a goal's events with a sequence greater than
    /// `after`, in order: a page of [`Store::events`].
    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;

    /// Whom to tell about committed events (the live stream); replaces any
    /// sink set before.
    fn set_event_sink(&self, sink: std::sync::Arc<dyn EventSink>);

    /// Whom to tell that a goal closed on another replica, so a run of it
    /// in flight here is cancelled as a local abandon cancels it. A store
    /// only one process uses has no other replica: the default ignores it.
    fn watch_closes(&self, _watcher: ClosedWatcher) {}

    /// At most `limit` of a tenant's events whose cursor
    /// ([`Event::cursor`]) is greater than `after`, in cursor order (the
    /// order they committed in); only `goal`'s when given (the caller
    /// checked it is the tenant's). What the live stream backfills from.
    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;

    /// A goal's evaluations in iteration order.
    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError>;

    /// At most `limit` of a goal's evaluations of an iteration greater
    /// than `after`, in iteration order: a page of [`Store::evaluations`].
    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError>;

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

    /// Stores a tenant's criteria verifier. An existing one of that name is
    /// replaced when `replace` is set, and is taken otherwise. With `max`,
    /// a new name is stored only while the tenant holds fewer verifiers,
    /// counted in the write's own transaction with the tenant's
    /// registrations serialised, on every replica.
    fn put_verifier(
        &self,
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
        replace: bool,
        max: Option<u64>,
    ) -> Pending<Registered>;

    fn verifier(
        &self,
        tenant: &Tenant,
        name: &VerifierName,
    ) -> Result<Option<CriteriaVerifier>, StoreError>;

    /// A tenant's verifiers by name.
    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError>;

    /// Makes `verifier_ref` (as written) the scripted judge of `goal`,
    /// replacing any earlier one (the seam `scriptedJudge`). Written beside
    /// the goal: its record and version do not change. `false` when the
    /// goal is not stored.
    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool>;

    /// The scripted judge of `goal`, as written, if one was set.
    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError>;

    /// Stores a new goal (version 1) if `guard` allows it, remembering its
    /// idempotency key, in one transaction.
    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted>;

    /// The tenant's key, unless stored at or before `expired_at_or_before`.
    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError>;

    /// Forgets keys stored at or before `at`; returns how many.
    fn purge_idempotency_keys(&self, at: Timestamp) -> Pending<usize>;

    /// The tenant's open goals in `schedule` or `heartbeat` mode.
    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError>;

    /// Retention: forgets at most `limit` goals that closed at or before
    /// `closed_at_or_before`, longest closed first, with everything that
    /// names them (log entries and their records, runs, idempotency keys),
    /// in one transaction; their tenants' counts drop with them. Returns
    /// the forgotten ids. Bounded, so a backlog is worked off a batch at a
    /// time without holding the writer long. A goal with an event that its
    /// tenant's event webhook has not delivered yet is kept until it is
    /// (at-least-once: an event is never forgotten before it was sent).
    fn purge_closed_goals(
        &self,
        closed_at_or_before: Timestamp,
        limit: usize,
    ) -> Pending<Vec<GoalId>>;

    /// Makes `subscriptions` (tenant, URL) the event webhooks delivered
    /// (`event_webhooks/`), in one transaction. A tenant new here, or whose
    /// URL changed, starts after its newest event now (nothing older is
    /// sent to a URL that was not subscribed when it happened); one whose
    /// URL is unchanged goes on from its stored cursor; a tenant no longer
    /// subscribed is forgotten, so its undelivered events stop holding
    /// retention.
    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()>;

    /// Takes, or renews, the right to deliver `tenant`'s events to `url`
    /// and reads where its delivery stands. `None`: the tenant is not
    /// subscribed to `url`, or (on a database several replicas share)
    /// another replica holds the right and its claim has not lapsed.
    fn claim_event_delivery(&self, tenant: &Tenant, url: &str) -> Pending<Option<DeliveryState>>;

    /// Stores where `tenant`'s delivery to `url` stands after an attempt
    /// (the delivered cursor never goes back), and renews the claim.
    /// `false`: nothing was written (the claim went to another replica,
    /// or the subscription is gone), and the caller stops delivering.
    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &DeliveryState,
    ) -> Pending<bool>;
}

/// Where one tenant's event webhook stands, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryState {
    /// Every event of the tenant with a cursor at or below this was
    /// delivered (answered 2xx).
    pub delivered: u64,
    /// Failed attempts in a row at the next event.
    pub failures: u32,
    /// Not before this is the next event tried (the backoff), when set.
    pub retry_at: Option<Timestamp>,
}

/// "`column` holds an open state" as SQL, built from the domain's rule
/// ([`GoalState::is_open`]): `(state = 'active' OR state = 'escalated')`.
/// The quota triggers state it in a shipped migration, which never
/// changes; the tests hold that text to this one.
#[cfg(test)]
fn open_state_sql(column: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_status_reads_as_its_end_and_an_unknown_one_is_corrupt() {
        assert_eq!(RunEnd::from_status("in-flight").expect("known"), None);
        assert_eq!(
            RunEnd::from_status("recorded").expect("known"),
            Some(RunEnd::Recorded)
        );
        assert_eq!(
            RunEnd::from_status("discarded").expect("known"),
            Some(RunEnd::Discarded)
        );
        assert!(matches!(
            RunEnd::from_status("Recorded"),
            Err(StoreError::Corrupt(_))
        ));
    }
}
