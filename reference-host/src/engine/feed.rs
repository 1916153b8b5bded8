//! The live event feed behind `GET {base}/events`: every committed event,
//! fanned out to the tenant's subscribers.
//!
//! The store tells the feed about events on its writer thread, in commit
//! order, once they committed ([`EventSink`]). The writer only queues them
//! (a bounded outbox) and wakes the feed's pump, a task on the runtime,
//! which publishes them in the same order: rendering an event and waking
//! every stream that waits for it is work for the runtime's workers, not
//! for the one thread every commit goes through: there, every commit of
//! every tenant would wait while one tenant's subscribers are woken.
//! Publishing is one send into a tenant's bounded broadcast ring: it never
//! waits for a subscriber, so a slow or stuck reader cannot hold up a write. A subscriber that falls more than
//! the ring's length behind is dropped (it learns so and may resume from
//! its last cursor) instead of slowing anybody down; if the pump itself
//! falls more than the outbox behind, every subscription ends and resumes
//! from storage the same way.
//!
//! A subscription starts by listening, then reads what is stored after the
//! caller's cursor, then follows the live events, skipping any it already
//! delivered from storage: an event committed while it connected is in one
//! of the two, and is delivered once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{broadcast, Notify};

use super::{Engine, EngineError};
use crate::domain::{wire, Event, GoalId, Tenant};
use crate::storage::EventSink;

/// How many events a subscriber may fall behind before it is dropped.
pub const DEFAULT_SUBSCRIBER_BUFFER: usize = 1024;
/// Streams one tenant may hold open at once.
pub const DEFAULT_MAX_SUBSCRIBERS_PER_TENANT: usize = 32;
/// How often an idle stream sends a comment, so proxies and clients see
/// the connection is alive.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);
/// How long a stream that found one event ready waits for more before it
/// writes: events of a busy tenant then go out several to a write, which
/// is what lets one event reach many subscribers cheaply (see
/// BENCHMARKS.md, "Live event stream fan-out").
pub const DEFAULT_COALESCE: Duration = Duration::from_millis(10);
/// The longest coalescing wait, whatever the operator asks.
pub const MAX_COALESCE: Duration = Duration::from_millis(250);
/// The most lag a subscriber may be allowed, whatever the operator asks:
/// the ring holds this many events per tenant.
pub const MAX_SUBSCRIBER_BUFFER: usize = 65_536;
/// Committed events that may wait for the pump; past this, the pump is
/// hopelessly behind and every subscription resumes from storage instead.
pub const MAX_OUTBOX: usize = MAX_SUBSCRIBER_BUFFER;
/// Stored events a subscription reads per page while it catches up.
const BACKFILL_PAGE: usize = 500;

/// The feed's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedSettings {
    /// Events a subscriber may lag behind before it is dropped; ≥ 1.
    pub buffer: usize,
    /// Open subscriptions per tenant; a further one is refused.
    pub max_subscribers_per_tenant: usize,
    /// Interval between heartbeat comments on an idle stream.
    pub heartbeat: Duration,
    /// How long a stream waits for more events after one is ready, so
    /// they share a write; zero writes at once. At most [`MAX_COALESCE`].
    pub coalesce: Duration,
}

impl Default for FeedSettings {
    fn default() -> FeedSettings {
        FeedSettings {
            buffer: DEFAULT_SUBSCRIBER_BUFFER,
            max_subscribers_per_tenant: DEFAULT_MAX_SUBSCRIBERS_PER_TENANT,
            heartbeat: DEFAULT_HEARTBEAT,
            coalesce: DEFAULT_COALESCE,
        }
    }
}

/// An event as the feed hands it out: with its wire JSON rendered once,
/// when it is published, not once per subscriber (with a thousand
/// subscribers, rendering per subscriber was most of the fan-out's cost).
#[derive(Debug, Clone, PartialEq)]
pub struct FeedEvent {
    pub event: Event,
    /// `wire::event_text(&event)`: the event as the list shows it.
    pub json: Arc<str>,
}

