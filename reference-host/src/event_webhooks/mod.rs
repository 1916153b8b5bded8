//! Outbound event webhooks (DESIGN "Event webhooks"): every committed event
//! of a subscribed tenant is POSTed to the URL the operator gave for it
//! (`--event-webhook TENANT=URL`), signed like arm calls, at least once, in
//! cursor order.
//!
//! One step, [`EventWebhooks::tick`], that tests call with a manual clock;
//! the host runs [`EventWebhooks::run`], which ticks every `--tick-ms`.
//! A tick starts a delivery task for each subscription that is neither
//! busy nor backing off, at most [`MAX_IN_FLIGHT`] at once, taking
//! subscriptions in turn from a different one each tick. A task works
//! through at most one page ([`PAGE`]) of the tenant's events after its
//! delivered cursor, one POST at a time: a 2xx stores the event's cursor
//! as delivered and goes on to the next; anything else stores the
//! backoff (`domain::event_webhook::retry_delay_ms`) and ends the task,
//! and the same event is tried again once the backoff is over. So:
//! - order holds: one request in flight per tenant, the next event only
//!   after the previous one was delivered;
//! - at-least-once: the cursor is stored only after the 2xx, so a crash
//!   between the two resends that event (same `Idempotency-Key`); nothing
//!   is skipped, and retention keeps what is not delivered yet;
//! - isolation: delivery reads committed events from the store after the
//!   fact, so it never blocks a write, and a slow or dead receiver holds
//!   up only its own tenant's task (and one of the slots, for at most the
//!   timeout).
//!
//! On PostgreSQL the store's claim makes one replica deliver a tenant at a
//! time; the backoff is stored with the cursor, so a restart or another
//! replica keeps it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Mutex as AsyncMutex, Semaphore};
use tokio::task::JoinSet;

use crate::domain::event_webhook::{retry_delay_ms, Attempt, EventWebhook};
use crate::domain::{Tenant, Timestamp};
use crate::engine::{Engine, EngineError};
use crate::storage::DeliveryState;

/// Events a delivery task reads at once; the next tick goes on from there.
pub const PAGE: usize = 100;
/// Subscriptions delivered at once, all tenants together: receivers that
/// hang can hold no more than these slots, each for at most the timeout.
pub const MAX_IN_FLIGHT: usize = 64;
/// The longest one POST may take, connect to status line.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a replica leaves a subscription alone that another replica
/// is delivering (or that it could not read) before it looks again.
pub const NOT_HELD_RETRY_MS: u64 = 5_000;

/// The worker's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Longest one POST may take.
    pub timeout: Duration,
    /// Events a task reads (and may send) at once; ≥ 1.
    pub page: usize,
    /// Subscriptions delivered at once; ≥ 1.
    pub max_in_flight: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            timeout: DEFAULT_TIMEOUT,
            page: PAGE,
            max_in_flight: MAX_IN_FLIGHT,
        }
    }
}

/// Where one subscription stands, as this process last saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The newest cursor delivered.
    pub delivered: u64,
    /// Failed attempts in a row at the next event.
    pub failures: u32,
    /// When the next event is tried, if it is backing off.
    pub retry_at: Option<Timestamp>,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// POSTs made (whatever their answer).
    pub attempts: u64,
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tick {
    /// Tenants whose delivery task was started.
    pub started: Vec<Tenant>,
}

struct Slot {
    hook: EventWebhook,
    busy: bool,
    /// Not looked at before this (backoff, or another replica's claim).
    next_at: Option<Timestamp>,
    status: Status,
}

type Slots = Arc<Mutex<Vec<Slot>>>;

fn lock(slots: &Slots) -> std::sync::MutexGuard<'_, Vec<Slot>> {
    slots.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct EventWebhooks {
    engine: Arc<Engine>,
    settings: Settings,
    slots: Slots,
    turn: AtomicUsize,
    permits: Arc<Semaphore>,
    tasks: AsyncMutex<JoinSet<()>>,
}

