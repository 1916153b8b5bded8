//! What the event webhook worker (`crate::event_webhooks`) asks of the
//! engine: where a tenant's delivery stands, its next undelivered events,
//! and one signed POST of one event. The worker decides order and
//! retries (with `domain::event_webhook`'s rules); this only reaches the
//! store and the webhook client on its behalf.

use std::time::Duration;

use super::{Engine, EngineError};
use crate::domain::event_webhook::EventWebhook;
use crate::domain::{wire, Event, Tenant};
use crate::storage::DeliveryState;
use crate::webhook::{Caller, WebhookError};

/// The header naming the event's type (`goal.evaluated`, `goal.closed`).
pub const EVENT_TYPE_HEADER: &str = "x-goalpost-event";
/// The header carrying the event's tenant-wide cursor, the key a receiver
/// deduplicates by: a resent event carries the same one.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

impl Engine {
    /// Stores `subscriptions` as the event webhooks delivered (see
    /// [`crate::storage::Deliveries::configure_event_deliveries`]).
    pub async fn configure_event_webhooks(
        &self,
        subscriptions: &[EventWebhook],
    ) -> Result<(), EngineError> {
        let pairs: Vec<(Tenant, String)> = subscriptions
            .iter()
            .map(|hook| (hook.tenant.clone(), hook.url.to_string()))
            .collect();
        Ok(self.store.configure_event_deliveries(&pairs).await?)
    }

    /// Takes the right to deliver the subscription's events (`None`:
    /// another replica holds it, or the subscription is gone).
    pub async fn claim_event_webhook(
        &self,
        hook: &EventWebhook,
    ) -> Result<Option<DeliveryState>, EngineError> {
        Ok(self
            .store
            .claim_event_delivery(&hook.tenant, hook.url.as_str())
            .await?)
    }

    /// Stores where the subscription's delivery stands (`false`: this
    /// process no longer holds it).
    pub async fn record_event_webhook(
        &self,
        hook: &EventWebhook,
        state: &DeliveryState,
    ) -> Result<bool, EngineError> {
        Ok(self
            .store
            .record_event_delivery(&hook.tenant, hook.url.as_str(), state)
            .await?)
    }

    /// At most `limit` of the tenant's events after `cursor`, in cursor
    /// order (a read off the async workers).
    pub async fn events_to_deliver(
        &self,
        tenant: &Tenant,
        cursor: u64,
        limit: usize,
    ) -> Result<Vec<Event>, EngineError> {
        let tenant = tenant.clone();
        self.db(move |store| store.tenant_events_after(&tenant, None, cursor, limit))
            .await
    }

    /// POSTs `event` to the subscription's URL: the content-free envelope
    /// the events list and the live stream show (`wire::event`), signed
    /// for the tenant as arm calls are, with its cursor as the
    /// `Idempotency-Key`. The answer's status, or why there is none.
    pub async fn post_event(
        &self,
        hook: &EventWebhook,
        event: &Event,
        timeout: Duration,
    ) -> Result<u16, WebhookError> {
        let goal = event.payload.goal_id().as_str();
        let body = wire::event_text(event).into_bytes();
        let headers = [
            (IDEMPOTENCY_KEY_HEADER, event.cursor.to_string()),
            (EVENT_TYPE_HEADER, event.payload.kind().to_string()),
        ];
        self.notifier
            .notify(
                hook.url.as_str(),
                body,
                &headers,
                Caller {
                    tenant: hook.tenant.as_str(),
                    goal,
                },
                timeout,
            )
            .await
    }
}
