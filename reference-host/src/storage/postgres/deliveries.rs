//! Event-webhook delivery state and claims on PostgreSQL ([`Deliveries`]).

use std::time::Duration;

use tokio_postgres::Row;

use super::cached::Cached;
use super::{ms, pool_error, timestamp, unsigned, PostgresStore};
use crate::domain::{Tenant, Timestamp};
use crate::storage::group_commit::Pending;
use crate::storage::{Deliveries, DeliveryState, StoreError};

/// How long a replica's claim on delivering a tenant's event webhook keeps
/// the others away. Renewed with every attempt, each of which ends within
/// the delivery timeout (seconds), so a live replica never loses it; a
/// replica that died hands the tenant over this long after its last
/// attempt.
pub const DELIVERY_CLAIM: Duration = Duration::from_secs(30);

impl Deliveries for PostgresStore {
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
