//! Deliberately broken PostgreSQL stores: each goes without one guard a
//! cluster of replicas needs, by running a statement of its own in place of
//! the store's guarded one ([`BrokenReplica`] around
//! [`PostgresStore`], which keeps only the faithful SQL) or by keeping
//! state in the replica's memory. The registered ones (`postgres-…` in the
//! registry) are opened by `--mutant NAME --db postgres://…` and killed by
//! the suite's cluster kill matrix (`suite/tests/it/cluster_matrix.rs`, three
//! replicas); `tests/it/postgres_cluster.rs` kills the first two at the store.
//!
//! [`StoreMutant::ClaimWithoutSkipLocked`] is not registered: it is
//! equivalent for anything a client can see, since every replica's fire
//! still goes through the reservation, which refuses a second run of one
//! iteration under the goal's row lock (it only costs work). Dropping
//! `UNIQUE (goal_id, iteration)` alone is equivalent too and has no mutant:
//! under the row lock a reservation must find the goal at the version its
//! iteration was read at, with no run in flight, so no second reservation
//! of an iteration reaches the insert.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::Mutant;
use goalpost_host::domain::{
    wire, Change, CriteriaVerifier, Evaluation, Event, Goal, GoalId, GoalState, Mode, RunId,
    Tenant, Timestamp, VerifierName,
};
use goalpost_host::storage::{
    CreateGuard, Deliveries, EventSink, Events, Goals, Inserted, Keys, Pending, PostgresStore,
    Registered, RunReservation, Runs, Schedule, Store, StoreError, StoredKey, StoredRun, Verifiers,
    WriteGuard, Written, WrittenIfIdle,
};

/// One guard of the PostgreSQL store switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMutant {
    /// A reservation trusts the replica's in-memory lock: the goal's
    /// version is read without a row lock, another replica's run in flight
    /// is not looked for, and `(goal_id, iteration)` is not unique.
    InMemoryLockOnly,
    /// Due goals are listed without being claimed (no `FOR UPDATE SKIP
    /// LOCKED`, no claim column): every replica takes every due goal.
    ClaimWithoutSkipLocked,
    /// No claim on due goals, and the reservation of
    /// [`StoreMutant::InMemoryLockOnly`]: a naive port of the one-process
    /// store, whose schedulers fire one iteration on several replicas.
    FiresUnclaimedUnlocked,
    /// The replica keeps the goals it read or wrote in memory (refreshed
    /// only when one of its writes conflicts), its scheduler fires the ones
    /// that copy says are due, and the reservation does not re-read the
    /// goal: it trusts that copy's state and version.
    TrustsReplicaRead,
    /// Idempotency keys live in the replica's memory, not the database.
    KeysInReplicaMemory,
    /// A change is written whatever the goal's version: the last writer
    /// wins, so two replicas that decided on one read both write.
    AppliesUnversioned,
}

impl StoreMutant {
    /// The store mutant a registered mutant names, if it is one.
    pub fn of(mutant: Mutant) -> Option<StoreMutant> {
        match mutant {
            Mutant::PostgresInMemoryLockOnly => Some(StoreMutant::InMemoryLockOnly),
            Mutant::PostgresFiresUnclaimedUnlocked => Some(StoreMutant::FiresUnclaimedUnlocked),
            Mutant::PostgresTrustsReplicaRead => Some(StoreMutant::TrustsReplicaRead),
            Mutant::PostgresKeysInReplicaMemory => Some(StoreMutant::KeysInReplicaMemory),
            Mutant::PostgresAppliesUnversioned => Some(StoreMutant::AppliesUnversioned),
            _ => None,
        }
    }
}

const DROP_RUN_UNIQUENESS: &str =
    "ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_goal_id_iteration_key";

/// The guards of the PostgreSQL store a mutant's replica goes without.
#[derive(Debug, Clone, Copy, Default)]
struct Flaws {
    /// A reservation trusts the replica's in-memory lock: the goal's
    /// version is read without a row lock and another replica's run in
    /// flight is not looked for.
    reserves_without_row_lock: bool,
    /// Due goals are listed without being claimed: every replica takes
    /// every due goal.
    lists_due_without_claim: bool,
    /// A reservation does not re-read the goal at all: it trusts the
    /// version and state the replica read before (another replica's run in
    /// flight and `(goal_id, iteration)` are still checked).
    reserves_without_re_read: bool,
    /// A change is written whatever the goal's version (last writer wins).
    applies_without_version_check: bool,
}