impl FeedEvent {
    fn new(event: Event) -> FeedEvent {
        let json = wire::event_text(&event).into();
        FeedEvent { event, json }
    }
}

type Ring = broadcast::Sender<Arc<FeedEvent>>;

/// One tenant's rings: the tenant-wide one, and one for each goal that a
/// subscriber follows alone (`?goal=`). An event goes into the tenant-wide
/// ring and its own goal's, so it wakes only the subscribers that want it:
/// a tenant with many people each watching one goal does not wake all of
/// them for every event.
#[derive(Debug, Default)]
struct Rings {
    all: Option<Ring>,
    goals: HashMap<GoalId, Ring>,
}

impl Rings {
    fn receivers(&self) -> usize {
        self.all.as_ref().map_or(0, Ring::receiver_count)
            + self.goals.values().map(Ring::receiver_count).sum::<usize>()
    }

    /// Forgets the rings nobody listens to any more.
    fn prune(&mut self) {
        if self
            .all
            .as_ref()
            .is_some_and(|ring| ring.receiver_count() == 0)
        {
            self.all = None;
        }
        self.goals.retain(|_, ring| ring.receiver_count() > 0);
    }

    fn is_empty(&self) -> bool {
        self.all.is_none() && self.goals.is_empty()
    }
}

/// Committed events the writer handed over, waiting for the pump.
#[derive(Debug, Default)]
struct Outbox {
    batches: Vec<(Tenant, Vec<Event>)>,
    /// Events in `batches` (bounded by [`MAX_OUTBOX`]).
    events: usize,
    /// Events in `batches` per tenant.
    per_tenant: HashMap<Tenant, usize>,
}

impl Outbox {
    /// The tenant with the most events waiting, counting `extra` more for
    /// `tenant`.
    fn largest(&self, tenant: &Tenant, extra: usize) -> Tenant {
        let mine = self.per_tenant.get(tenant).copied().unwrap_or(0) + extra;
        self.per_tenant
            .iter()
            .filter(|(other, _)| *other != tenant)
            .max_by_key(|(_, count)| **count)
            .filter(|(_, count)| **count > mine)
            .map_or_else(|| tenant.clone(), |(other, _)| other.clone())
    }

    /// Lets go of `tenant`'s waiting events.
    fn forget(&mut self, tenant: &Tenant) {
        self.batches.retain(|(owner, _)| owner != tenant);
        self.events -= self.per_tenant.remove(tenant).unwrap_or(0);
    }
}

/// The tenants' broadcast rings. A tenant has some only while somebody
/// listens.
#[derive(Debug)]
pub struct Feed {
    settings: FeedSettings,
    tenants: Mutex<HashMap<Tenant, Rings>>,
    outbox: Mutex<Outbox>,
    /// Wakes the pump: the outbox has something.
    ready: Arc<Notify>,
    pumping: std::sync::Once,
}

impl Feed {
    pub fn new(settings: FeedSettings) -> Feed {
        Feed {
            settings,
            tenants: Mutex::default(),
            outbox: Mutex::default(),
            ready: Arc::new(Notify::new()),
            pumping: std::sync::Once::new(),
        }
    }

    pub fn settings(&self) -> &FeedSettings {
        &self.settings
    }

