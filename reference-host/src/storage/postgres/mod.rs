//! The PostgreSQL [`Store`]: several replicas of the host on one database.
//!
//! Nothing that decides correctness lives in memory here (no goal cache):
//! each replica's per-goal lock only orders its own iterations, and what
//! holds across replicas comes from the database.
//! - A run is reserved in the transaction that re-reads the goal under a
//!   row lock (fail closed: the goal must still be active at the version
//!   the dispatch was decided on, with no run of another replica in
//!   flight), and `UNIQUE (goal_id, iteration)` makes a second reservation
//!   of one iteration impossible.
//! - A verdict is recorded only for a run still in flight, in the same
//!   transaction: one verdict per run.
//! - Due schedule goals are claimed with `FOR UPDATE SKIP LOCKED` and a
//!   short claim, so the replicas' schedulers share the due goals.
//! - Each replica keeps a lease row alive; the runs in flight of a replica
//!   whose lease lapsed (it crashed) are orphans, which any replica records
//!   as environmental failures (the SQLite restart rule).
//!
//! The engine calls the store synchronously for reads (on an async worker
//! or the blocking pool) and awaits [`Pending`] writes. tokio-postgres is
//! async, so the store runs its own small runtime: a read sends its query
//! there and waits on a channel (never a nested runtime), a write returns
//! the task's handle as its `Pending`.

mod cached;
mod migrations;
mod relay;

use std::future::Future;
use std::str::FromStr;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

use cached::Cached;

use super::group_commit::Pending;
use super::prepared::{failed, written_only, PreparedChange};
use super::record::{from_json, to_json, EvaluationRecord, EventRecord, GoalRecord};
use super::{
    CreateGuard, DeliveryState, EventSink, Inserted, Registered, RunEnd, RunReservation, Store,
    StoreError, StoredKey, StoredRun, WriteGuard, Written, WrittenIfIdle,
};
use crate::domain::{
    parse_verifier, wire, Change, CriteriaVerifier, Evaluation, Event, EventPayload, Goal, GoalId,
    GoalState, RunId, RunIds, Tenant, Timestamp, VerifierName,
};

/// How long a replica stays alive without renewing its lease: its runs in
/// flight are orphaned this long after it dies. Long enough that a busy
/// machine renews in time (every [`RENEW_EVERY`]), short enough that a
/// crashed replica's goals wait seconds, not the run limit.
pub const REPLICA_LEASE: Duration = Duration::from_secs(5);

/// How often a replica renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(1);

/// How long a scheduler's claim on a due goal keeps the others away. The
/// claim only shares work: a goal whose claim lapsed while it was firing
/// is refused a second run by its reservation.
const CLAIM: Duration = Duration::from_secs(5);

/// A heartbeat claim is renewed once it has less than this left: well
/// before it lapses on a busy machine, yet a held goal's row is written
/// only every few seconds, not on every scheduler tick.
const RENEW_WITHIN: Duration = Duration::from_secs(2);

/// Most due goals one replica holds claimed: the rest are left to the
/// other replicas' schedulers.
const MOST_CLAIMED: i64 = 256;

/// How long a replica's claim on delivering a tenant's event webhook keeps
/// the others away. Renewed with every attempt, each of which ends within
/// the delivery timeout (seconds), so a live replica never loses it; a
/// replica that died hands the tenant over this long after its last
/// attempt.
pub const DELIVERY_CLAIM: Duration = Duration::from_secs(30);

/// Connections per replica. Each iteration holds one only for a
/// statement or a short transaction, never across a webhook call.
const POOL_SIZE: usize = 16;

fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn int(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{value} does not fit bigint")))
}

fn unsigned(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("negative count {value}")))
}

fn timestamp(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_ms(ms).ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms}")))
}

fn goal_id(text: &str) -> Result<GoalId, StoreError> {
    GoalId::parse(text).ok_or_else(|| StoreError::Corrupt(format!("goal id {text:?}")))
}

fn pool_error(error: impl std::fmt::Display) -> StoreError {
    StoreError::Postgres(format!("no database connection: {error}"))
}

/// A goal's columns, computed before the write.
struct GoalRow {
    id: String,
    tenant: String,
    state: &'static str,
    paused: bool,
    mode: &'static str,
    deadline_ms: Option<i64>,
    next_fire_ms: Option<i64>,
    created_ms: i64,
    version: i64,
    record: String,
    /// Shares the goal's ids: copying them grew with the goal's age.
    run_ids: RunIds,
    /// When a closed goal closed (its last update); `None` while open.
    closed_ms: Option<i64>,
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
            version: int(goal.version)?,
            record: to_json(&GoalRecord::from_goal(goal))?,
            closed_ms: goal.state.is_terminal().then(|| goal.updated_at.unix_ms()),
            run_ids: goal.progress.contributing_run_ids.clone(),
        })
    }
}

/// A goal's record, its run ids in order and the position of the first
/// (the runs before it were forgotten with their history), read in one
/// statement.
const SELECT_GOALS: &str = "SELECT g.record,
        COALESCE((SELECT array_agg(r.run_id ORDER BY r.position) FROM goal_runs r
                  WHERE r.goal_id = g.id), '{}'),
        COALESCE((SELECT MIN(r.position) FROM goal_runs r WHERE r.goal_id = g.id), 0)
     FROM goals g ";

fn into_goal(row: &Row) -> Result<Goal, StoreError> {
    let record: String = row.try_get(0)?;
    let run_ids: Vec<String> = row.try_get(1)?;
    let skipped = usize::try_from(row.try_get::<_, i64>(2)?).unwrap_or(0);
    from_json::<GoalRecord>(&record)?.into_goal(skipped, &run_ids)
}

/// A run reserved: (run id, goal id, iteration, started ms, replica,
/// report), as `runs` stores them.
type RunRow = (String, String, i64, i64, String, Option<String>);

/// Inserts an in-flight run unless the goal has one in flight already
/// (another replica's) or the iteration is taken: false when it did not.
async fn insert_run_row(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    (run_id, goal, iteration, started_ms, replica, report): &RunRow,
) -> Result<bool, StoreError> {
    let busy = client
        .query_opt(
            "SELECT 1 FROM runs WHERE goal_id = $1 AND status = 'in-flight' LIMIT 1",
            &[goal],
        )
        .await?;
    if busy.is_some() {
        return Ok(false);
    }
    let inserted = client
        .execute(
            "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, replica, report)
             VALUES ($1, $2, $3, 'in-flight', $4, $5, $6)
             ON CONFLICT DO NOTHING",
            &[run_id, goal, iteration, started_ms, replica, report],
        )
        .await?;
    Ok(inserted == 1)
}

