//! Deliberately broken PostgreSQL stores: each switches off one guard a
//! cluster of replicas needs. The suite's kill matrix cannot reach them
//! (it talks to one endpoint); `tests/postgres_cluster.rs` kills each.

use crate::storage::{PostgresStore, StoreError, StoreFaults};

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
}

/// [`PostgresStore::open`] with `mutant`'s flaw. The flaw of
/// [`StoreMutant::InMemoryLockOnly`] drops the uniqueness of
/// `(goal_id, iteration)` from the schema: use a schema of its own.
pub fn open_postgres(url: &str, mutant: StoreMutant) -> Result<PostgresStore, StoreError> {
    let store = PostgresStore::open(url)?;
    let faults = match mutant {
        StoreMutant::InMemoryLockOnly => {
            store.batch("ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_goal_id_iteration_key")?;
            StoreFaults {
                reserves_without_row_lock: true,
                ..StoreFaults::default()
            }
        }
        StoreMutant::ClaimWithoutSkipLocked => StoreFaults {
            lists_due_without_claim: true,
            ..StoreFaults::default()
        },
    };
    Ok(store.with_faults(faults))
}