    fn tenants(&self) -> std::sync::MutexGuard<'_, HashMap<Tenant, Rings>> {
        unpoisoned(&self.tenants)
    }

    /// Starts the pump on the current runtime, once: at the first
    /// subscription, since until somebody listens nothing is queued.
    fn start_pump(self: &Arc<Self>) {
        self.pumping.call_once(|| {
            let (feed, ready) = (Arc::downgrade(self), Arc::clone(&self.ready));
            tokio::spawn(pump(feed, ready));
        });
    }

    /// Publishes what the writer queued, in commit order: the pump's one
    /// step (tests drive it directly).
    fn deliver(&self) {
        let Outbox { batches, .. } = std::mem::take(&mut *unpoisoned(&self.outbox));
        for (tenant, events) in batches {
            self.publish(&tenant, &events);
        }
    }

    /// Sends `events` into the rings of the tenant that follow them.
    fn publish(&self, tenant: &Tenant, events: &[Event]) {
        let mut tenants = self.tenants();
        let Some(rings) = tenants.get_mut(tenant) else {
            return;
        };
        for event in events {
            let goal = goal_of(event);
            if rings.all.is_none() && !rings.goals.contains_key(goal) {
                continue;
            }
            // Rendered once, whichever rings it goes into.
            let published = Arc::new(FeedEvent::new(event.clone()));
            // A send fails only when nobody listens to that ring any more:
            // forget it.
            if let Some(all) = &rings.all {
                if all.send(Arc::clone(&published)).is_err() {
                    rings.all = None;
                }
            }
            if let Some(ring) = rings.goals.get(goal) {
                if ring.send(published).is_err() {
                    rings.goals.remove(goal);
                }
            }
        }
        if rings.is_empty() {
            tenants.remove(tenant);
        }
    }

    /// A receiver of the tenant's events from now on (only `goal`'s when
    /// given), unless the tenant already holds its most subscriptions,
    /// whatever they follow.
    fn listen(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
    ) -> Result<broadcast::Receiver<Arc<FeedEvent>>, EngineError> {
        let mut tenants = self.tenants();
        let buffer = self.settings.buffer.clamp(1, MAX_SUBSCRIBER_BUFFER);
        let rings = tenants.entry(tenant.clone()).or_default();
        rings.prune();
        let cap = self.settings.max_subscribers_per_tenant;
        if rings.receivers() >= cap {
            if rings.is_empty() {
                tenants.remove(tenant);
            }
            return Err(EngineError::TooManyStreams(cap));
        }
        let ring = match goal {
            None => rings
                .all
                .get_or_insert_with(|| broadcast::channel(buffer).0),
            Some(goal) => rings
                .goals
                .entry(goal.clone())
                .or_insert_with(|| broadcast::channel(buffer).0),
        };
        Ok(ring.subscribe())
    }

    /// Ends every subscription (at shutdown: an open stream would
    /// otherwise hold the shutdown for its whole deadline).
    pub fn close(&self) {
        self.tenants().clear();
    }

    /// Ends every subscription of `tenant`.
    fn close_tenant(&self, tenant: &Tenant) {
        self.tenants().remove(tenant);
    }

    /// Open subscriptions of the tenant (for tests and the benchmark).
    pub fn subscribers(&self, tenant: &Tenant) -> usize {
        self.tenants().get(tenant).map_or(0, Rings::receivers)
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        // The pump finds the feed gone and ends.
        self.ready.notify_one();
    }
}

/// The feed's pump: publishes whatever the writer queued, each time it is
/// told there is some, until the feed is gone.
async fn pump(feed: Weak<Feed>, ready: Arc<Notify>) {
    loop {
        ready.notified().await;
        let Some(feed) = feed.upgrade() else {
            return;
        };
        feed.deliver();
    }
}

