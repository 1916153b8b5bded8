//! A per-tenant limit on the outbound work the host starts: scheduled
//! fires and heartbeat probes (each at least one call to the arm, and a
//! fire a call to the verifier too), and the `continue`s and reported runs
//! a tenant asks for (a call to the arm and the verifier, or to the
//! verifier). A token bucket per tenant, filled at `per_sec` up to one
//! second's worth, on the engine's clock. Reported runs used to skip it:
//! one client made the host call its verifier 1,304 times a second
//! against a limit of 100 for fires, a signed relay that hid the client.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::bucket::TenantBuckets;
use crate::domain::{Tenant, Timestamp};

#[derive(Debug)]
pub struct OutboundLimit {
    per_sec: f64,
    buckets: TenantBuckets,
}

impl OutboundLimit {
    pub fn new(per_sec: u32) -> OutboundLimit {
        OutboundLimit {
            per_sec: f64::from(per_sec.max(1)),
            buckets: TenantBuckets::default(),
        }
    }

    /// Takes one start for `tenant` at `now`; `false` when its bucket is
    /// empty (the goal stays due and is started at a later tick).
    pub fn admit(&mut self, tenant: &Tenant, now: Timestamp) -> bool {
        self.take(tenant, now).is_ok()
    }

    /// [`OutboundLimit::admit`], saying how long until a start is allowed
    /// when it is not.
    pub fn take(&mut self, tenant: &Tenant, now: Timestamp) -> Result<(), Duration> {
        let per_sec = self.per_sec;
        let bucket = self.buckets.refilled(tenant, now, per_sec);
        if bucket.level >= 1.0 {
            bucket.level -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.level) / per_sec))
        }
    }
}

/// The engine's outbound limit, shared by the scheduler and the requests
/// that start work; none when unlimited.
#[derive(Debug, Default)]
pub struct Outbound {
    limit: Option<Mutex<OutboundLimit>>,
}

impl Outbound {
    pub fn new(per_sec: Option<u32>) -> Outbound {
        Outbound {
            limit: per_sec.map(|per_sec| Mutex::new(OutboundLimit::new(per_sec))),
        }
    }

    /// Takes one start for `tenant` at `now`, if its bucket has one.
    pub fn admit(&self, tenant: &Tenant, now: Timestamp) -> bool {
        self.take(tenant, now).is_ok()
    }

    /// [`Outbound::admit`], with how long to wait when refused.
    pub fn take(&self, tenant: &Tenant, now: Timestamp) -> Result<(), Duration> {
        match &self.limit {
            None => Ok(()),
            Some(limit) => limit
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(tenant, now),
        }
    }

    pub fn is_limited(&self) -> bool {
        self.limit.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_starts_at_most_its_rate() {
        let mut limit = OutboundLimit::new(10);
        let (a, b) = (
            Tenant::parse("a").expect("tenant"),
            Tenant::parse("b").expect("tenant"),
        );
        let start = Timestamp::from_unix_ms(1_000_000).expect("time");
        let admitted = (0..50).filter(|_| limit.admit(&a, start)).count();
        assert_eq!(admitted, 10, "one second's worth at once");
        assert!(limit.admit(&b, start), "another tenant has its own bucket");
        assert!(!limit.admit(&a, start.saturating_add_ms(50)));
        assert!(limit.admit(&a, start.saturating_add_ms(100)));
        let later = start.saturating_add_ms(60_000);
        let admitted = (0..50).filter(|_| limit.admit(&a, later)).count();
        assert_eq!(admitted, 10, "never more than a second's worth saved up");
        assert_eq!(
            limit.take(&a, later),
            Err(Duration::from_millis(100)),
            "a token every 100 ms"
        );
    }
}