async fn insert_goal_row(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    row: &GoalRow,
) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO goals (id, tenant, state, paused, mode, deadline_ms, next_fire_ms,
                                created_ms, version, record, closed_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &row.id,
                &row.tenant,
                &row.state,
                &row.paused,
                &row.mode,
                &row.deadline_ms,
                &row.next_fire_ms,
                &row.created_ms,
                &row.version,
                &row.record,
                &row.closed_ms,
            ],
        )
        .await?;
    append_runs(client, &row.id, &row.run_ids, 0).await
}

/// Stores the run ids from position `from` (of the whole list) on.
async fn append_runs(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    goal: &str,
    run_ids: &RunIds,
    from: usize,
) -> Result<(), StoreError> {
    let first = from.max(run_ids.skipped());
    for (offset, run_id) in run_ids.iter_from(first).enumerate() {
        let position = int((first + offset) as u64)?;
        client
            .execute(
                "INSERT INTO goal_runs (goal_id, position, run_id) VALUES ($1, $2, $3)",
                &[&goal, &position, &run_id.as_str()],
            )
            .await?;
    }
    Ok(())
}

/// The tenant's open `commitment` goals: armed too ([`crate::domain::Mode::is_armed`]),
/// counted apart from the counts row, whose trigger (migration 2) counts
/// `schedule` and `heartbeat` only; a count here keeps the schema as it is.
/// Read only for a write that arms a goal, after the tenant's row is
/// locked.
async fn open_commitments(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    tenant: &str,
) -> Result<u64, StoreError> {
    let count: i64 = client
        .query_one(
            "SELECT COUNT(*) FROM goals WHERE tenant = $1
             AND state IN ('active', 'escalated') AND mode = 'commitment'",
            &[&tenant],
        )
        .await?
        .try_get(0)?;
    unsigned(count)
}

async fn stored_key(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    tenant: &str,
    key: &str,
    expired_at_or_before: i64,
) -> Result<Option<StoredKey>, StoreError> {
    let row = client
        .query_opt(
            "SELECT goal_id, fingerprint, answer, etag FROM idempotency_keys
             WHERE tenant = $1 AND key = $2 AND created_ms > $3",
            &[&tenant, &key, &expired_at_or_before],
        )
        .await?;
    row.map(|row| {
        let goal: String = row.try_get(0)?;
        let answer: String = row.try_get(2)?;
        Ok(StoredKey {
            goal_id: goal_id(&goal)?,
            fingerprint: row.try_get(1)?,
            answer: from_json(&answer)?,
            etag: row.try_get(3)?,
        })
    })
    .transpose()
}

fn verifier_from_row(row: &Row) -> Result<CriteriaVerifier, StoreError> {
    let record: String = row.try_get(0)?;
    let created_ms: i64 = row.try_get(1)?;
    let value: serde_json::Value = from_json(&record)?;
    let created_at = timestamp(created_ms)?;
    parse_verifier(&value)
        .map(|new| new.into_verifier(created_at))
        .map_err(|error| StoreError::Corrupt(format!("verifier: {error}")))
}

fn reservation_from_row(row: &Row) -> Result<RunReservation, StoreError> {
    let run_id: String = row.try_get(0)?;
    let goal: String = row.try_get(1)?;
    Ok(RunReservation {
        run_id: RunId::parse(&run_id)
            .ok_or_else(|| StoreError::Corrupt(format!("run id {run_id:?}")))?,
        goal_id: goal_id(&goal)?,
        iteration: unsigned(row.try_get(2)?)?,
        started_at: timestamp(row.try_get(3)?)?,
        // Runs found in flight are closed by the restart rule, which never
        // reads what was reported.
        report: None,
    })
}

/// An event row: `sequence, at_ms, record, cursor`.
fn event_from_row(row: &Row) -> Result<Event, StoreError> {
    let record: String = row.try_get(2)?;
    Ok(Event {
        sequence: unsigned(row.try_get(0)?)?,
        at: timestamp(row.try_get(1)?)?,
        payload: from_json::<EventRecord>(&record)?.into_payload()?,
        cursor: unsigned(row.try_get(3)?)?,
    })
}

pub struct PostgresStore {
    pool: Pool,
    /// `None` only while dropping (see `Drop`).
    runtime: Option<tokio::runtime::Runtime>,
    /// This replica's name in `replicas` and on its runs and claims.
    replica: String,
    /// Hands every replica's committed events to this replica's live
    /// subscribers (`relay.rs`).
    relay: Arc<relay::Relay>,
}

/// The statement a change writes the goal's row with: only while the row
/// is still at the version the change was decided on.
const UPDATE_GOAL: &str = "UPDATE goals SET state = $3, paused = $4, mode = $5, deadline_ms = $6,
                      next_fire_ms = $7, version = $8, record = $9, closed_ms = $10
     WHERE id = $1 AND version = $2";