fn unpoisoned<T>(lock: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing under these locks can panic half-way through a change.
    match lock.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl EventSink for Feed {
    /// Queues the events for the pump (on the writer thread: only a copy
    /// and a wake-up, whatever the number of subscribers).
    fn committed(&self, tenant: &Tenant, events: &[Event]) {
        // A tenant has rings only while somebody listens (or just did:
        // the pump drops what nobody takes), so no count is needed here.
        if !self.tenants().contains_key(tenant) {
            return;
        }
        let mut outbox = unpoisoned(&self.outbox);
        while outbox.events + events.len() > MAX_OUTBOX {
            // The pump is that far behind: let go of the events of the
            // tenant with the most waiting (max-min fair between tenants)
            // and end its subscriptions, whose clients catch up from
            // storage, where nothing is missing. A subscription made from
            // here on reads storage first, so what the pump still
            // publishes of the events taken before is skipped there, not
            // repeated. The other tenants' streams go on.
            let largest = outbox.largest(tenant, events.len());
            outbox.forget(&largest);
            self.close_tenant(&largest);
            if largest == *tenant {
                return;
            }
        }
        outbox.events += events.len();
        *outbox.per_tenant.entry(tenant.clone()).or_default() += events.len();
        outbox.batches.push((tenant.clone(), events.to_vec()));
        drop(outbox);
        self.ready.notify_one();
    }

    fn listening(&self, tenant: &Tenant) -> bool {
        self.subscribers(tenant) > 0
    }

    /// Every subscription ends: its client resumes after the last cursor
    /// it got (`Last-Event-ID`) from storage, where nothing is missing.
    /// At once, not through the pump: only the subscriptions open now may
    /// have missed something (a later one reads storage first).
    fn interrupted(&self) {
        self.close();
    }
}

/// What a subscription yields.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedItem {
    Event(Arc<FeedEvent>),
    /// The subscriber fell too far behind and is dropped; it resumes after
    /// `last` (the cursor it last received) with no gap.
    Dropped {
        last: u64,
    },
}

/// One subscriber's view of the feed.
#[derive(Debug)]
pub struct Subscription {
    engine: Arc<Engine>,
    tenant: Tenant,
    goal: Option<GoalId>,
    live: broadcast::Receiver<Arc<FeedEvent>>,
    /// The cursor last delivered: nothing at or below it is delivered again.
    last: u64,
    /// Still reading stored events after `last`.
    catching_up: bool,
    backlog: std::collections::VecDeque<Event>,
    dropped: bool,
}

fn goal_of(event: &Event) -> &GoalId {
    event.payload.goal_id()
}

impl Subscription {
    /// The next event, or `None` once the subscription ended (dropped, or
    /// the host shut down).
    pub async fn next(&mut self) -> Result<Option<FeedItem>, EngineError> {
        loop {
            if self.dropped {
                return Ok(None);
            }
            if let Some(event) = self.backlog.pop_front() {
                self.last = event.cursor;
                return Ok(Some(FeedItem::Event(Arc::new(FeedEvent::new(event)))));
            }
            if self.catching_up {
                let (tenant, goal, after) = (self.tenant.clone(), self.goal.clone(), self.last);
                let page = self
                    .engine
                    .db(move |store| {
                        store.tenant_events_after(&tenant, goal.as_ref(), after, BACKFILL_PAGE)
                    })
                    .await?;
                self.catching_up = page.len() == BACKFILL_PAGE;
                self.backlog.extend(page);
                continue;
            }
            match self.live.recv().await {
                Ok(published) => {
                    if self.skips(&published.event) {
                        continue;
                    }
                    self.last = published.event.cursor;
                    return Ok(Some(FeedItem::Event(published)));
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.dropped = true;
                    return Ok(Some(FeedItem::Dropped { last: self.last }));
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(None),
            }
        }
    }

    /// The next item if one is ready now, without waiting: a stored event
    /// already read, or a live event already in the ring. `None` when
    /// nothing is ready (or the subscription ended; `next` says which).
    /// With it a stream writes every event that is ready at one wake-up as
    /// one write, instead of one wake-up and one write per event.
    pub fn ready(&mut self) -> Option<FeedItem> {
        loop {
            if self.dropped {
                return None;
            }
            if let Some(event) = self.backlog.pop_front() {
                self.last = event.cursor;
                return Some(FeedItem::Event(Arc::new(FeedEvent::new(event))));
            }
            if self.catching_up {
                // The next stored page needs the store: only `next` reads it.
                return None;
            }
            match self.live.try_recv() {
                Ok(published) => {
                    if self.skips(&published.event) {
                        continue;
                    }
                    self.last = published.event.cursor;
                    return Some(FeedItem::Event(published));
                }
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    self.dropped = true;
                    return Some(FeedItem::Dropped { last: self.last });
                }
                Err(
                    broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed,
                ) => return None,
            }
        }
    }

