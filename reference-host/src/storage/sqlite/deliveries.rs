//! Event-webhook delivery state on SQLite ([`Deliveries`]).

use rusqlite::{params, OptionalExtension};

use super::{int, unsigned, SqliteStore};
use crate::domain::{Tenant, Timestamp};
use crate::storage::group_commit::Pending;
use crate::storage::prepared::failed;
use crate::storage::{Deliveries, DeliveryState, StoreError};

impl Deliveries for SqliteStore {
    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()> {
        let subscriptions: Vec<(String, String)> = subscriptions
            .iter()
            .map(|(tenant, url)| (tenant.as_str().to_string(), url.clone()))
            .collect();
        self.writer.submit(move |connection| {
            for (tenant, url) in &subscriptions {
                connection
                    .prepare_cached(
                        "INSERT INTO event_deliveries (tenant, url, delivered, failures, retry_at_ms)
                         VALUES (?1, ?2,
                                 COALESCE((SELECT MAX(cursor) FROM tenant_feed
                                           WHERE tenant = CAST(?1 AS TEXT)), 0),
                                 0, NULL)
                         ON CONFLICT (tenant) DO UPDATE
                         SET url = excluded.url, delivered = excluded.delivered,
                             failures = 0, retry_at_ms = NULL
                         WHERE event_deliveries.url <> excluded.url",
                    )?
                    .execute(params![tenant, url])?;
            }
            let stored: Vec<String> = connection
                .prepare_cached("SELECT tenant FROM event_deliveries")?
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            for tenant in stored {
                if !subscriptions.iter().any(|(kept, _)| *kept == tenant) {
                    connection
                        .prepare_cached("DELETE FROM event_deliveries WHERE tenant = ?1")?
                        .execute(params![tenant])?;
                }
            }
            Ok(())
        })
    }

    /// One process owns a SQLite file: nobody else can hold the claim.
    fn claim_event_delivery(&self, tenant: &Tenant, url: &str) -> Pending<Option<DeliveryState>> {
        let read = self.read(|connection| {
            let row = connection
                .prepare_cached(
                    "SELECT delivered, failures, retry_at_ms FROM event_deliveries
                     WHERE tenant = ?1 AND url = ?2",
                )?
                .query_row(params![tenant.as_str(), url], delivery_state)
                .optional()?;
            row.map(into_delivery_state).transpose()
        });
        Box::pin(std::future::ready(read))
    }

    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &DeliveryState,
    ) -> Pending<bool> {
        let (tenant, url) = (tenant.as_str().to_string(), url.to_string());
        let delivered = match int(state.delivered) {
            Ok(delivered) => delivered,
            Err(error) => return failed(error),
        };
        let failures = i64::from(state.failures);
        let retry_at_ms = state.retry_at.map(Timestamp::unix_ms);
        self.writer.submit(move |connection| {
            let written = connection
                .prepare_cached(
                    "UPDATE event_deliveries
                     SET delivered = MAX(delivered, ?3), failures = ?4, retry_at_ms = ?5
                     WHERE tenant = ?1 AND url = ?2",
                )?
                .execute(params![tenant, url, delivered, failures, retry_at_ms])?;
            Ok(written == 1)
        })
    }
}

fn delivery_state(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, i64, Option<i64>)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

fn into_delivery_state(
    (delivered, failures, retry_at_ms): (i64, i64, Option<i64>),
) -> Result<DeliveryState, StoreError> {
    Ok(DeliveryState {
        delivered: unsigned(delivered)?,
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        retry_at: match retry_at_ms {
            None => None,
            Some(ms) => Some(
                Timestamp::from_unix_ms(ms)
                    .ok_or_else(|| StoreError::Corrupt(format!("timestamp {ms}")))?,
            ),
        },
    })
}
