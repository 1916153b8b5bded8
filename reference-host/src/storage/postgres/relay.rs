//! Live events across replicas: every replica's subscribers see every
//! replica's commits, once each and in cursor order.
//!
//! A write with events notifies the channel [`CHANNEL`] in its
//! transaction (`pg_notify`, delivered only if it commits), with a payload
//! that says which cursors of which tenant it committed and nothing of
//! their content. Channels are the database's, not the schema's, so the
//! payload names its `events` table (by oid): deployments in other schemas
//! of the database hear the notice and leave it. Each replica keeps one connection of its own listening
//! there, off the request path. For a tenant somebody listens to on this
//! replica, the relay reads the events after the last cursor it handed to
//! the sink and hands them over in cursor order; its own commits go
//! straight to the sink when they follow on from that cursor (no read).
//!
//! Why nothing is missed or repeated: a tenant's cursors commit in order
//! (`take_cursors`), so what a read finds after a cursor is all that
//! committed after it, and the relay hands a tenant's events over only
//! from the cursor after the last one it handed over. It starts a tenant
//! at the first cursor of the first notice it takes while somebody
//! listens: a subscriber that listened before that commit had the notice
//! taken after it listened (notices come in commit order on one
//! connection), and one that listened later found the commit in storage.
//! That holds while the connection holds; when it drops, notices may be
//! lost, so once it listens again the relay forgets its tenants and tells
//! the sink ([`EventSink::interrupted`]): its subscribers end and resume
//! from storage with their last cursor.
//!
//! A write that closes a goal also notifies [`CLOSES`] with the goal's id,
//! and each replica tells its watcher (`Events::watch_closes`): a run of
//! the goal in flight there is cancelled, as a local abandon cancels it.
//! A notice lost with the connection leaves such a run to end by itself;
//! its verdict is then refused as for any closed goal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio_postgres::{AsyncMessage, NoTls};

use super::events::event_from_row;
use super::{pool_error, Cached};
use crate::domain::{Event, GoalId, Tenant};
use crate::storage::{ClosedWatcher, EventSink, StoreError};

/// The channel every replica's writes notify and every replica listens on.
pub(super) const CHANNEL: &str = "goalpost_events";

/// The channel a write that closes a goal notifies with the goal's id.
pub(super) const CLOSES: &str = "goalpost_closes";

/// Notices waiting between the listening connection and the relay. When
/// it is full the connection is not read until the relay catches up (the
/// server holds the rest).
const QUEUED_NOTICES: usize = 1024;

/// Notices the relay takes at once, merged per tenant into one read.
const NOTICES_PER_BATCH: usize = 256;

/// Events one read brings; a tenant further behind is read page by page.
const PAGE: i64 = 512;

/// Most tenants remembered: beyond it, those nobody listens to any more
/// are forgotten (a later notice starts them again).
const MOST_TENANTS: usize = 4096;

/// The first wait before listening again after the connection failed; it
/// doubles up to [`MOST_BACKOFF`] and starts over once a connection held.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MOST_BACKOFF: Duration = Duration::from_secs(5);

/// One commit's notice: the tenant's cursors `first..=newest` committed
/// to the `events` table whose oid is `table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Notice {
    pub tenant: Tenant,
    pub first: u64,
    pub newest: u64,
    pub table: u32,
}

impl Notice {
    /// The payload `first newest table tenant`, as `take_cursors` writes
    /// it (the tenant last: it may hold spaces).
    pub(super) fn parse(payload: &str) -> Option<Notice> {
        let mut parts = payload.splitn(4, ' ');
        let first = parts.next()?.parse().ok()?;
        let newest = parts.next()?.parse().ok()?;
        let table = parts.next()?.parse().ok()?;
        let tenant = Tenant::parse(parts.next()?)?;
        (first >= 1 && first <= newest).then_some(Notice {
            tenant,
            first,
            newest,
            table,
        })
    }
}