    /// An event delivered already (from storage), or another goal's.
    fn skips(&self, event: &Event) -> bool {
        event.cursor <= self.last
            || self
                .goal
                .as_ref()
                .is_some_and(|goal| goal_of(event) != goal)
    }

    /// The cursor last delivered.
    pub fn last(&self) -> u64 {
        self.last
    }
}

impl Engine {
    /// Subscribes the tenant to its events after `after` (0: from the
    /// first), only `goal`'s when given. A goal of another tenant does not
    /// exist for it.
    pub async fn subscribe(
        self: &Arc<Self>,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
    ) -> Result<Subscription, EngineError> {
        if let Some(goal) = goal {
            self.load_owned(tenant, goal).await?;
        }
        // Listen before reading what is stored, so nothing committed in
        // between is missed.
        let live = self.feed.listen(tenant, goal)?;
        self.feed.start_pump();
        Ok(Subscription {
            engine: Arc::clone(self),
            tenant: tenant.clone(),
            goal: goal.cloned(),
            live,
            last: after,
            catching_up: true,
            backlog: std::collections::VecDeque::new(),
            dropped: false,
        })
    }

    /// The live feed (its bounds, its subscriber counts).
    pub fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture::closed_event as event;

    #[test]
    fn the_cap_refuses_one_more_subscriber_and_a_dropped_one_frees_its_place() {
        let feed = Feed::new(FeedSettings {
            max_subscribers_per_tenant: 2,
            ..FeedSettings::default()
        });
        let (a, b) = (
            Tenant::parse("a").expect("a tenant"),
            Tenant::parse("b").expect("b tenant"),
        );
        let first = feed.listen(&a, None).expect("one");
        let _second = feed.listen(&a, None).expect("two");
        assert!(matches!(
            feed.listen(&a, None),
            Err(EngineError::TooManyStreams(2))
        ));
        // Another tenant has its own places.
        let _other = feed.listen(&b, None).expect("b's first");
        drop(first);
        feed.listen(&a, None).expect("a freed place");
    }

    #[tokio::test]
    async fn publishing_never_waits_for_a_full_subscriber() {
        let feed = Feed::new(FeedSettings {
            buffer: 2,
            ..FeedSettings::default()
        });
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        let mut slow = feed.listen(&tenant, None).expect("listens");
        let events: Vec<Event> = (1..=5).map(|cursor| event(cursor, &goal)).collect();
        // Five events into a ring of two return at once.
        feed.publish(&tenant, &events);
        assert!(matches!(
            slow.recv().await,
            Err(broadcast::error::RecvError::Lagged(3))
        ));
    }

    #[tokio::test]
    async fn the_lag_allowed_is_bounded_whatever_is_asked() {
        let feed = Feed::new(FeedSettings {
            buffer: usize::MAX,
            ..FeedSettings::default()
        });
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        let mut listener = feed.listen(&tenant, None).expect("listens");
        let events: Vec<Event> = (1..=MAX_SUBSCRIBER_BUFFER as u64 + 1)
            .map(|cursor| event(cursor, &goal))
            .collect();
        feed.publish(&tenant, &events);
        assert!(matches!(
            listener.recv().await,
            Err(broadcast::error::RecvError::Lagged(1))
        ));
    }

    /// A goal's follower is handed its goal's events and nothing else, so
    /// another goal's event does not wake it; a tenant-wide follower gets
    /// both, from one rendering.
    #[test]
    fn a_goal_follower_gets_only_its_goals_events() {
        let feed = Feed::new(FeedSettings::default());
        let tenant = Tenant::parse("a").expect("a tenant");
        let (mine, other) = (GoalId::generate(), GoalId::generate());
        let mut follower = feed.listen(&tenant, Some(&mine)).expect("listens");
        let mut everything = feed.listen(&tenant, None).expect("listens");
        feed.publish(&tenant, &[event(1, &other), event(2, &mine)]);
        let got = follower.try_recv().expect("its goal's event");
        assert_eq!(got.event.cursor, 2);
        assert!(matches!(
            follower.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ));
        let first = everything.try_recv().expect("the first");
        let second = everything.try_recv().expect("the second");
        assert_eq!((first.event.cursor, second.event.cursor), (1, 2));
        assert!(Arc::ptr_eq(&second, &got), "rendered once for both rings");
    }