impl std::fmt::Debug for EventWebhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWebhooks")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl EventWebhooks {
    /// Stores `hooks` as the subscriptions (a new or changed URL starts
    /// after the tenant's newest event now; see
    /// [`crate::storage::Deliveries::configure_event_deliveries`]) and returns
    /// the worker that delivers them. The caller checked them
    /// (`domain::event_webhook::check_subscriptions`, the egress policy).
    pub async fn start(
        engine: Arc<Engine>,
        hooks: Vec<EventWebhook>,
        settings: Settings,
    ) -> Result<EventWebhooks, EngineError> {
        engine.configure_event_webhooks(&hooks).await?;
        let settings = Settings {
            page: settings.page.max(1),
            max_in_flight: settings.max_in_flight.max(1),
            ..settings
        };
        let slots = hooks
            .into_iter()
            .map(|hook| Slot {
                hook,
                busy: false,
                next_at: None,
                status: Status::default(),
            })
            .collect();
        Ok(EventWebhooks {
            engine,
            permits: Arc::new(Semaphore::new(settings.max_in_flight)),
            settings,
            slots: Arc::new(Mutex::new(slots)),
            turn: AtomicUsize::new(0),
            tasks: AsyncMutex::new(JoinSet::new()),
        })
    }

    /// Where the tenant's subscription stands, as this process last saw
    /// it (`None`: not subscribed).
    pub fn status(&self, tenant: &Tenant) -> Option<Status> {
        lock(&self.slots)
            .iter()
            .find(|slot| slot.hook.tenant == *tenant)
            .map(|slot| slot.status.clone())
    }

    /// One step at `now`: starts a delivery task for every subscription
    /// that is idle and not backing off, while slots are free. The tasks
    /// run in the background; [`EventWebhooks::settle`] waits for them.
    pub async fn tick(&self, now: Timestamp) -> Tick {
        let mut tick = Tick::default();
        let mut tasks = self.tasks.lock().await;
        while tasks.try_join_next().is_some() {}
        let mut slots = lock(&self.slots);
        let count = slots.len();
        if count == 0 {
            return tick;
        }
        let first = self.turn.fetch_add(1, Ordering::Relaxed) % count;
        for offset in 0..count {
            let index = (first + offset) % count;
            let slot = &mut slots[index];
            if slot.busy || slot.next_at.is_some_and(|at| at > now) {
                continue;
            }
            let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
                // Every slot is taken; the rest wait for a later tick.
                break;
            };
            slot.busy = true;
            tick.started.push(slot.hook.tenant.clone());
            let task = Delivery {
                engine: Arc::clone(&self.engine),
                hook: slot.hook.clone(),
                hint: slot.status.delivered,
                slots: Arc::clone(&self.slots),
                index,
                settings: self.settings,
            };
            tasks.spawn(async move {
                task.run().await;
                drop(permit);
            });
        }
        tick
    }

    /// Waits until every delivery task started so far has ended.
    pub async fn settle(&self) {
        let mut tasks = self.tasks.lock().await;
        while tasks.join_next().await.is_some() {}
    }

    /// Ticks every `every` until `shutdown` turns true, then stops the
    /// tasks in flight: an event whose POST was cut off was not stored as
    /// delivered and is sent again after the restart.
    pub async fn run(self: Arc<Self>, every: Duration, mut shutdown: watch::Receiver<bool>) {
        let every = every.max(Duration::from_millis(1));
        loop {
            let now = self.engine.clock().now();
            self.tick(now).await;
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        break;
                    }
                }
            }
        }
        self.stop().await;
    }

    /// Cuts off every delivery task in flight (shutdown, or a test's
    /// crash): nothing it had not stored as delivered counts as delivered.
    pub async fn stop(&self) {
        let mut tasks = self.tasks.lock().await;
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        // A later tick starts over from what is stored.
        for slot in lock(&self.slots).iter_mut() {
            slot.busy = false;
        }
    }
}

/// One task's work on one subscription.
struct Delivery {
    engine: Arc<Engine>,
    hook: EventWebhook,
    /// The cursor this process last knew delivered: when nothing is
    /// stored past it, the task ends without claiming anything.
    hint: u64,
    slots: Slots,
    index: usize,
    settings: Settings,
}

/// How a task ended: when the subscription is next looked at.
enum Next {
    /// At the next tick.
    Now,
    At(Timestamp),
}