impl Flaws {
    fn of(mutant: StoreMutant) -> Flaws {
        let none = Flaws::default();
        match mutant {
            StoreMutant::InMemoryLockOnly => Flaws {
                reserves_without_row_lock: true,
                ..none
            },
            StoreMutant::ClaimWithoutSkipLocked => Flaws {
                lists_due_without_claim: true,
                ..none
            },
            StoreMutant::FiresUnclaimedUnlocked => Flaws {
                reserves_without_row_lock: true,
                lists_due_without_claim: true,
                ..none
            },
            StoreMutant::TrustsReplicaRead => Flaws {
                reserves_without_re_read: true,
                ..none
            },
            StoreMutant::KeysInReplicaMemory => none,
            StoreMutant::AppliesUnversioned => Flaws {
                applies_without_version_check: true,
                ..none
            },
        }
    }
}

/// The goal's row written whatever its version (the store's statement
/// checks `version = $2`).
const UPDATE_GOAL_ANY_VERSION: &str =
    "UPDATE goals SET state = $3, paused = $4, mode = $5, deadline_ms = $6,
                      next_fire_ms = $7, version = $8, record = $9, closed_ms = $10
     WHERE id = $1 AND (version = $2 OR TRUE)";

/// The due goals, listed without a claim (the store claims them with
/// `FOR UPDATE SKIP LOCKED`).
const DUE_UNCLAIMED: &str = "SELECT id FROM goals
     WHERE (mode = 'schedule' OR (mode = 'commitment' AND next_fire_ms IS NOT NULL))
       AND state = 'active' AND NOT paused
       AND COALESCE(next_fire_ms, 0) <= $1
     ORDER BY COALESCE(next_fire_ms, 0), created_ms LIMIT $2";

/// The goal's version, read without the row lock.
const VERSION_UNLOCKED: &str = "SELECT version FROM goals WHERE id = $1";

const RUN_IN_FLIGHT: &str =
    "SELECT 1 FROM runs WHERE goal_id = $1 AND status = 'in-flight' LIMIT 1";

const INSERT_RUN: &str =
    "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, replica, report)
     VALUES ($1, $2, $3, 'in-flight', $4, $5, $6)";

const INSERT_RUN_UNLESS_TAKEN: &str =
    "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, replica, report)
     VALUES ($1, $2, $3, 'in-flight', $4, $5, $6)
     ON CONFLICT DO NOTHING";

/// [`PostgresStore::open`] with `mutant`'s flaw in the store's SQL (its
/// own statements in place of the store's). The flaws of
/// [`StoreMutant::InMemoryLockOnly`] and
/// [`StoreMutant::FiresUnclaimedUnlocked`] drop the uniqueness of
/// `(goal_id, iteration)` from the schema: use a schema of its own. The
/// flaws kept in a replica's memory need [`open_store`].
pub fn open_postgres(url: &str, mutant: StoreMutant) -> Result<BrokenReplica, StoreError> {
    let store = PostgresStore::open(url)?;
    if matches!(
        mutant,
        StoreMutant::InMemoryLockOnly | StoreMutant::FiresUnclaimedUnlocked
    ) {
        store.batch(DROP_RUN_UNIQUENESS)?;
    }
    Ok(BrokenReplica::new(
        store,
        Flaws::of(mutant),
        Remember::Nothing,
    ))
}

/// The store a replica runs `mutant` with: the broken PostgreSQL store,
/// keeping in the replica's memory what the flaws keep there.
pub fn open_store(url: &str, mutant: StoreMutant) -> Result<Arc<dyn Store>, StoreError> {
    let broken = open_postgres(url, mutant)?;
    let remember = match mutant {
        StoreMutant::TrustsReplicaRead => Remember::Goals,
        StoreMutant::KeysInReplicaMemory => Remember::Keys,
        _ => Remember::Nothing,
    };
    Ok(Arc::new(BrokenReplica { remember, ..broken }))
}

/// What a [`BrokenReplica`] keeps to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remember {
    /// Nothing: every read goes to the database.
    Nothing,
    /// The goals it read or wrote, served to its reads.
    Goals,
    /// The idempotency keys of the creates it served.
    Keys,
}

