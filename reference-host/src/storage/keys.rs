//! The idempotency-keys aggregate: the [`Keys`] trait.

use crate::domain::{GoalId, Tenant, Timestamp};
use crate::storage::{Pending, StoreError};

/// An `Idempotency-Key` as stored: what it made, the body it came with, and
/// the answer (goal JSON and `ETag`) the create got.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredKey {
    pub goal_id: GoalId,
    pub fingerprint: String,
    pub answer: serde_json::Value,
    pub etag: String,
}

/// `Idempotency-Key`s of creates (a guarded create stores them:
/// [`Goals::insert_goal_guarded`](crate::storage::Goals::insert_goal_guarded)).
pub trait Keys {
    /// The tenant's key, unless stored at or before `expired_at_or_before`.
    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError>;

    /// Forgets keys stored at or before `at`; returns how many.
    fn purge_idempotency_keys(&self, at: Timestamp) -> Pending<usize>;
}
