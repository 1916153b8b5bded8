//! The event-webhook deliveries aggregate: the [`Deliveries`] trait.

use crate::domain::{Tenant, Timestamp};
use crate::storage::Pending;

/// Where one tenant's event webhook stands, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryState {
    /// Every event of the tenant with a cursor at or below this was
    /// delivered (answered 2xx).
    pub delivered: u64,
    /// Failed attempts in a row at the next event.
    pub failures: u32,
    /// Not before this is the next event tried (the backoff), when set.
    pub retry_at: Option<Timestamp>,
}

/// Where each tenant's event webhook stands, and which replica delivers it.
pub trait Deliveries {
    /// Makes `subscriptions` (tenant, URL) the event webhooks delivered
    /// (`event_webhooks/`), in one transaction. A tenant new here, or whose
    /// URL changed, starts after its newest event now (nothing older is
    /// sent to a URL that was not subscribed when it happened); one whose
    /// URL is unchanged goes on from its stored cursor; a tenant no longer
    /// subscribed is forgotten, so its undelivered events stop holding
    /// retention.
    fn configure_event_deliveries(&self, subscriptions: &[(Tenant, String)]) -> Pending<()>;

    /// Takes, or renews, the right to deliver `tenant`'s events to `url`
    /// and reads where its delivery stands. `None`: the tenant is not
    /// subscribed to `url`, or (on a database several replicas share)
    /// another replica holds the right and its claim has not lapsed.
    fn claim_event_delivery(&self, tenant: &Tenant, url: &str) -> Pending<Option<DeliveryState>>;

    /// Stores where `tenant`'s delivery to `url` stands after an attempt
    /// (the delivered cursor never goes back), and renews the claim.
    /// `false`: nothing was written (the claim went to another replica,
    /// or the subscription is gone), and the caller stops delivering.
    fn record_event_delivery(
        &self,
        tenant: &Tenant,
        url: &str,
        state: &DeliveryState,
    ) -> Pending<bool>;
}
