//! Idempotency keys on SQLite ([`Keys`]).

use rusqlite::{params, Connection, OptionalExtension};

use super::SqliteStore;
use crate::domain::{GoalId, Tenant, Timestamp};
use crate::storage::group_commit::Pending;
use crate::storage::record::from_json;
use crate::storage::{Keys, StoreError, StoredKey};

pub(super) fn stored_key(
    connection: &Connection,
    tenant: &Tenant,
    key: &str,
    expired_at_or_before: Timestamp,
) -> Result<Option<StoredKey>, StoreError> {
    let row: Option<(String, String, String, String)> = connection
        .prepare_cached(
            "SELECT goal_id, fingerprint, answer, etag FROM idempotency_keys
             WHERE tenant = ?1 AND key = ?2 AND created_ms > ?3",
        )?
        .query_row(
            params![tenant.as_str(), key, expired_at_or_before.unix_ms()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()?;
    row.map(|(goal_id, fingerprint, answer, etag)| {
        Ok(StoredKey {
            goal_id: GoalId::parse(&goal_id)
                .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
            fingerprint,
            answer: from_json(&answer)?,
            etag,
        })
    })
    .transpose()
}

impl Keys for SqliteStore {
    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError> {
        self.read(|connection| stored_key(connection, tenant, key, expired_at_or_before))
    }

    fn purge_idempotency_keys(&self, at: Timestamp) -> Pending<usize> {
        let at_ms = at.unix_ms();
        self.writer.submit(move |connection| {
            Ok(connection
                .prepare_cached("DELETE FROM idempotency_keys WHERE created_ms <= ?1")?
                .execute(params![at_ms])?)
        })
    }
}