/// The sink and, per tenant somebody listens to, the newest cursor handed
/// to it.
#[derive(Default)]
pub(super) struct Relay {
    sink: RwLock<Option<Arc<dyn EventSink>>>,
    handed: Mutex<HashMap<Tenant, u64>>,
    closes: RwLock<Option<ClosedWatcher>>,
}

/// What the listening connection hears.
enum Heard {
    Committed(Notice),
    Closed(GoalId),
}

impl Relay {
    pub(super) fn set_sink(&self, sink: Arc<dyn EventSink>) {
        *self.sink.write().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    }

    pub(super) fn watch_closes(&self, watcher: ClosedWatcher) {
        *self.closes.write().unwrap_or_else(PoisonError::into_inner) = Some(watcher);
    }

    fn closed(&self, goal: &GoalId) {
        let watcher = self
            .closes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(watcher) = watcher {
            watcher(goal);
        }
    }

    fn sink(&self) -> Option<Arc<dyn EventSink>> {
        self.sink
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn handed(&self) -> std::sync::MutexGuard<'_, HashMap<Tenant, u64>> {
        self.handed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This replica's commit of `events` (consecutive cursors): handed
    /// over at once if they follow the last cursor handed over; otherwise
    /// its notice brings them, after the ones before.
    pub(super) fn committed(&self, tenant: &Tenant, events: &[Event]) {
        let Some(sink) = self.sink() else { return };
        let mut handed = self.handed();
        if let Some(last) = handed.get_mut(tenant) {
            hand_over(sink.as_ref(), tenant, last, events, Source::Commit);
        }
    }

    /// The cursor to read after for `notice`, or `None` if there is
    /// nothing to read: nobody listens, or it was all handed over.
    fn wants(&self, sink: &dyn EventSink, notice: &Notice) -> Option<u64> {
        let mut handed = self.handed();
        if !sink.listening(&notice.tenant) {
            handed.remove(&notice.tenant);
            return None;
        }
        if handed.len() >= MOST_TENANTS && !handed.contains_key(&notice.tenant) {
            handed.retain(|tenant, _| sink.listening(tenant));
        }
        let last = *handed
            .entry(notice.tenant.clone())
            .or_insert(notice.first - 1);
        (last < notice.newest).then_some(last)
    }

    /// Takes a batch of notices: reads and hands over what each listened
    /// tenant committed after its last cursor handed over.
    async fn notified(&self, pool: &Pool, notices: Vec<Notice>) -> Result<(), StoreError> {
        let Some(sink) = self.sink() else {
            return Ok(());
        };
        // One read per tenant, up to its newest notice.
        let mut merged: Vec<Notice> = Vec::new();
        for notice in notices {
            match merged.iter_mut().find(|seen| seen.tenant == notice.tenant) {
                Some(seen) => seen.newest = seen.newest.max(notice.newest),
                None => merged.push(notice),
            }
        }
        for notice in merged {
            let Some(mut after) = self.wants(sink.as_ref(), &notice) else {
                continue;
            };
            while after < notice.newest {
                let events = read_after(pool, &notice.tenant, after).await?;
                let Some(newest) = events.last().map(|event| event.cursor) else {
                    // Purged meanwhile: nothing left to hand over.
                    break;
                };
                if let Some(last) = self.handed().get_mut(&notice.tenant) {
                    hand_over(
                        sink.as_ref(),
                        &notice.tenant,
                        last,
                        &events,
                        Source::Storage,
                    );
                }
                after = newest;
            }
        }
        Ok(())
    }

    /// The connection listens again after notices may have been lost:
    /// forget every tenant, end the sink's subscriptions.
    fn restarted(&self) {
        let mut handed = self.handed();
        handed.clear();
        if let Some(sink) = self.sink() {
            sink.interrupted();
        }
    }
}

/// Where events to hand over come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// One commit of this replica's: a lower cursor may have committed
    /// elsewhere and not been handed over yet.
    Commit,
    /// A read: everything that committed after the cursor it read after
    /// (a cursor missing in between was purged, never to come).
    Storage,
}