impl Delivery {
    async fn run(self) {
        let next = match self.deliver().await {
            Ok(next) => next,
            Err(error) => {
                tracing::warn!(tenant = %self.hook.tenant, %error, "event webhook: reading or storing the delivery state failed; looking again later");
                Next::At(self.later(NOT_HELD_RETRY_MS))
            }
        };
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get_mut(self.index) {
            slot.busy = false;
            slot.next_at = match next {
                Next::Now => None,
                Next::At(at) => Some(at),
            };
        }
    }

    fn later(&self, ms: u64) -> Timestamp {
        self.engine.clock().now().saturating_add_ms(ms)
    }

    fn update(&self, change: impl FnOnce(&mut Status)) {
        if let Some(slot) = lock(&self.slots).get_mut(self.index) {
            change(&mut slot.status);
        }
    }

    async fn deliver(&self) -> Result<Next, EngineError> {
        let tenant = &self.hook.tenant;
        // Cheap when idle: one indexed read, and no claim (a write on a
        // shared database) unless there is something to send.
        if self
            .engine
            .events_to_deliver(tenant, self.hint, 1)
            .await?
            .is_empty()
        {
            return Ok(Next::Now);
        }
        let Some(mut state) = self.engine.claim_event_webhook(&self.hook).await? else {
            // Another replica delivers this tenant (or the subscription
            // went away): look again later.
            return Ok(Next::At(self.later(NOT_HELD_RETRY_MS)));
        };
        self.update(|status| {
            status.delivered = state.delivered;
            status.failures = state.failures;
            status.retry_at = state.retry_at;
        });
        if let Some(at) = state.retry_at {
            if at > self.engine.clock().now() {
                return Ok(Next::At(at));
            }
        }
        let events = self
            .engine
            .events_to_deliver(tenant, state.delivered, self.settings.page)
            .await?;
        for event in events {
            let answer = self
                .engine
                .post_event(&self.hook, &event, self.settings.timeout)
                .await;
            self.update(|status| status.attempts += 1);
            let (attempt, error) = match answer {
                Ok(status) => (
                    Attempt::from_status(status),
                    format!("the receiver answered HTTP {status}"),
                ),
                Err(error) => (Attempt::Failed, error.to_string()),
            };
            if attempt == Attempt::Delivered {
                state = DeliveryState {
                    delivered: event.cursor,
                    failures: 0,
                    retry_at: None,
                };
                if !self.engine.record_event_webhook(&self.hook, &state).await? {
                    return Ok(Next::At(self.later(NOT_HELD_RETRY_MS)));
                }
                self.update(|status| {
                    status.delivered = state.delivered;
                    status.failures = 0;
                    status.retry_at = None;
                    status.last_error = None;
                });
                continue;
            }
            let failures = state.failures.saturating_add(1);
            let delay = retry_delay_ms(failures, attempt == Attempt::Gone, jitter());
            let retry_at = self.later(delay);
            state = DeliveryState {
                delivered: state.delivered,
                failures,
                retry_at: Some(retry_at),
            };
            if attempt == Attempt::Gone {
                tracing::warn!(%tenant, cursor = event.cursor, "event webhook: the receiver answered 410 Gone; retrying at the longest delay until the operator changes or removes --event-webhook");
            } else {
                tracing::warn!(%tenant, cursor = event.cursor, failures, delay_ms = delay, %error, "event webhook: delivery failed; the same event is retried");
            }
            self.update(|status| {
                status.failures = failures;
                status.retry_at = Some(retry_at);
                status.last_error = Some(error);
            });
            // Stored so a restart (or another replica) keeps the backoff;
            // if this fails the backoff still holds in this process.
            if let Err(error) = self.engine.record_event_webhook(&self.hook, &state).await {
                tracing::warn!(%tenant, %error, "event webhook: storing the backoff failed");
            }
            return Ok(Next::At(retry_at));
        }
        Ok(Next::Now)
    }
}

/// A uniform number in `[0, 1]` for the backoff's jitter.
fn jitter() -> f64 {
    let bits = uuid::Uuid::new_v4().as_u128() & 0xffff_ffff;
    bits as f64 / f64::from(u32::MAX)
}
