//! The PostgreSQL store: several replicas of the host on one database.
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
//!
//! [`PostgresStore`], its runtime, its replica lease and what every
//! aggregate shares live here; each aggregate's queries live in the file
//! of its name, beside the SQLite store's file of the same name
//! (`storage/sqlite/`).

mod cached;
mod deliveries;
mod events;
mod goals;
mod keys;
mod migrations;
mod relay;
mod runs;
mod schedule;
mod verifiers;

use std::future::Future;
use std::str::FromStr;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

use cached::Cached;

use super::group_commit::Pending;
use super::StoreError;
use crate::domain::{GoalId, Timestamp};

/// How long a replica stays alive without renewing its lease: its runs in
/// flight are orphaned this long after it dies. Long enough that a busy
/// machine renews in time (every [`RENEW_EVERY`]), short enough that a
/// crashed replica's goals wait seconds, not the run limit.
pub const REPLICA_LEASE: Duration = Duration::from_secs(5);

/// How often a replica renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(1);

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

fn ids(row: &Row) -> Result<GoalId, StoreError> {
    goal_id(&row.try_get::<_, String>(0)?)
}