/// Hands the events after `last` to the sink, and moves `last` to the
/// newest: a commit's only if it follows on from `last`, a read's always.
/// `events` are in cursor order; those at or before `last` were handed
/// over already.
fn hand_over(
    sink: &dyn EventSink,
    tenant: &Tenant,
    last: &mut u64,
    events: &[Event],
    source: Source,
) {
    let fresh = events.partition_point(|event| event.cursor <= *last);
    let events = &events[fresh..];
    let (Some(first), Some(newest)) = (events.first(), events.last()) else {
        return;
    };
    if source == Source::Storage || first.cursor == *last + 1 {
        sink.committed(tenant, events);
        *last = newest.cursor;
    }
}

/// A page of the tenant's events after `after`, in cursor order.
async fn read_after(pool: &Pool, tenant: &Tenant, after: u64) -> Result<Vec<Event>, StoreError> {
    let client = Cached(pool.get().await.map_err(pool_error)?);
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let rows = client
        .query(
            "SELECT sequence, at_ms, record, cursor FROM events
             WHERE tenant = $1 AND cursor > $2 ORDER BY cursor LIMIT $3",
            &[&tenant.as_str(), &after, &PAGE],
        )
        .await?;
    rows.iter().map(event_from_row).collect()
}

/// Keeps one connection listening on [`CHANNEL`] for as long as the
/// store lives, connecting again with backoff when it fails.
pub(super) async fn listen(config: tokio_postgres::Config, pool: Pool, relay: Arc<Relay>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = Instant::now();
        if let Err(error) = session(&config, &pool, &relay).await {
            tracing::warn!(%error, "the live event connection failed; listening again");
        }
        if started.elapsed() > MOST_BACKOFF {
            backoff = FIRST_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MOST_BACKOFF);
    }
}