    #[test]
    fn goal_followers_and_tenant_followers_share_the_cap() {
        let feed = Feed::new(FeedSettings {
            max_subscribers_per_tenant: 2,
            ..FeedSettings::default()
        });
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        let one = feed.listen(&tenant, Some(&goal)).expect("one");
        let _two = feed.listen(&tenant, None).expect("two");
        assert_eq!(feed.subscribers(&tenant), 2);
        assert!(matches!(
            feed.listen(&tenant, Some(&GoalId::generate())),
            Err(EngineError::TooManyStreams(2))
        ));
        drop(one);
        feed.listen(&tenant, Some(&GoalId::generate()))
            .expect("the freed place");
    }

    #[test]
    fn a_goal_ring_nobody_follows_is_forgotten() {
        let feed = Feed::new(FeedSettings::default());
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        drop(feed.listen(&tenant, Some(&goal)).expect("listens"));
        feed.publish(&tenant, &[event(1, &goal)]);
        assert!(feed.tenants().is_empty());
    }

    #[test]
    fn a_tenant_without_listeners_keeps_no_ring() {
        let feed = Feed::new(FeedSettings::default());
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        feed.publish(&tenant, &[event(1, &goal)]);
        assert_eq!(feed.subscribers(&tenant), 0);
        let listener = feed.listen(&tenant, None).expect("listens");
        drop(listener);
        feed.publish(&tenant, &[event(2, &goal)]);
        assert!(feed.tenants().is_empty());
    }

    /// The writer only queues: nothing reaches a subscriber until the pump
    /// delivers, and then everything does, in commit order.
    #[test]
    fn committed_events_wait_for_the_pump_and_arrive_in_order() {
        let feed = Feed::new(FeedSettings::default());
        let (a, b) = (
            Tenant::parse("a").expect("a tenant"),
            Tenant::parse("b").expect("b tenant"),
        );
        let goal = GoalId::generate();
        let mut on_a = feed.listen(&a, None).expect("listens");
        let mut on_b = feed.listen(&b, None).expect("listens");
        feed.committed(&a, &[event(1, &goal), event(2, &goal)]);
        feed.committed(&b, &[event(3, &goal)]);
        feed.committed(&a, &[event(4, &goal)]);
        assert!(matches!(
            on_a.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ));
        feed.deliver();
        let got: Vec<u64> = std::iter::from_fn(|| on_a.try_recv().ok())
            .map(|published| published.event.cursor)
            .collect();
        assert_eq!(got, [1, 2, 4]);
        assert_eq!(on_b.try_recv().expect("b's").event.cursor, 3);
        // Delivered once: the outbox is empty now.
        feed.deliver();
        assert!(on_a.try_recv().is_err());
    }

    /// A tenant nobody listens to costs the writer nothing: not queued.
    #[test]
    fn events_nobody_listens_to_are_not_queued() {
        let feed = Feed::new(FeedSettings::default());
        let tenant = Tenant::parse("a").expect("a tenant");
        feed.committed(&tenant, &[event(1, &GoalId::generate())]);
        assert_eq!(unpoisoned(&feed.outbox).events, 0);
    }