fn no_connection(error: impl std::fmt::Display) -> StoreError {
    StoreError::Postgres(format!("no database connection: {error}"))
}

fn bigint(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{value} does not fit bigint")))
}

type Shared<T> = Arc<Mutex<T>>;

fn held<T>(shared: &Mutex<T>) -> MutexGuard<'_, T> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A replica of a broken host over the shared PostgreSQL store: its own
/// statements where [`Flaws`] says so, and part of the state in its own
/// memory where [`Remember`] says so, as one process may keep it.
pub struct BrokenReplica {
    inner: PostgresStore,
    flaws: Flaws,
    remember: Remember,
    goals: Shared<HashMap<GoalId, Goal>>,
    keys: Shared<HashMap<(String, String), StoredKey>>,
}

impl BrokenReplica {
    fn new(inner: PostgresStore, flaws: Flaws, remember: Remember) -> BrokenReplica {
        BrokenReplica {
            inner,
            flaws,
            remember,
            goals: Arc::default(),
            keys: Arc::default(),
        }
    }

    fn keeps_goals(&self) -> bool {
        self.remember == Remember::Goals
    }

    /// A change written as the store writes it, or whatever the goal's
    /// version.
    fn write(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Option<Pending<WrittenIfIdle<Vec<Event>>>> {
        self.flaws.applies_without_version_check.then(|| {
            self.inner.write_change_with(
                UPDATE_GOAL_ANY_VERSION,
                change,
                expected_version,
                run,
                at,
                guard,
            )
        })
    }

    /// A reservation without the goal's row lock: the version read
    /// unlocked and no look for another replica's run in flight, or (not
    /// re-reading) no look at the goal at all.
    fn reserve_unlocked(
        &self,
        run: &RunReservation,
        expected_version: u64,
    ) -> Pending<Written<()>> {
        let (iteration, expected) = match (bigint(run.iteration), bigint(expected_version)) {
            (Ok(iteration), Ok(expected)) => (iteration, expected),
            (Err(error), _) | (_, Err(error)) => return Box::pin(std::future::ready(Err(error))),
        };
        let run_id = run.run_id.as_str().to_string();
        let goal = run.goal_id.as_str().to_string();
        let report = run.report.clone();
        let started_ms = run.started_at.unix_ms();
        let pool = self.inner.pool().clone();
        let replica = self.inner.replica().to_string();
        let re_reads = !self.flaws.reserves_without_re_read;
        self.inner.pending(async move {
            let client = pool.get().await.map_err(no_connection)?;
            let row: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
                [&run_id, &goal, &iteration, &started_ms, &replica, &report];
            if re_reads {
                let current = client.query_opt(VERSION_UNLOCKED, &[&goal]).await?;
                if current.map(|row| row.get::<_, i64>(0)) != Some(expected) {
                    return Ok(Written::Conflict);
                }
                client.execute(INSERT_RUN, &row).await?;
                return Ok(Written::Done(()));
            }
            if client.query_opt(RUN_IN_FLIGHT, &[&goal]).await?.is_some() {
                return Ok(Written::Conflict);
            }
            Ok(
                if client.execute(INSERT_RUN_UNLESS_TAKEN, &row).await? == 1 {
                    Written::Done(())
                } else {
                    Written::Conflict
                },
            )
        })
    }

    /// Every due goal, claimed by no one.
    fn due_unclaimed(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let now_ms = now.unix_ms();
        let pool = self.inner.pool().clone();
        self.inner.block(async move {
            let client = pool.get().await.map_err(no_connection)?;
            let rows = client.query(DUE_UNCLAIMED, &[&now_ms, &limit]).await?;
            rows.iter()
                .map(|row| {
                    let id: String = row.try_get(0)?;
                    GoalId::parse(&id).ok_or_else(|| StoreError::Corrupt(format!("goal id {id:?}")))
                })
                .collect()
        })
    }

    /// Remembers a guarded write's goal as [`BrokenReplica::track`] does;
    /// a refusal (a run in flight, the armed quota) wrote nothing and
    /// changes nothing here.
    fn track_if_idle(
        &self,
        change: &Change,
        pending: Pending<WrittenIfIdle<Vec<Event>>>,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        if !self.keeps_goals() {
            return pending;
        }
        let (goals, goal) = (Arc::clone(&self.goals), change.goal.clone());
        Box::pin(async move {
            let outcome = pending.await?;
            match &outcome {
                WrittenIfIdle::Done(_) => {
                    held(&goals).insert(goal.id.clone(), goal);
                }
                WrittenIfIdle::Conflict => {
                    held(&goals).remove(&goal.id);
                }
                WrittenIfIdle::RunInFlight | WrittenIfIdle::TooManyArmed => {}
            }
            Ok(outcome)
        })
    }

    /// Remembers `goal` once `pending` wrote it; forgets it when the write
    /// conflicted (the only time this replica reads the database again).
    fn track<T: Send + 'static>(
        &self,
        id: GoalId,
        written: Option<Goal>,
        pending: Pending<Written<T>>,
    ) -> Pending<Written<T>> {
        if !self.keeps_goals() {
            return pending;
        }
        let goals = Arc::clone(&self.goals);
        Box::pin(async move {
            let outcome = pending.await?;
            let mut goals = held(&goals);
            match (&outcome, written) {
                (Written::Done(_), Some(goal)) => {
                    goals.insert(id, goal);
                }
                (Written::Done(_), None) => {}
                (Written::Conflict, _) => {
                    goals.remove(&id);
                }
            }
            Ok(outcome)
        })
    }
}