/// What a store wrapping this one builds its own statements on: the
/// PostgreSQL replicas of the kill matrix (crate `goalpost-host-builds`)
/// replace one statement each and keep the rest of this store.
impl PostgresStore {
    /// The connections, for statements of a wrapping store's own.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// [`Store::apply`] and its guarded kin with `update` in place of
    /// [`UPDATE_GOAL`] (the rest of the transaction is this store's).
    pub fn write_change_with(
        &self,
        update: &'static str,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        self.write_change(update, change, expected_version, run, at, guard)
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl Drop for PostgresStore {
    /// A runtime may not be dropped on an async worker (the engine is
    /// often dropped on one): its threads are let go in the background.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl PostgresStore {
    /// Connects, migrates, and registers this process as a live replica
    /// whose lease a background task renews. `url` is a libpq-style
    /// `postgres://` URL (`options=-c search_path=…` picks a schema).
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|error| StoreError::Open {
                location: super::redact(url),
                source: Box::new(error),
            })?;
        let replica = uuid::Uuid::now_v7().to_string();
        // The connections say whose they are in pg_stat_activity, unless
        // the operator's URL names them already.
        if config.get_application_name().is_none() {
            config.application_name(format!("goalpost-host {replica}"));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("goalpost-postgres")
            .enable_all()
            .build()
            .map_err(|error| StoreError::Postgres(format!("cannot start its runtime: {error}")))?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(pool_error)?;
        let store = PostgresStore {
            pool,
            runtime: Some(runtime),
            replica,
            relay: Arc::default(),
        };
        let (pool, replica) = (store.pool.clone(), store.replica.clone());
        let location = super::redact(url);
        store.block(async move {
            let mut client = pool.get().await.map_err(|error| StoreError::Open {
                location,
                source: Box::new(error),
            })?;
            migrations::migrate(&mut client).await?;
            renew(&Cached(client), &replica).await
        })?;
        store.runtime().spawn(relay::listen(
            config,
            store.pool.clone(),
            Arc::clone(&store.relay),
        ));
        let (pool, replica) = (store.pool.clone(), store.replica.clone());
        store.runtime().spawn(async move {
            let mut every = tokio::time::interval(RENEW_EVERY);
            loop {
                every.tick().await;
                let renewed = match pool.get().await {
                    Ok(client) => renew(&Cached(client), &replica).await,
                    Err(error) => Err(pool_error(error)),
                };
                if let Err(error) = renewed {
                    tracing::warn!(%error, "cannot renew this replica's lease");
                }
            }
        });
        Ok(store)
    }

    /// Runs `sql` (statements without parameters) on the database.
    pub fn batch(&self, sql: &'static str) -> Result<(), StoreError> {
        let pool = self.pool.clone();
        self.block(async move {
            let client = pool.get().await.map_err(pool_error)?;
            client.batch_execute(sql).await?;
            Ok(())
        })
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives until drop")
    }

    /// Runs `work` on the store's runtime and waits for it on this thread
    /// (a channel, not `block_on`: the caller may be an async worker).
    pub fn block<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (sender, receiver) = mpsc::sync_channel(1);
        self.runtime().spawn(async move {
            let _ = sender.send(work.await);
        });
        receiver
            .recv()
            .map_err(|_| StoreError::Postgres("the database task ended".to_string()))?
    }

    /// Runs `work` on the store's runtime; the answer is its outcome.
    pub fn pending<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Pending<T> {
        let task = self.runtime().spawn(work);
        Box::pin(async move {
            task.await.map_err(|error| {
                StoreError::Postgres(format!("the database task failed: {error}"))
            })?
        })
    }

    /// A read of rows on a pooled connection.
    fn rows<T: Send + 'static>(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn ToSql + Send + Sync>>,
        each: fn(&Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let pool = self.pool.clone();
        self.block(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let params: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|param| param.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let rows = client.query(sql, &params).await?;
            rows.iter().map(each).collect()
        })
    }

    /// Writes `change` ([`Store::apply`]); with `unless_run_in_flight`,
    /// only if the goal has no run in flight, looked at under the goal's
    /// row lock in the same transaction
    /// ([`Store::apply_unless_run_in_flight`]). `update` writes the goal's
    /// row ([`UPDATE_GOAL`]; a deliberately broken store passes its own).
    fn write_change(
        &self,
        update: &'static str,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
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
        let closes = payloads
            .iter()
            .any(|payload| matches!(payload, EventPayload::Closed { .. }));
        let relay = Arc::clone(&self.relay);
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            if let WriteGuard::ArmedBelow(most) = guard {
                // The owner's counts locked first, as a create locks them:
                // arming writes of one tenant on every replica queue here,
                // and each counts what the last one committed.
                transaction
                    .execute(
                        "INSERT INTO tenant_counts (tenant, open, armed) VALUES ($1, 0, 0)
                         ON CONFLICT (tenant) DO NOTHING",
                        &[&row.tenant],
                    )
                    .await?;
                let armed = transaction
                    .query_one(
                        "SELECT armed FROM tenant_counts WHERE tenant = $1 FOR UPDATE",
                        &[&row.tenant],
                    )
                    .await?;
                let armed = unsigned(armed.try_get(0)?)?
                    + open_commitments(&transaction, &row.tenant).await?;
                if armed >= most {
                    return Ok(WrittenIfIdle::TooManyArmed);
                }
            }
            if guard == WriteGuard::NoRunInFlight {
                // The goal's row lock first: a reservation holds it until
                // its run is stored, so one that took it first has
                // committed by the time the runs are read below (under
                // READ COMMITTED, the default this store keeps, each
                // statement reads what committed before it began), and one
                // that comes later waits, then finds the goal closed.
                transaction
                    .query_opt("SELECT 1 FROM goals WHERE id = $1 FOR UPDATE", &[&row.id])
                    .await?;
                let in_flight = transaction
                    .query_opt(
                        "SELECT 1 FROM runs WHERE goal_id = $1 AND status = 'in-flight' LIMIT 1",
                        &[&row.id],
                    )
                    .await?;
                if in_flight.is_some() {
                    return Ok(WrittenIfIdle::RunInFlight);
                }
            }
            let updated = transaction
                .execute(
                    update,
                    &[
                        &row.id,
                        &expected_version,
                        &row.state,
                        &row.paused,
                        &row.mode,
                        &row.deadline_ms,
                        &row.next_fire_ms,
                        &row.version,
                        &row.record,
                        &row.closed_ms,
                    ],
                )
                .await?;
            if updated != 1 {
                return Ok(WrittenIfIdle::Conflict);
            }
            if let Some(run) = &run {
                // One verdict per run: a run another replica already
                // closed (its lease lapsed) gets none from here, and
                // nothing of this change is written.
                let ended = transaction
                    .execute(
                        "UPDATE runs SET status = 'recorded', ended_ms = $2
                         WHERE run_id = $1 AND status = 'in-flight'",
                        &[run, &at_ms],
                    )
                    .await?;
                if ended != 1 {
                    return Err(StoreError::RunEnded(run.clone()));
                }
            }
            // Where the stored ids end: one seek, however many there are
            // (a count grew with the goal's age).
            let stored: i64 = transaction
                .query_one(
                    "SELECT COALESCE(MAX(position) + 1, 0) FROM goal_runs WHERE goal_id = $1",
                    &[&row.id],
                )
                .await?
                .try_get(0)?;
            let stored = usize::try_from(stored).unwrap_or(0);
            append_runs(&transaction, &row.id, &row.run_ids, stored).await?;
            let last: i64 = transaction
                .query_one(
                    "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE goal_id = $1",
                    &[&row.id],
                )
                .await?
                .try_get(0)?;
            if let Some((run_id, iteration, record)) = &evaluation {
                transaction
                    .execute(
                        "INSERT INTO evaluations (goal_id, run_id, iteration, record)
                         VALUES ($1, $2, $3, $4)",
                        &[&row.id, run_id, iteration, record],
                    )
                    .await?;
            }
            if row.run_ids.trimmed() {
                // The oldest runs' history goes with their ids
                // (`--max-history-per-goal`): their evaluations, and as
                // many of the oldest events as there are runs forgotten
                // past the ones kept.
                let through = int(row.run_ids.skipped() as u64)?;
                let events_through = last - int(row.run_ids.kept() as u64)?;
                transaction
                    .execute(
                        "DELETE FROM goal_runs WHERE goal_id = $1 AND position < $2",
                        &[&row.id, &through],
                    )
                    .await?;
                transaction
                    .execute(
                        "DELETE FROM evaluations WHERE goal_id = $1 AND iteration <= $2",
                        &[&row.id, &through],
                    )
                    .await?;
                transaction
                    .execute(
                        "DELETE FROM events WHERE goal_id = $1 AND sequence <= $2",
                        &[&row.id, &events_through],
                    )
                    .await?;
            }
            if closes {
                // Every replica hears of the close once it committed; one
                // with a run of the goal in flight cancels it (`relay.rs`).
                transaction
                    .execute("SELECT pg_notify('goalpost_closes', $1)", &[&row.id])
                    .await?;
            }
            // Last before the commit: the cursors lock the tenant's row
            // until then, and the tenant's other event writers wait.
            let newest = take_cursors(&transaction, &row, last, at_ms, &records).await?;
            transaction.commit().await?;
            let (mut sequence, mut cursor) = (unsigned(last)?, newest - records.len() as u64);
            let events: Vec<Event> = payloads
                .into_iter()
                .map(|payload| {
                    sequence += 1;
                    cursor += 1;
                    Event {
                        sequence,
                        cursor,
                        at,
                        payload,
                    }
                })
                .collect();
            if !events.is_empty() {
                relay.committed(&tenant, &events);
            }
            Ok(WrittenIfIdle::Done(events))
        })
    }

    /// This replica's name (tests tell replicas apart by it).
    pub fn replica(&self) -> &str {
        &self.replica
    }
}

