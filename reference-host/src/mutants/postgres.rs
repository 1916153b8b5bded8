//! Deliberately broken PostgreSQL stores: each switches off one guard a
//! cluster of replicas needs. The registered ones (`postgres-…` in the
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
use crate::domain::{
    wire, Change, CriteriaVerifier, Evaluation, Event, Goal, GoalId, GoalState, Mode, RunId,
    Tenant, Timestamp, VerifierName,
};
use crate::storage::{
    CreateGuard, EventSink, Inserted, Pending, PostgresStore, Registered, RunReservation, Store,
    StoreError, StoreFaults, StoredKey, StoredRun, Written, WrittenIfIdle,
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

/// [`PostgresStore::open`] with `mutant`'s flaw in the store's own SQL.
/// The flaws of [`StoreMutant::InMemoryLockOnly`] and
/// [`StoreMutant::FiresUnclaimedUnlocked`] drop the uniqueness of
/// `(goal_id, iteration)` from the schema: use a schema of its own. The
/// flaws kept in a replica's memory need [`open_store`].
pub fn open_postgres(url: &str, mutant: StoreMutant) -> Result<PostgresStore, StoreError> {
    let store = PostgresStore::open(url)?;
    let faults = match mutant {
        StoreMutant::InMemoryLockOnly => {
            store.batch(DROP_RUN_UNIQUENESS)?;
            StoreFaults {
                reserves_without_row_lock: true,
                ..StoreFaults::default()
            }
        }
        StoreMutant::ClaimWithoutSkipLocked => StoreFaults {
            lists_due_without_claim: true,
            ..StoreFaults::default()
        },
        StoreMutant::FiresUnclaimedUnlocked => {
            store.batch(DROP_RUN_UNIQUENESS)?;
            StoreFaults {
                reserves_without_row_lock: true,
                lists_due_without_claim: true,
                ..StoreFaults::default()
            }
        }
        StoreMutant::TrustsReplicaRead => StoreFaults {
            reserves_without_re_read: true,
            ..StoreFaults::default()
        },
        StoreMutant::KeysInReplicaMemory => StoreFaults::default(),
        StoreMutant::AppliesUnversioned => StoreFaults {
            applies_without_version_check: true,
            ..StoreFaults::default()
        },
    };
    Ok(store.with_faults(faults))
}

/// The store a replica runs `mutant` with: the broken PostgreSQL store,
/// wrapped in the replica's memory for the flaws that live there.
pub fn open_store(url: &str, mutant: StoreMutant) -> Result<Arc<dyn Store>, StoreError> {
    let inner = open_postgres(url, mutant)?;
    Ok(match mutant {
        StoreMutant::TrustsReplicaRead => Arc::new(ReplicaMemory::new(inner, Remember::Goals)),
        StoreMutant::KeysInReplicaMemory => Arc::new(ReplicaMemory::new(inner, Remember::Keys)),
        _ => Arc::new(inner),
    })
}

/// What a [`ReplicaMemory`] keeps to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remember {
    /// The goals it read or wrote, served to its reads.
    Goals,
    /// The idempotency keys of the creates it served.
    Keys,
}

type Shared<T> = Arc<Mutex<T>>;

fn held<T>(shared: &Mutex<T>) -> MutexGuard<'_, T> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A replica that keeps part of the state in its own memory, as one
/// process may, over the shared PostgreSQL store.
struct ReplicaMemory {
    inner: PostgresStore,
    remember: Remember,
    goals: Shared<HashMap<GoalId, Goal>>,
    keys: Shared<HashMap<(String, String), StoredKey>>,
}

impl ReplicaMemory {
    fn new(inner: PostgresStore, remember: Remember) -> ReplicaMemory {
        ReplicaMemory {
            inner,
            remember,
            goals: Arc::default(),
            keys: Arc::default(),
        }
    }

    fn keeps_goals(&self) -> bool {
        self.remember == Remember::Goals
    }

    /// Remembers a guarded write's goal as [`ReplicaMemory::track`] does;
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

impl Store for ReplicaMemory {
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

    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Pending<Written<Vec<Event>>> {
        let pending = self.inner.apply(change, expected_version, run, at);
        self.track(change.goal.id.clone(), Some(change.goal.clone()), pending)
    }

    /// Remembered as [`ReplicaMemory::track`] does; a refusal for a run
    /// in flight wrote nothing and changes nothing here.
    fn apply_unless_run_in_flight(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let pending = self
            .inner
            .apply_unless_run_in_flight(change, expected_version, at);
        self.track_if_idle(change, pending)
    }

    fn apply_arming(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
        max_armed: u64,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let pending = self
            .inner
            .apply_arming(change, expected_version, at, max_armed);
        self.track_if_idle(change, pending)
    }

    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>> {
        let pending = self.inner.reserve_run(run, expected_version);
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

    /// Keeping goals, the replica schedules the ones it knows of (created
    /// or read here) from its own copy, as one process with timers would.
    fn due_schedule_goals(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError> {
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

    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()> {
        self.inner.configure_event_deliveries(subscriptions)
    }

    fn claim_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
    ) -> Pending<Option<crate::storage::DeliveryState>> {
        self.inner.claim_event_delivery(tenant, url)
    }

    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &crate::storage::DeliveryState,
    ) -> Pending<bool> {
        self.inner.record_event_delivery(tenant, url, state)
    }
}