impl Goals for BrokenReplica {
    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError> {
        self.inner.insert_goals(goals)
    }

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError> {
        if !self.keeps_goals() {
            return self.inner.goal(id);
        }
        if let Some(goal) = held(&self.goals).get(id) {
            return Ok(Some(goal.clone()));
        }
        let found = self.inner.goal(id)?;
        if let Some(goal) = &found {
            held(&self.goals).insert(id.clone(), goal.clone());
        }
        Ok(found)
    }

    fn warm(&self, ids: &[GoalId]) -> Result<usize, StoreError> {
        self.inner.warm(ids)
    }

    fn goals_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<&GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, StoreError> {
        self.inner.goals_page(tenant, state, after, limit)
    }

    /// Remembered as [`BrokenReplica::track_if_idle`] does.
    fn apply_guarded(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let pending = self
            .write(change, expected_version, run, at, guard)
            .unwrap_or_else(|| {
                self.inner
                    .apply_guarded(change, expected_version, run, at, guard)
            });
        self.track_if_idle(change, pending)
    }

    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted> {
        let remembered = match (self.remember, &guard.key) {
            (Remember::Keys, Some((key, fingerprint))) => {
                let slot = (goal.owner.as_str().to_string(), key.clone());
                if let Some(stored) = held(&self.keys).get(&slot) {
                    let taken = Inserted::KeyTaken(stored.clone());
                    return Box::pin(std::future::ready(Ok(taken)));
                }
                let answer = match serde_json::to_value(wire::goal(goal)) {
                    Ok(answer) => answer,
                    Err(error) => {
                        let error = StoreError::Corrupt(format!("goal answer: {error}"));
                        return Box::pin(std::future::ready(Err(error)));
                    }
                };
                Some((
                    slot,
                    StoredKey {
                        goal_id: goal.id.clone(),
                        fingerprint: fingerprint.clone(),
                        answer,
                        etag: goal.etag(),
                    },
                ))
            }
            _ => None,
        };
        let Some((slot, stored)) = remembered else {
            let pending = self.inner.insert_goal_guarded(goal, guard);
            if !self.keeps_goals() {
                return pending;
            }
            let (goals, goal) = (Arc::clone(&self.goals), goal.clone());
            return Box::pin(async move {
                let inserted = pending.await?;
                if let Inserted::Done = inserted {
                    held(&goals).insert(goal.id.clone(), goal);
                }
                Ok(inserted)
            });
        };
        // The database never sees the key: only this replica remembers it.
        let unkeyed = CreateGuard {
            key: None,
            ..guard.clone()
        };
        let pending = self.inner.insert_goal_guarded(goal, &unkeyed);
        let keys = Arc::clone(&self.keys);
        Box::pin(async move {
            let inserted = pending.await?;
            if let Inserted::Done = inserted {
                held(&keys).insert(slot, stored);
            }
            Ok(inserted)
        })
    }

    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        self.inner.open_armed_goals(tenant)
    }

    fn purge_closed_goals(
        &self,
        closed_at_or_before: Timestamp,
        limit: usize,
    ) -> Pending<Vec<GoalId>> {
        let pending = self.inner.purge_closed_goals(closed_at_or_before, limit);
        let goals = Arc::clone(&self.goals);
        Box::pin(async move {
            let purged = pending.await?;
            let mut goals = held(&goals);
            for id in &purged {
                goals.remove(id);
            }
            Ok(purged)
        })
    }
}