async fn renew(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    replica: &str,
) -> Result<(), StoreError> {
    let lease = ms(REPLICA_LEASE);
    client
        .execute(
            "INSERT INTO replicas (id, alive_until_ms) VALUES ($1, goalpost_now_ms() + $2)
             ON CONFLICT (id) DO UPDATE SET alive_until_ms = EXCLUDED.alive_until_ms",
            &[&replica, &lease],
        )
        .await?;
    Ok(())
}

/// Takes the next cursors of the goal's tenant for `records` and inserts
/// them as the goal's events after sequence `last`; returns the newest
/// cursor. Updating the tenant's `event_cursors` row locks it until the
/// transaction ends, so the tenant's cursors commit in the order they were
/// taken (migration 4). Every replica is notified of the cursors if the
/// transaction commits (`relay.rs`).
async fn take_cursors(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    row: &GoalRow,
    last: i64,
    at_ms: i64,
    records: &[String],
) -> Result<u64, StoreError> {
    if records.is_empty() {
        return Ok(0);
    }
    let count = int(records.len() as u64)?;
    let newest: i64 = client
        .query_one(
            "WITH taken AS (
                 INSERT INTO event_cursors (tenant, newest) VALUES ($1, $2)
                 ON CONFLICT (tenant) DO UPDATE SET newest = event_cursors.newest + EXCLUDED.newest
                 RETURNING newest
             )
             SELECT newest, pg_notify('goalpost_events',
                                      (newest - $2 + 1)::text || ' ' || newest::text || ' '
                                      || 'events'::regclass::oid::text || ' ' || $1)
             FROM taken",
            &[&row.tenant, &count],
        )
        .await?
        .try_get(0)?;
    client
        .execute(
            "INSERT INTO events (goal_id, sequence, at_ms, record, tenant, cursor)
             SELECT $1, $2 + n, $3, record, $4, $5 + n
             FROM unnest($6::text[]) WITH ORDINALITY AS taken (record, n)",
            &[
                &row.id,
                &last,
                &at_ms,
                &row.tenant,
                &(newest - count),
                &records,
            ],
        )
        .await?;
    unsigned(newest)
}

fn ids(row: &Row) -> Result<GoalId, StoreError> {
    goal_id(&row.try_get::<_, String>(0)?)
}

/// In-flight runs of replicas whose lease lapsed.
const ORPHANED_RUNS: &str = "SELECT run_id, goal_id, iteration, started_ms FROM runs r
     WHERE status = 'in-flight'
       AND NOT EXISTS (SELECT 1 FROM replicas p
                       WHERE p.id = r.replica AND p.alive_until_ms > goalpost_now_ms())
     ORDER BY started_ms";

