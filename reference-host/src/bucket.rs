//! Token buckets per tenant on the engine's clock: each fills at a rate
//! up to one second's worth. The outbound limit keeps starts in them
//! (`engine::outbound`), the judge pool steps of matching, which a slice
//! may overdraw (`judge::pool`).

use std::collections::HashMap;

use crate::domain::{Tenant, Timestamp};

/// What a tenant has left, and when it was last filled.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    pub level: f64,
    at: Timestamp,
}

#[derive(Debug, Default)]
pub struct TenantBuckets {
    buckets: HashMap<Tenant, Bucket>,
}

impl TenantBuckets {
    /// `tenant`'s bucket filled at `per_sec` up to `now`, never past one
    /// second's worth; full the first time the tenant is seen. A clock
    /// that steps back fills nothing.
    pub fn refilled(&mut self, tenant: &Tenant, now: Timestamp, per_sec: f64) -> &mut Bucket {
        let bucket = self.buckets.entry(tenant.clone()).or_insert(Bucket {
            level: per_sec,
            at: now,
        });
        #[allow(clippy::cast_precision_loss)] // milliseconds far below 2^52
        let elapsed = (now.unix_ms() - bucket.at.unix_ms()).max(0) as f64 / 1000.0;
        bucket.level = (bucket.level + elapsed * per_sec).min(per_sec);
        bucket.at = bucket.at.max(now);
        bucket
    }

    /// `tenant`'s bucket as last filled, if it has one.
    pub fn get(&self, tenant: &Tenant) -> Option<&Bucket> {
        self.buckets.get(tenant)
    }
}
