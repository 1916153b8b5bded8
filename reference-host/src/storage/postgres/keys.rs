//! Idempotency keys on PostgreSQL ([`Keys`]).

use super::cached::Cached;
use super::{goal_id, pool_error, PostgresStore};
use crate::domain::{Tenant, Timestamp};
use crate::storage::group_commit::Pending;
use crate::storage::record::from_json;
use crate::storage::{Keys, StoreError, StoredKey};

pub(super) async fn stored_key(
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

impl Keys for PostgresStore {
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
}