impl Store for PostgresStore {
    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError> {
        let rows = goals
            .iter()
            .map(GoalRow::new)
            .collect::<Result<Vec<_>, _>>()?;
        let pool = self.pool.clone();
        self.block(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            for row in &rows {
                insert_goal_row(&transaction, row).await?;
            }
            transaction.commit().await?;
            Ok(())
        })
    }

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError> {
        let id = id.as_str().to_string();
        let mut found = self.rows(const_format_goal_by_id(), vec![Box::new(id)], into_goal)?;
        Ok(found.pop())
    }

    /// Nothing is kept in memory: every replica reads the database.
    fn warm(&self, _ids: &[GoalId]) -> Result<usize, StoreError> {
        Ok(0)
    }

    fn goals_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<&GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.map_or(String::new(), |id| id.as_str().to_string());
        let tenant = tenant.as_str().to_string();
        match state {
            None => self.rows(
                goals_page_sql(false),
                vec![Box::new(tenant), Box::new(after), Box::new(limit)],
                into_goal,
            ),
            Some(state) => self.rows(
                goals_page_sql(true),
                vec![
                    Box::new(tenant),
                    Box::new(after),
                    Box::new(limit),
                    Box::new(state.as_str()),
                ],
                into_goal,
            ),
        }
    }

    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Pending<Written<Vec<Event>>> {
        written_only(self.write_change(
            UPDATE_GOAL,
            change,
            expected_version,
            run,
            at,
            WriteGuard::Nothing,
        ))
    }

    fn apply_unless_run_in_flight(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        self.write_change(
            UPDATE_GOAL,
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
            UPDATE_GOAL,
            change,
            expected_version,
            None,
            at,
            WriteGuard::ArmedBelow(max_armed),
        )
    }

    /// The fail-closed re-read and the reservation in one transaction: the
    /// goal's row is locked, must be active at `expected_version`, and
    /// must have no run in flight (another replica's); the insert cannot
    /// take an iteration twice (`UNIQUE (goal_id, iteration)`). Any of
    /// these failing is a conflict: the engine re-reads, and a goal whose
    /// version did not move is held by a run elsewhere.
    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>> {
        let run_id = run.run_id.as_str().to_string();
        let goal = run.goal_id.as_str().to_string();
        let report = run.report.clone();
        let started_ms = run.started_at.unix_ms();
        let (iteration, expected_version) = match (int(run.iteration), int(expected_version)) {
            (Ok(iteration), Ok(expected)) => (iteration, expected),
            (Err(error), _) | (_, Err(error)) => return failed(error),
        };
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            let current = transaction
                .query_opt(
                    "SELECT version FROM goals WHERE id = $1 AND state = 'active' FOR UPDATE",
                    &[&goal],
                )
                .await?;
            if current.map(|row| row.get::<_, i64>(0)) != Some(expected_version) {
                return Ok(Written::Conflict);
            }
            let row = (run_id, goal, iteration, started_ms, replica, report);
            if !insert_run_row(&transaction, &row).await? {
                return Ok(Written::Conflict);
            }
            transaction.commit().await?;
            Ok(Written::Done(()))
        })
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()> {
        let run = run.as_str().to_string();
        let at_ms = at.unix_ms();
        let pool = self.pool.clone();
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            client
                .execute(
                    "UPDATE runs SET status = 'discarded', ended_ms = $2
                     WHERE run_id = $1 AND status = 'in-flight'",
                    &[&run, &at_ms],
                )
                .await?;
            Ok(())
        })
    }

    /// Only the runs of replicas that are gone: another live replica's
    /// runs in flight are its own to finish.
    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.rows(ORPHANED_RUNS, Vec::new(), reservation_from_row)
    }

    fn runs_orphaned(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.rows(ORPHANED_RUNS, Vec::new(), reservation_from_row)
    }

    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.rows(
            "SELECT sequence, at_ms, record, cursor FROM events
             WHERE goal_id = $1 AND sequence > $2 ORDER BY sequence",
            vec![Box::new(goal.as_str().to_string()), Box::new(after)],
            event_from_row,
        )
    }

    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.rows(
            "SELECT sequence, at_ms, record, cursor FROM events
             WHERE goal_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3",
            vec![
                Box::new(goal.as_str().to_string()),
                Box::new(after),
                Box::new(limit),
            ],
            event_from_row,
        )
    }

    fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        self.relay.set_sink(sink);
    }

    fn watch_closes(&self, watcher: super::ClosedWatcher) {
        self.relay.watch_closes(watcher);
    }

    /// In cursor order, which is the order the tenant's events committed
    /// in (`take_cursors`): a page never skips an event that commits later.
    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        match goal {
            Some(goal) => self.rows(
                "SELECT sequence, at_ms, record, cursor FROM events
                 WHERE tenant = $1 AND goal_id = $2 AND cursor > $3 ORDER BY cursor LIMIT $4",
                vec![
                    Box::new(tenant.as_str().to_string()),
                    Box::new(goal.as_str().to_string()),
                    Box::new(after),
                    Box::new(limit),
                ],
                event_from_row,
            ),
            None => self.rows(
                "SELECT sequence, at_ms, record, cursor FROM events
                 WHERE tenant = $1 AND cursor > $2 ORDER BY cursor LIMIT $3",
                vec![
                    Box::new(tenant.as_str().to_string()),
                    Box::new(after),
                    Box::new(limit),
                ],
                event_from_row,
            ),
        }
    }

    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError> {
        let found = self.rows(
            "SELECT goal_id, iteration, status, report FROM runs WHERE run_id = $1",
            vec![Box::new(run.as_str().to_string())],
            |row| {
                let status: String = row.try_get(2)?;
                let end = RunEnd::from_status(&status)?;
                Ok(StoredRun {
                    goal_id: goal_id(&row.try_get::<_, String>(0)?)?,
                    iteration: unsigned(row.try_get(1)?)?,
                    end,
                    report: row.try_get(3)?,
                })
            },
        )?;
        Ok(found.into_iter().next())
    }

    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError> {
        self.rows(
            "SELECT record FROM evaluations WHERE goal_id = $1 ORDER BY iteration, run_id",
            vec![Box::new(goal.as_str().to_string())],
            |row| from_json::<EvaluationRecord>(&row.try_get::<_, String>(0)?)?.into_evaluation(),
        )
    }

    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.rows(
            "SELECT record FROM evaluations WHERE goal_id = $1 AND iteration > $2
             ORDER BY iteration, run_id LIMIT $3",
            vec![
                Box::new(goal.as_str().to_string()),
                Box::new(after),
                Box::new(limit),
            ],
            |row| from_json::<EvaluationRecord>(&row.try_get::<_, String>(0)?)?.into_evaluation(),
        )
    }

    /// The due goals this replica fires, longest due first, at most
    /// `limit`: its own unexpired claims (listed whether or not their row
    /// is locked at the moment, renewed only with less than
    /// [`RENEW_WITHIN`] left), and up to [`MOST_CLAIMED`] unclaimed (or
    /// lapsed) ones taken now, skipping rows another replica is claiming.
    /// The cap is on what one listing takes, not on what a replica holds:
    /// capping the holding made a replica whose 256 goals were still
    /// firing list only those and take nothing new until they were
    /// recorded, so it fired in bursts of 256 (about 270 fires/s whatever
    /// the machine, `goalpost-bench --only replicas`).
    fn due_schedule_goals(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let taken = limit.min(MOST_CLAIMED);
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        let now_ms = now.unix_ms();
        let claim = ms(CLAIM);
        self.block(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let rows = client
                .query(
                    "WITH now AS (SELECT goalpost_now_ms() AS ms),
                     mine AS (
                         SELECT g.id, COALESCE(g.next_fire_ms, 0) AS fire, g.created_ms,
                                g.claim_until_ms
                         FROM goals g, now
                         WHERE (g.mode = 'schedule' OR (g.mode = 'commitment' AND g.next_fire_ms IS NOT NULL))
                           AND g.state = 'active' AND NOT g.paused
                           AND COALESCE(g.next_fire_ms, 0) <= $1
                           AND g.claimed_by = $3 AND g.claim_until_ms > now.ms
                         ORDER BY COALESCE(g.next_fire_ms, 0), g.created_ms, g.id
                         LIMIT $2
                     ),
                     renewing AS (
                         SELECT g.id FROM goals g, mine, now
                         WHERE g.id = mine.id AND mine.claim_until_ms <= now.ms + $6
                         FOR UPDATE OF g SKIP LOCKED
                     ),
                     renewed AS (
                         UPDATE goals SET claim_until_ms = (SELECT ms FROM now) + $4
                         FROM renewing WHERE goals.id = renewing.id
                     ),
                     fresh AS (
                         SELECT g.id FROM goals g, now
                         WHERE (g.mode = 'schedule' OR (g.mode = 'commitment' AND g.next_fire_ms IS NOT NULL))
                           AND g.state = 'active' AND NOT g.paused
                           AND COALESCE(g.next_fire_ms, 0) <= $1
                           AND (g.claimed_by IS NULL OR g.claim_until_ms <= now.ms)
                         ORDER BY COALESCE(g.next_fire_ms, 0), g.created_ms, g.id
                         LIMIT $5
                         FOR UPDATE OF g SKIP LOCKED
                     ),
                     claimed AS (
                         UPDATE goals SET claimed_by = $3,
                                          claim_until_ms = (SELECT ms FROM now) + $4
                         FROM fresh WHERE goals.id = fresh.id
                         RETURNING goals.id, COALESCE(goals.next_fire_ms, 0), goals.created_ms
                     )
                     SELECT id, fire, created_ms FROM mine
                     UNION ALL
                     SELECT * FROM claimed",
                    &[&now_ms, &limit, &replica, &claim, &taken, &ms(RENEW_WITHIN)],
                )
                .await?;
            let mut due = rows
                .iter()
                .map(|row| -> Result<_, StoreError> {
                    Ok((
                        row.try_get::<_, i64>(1)?,
                        row.try_get::<_, i64>(2)?,
                        ids(row)?,
                    ))
                })
                .collect::<Result<Vec<_>, _>>()?;
            due.sort_by(|a, b| (a.0, a.1, a.2.as_str()).cmp(&(b.0, b.1, b.2.as_str())));
            due.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            Ok(due.into_iter().map(|(_, _, id)| id).collect())
        })
    }

    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        self.rows(
            "SELECT id FROM goals WHERE state = 'active' AND deadline_ms IS NOT NULL
               AND deadline_ms <= $1 ORDER BY deadline_ms",
            vec![Box::new(now.unix_ms())],
            ids,
        )
    }

    fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let found = self.rows(
            "SELECT LEAST(
                 (SELECT MIN(COALESCE(next_fire_ms, 0)) FROM goals
                  WHERE (mode = 'schedule' OR (mode = 'commitment' AND next_fire_ms IS NOT NULL))
                   AND state = 'active' AND NOT paused
                    AND COALESCE(next_fire_ms, 0) > $1),
                 (SELECT MIN(deadline_ms) FROM goals
                  WHERE state = 'active' AND deadline_ms IS NOT NULL AND deadline_ms > $1))",
            vec![Box::new(after.unix_ms())],
            |row| row.try_get::<_, Option<i64>>(0).map_err(StoreError::from),
        )?;
        found
            .into_iter()
            .flatten()
            .next()
            .map(timestamp)
            .transpose()
    }

    /// The heartbeat goals this replica probes: its own unexpired claims,
    /// and unclaimed (or lapsed) ones, taken as due goals are. Each
    /// replica keeps its own probe cadence, so without the claim every
    /// replica probed every goal and fired a run on each answer (the
    /// suite's `observed.heartbeat.fires-on-probe`, run against three
    /// replicas, saw the extra runs). A replica that dies leaves its goals
    /// to the others once its claims lapse. Only claims with less than
    /// [`RENEW_WITHIN`] left are renewed: a tick writes a held goal's row
    /// about once per `CLAIM - RENEW_WITHIN`, not once per tick. A claim
    /// of this replica's whose row is locked at the moment (an iteration
    /// writing it) is still listed, renewed on a later tick.
    fn heartbeat_goals(&self) -> Result<Vec<GoalId>, StoreError> {
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        let (claim, renew_within) = (ms(CLAIM), ms(RENEW_WITHIN));
        self.block(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let rows = client
                .query(
                    "WITH now AS (SELECT goalpost_now_ms() AS ms),
                     taken AS (
                         SELECT g.id FROM goals g, now
                         WHERE g.mode = 'heartbeat' AND g.state = 'active' AND NOT g.paused
                           AND (g.claimed_by IS NULL OR g.claim_until_ms <= now.ms
                                OR (g.claimed_by = $1 AND g.claim_until_ms <= now.ms + $3))
                         FOR UPDATE OF g SKIP LOCKED
                     ),
                     claimed AS (
                         UPDATE goals SET claimed_by = $1,
                                          claim_until_ms = (SELECT ms FROM now) + $2
                         FROM taken WHERE goals.id = taken.id
                         RETURNING goals.id, goals.created_ms
                     )
                     SELECT id, created_ms FROM claimed
                     UNION
                     SELECT g.id, g.created_ms FROM goals g, now
                     WHERE g.mode = 'heartbeat' AND g.state = 'active' AND NOT g.paused
                       AND g.claimed_by = $1 AND g.claim_until_ms > now.ms",
                    &[&replica, &claim, &renew_within],
                )
                .await?;
            let mut mine = rows
                .iter()
                .map(|row| -> Result<_, StoreError> { Ok((row.try_get::<_, i64>(1)?, ids(row)?)) })
                .collect::<Result<Vec<_>, _>>()?;
            mine.sort_by(|a, b| (a.0, a.1.as_str()).cmp(&(b.0, b.1.as_str())));
            Ok(mine.into_iter().map(|(_, id)| id).collect())
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
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant, name) DO UPDATE SET created_ms = $3, record = $4"
        } else {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant, name) DO NOTHING"
        };
        let tenant = tenant.as_str().to_string();
        let name = verifier.name.as_str().to_string();
        let created_ms = verifier.created_at.unix_ms();
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            if let Some(most) = max {
                // The tenant's counts row locked, as creates lock it: its
                // registrations on every replica queue here, and each
                // counts what the last one committed.
                transaction
                    .execute(
                        "INSERT INTO tenant_counts (tenant, open, armed) VALUES ($1, 0, 0)
                         ON CONFLICT (tenant) DO NOTHING",
                        &[&tenant],
                    )
                    .await?;
                transaction
                    .query_one(
                        "SELECT 1 FROM tenant_counts WHERE tenant = $1 FOR UPDATE",
                        &[&tenant],
                    )
                    .await?;
                let taken = transaction
                    .query_opt(
                        "SELECT 1 FROM verifiers WHERE tenant = $1 AND name = $2",
                        &[&tenant, &name],
                    )
                    .await?
                    .is_some();
                let held: i64 = transaction
                    .query_one(
                        "SELECT COUNT(*) FROM verifiers WHERE tenant = $1",
                        &[&tenant],
                    )
                    .await?
                    .try_get(0)?;
                if !taken && unsigned(held)? >= most {
                    return Ok(Registered::Full);
                }
            }
            let written = transaction
                .execute(sql, &[&tenant, &name, &created_ms, &record])
                .await?;
            transaction.commit().await?;
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
        let mut found = self.rows(
            "SELECT record, created_ms FROM verifiers WHERE tenant = $1 AND name = $2",
            vec![
                Box::new(tenant.as_str().to_string()),
                Box::new(name.as_str().to_string()),
            ],
            verifier_from_row,
        )?;
        Ok(found.pop())
    }

    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError> {
        self.rows(
            "SELECT record, created_ms FROM verifiers WHERE tenant = $1 ORDER BY name",
            vec![Box::new(tenant.as_str().to_string())],
            verifier_from_row,
        )
    }

    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool> {
        let goal = goal.as_str().to_string();
        let verifier_ref = verifier_ref.to_string();
        let pool = self.pool.clone();
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let written = client
                .execute(
                    "INSERT INTO judge_scripts (goal_id, verifier_ref)
                     SELECT id, $2 FROM goals WHERE id = $1
                     ON CONFLICT (goal_id) DO UPDATE SET verifier_ref = EXCLUDED.verifier_ref",
                    &[&goal, &verifier_ref],
                )
                .await?;
            Ok(written == 1)
        })
    }

    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError> {
        let mut found = self.rows(
            "SELECT verifier_ref FROM judge_scripts WHERE goal_id = $1",
            vec![Box::new(goal.as_str().to_string())],
            |row| Ok(row.try_get::<_, String>(0)?),
        )?;
        Ok(found.pop())
    }

    /// The tenant's count row is locked first: creates of one tenant queue
    /// on it whichever replica serves them, so neither a key nor a quota
    /// can be taken twice.
    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted> {
        let prepared = (|| -> Result<_, StoreError> {
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
        let armed = goal.continuation.mode.is_armed();
        let guard = guard.clone();
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            transaction
                .execute(
                    "INSERT INTO tenant_counts (tenant, open, armed) VALUES ($1, 0, 0)
                     ON CONFLICT (tenant) DO NOTHING",
                    &[&row.tenant],
                )
                .await?;
            let held = transaction
                .query_one(
                    "SELECT open, armed, total FROM tenant_counts WHERE tenant = $1 FOR UPDATE",
                    &[&row.tenant],
                )
                .await?;
            let (open, held_armed, total) = (
                unsigned(held.try_get(0)?)?,
                unsigned(held.try_get(1)?)?,
                unsigned(held.try_get(2)?)?,
            );
            if let Some((key, _)) = &guard.key {
                let expired = guard.keys_expire_at_or_before.unix_ms();
                if let Some(stored) = stored_key(&transaction, &row.tenant, key, expired).await? {
                    return Ok(Inserted::KeyTaken(stored));
                }
            }
            if open >= guard.max_open_goals {
                return Ok(Inserted::TooManyGoals);
            }
            if total >= guard.max_stored_goals {
                return Ok(Inserted::TooManyStored);
            }
            if armed
                && held_armed + open_commitments(&transaction, &row.tenant).await?
                    >= guard.max_open_armed
            {
                return Ok(Inserted::TooManyArmed);
            }
            insert_goal_row(&transaction, &row).await?;
            if let Some(verifier_ref) = &guard.judge_script {
                transaction
                    .execute(
                        "INSERT INTO judge_scripts (goal_id, verifier_ref) VALUES ($1, $2)",
                        &[&row.id, verifier_ref],
                    )
                    .await?;
            }
            if let (Some((key, fingerprint)), Some((answer, etag))) = (&guard.key, &remembered) {
                transaction
                    .execute(
                        "INSERT INTO idempotency_keys
                             (tenant, key, fingerprint, goal_id, answer, etag, created_ms)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)
                         ON CONFLICT (tenant, key) DO UPDATE
                         SET fingerprint = $3, goal_id = $4, answer = $5, etag = $6,
                             created_ms = $7",
                        &[
                            &row.tenant,
                            key,
                            fingerprint,
                            &row.id,
                            answer,
                            etag,
                            &row.created_ms,
                        ],
                    )
                    .await?;
            }
            transaction.commit().await?;
            Ok(Inserted::Done)
        })
    }

    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError> {
        let (tenant, key) = (tenant.as_str().to_string(), key.to_string());
        let expired = expired_at_or_before.unix_ms();
        let pool = self.pool.clone();
        self.block(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            stored_key(&client, &tenant, &key, expired).await
        })
    }

    fn purge_idempotency_keys(&self, at: Timestamp) -> Pending<usize> {
        let at_ms = at.unix_ms();
        let pool = self.pool.clone();
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let purged = client
                .execute(
                    "DELETE FROM idempotency_keys WHERE created_ms <= $1",
                    &[&at_ms],
                )
                .await?;
            Ok(usize::try_from(purged).unwrap_or(usize::MAX))
        })
    }

    /// Rows another replica is purging at this moment are skipped, not
    /// waited for: replicas purge side by side.
    fn purge_closed_goals(
        &self,
        closed_at_or_before: Timestamp,
        limit: usize,
    ) -> Pending<Vec<GoalId>> {
        let at_ms = closed_at_or_before.unix_ms();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            // Not a goal with an event its tenant's event webhook has not
            // delivered (at-least-once): its newest event is its largest
            // cursor.
            let rows = transaction
                .query(
                    "SELECT id FROM goals g WHERE closed_ms <= $1
                       AND NOT EXISTS (
                           SELECT 1 FROM event_deliveries d
                           WHERE d.tenant = g.tenant
                             AND d.delivered < (SELECT MAX(e.cursor) FROM events e
                                                WHERE e.goal_id = g.id))
                     ORDER BY closed_ms LIMIT $2
                     FOR UPDATE OF g SKIP LOCKED",
                    &[&at_ms, &limit],
                )
                .await?;
            let purged = rows.iter().map(ids).collect::<Result<Vec<_>, _>>()?;
            // Children first: they name the goal. The goal's delete
            // trigger takes it off its tenant's counts.
            for id in &purged {
                let id = id.as_str();
                for sql in [
                    "DELETE FROM goal_runs WHERE goal_id = $1",
                    "DELETE FROM events WHERE goal_id = $1",
                    "DELETE FROM evaluations WHERE goal_id = $1",
                    "DELETE FROM runs WHERE goal_id = $1",
                    "DELETE FROM idempotency_keys WHERE goal_id = $1",
                    "DELETE FROM judge_scripts WHERE goal_id = $1",
                    "DELETE FROM goals WHERE id = $1",
                ] {
                    transaction.execute(sql, &[&id]).await?;
                }
            }
            transaction.commit().await?;
            Ok(purged)
        })
    }

    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        let found = self.rows(
            "SELECT COALESCE((SELECT armed FROM tenant_counts WHERE tenant = $1), 0)
                    + (SELECT COUNT(*) FROM goals WHERE tenant = $1
                       AND state IN ('active', 'escalated') AND mode = 'commitment')",
            vec![Box::new(tenant.as_str().to_string())],
            |row| unsigned(row.try_get(0)?),
        )?;
        Ok(found.into_iter().next().unwrap_or(0))
    }

    /// Replicas started with the same subscriptions write the same rows; a
    /// claim held on an unchanged subscription is kept.
    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()> {
        let tenants: Vec<String> = subscriptions
            .iter()
            .map(|(tenant, _)| tenant.as_str().to_string())
            .collect();
        let urls: Vec<String> = subscriptions.iter().map(|(_, url)| url.clone()).collect();
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            transaction
                .execute(
                    "INSERT INTO event_deliveries (tenant, url, delivered)
                     SELECT s.tenant, s.url,
                            COALESCE((SELECT newest FROM event_cursors c WHERE c.tenant = s.tenant), 0)
                     FROM unnest($1::text[], $2::text[]) AS s (tenant, url)
                     ON CONFLICT (tenant) DO UPDATE
                     SET url = EXCLUDED.url, delivered = EXCLUDED.delivered, failures = 0,
                         retry_at_ms = NULL, claimed_by = NULL, claim_until_ms = NULL
                     WHERE event_deliveries.url <> EXCLUDED.url",
                    &[&tenants, &urls],
                )
                .await?;
            transaction
                .execute(
                    "DELETE FROM event_deliveries WHERE tenant <> ALL($1::text[])",
                    &[&tenants],
                )
                .await?;
            transaction.commit().await?;
            Ok(())
        })
    }

    /// One statement: the row is taken only if nobody holds it or the
    /// holder's claim lapsed (or it is this replica's already).
    fn claim_event_delivery(&self, tenant: &Tenant, url: &str) -> Pending<Option<DeliveryState>> {
        let (tenant, url) = (tenant.as_str().to_string(), url.to_string());
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        let claim = ms(DELIVERY_CLAIM);
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let row = client
                .query_opt(
                    "UPDATE event_deliveries
                     SET claimed_by = $3, claim_until_ms = goalpost_now_ms() + $4
                     WHERE tenant = $1 AND url = $2
                       AND (claimed_by IS NULL OR claimed_by = $3
                            OR claim_until_ms <= goalpost_now_ms())
                     RETURNING delivered, failures, retry_at_ms",
                    &[&tenant, &url, &replica, &claim],
                )
                .await?;
            row.map(|row| delivery_state(&row)).transpose()
        })
    }

    /// Fenced by the claim: a replica whose claim lapsed and went to
    /// another writes nothing and stops.
    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &DeliveryState,
    ) -> Pending<bool> {
        let (tenant, url) = (tenant.as_str().to_string(), url.to_string());
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        let claim = ms(DELIVERY_CLAIM);
        let delivered = i64::try_from(state.delivered).unwrap_or(i64::MAX);
        let failures = i32::try_from(state.failures).unwrap_or(i32::MAX);
        let retry_at_ms = state.retry_at.map(Timestamp::unix_ms);
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let written = client
                .execute(
                    "UPDATE event_deliveries
                     SET delivered = GREATEST(delivered, $3), failures = $4, retry_at_ms = $5,
                         claim_until_ms = goalpost_now_ms() + $7
                     WHERE tenant = $1 AND url = $2 AND claimed_by = $6",
                    &[
                        &tenant,
                        &url,
                        &delivered,
                        &failures,
                        &retry_at_ms,
                        &replica,
                        &claim,
                    ],
                )
                .await?;
            Ok(written == 1)
        })
    }
}

fn delivery_state(row: &Row) -> Result<DeliveryState, StoreError> {
    let retry_at_ms: Option<i64> = row.try_get(2)?;
    Ok(DeliveryState {
        delivered: unsigned(row.try_get(0)?)?,
        failures: u32::try_from(row.try_get::<_, i32>(1)?).unwrap_or(0),
        retry_at: retry_at_ms.map(timestamp).transpose()?,
    })
}

fn const_format_goal_by_id() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| format!("{SELECT_GOALS} WHERE g.id = $1"))
}

/// A page of a tenant's goals after an id, optionally of one state.
fn goals_page_sql(with_state: bool) -> &'static str {
    static ALL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static ONE_STATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if with_state {
        ONE_STATE.get_or_init(|| {
            format!("{SELECT_GOALS} WHERE g.tenant = $1 AND g.id > $2 AND g.state = $4 ORDER BY g.id LIMIT $3")
        })
    } else {
        ALL.get_or_init(|| {
            format!("{SELECT_GOALS} WHERE g.tenant = $1 AND g.id > $2 ORDER BY g.id LIMIT $3")
        })
    }
}