/// One listening connection, until it fails.
async fn session(
    config: &tokio_postgres::Config,
    pool: &Pool,
    relay: &Relay,
) -> Result<(), StoreError> {
    let (client, mut connection) = config.connect(NoTls).await?;
    // Known before the connection listens, so before any notice.
    let table = Arc::new(std::sync::OnceLock::<u32>::new());
    let known = Arc::clone(&table);
    let (sender, mut notices) = tokio::sync::mpsc::channel(QUEUED_NOTICES);
    let reader = tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    let payload = notification.payload();
                    let heard = if notification.channel() == CLOSES {
                        GoalId::parse(payload).map(Heard::Closed)
                    } else {
                        Notice::parse(payload).map(Heard::Committed)
                    };
                    let heard = match heard {
                        // Another schema's deployment.
                        Some(Heard::Committed(notice)) if known.get() != Some(&notice.table) => {
                            continue
                        }
                        heard => heard,
                    };
                    match heard {
                        Some(heard) => {
                            if sender.send(heard).await.is_err() {
                                return;
                            }
                        }
                        None => tracing::warn!(payload, "an unreadable notice"),
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "the live event connection broke");
                    return;
                }
            }
        }
    });
    let listened = async {
        // This schema's events table names its notices; the connection's
        // name says whose it is (pg_stat_activity).
        let oid: u32 = client
            .query_one("SELECT 'events'::regclass::oid", &[])
            .await?
            .try_get(0)?;
        let _ = table.set(oid);
        client
            .execute(
                "SELECT set_config('application_name', $1, false)",
                &[&format!("goalpost-events {oid}")],
            )
            .await?;
        client
            .batch_execute(&format!("LISTEN {CHANNEL}; LISTEN {CLOSES}"))
            .await
    }
    .await;
    if let Err(error) = listened {
        reader.abort();
        return Err(error.into());
    }
    relay.restarted();
    let outcome = async {
        while let Some(heard) = notices.recv().await {
            let mut batch = Vec::new();
            let mut next = Some(heard);
            while let Some(heard) = next.take() {
                match heard {
                    Heard::Committed(notice) => batch.push(notice),
                    Heard::Closed(goal) => relay.closed(&goal),
                }
                if batch.len() < NOTICES_PER_BATCH {
                    next = notices.try_recv().ok();
                }
            }
            relay.notified(pool, batch).await?;
        }
        Err(StoreError::Postgres(
            "the live event connection closed".to_string(),
        ))
    }
    .await;
    reader.abort();
    drop(client);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture::closed_event;
    use crate::domain::GoalId;

    #[test]
    fn a_notice_reads_back_as_written_and_nothing_else_reads() {
        assert_eq!(
            Notice::parse("3 4 16384 tenant a"),
            Some(Notice {
                tenant: Tenant::parse("tenant a").expect("tenant"),
                first: 3,
                newest: 4,
                table: 16384,
            })
        );
        for bad in [
            "",
            "3 4 16384",
            "4 3 16384 tenant-a",
            "0 1 16384 tenant-a",
            "x 4 16384 tenant-a",
            "3 4 x tenant-a",
            "3 4 16384 ",
        ] {
            assert_eq!(Notice::parse(bad), None, "{bad:?}");
        }
    }

    #[derive(Default)]
    struct Collect {
        got: Mutex<Vec<u64>>,
    }

    impl EventSink for Collect {
        fn committed(&self, _tenant: &Tenant, events: &[Event]) {
            let mut got = self.got.lock().expect("unpoisoned");
            got.extend(events.iter().map(|event| event.cursor));
        }
    }

    fn events(cursors: std::ops::RangeInclusive<u64>) -> Vec<Event> {
        let goal = GoalId::generate();
        cursors.map(|cursor| closed_event(cursor, &goal)).collect()
    }

    #[test]
    fn events_are_handed_over_only_when_they_follow_on_and_only_once() {
        let sink = Collect::default();
        let tenant = Tenant::parse("a").expect("tenant");
        let mut last = 2;
        // A commit after a gap: left for the notice's read.
        hand_over(&sink, &tenant, &mut last, &events(4..=5), Source::Commit);
        assert_eq!(last, 2);
        hand_over(&sink, &tenant, &mut last, &events(3..=4), Source::Commit);
        // Partly handed over already: only the rest.
        hand_over(&sink, &tenant, &mut last, &events(4..=6), Source::Commit);
        hand_over(&sink, &tenant, &mut last, &events(1..=6), Source::Storage);
        assert_eq!(last, 6);
        // A read's gap was purged: what follows it is handed over.
        hand_over(&sink, &tenant, &mut last, &events(9..=9), Source::Storage);
        assert_eq!(last, 9);
        assert_eq!(*sink.got.lock().expect("unpoisoned"), vec![3, 4, 5, 6, 9]);
    }

    #[test]
    fn a_commit_is_handed_over_only_for_a_tenant_the_relay_follows() {
        let relay = Relay::default();
        let sink = Arc::new(Collect::default());
        relay.set_sink(Arc::clone(&sink) as Arc<dyn EventSink>);
        let tenant = Tenant::parse("a").expect("tenant");
        // Not followed yet: its notice starts it.
        relay.committed(&tenant, &events(1..=1));
        let notice = Notice {
            tenant: tenant.clone(),
            first: 2,
            newest: 2,
            table: 1,
        };
        assert_eq!(relay.wants(sink.as_ref(), &notice), Some(1));
        relay.committed(&tenant, &events(2..=2));
        relay.committed(&tenant, &events(3..=3));
        assert_eq!(*sink.got.lock().expect("unpoisoned"), vec![2, 3]);
        assert_eq!(relay.wants(sink.as_ref(), &notice), None);
        relay.restarted();
        relay.committed(&tenant, &events(4..=4));
        assert_eq!(*sink.got.lock().expect("unpoisoned"), vec![2, 3]);
    }
}