    /// One tenant's burst fills the outbox: only that tenant's events go
    /// and its subscriptions end; another tenant's stream goes on and gets
    /// its event.
    #[test]
    fn a_full_outbox_ends_only_the_subscriptions_of_the_tenant_with_the_most_waiting() {
        let feed = Feed::new(FeedSettings::default());
        let (busy, quiet) = (
            Tenant::parse("busy").expect("a tenant"),
            Tenant::parse("quiet").expect("a tenant"),
        );
        let goal = GoalId::generate();
        let mut on_busy = feed.listen(&busy, None).expect("listens");
        let mut on_quiet = feed.listen(&quiet, None).expect("listens");
        feed.committed(&quiet, &[event(1, &goal)]);
        let burst: Vec<Event> = (2..=MAX_OUTBOX as u64)
            .map(|cursor| event(cursor, &goal))
            .collect();
        feed.committed(&busy, &burst);
        feed.committed(&busy, &[event(MAX_OUTBOX as u64 + 1, &goal)]);
        assert_eq!(
            unpoisoned(&feed.outbox).events,
            1,
            "only the quiet one's waits"
        );
        assert!(matches!(
            on_busy.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        feed.deliver();
        assert_eq!(on_quiet.try_recv().expect("its event").event.cursor, 1);
        assert_eq!(
            feed.subscribers(&quiet),
            1,
            "the quiet tenant's stream goes on"
        );
    }

    /// The outbox is bounded: a pump that far behind lets the events go,
    /// and the subscriptions end so that their clients resume from
    /// storage; the outbox is usable again at once.
    #[test]
    fn a_full_outbox_ends_every_subscription_instead_of_growing() {
        let feed = Feed::new(FeedSettings::default());
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        let mut listener = feed.listen(&tenant, None).expect("listens");
        let events: Vec<Event> = (1..=MAX_OUTBOX as u64)
            .map(|cursor| event(cursor, &goal))
            .collect();
        feed.committed(&tenant, &events);
        assert_eq!(unpoisoned(&feed.outbox).events, MAX_OUTBOX);
        feed.committed(&tenant, &[event(MAX_OUTBOX as u64 + 1, &goal)]);
        assert_eq!(unpoisoned(&feed.outbox).events, 0, "let go, not grown");
        assert!(matches!(
            listener.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert_eq!(feed.subscribers(&tenant), 0);
        let mut again = feed.listen(&tenant, None).expect("listens again");
        feed.committed(&tenant, &[event(MAX_OUTBOX as u64 + 2, &goal)]);
        feed.deliver();
        assert_eq!(
            again.try_recv().expect("the next one").event.cursor,
            MAX_OUTBOX as u64 + 2
        );
    }

    /// A store that lost events ends the subscriptions open then, and only
    /// those: one made afterwards reads storage first and goes on.
    #[test]
    fn an_interruption_ends_the_subscriptions_open_then() {
        let feed = Feed::new(FeedSettings::default());
        let tenant = Tenant::parse("a").expect("a tenant");
        let goal = GoalId::generate();
        let mut before = feed.listen(&tenant, None).expect("listens");
        feed.interrupted();
        assert!(matches!(
            before.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        let mut after = feed.listen(&tenant, None).expect("listens");
        feed.committed(&tenant, &[event(1, &goal)]);
        feed.deliver();
        assert_eq!(after.try_recv().expect("goes on").event.cursor, 1);
    }

    /// The pump runs by itself once somebody subscribed, and ends with the
    /// feed.
    #[tokio::test]
    async fn the_pump_delivers_on_its_own_and_ends_with_the_feed() {
        let feed = Arc::new(Feed::new(FeedSettings::default()));
        let tenant = Tenant::parse("a").expect("a tenant");
        let mut listener = feed.listen(&tenant, None).expect("listens");
        feed.start_pump();
        feed.committed(&tenant, &[event(1, &GoalId::generate())]);
        let got = tokio::time::timeout(Duration::from_secs(10), listener.recv())
            .await
            .expect("delivered in time")
            .expect("an event");
        assert_eq!(got.event.cursor, 1);
        let weak = Arc::downgrade(&feed);
        drop(listener);
        drop(feed);
        assert!(
            weak.upgrade().is_none(),
            "the pump holds no strong reference"
        );
    }
}