impl Runs for BrokenReplica {
    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>> {
        let flaws = self.flaws;
        let pending = if flaws.reserves_without_row_lock || flaws.reserves_without_re_read {
            self.reserve_unlocked(run, expected_version)
        } else {
            self.inner.reserve_run(run, expected_version)
        };
        self.track(run.goal_id.clone(), None, pending)
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()> {
        self.inner.discard_run(run, at)
    }

    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError> {
        self.inner.run(run)
    }

    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.inner.runs_in_flight()
    }

    fn runs_orphaned(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.inner.runs_orphaned()
    }
}

impl Events for BrokenReplica {
    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError> {
        self.inner.events(goal, after)
    }

    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.inner.events_page(goal, after, limit)
    }

    fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        self.inner.set_event_sink(sink)
    }

    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.inner.tenant_events_after(tenant, goal, after, limit)
    }

    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError> {
        self.inner.evaluations(goal)
    }

    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError> {
        self.inner.evaluations_page(goal, after, limit)
    }
}

impl Schedule for BrokenReplica {
    /// Keeping goals, the replica schedules the ones it knows of (created
    /// or read here) from its own copy, as one process with timers would.
    fn due_schedule_goals(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError> {
        if self.flaws.lists_due_without_claim {
            return self.due_unclaimed(now, limit);
        }
        if !self.keeps_goals() {
            return self.inner.due_schedule_goals(now, limit);
        }
        // As the database's listing: a goal with no next fire yet is due.
        let mut due: Vec<(Option<Timestamp>, GoalId)> = held(&self.goals)
            .values()
            .filter(|goal| {
                goal.state == GoalState::Active
                    && !goal.paused
                    && goal.continuation.mode == Mode::Schedule
                    && goal.next_fire_at.is_none_or(|at| at <= now)
            })
            .map(|goal| (goal.next_fire_at, goal.id.clone()))
            .collect();
        due.sort();
        Ok(due.into_iter().take(limit).map(|(_, id)| id).collect())
    }

    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        self.inner.goals_past_deadline(now)
    }

    fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        self.inner.next_due_after(after)
    }

    fn heartbeat_goals(&self) -> Result<Vec<GoalId>, StoreError> {
        self.inner.heartbeat_goals()
    }
}

impl Verifiers for BrokenReplica {
    fn put_verifier(
        &self,
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
        replace: bool,
        max: Option<u64>,
    ) -> Pending<Registered> {
        self.inner.put_verifier(tenant, verifier, replace, max)
    }

    fn verifier(
        &self,
        tenant: &Tenant,
        name: &VerifierName,
    ) -> Result<Option<CriteriaVerifier>, StoreError> {
        self.inner.verifier(tenant, name)
    }

    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError> {
        self.inner.verifiers(tenant)
    }

    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool> {
        self.inner.put_judge_script(goal, verifier_ref)
    }

    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError> {
        self.inner.judge_script(goal)
    }
}

impl Keys for BrokenReplica {
    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError> {
        if self.remember != Remember::Keys {
            return self
                .inner
                .idempotency_key(tenant, key, expired_at_or_before);
        }
        let slot = (tenant.as_str().to_string(), key.to_string());
        Ok(held(&self.keys).get(&slot).cloned())
    }

    fn purge_idempotency_keys(&self, at: Timestamp) -> Pending<usize> {
        self.inner.purge_idempotency_keys(at)
    }
}

impl Deliveries for BrokenReplica {
    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()> {
        self.inner.configure_event_deliveries(subscriptions)
    }

    fn claim_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
    ) -> Pending<Option<goalpost_host::storage::DeliveryState>> {
        self.inner.claim_event_delivery(tenant, url)
    }

    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &goalpost_host::storage::DeliveryState,
    ) -> Pending<bool> {
        self.inner.record_event_delivery(tenant, url, state)
    }
}
