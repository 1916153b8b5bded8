//! The scheduler: one step, [`Scheduler::tick`], that closes goals past
//! their deadline, fires due `schedule` goals and probes due `heartbeat`
//! goals. Tests call `tick` with a manual clock; the host runs
//! [`Scheduler::run`], which ticks whenever the next fire, deadline or probe
//! is due, and at least every `--tick-ms` (100 ms). No task per goal: a fire
//! or a probe is a short task that exists only while it runs, so a slow
//! webhook never holds up the tick.
//!
//! Slots are shared fairly between tenants ([`fair`]): due work waits per
//! tenant, free slots go round-robin to the tenants with work waiting, and
//! one tenant holds at most its share of the fire and probe slots at once
//! (the slots split between the busy tenants with room kept for one more,
//! and never more than [`MAX_FIRES_PER_TENANT`] fires and
//! [`MAX_PROBES_PER_TENANT`] probes), so hanging goals of any number of
//! tenants leave slots for everyone else's.

mod fair;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Mutex as AsyncMutex, Notify, Semaphore};
use tokio::task::JoinSet;

use fair::FairQueue;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::domain::goal::DEFAULT_HEARTBEAT_MS;
use crate::domain::{GoalId, Tenant, Timestamp};
use crate::engine::{Engine, EngineError, FireOutcome, ORPHAN_SWEEP_EVERY};

/// Most heartbeat probes one tenant has in flight at once; its due goals
/// beyond that are probed at a later tick. While other tenants have
/// probes due or in flight its share is smaller ([`fair::share`]).
pub const MAX_PROBES_PER_TENANT: usize = 16;

/// Most heartbeat probes in flight at once, all tenants together. Shares
/// keep room for one more tenant: two tenants at their cap leave 16 slots
/// free, and a third tenant's share is 12.
pub const MAX_PROBES_IN_FLIGHT: usize = 3 * MAX_PROBES_PER_TENANT;

/// Most scheduled fires one tenant has running at once. Due goals beyond
/// that wait in its queue, oldest due first, that the running fires drain:
/// a tick that finds 100k goals due holds 100k ids, not 100k tasks (one
/// task per due goal peaked at 730 MiB with 100k goals due at start, and
/// took 65 s to stop; the queue: 161 MiB and the 5 s grace period). 256
/// rather than 64 since writes share commits: more fires at once make
/// larger groups (100k goals: 3.3k evaluations/s with 64, 4.1k with 256,
/// 4.3k with 1024 at 50 MiB more memory).
pub const MAX_FIRES_PER_TENANT: usize = 256;

/// Most scheduled fires running at once, all tenants together. A tenant
/// alone may run half of them (the 256 its throughput was measured
/// with); `n` busy tenants may each run `slots / (n + 1)`, so a tenant
/// that comes due always finds its share free, however many others are
/// at theirs ([`fair::share`]).
pub const MAX_FIRES_IN_FLIGHT: usize = 2 * MAX_FIRES_PER_TENANT;

/// Due goals a tick lists beyond those already firing or queued: enough to
/// fill every fire slot several times over before the next tick.
const LIST_AHEAD: usize = 4 * MAX_FIRES_PER_TENANT;

/// When a fire takes a goal off the queue and leaves this many or fewer
/// while the loop sleeps on a backlog, the loop ticks at once to list more
/// (see [`Scheduler::run`]). Without it a backlog was listed only once per
/// `--tick-ms`, [`LIST_AHEAD`] goals at a time: at the 100 ms tick no more
/// than about 10k fires a second could ever start, however fast they ran,
/// so a scheduler with exactly 10k due a second never caught up after a
/// slow stretch.
const REFILL_AT: usize = 2 * MAX_FIRES_PER_TENANT;

/// The shortest sleep between the end of one tick and the start of the
/// next: with something due every moment (10k goals on a 10 s interval are
/// a fire a millisecond) the loop still sleeps between ticks, and what
/// came due meanwhile is listed and read in one batch. Each tick costs a
/// few read transactions whatever it finds; at 100k goals (10k fires a
/// second) ticks 1 ms apart took 21–22 s of CPU per 150k fires, 10 ms
/// apart 17–19 s, for fire lag p50 of about 13 ms instead of 6 ms. Only
/// busy schedulers meet this floor. (A 10 ms tick *while fires wait for a
/// slot* was tried too and not kept: the frequent listings took the
/// writer's core, 9.3k and 8.4k fires/s, and p99 rose to 1–3 s.)
pub const MIN_SLEEP: Duration = Duration::from_millis(10);

/// Goals queued per millisecond between ticks while fires wait for a
/// slot: each tick re-lists what is queued to look past it, so a backlog
/// of 10,000 ticks at most every 100 ms, one of 1,000 every 10 ms.
pub const BACKLOG_PER_MS: u64 = 100;

/// How often a tick forgets expired idempotency keys. Purged only at
/// start, a host that ran for months kept every key it ever saw.
pub const PURGE_EVERY_MS: u64 = 3_600_000;

/// How often a tick looks for closed goals past retention when the last
/// look found no backlog.
pub const RETAIN_EVERY_MS: u64 = 60_000;

/// Most closed goals one tick forgets, in one transaction: the writer is
/// shared with every create and iteration, so a backlog (a host started
/// with a shorter retention, or after a long stop) is worked off a batch
/// per tick instead of in one long write.
pub const RETENTION_BATCH: usize = 256;

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tick {
    /// Goals closed as `bound-exceeded` because their deadline passed.
    pub closed: Vec<GoalId>,
    /// Goals whose fire was started (each fire re-checks under the goal's
    /// lock, so a started fire may still find nothing to do).
    pub fired: Vec<GoalId>,
    /// Heartbeat goals whose probe was started.
    pub probed: Vec<GoalId>,
    /// Closed goals forgotten because they closed longer than the
    /// retention period ago.
    pub forgotten: Vec<GoalId>,
}

/// A heartbeat goal's probes, kept in memory: a goal that stops being
/// probed (paused, closed, another mode) or a restart starts it over.
#[derive(Debug, Clone, Default)]
struct Beat {
    /// Probes started so far.
    probes: u64,
    /// When the next probe is due; `None` = at once.
    next_at: Option<Timestamp>,
    /// Whose goal it is, read once.
    owner: Option<Tenant>,
    /// Probes in a row that dispatched nothing.
    quiet: u64,
}

/// Probes in a row that may dispatch nothing before a goal's probes slow
/// down. A probe is an outbound call whether or not it fires, and a goal
/// whose probe never says fire spends no iteration: without this a goal
/// with `maxLoopIterations: 1` was probed 272 times in 3 s, forever. The
/// suite's heartbeat scenarios need a handful of quiet probes at most.
pub const QUIET_PROBES_AT_FULL_RATE: u64 = 64;

/// The longest a quiet goal's probes slow down to: one an hour (or its
/// own `heartbeatMs`, if longer).
pub const SLOWEST_PROBE_MS: u64 = 3_600_000;

/// How long after a probe the next one is due: `every_ms`, until
/// [`QUIET_PROBES_AT_FULL_RATE`] probes in a row were quiet; then twice as
/// long for each further quiet one, up to [`SLOWEST_PROBE_MS`]. A probe
/// that dispatches a run starts the count over.
pub fn probe_delay_ms(every_ms: u64, quiet: u64) -> u64 {
    let Some(beyond) = quiet.checked_sub(QUIET_PROBES_AT_FULL_RATE) else {
        return every_ms;
    };
    let doublings = u32::try_from(beyond.min(32)).unwrap_or(32);
    every_ms
        .saturating_mul(1u64 << doublings)
        .min(SLOWEST_PROBE_MS.max(every_ms))
}

pub struct Scheduler {
    engine: Arc<Engine>,
    fires: AsyncMutex<JoinSet<()>>,
    /// Goals with a fire or probe under way, so a slow one is not started
    /// again.
    firing: Arc<Mutex<HashSet<GoalId>>>,
    beats: Arc<Mutex<HashMap<GoalId, Beat>>>,
    probes: Arc<Semaphore>,
    /// Probes in flight per tenant.
    probing: Arc<Mutex<HashMap<Tenant, usize>>>,
    /// Which tenant's due goals a tick probes first: the next one each tick.
    probe_turn: AtomicUsize,
    /// Due goals waiting for a fire slot, per tenant.
    queue: Arc<Mutex<FairQueue<Firing>>>,
    fire_slots: Arc<Semaphore>,
    /// Up while the loop sleeps without looking at what comes due next,
    /// because fires were waiting for a slot. The fire that takes the
    /// queue down to [`REFILL_AT`] lowers it and wakes the loop.
    awaiting_refill: Arc<AtomicBool>,
    refill: Arc<Notify>,
    /// When the last tick purged expired idempotency keys.
    purged_at: Mutex<Option<Timestamp>>,
    /// When the last tick looked for runs dead replicas left in flight
    /// (wall time: leases lapse on the database's clock, not the host's).
    swept_at: Mutex<Option<std::time::Instant>>,
    /// When the next tick looks for closed goals past retention: at the
    /// first, at once after a full batch, else [`RETAIN_EVERY_MS`] later.
    retain_at: Mutex<Option<Timestamp>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

/// Removes a goal from the firing set however its fire task ends.
struct Firing {
    set: Arc<Mutex<HashSet<GoalId>>>,
    goal: GoalId,
}

impl Drop for Firing {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.goal);
    }
}

impl Scheduler {
    pub fn new(engine: Arc<Engine>) -> Scheduler {
        Scheduler {
            fires: AsyncMutex::new(JoinSet::new()),
            firing: Arc::new(Mutex::new(HashSet::new())),
            beats: Arc::new(Mutex::new(HashMap::new())),
            probes: Arc::new(Semaphore::new(MAX_PROBES_IN_FLIGHT)),
            probing: Arc::new(Mutex::new(HashMap::new())),
            probe_turn: AtomicUsize::new(0),
            queue: Arc::new(Mutex::new(FairQueue::new(
                MAX_FIRES_PER_TENANT,
                MAX_FIRES_IN_FLIGHT,
            ))),
            fire_slots: Arc::new(Semaphore::new(MAX_FIRES_IN_FLIGHT)),
            awaiting_refill: Arc::new(AtomicBool::new(false)),
            refill: Arc::new(Notify::new()),
            purged_at: Mutex::new(None),
            swept_at: Mutex::new(None),
            retain_at: Mutex::new(None),
            engine,
        }
    }

    /// Marks a goal as firing; `None` when it already is.
    fn start_firing(&self, id: &GoalId) -> Option<Firing> {
        let newly = self
            .firing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone());
        newly.then(|| Firing {
            set: Arc::clone(&self.firing),
            goal: id.clone(),
        })
    }

    /// One step at `now`. Fires run in the background; [`Scheduler::settle`]
    /// waits for them.
    pub async fn tick(&self, now: Timestamp) -> Result<Tick, EngineError> {
        let mut tick = Tick::default();
        let mut fires = self.fires.lock().await;
        while fires.try_join_next().is_some() {}

        self.purge_if_due(now).await;
        self.sweep_orphans_if_due().await;
        tick.forgotten = self.retain_if_due(now).await;
        for id in self.engine.goals_past_deadline(now).await? {
            if self.engine.close_if_past_deadline(&id).await? {
                tick.closed.push(id);
            }
        }
        // Goals already firing or queued are still due in the store until
        // their run is recorded, and they are the longest due: list past
        // them, and only so many more. Listing the whole backlog every tick
        // made a scheduler that fell behind fall further behind.
        let firing = self
            .firing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        let limit = firing.saturating_add(LIST_AHEAD);
        let mut due = Vec::new();
        for id in self.engine.due_schedule_goals(now, limit).await? {
            let Some(firing) = self.start_firing(&id) else {
                continue;
            };
            due.push(firing);
            tick.fired.push(id);
        }
        if due.len() > 1 {
            // In one read rather than one per fire; a failure here only
            // leaves each fire to read its goal itself.
            let ids = due.iter().map(|firing| firing.goal.clone()).collect();
            if let Err(error) = self.engine.warm(ids).await {
                tracing::warn!(%error, "reading the due goals ahead failed");
            }
        }
        let mut owned = Vec::with_capacity(due.len());
        for firing in due {
            // A goal gone since it was listed has nothing to fire.
            if let Some(owner) = self.engine.owner_of(&firing.goal).await? {
                owned.push((owner, firing));
            }
        }
        self.queue_fires(owned, &mut fires);
        self.probe_heartbeats(now, &mut fires, &mut tick).await?;
        // The attention extension's due work: timed pauses to wake and
        // interval bindings to run (each run re-checks under the goal's
        // lock, as a fire does).
        for (goal, binding) in self.engine.attention_tick(now).await {
            let engine = Arc::clone(&self.engine);
            fires.spawn(async move {
                engine.fire_binding(&goal, &binding).await;
            });
        }
        Ok(tick)
    }

    /// Every [`ORPHAN_SWEEP_EVERY`], closes the runs that replicas which
    /// died left in flight (none on a store one process owns); a failure
    /// is logged and tried again at the next sweep.
    async fn sweep_orphans_if_due(&self) {
        {
            let mut swept_at = self.swept_at.lock().unwrap_or_else(PoisonError::into_inner);
            if swept_at.is_some_and(|at| at.elapsed() < ORPHAN_SWEEP_EVERY) {
                return;
            }
            *swept_at = Some(std::time::Instant::now());
        }
        match self.engine.recover_orphans().await {
            Ok(0) => {}
            Ok(closed) => tracing::warn!(
                closed,
                "runs left in flight by a replica that died were recorded as environmental failures"
            ),
            Err(error) => tracing::warn!(%error, "closing runs of replicas that died failed"),
        }
    }

    /// Forgets expired idempotency keys at the first tick and then every
    /// [`PURGE_EVERY_MS`]; a failure is logged and tried again next time.
    async fn purge_if_due(&self, now: Timestamp) {
        let due = {
            let mut purged_at = self
                .purged_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let due = purged_at.is_none_or(|at| now >= at.saturating_add_ms(PURGE_EVERY_MS));
            if due {
                *purged_at = Some(now);
            }
            due
        };
        if due {
            match self.engine.purge_idempotency_keys().await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "expired idempotency keys forgotten"),
                Err(error) => {
                    tracing::warn!(%error, "purging expired idempotency keys failed");
                    *self
                        .purged_at
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = None;
                }
            }
        }
    }

    /// Forgets one batch of closed goals past retention when due; a
    /// failure is logged and tried again next tick.
    async fn retain_if_due(&self, now: Timestamp) -> Vec<GoalId> {
        {
            let retain_at = self
                .retain_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if retain_at.is_some_and(|at| now < at) {
                return Vec::new();
            }
        }
        let (forgotten, next) = match self.engine.purge_closed_goals(RETENTION_BATCH).await {
            Ok(forgotten) => {
                if !forgotten.is_empty() {
                    tracing::info!(
                        forgotten = forgotten.len(),
                        "closed goals past retention forgotten"
                    );
                }
                // A full batch may mean a backlog: the next tick goes on.
                let next = if forgotten.len() >= RETENTION_BATCH {
                    now
                } else {
                    now.saturating_add_ms(RETAIN_EVERY_MS)
                };
                (forgotten, next)
            }
            Err(error) => {
                tracing::warn!(%error, "forgetting closed goals past retention failed");
                (Vec::new(), now)
            }
        };
        *self
            .retain_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(next);
        forgotten
    }

    /// Queues due goals and starts a fire task per free slot (at most
    /// [`MAX_FIRES_IN_FLIGHT`]); each task fires queued goals one after the
    /// other until the queue is empty. Called every tick, so goals queued
    /// while the last task was leaving get a task at the next tick.
    fn queue_fires(&self, due: Vec<(Tenant, Firing)>, fires: &mut JoinSet<()>) {
        let waiting = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            for (tenant, firing) in due {
                queue.push(tenant, firing);
            }
            // Not every waiting goal: a tenant at its cap would only have
            // tasks started that find nothing they may take.
            queue.startable()
        };
        for _ in 0..waiting {
            let Ok(slot) = Arc::clone(&self.fire_slots).try_acquire_owned() else {
                break;
            };
            let engine = Arc::clone(&self.engine);
            let queue = Arc::clone(&self.queue);
            let refill = Arc::clone(&self.refill);
            let awaiting_refill = Arc::clone(&self.awaiting_refill);
            fires.spawn(async move {
                loop {
                    let next = {
                        let mut queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
                        let next = if engine.outbound().is_limited() {
                            let now = engine.clock().now();
                            queue.pop_admitted(|tenant| engine.outbound().admit(tenant, now))
                        } else {
                            queue.pop()
                        };
                        if next.is_some()
                            && queue.len() <= REFILL_AT
                            && awaiting_refill.swap(false, Ordering::SeqCst)
                        {
                            refill.notify_one();
                        }
                        next
                    };
                    // Nothing waiting, or only tenants at their cap (their
                    // running fires pick their next goals as they finish) or
                    // out of outbound calls for now (a later tick starts
                    // them).
                    let Some((tenant, firing)) = next else {
                        break;
                    };
                    let running = Running {
                        queue: Arc::clone(&queue),
                        tenant,
                    };
                    if let Err(error) = engine.fire(&firing.goal).await {
                        tracing::warn!(goal = %firing.goal, %error, "scheduled fire failed");
                    }
                    drop(running);
                }
                drop(slot);
            });
        }
    }

    /// Starts a probe for every due heartbeat goal without one in flight,
    /// at most [`MAX_PROBES_IN_FLIGHT`] at a time and
    /// its share per tenant (at most [`MAX_PROBES_PER_TENANT`]), taking tenants in turn (one due
    /// goal of each, then the next of each, starting with a different
    /// tenant every tick). Each probe task sets its goal's next probe
    /// `heartbeatMs` after it finished.
    async fn probe_heartbeats(
        &self,
        now: Timestamp,
        fires: &mut JoinSet<()>,
        tick: &mut Tick,
    ) -> Result<(), EngineError> {
        let listed = self.engine.heartbeat_goals().await?;
        {
            let firing = self.firing.lock().unwrap_or_else(PoisonError::into_inner);
            let mut beats = self.beats.lock().unwrap_or_else(PoisonError::into_inner);
            beats.retain(|id, _| listed.contains(id) || firing.contains(id));
        }
        // Due goals per tenant, each in creation order.
        let mut by_tenant: Vec<(Tenant, VecDeque<GoalId>)> = Vec::new();
        for id in listed {
            let (due, owner) = {
                let beats = self.beats.lock().unwrap_or_else(PoisonError::into_inner);
                let beat = beats.get(&id);
                let due = beat
                    .and_then(|beat| beat.next_at)
                    .is_none_or(|at| at <= now);
                (due, beat.and_then(|beat| beat.owner.clone()))
            };
            if !due {
                continue;
            }
            let owner = match owner {
                Some(owner) => owner,
                None => {
                    let Some(owner) = self.engine.owner_of(&id).await? else {
                        continue;
                    };
                    self.beats
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .entry(id.clone())
                        .or_default()
                        .owner = Some(owner.clone());
                    owner
                }
            };
            match by_tenant.iter_mut().find(|(tenant, _)| *tenant == owner) {
                Some((_, ids)) => ids.push_back(id),
                None => by_tenant.push((owner, VecDeque::from([id]))),
            }
        }
        if !by_tenant.is_empty() {
            let first = self.probe_turn.fetch_add(1, Ordering::Relaxed) % by_tenant.len();
            by_tenant.rotate_left(first);
        }
        // Each tenant's share of the probe slots this tick: the tenants
        // with probes due or in flight split them, with room kept for one
        // more.
        let share = {
            let probing = self.probing.lock().unwrap_or_else(PoisonError::into_inner);
            let tenants = probing.len()
                + by_tenant
                    .iter()
                    .filter(|(tenant, _)| !probing.contains_key(tenant))
                    .count();
            fair::share(MAX_PROBES_PER_TENANT, MAX_PROBES_IN_FLIGHT, tenants)
        };
        'turns: while !by_tenant.is_empty() {
            by_tenant.retain(|(_, ids)| !ids.is_empty());
            for (tenant, ids) in &mut by_tenant {
                let Some(id) = ids.pop_front() else {
                    continue;
                };
                let at_cap = self
                    .probing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(tenant)
                    .copied()
                    .unwrap_or(0)
                    >= share;
                if at_cap || !self.admit(tenant, now) {
                    // This tenant is done for this tick; the others go on.
                    ids.clear();
                    continue;
                }
                let Ok(permit) = Arc::clone(&self.probes).try_acquire_owned() else {
                    // Every slot is taken, whoever holds them.
                    break 'turns;
                };
                let Some(firing) = self.start_firing(&id) else {
                    continue;
                };
                *self
                    .probing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(tenant.clone())
                    .or_default() += 1;
                let probing = Probing {
                    set: Arc::clone(&self.probing),
                    tenant: tenant.clone(),
                };
                self.start_probe(firing, permit, probing, fires);
                tick.probed.push(id);
            }
        }
        Ok(())
    }

    /// Whether `tenant` may start one more outbound fire or probe at `now`.
    fn admit(&self, tenant: &Tenant, now: Timestamp) -> bool {
        self.engine.outbound().admit(tenant, now)
    }

    fn start_probe(
        &self,
        firing: Firing,
        permit: tokio::sync::OwnedSemaphorePermit,
        probing: Probing,
        fires: &mut JoinSet<()>,
    ) {
        let number = {
            let mut beats = self.beats.lock().unwrap_or_else(PoisonError::into_inner);
            let beat = beats.entry(firing.goal.clone()).or_default();
            beat.probes += 1;
            beat.probes
        };
        let engine = Arc::clone(&self.engine);
        let beats = Arc::clone(&self.beats);
        fires.spawn(async move {
            let (every_ms, ran) = match engine.heartbeat(&firing.goal, number).await {
                Ok(heartbeat) => (
                    heartbeat.every_ms,
                    matches!(heartbeat.outcome, FireOutcome::Ran { .. }),
                ),
                Err(error) => {
                    tracing::warn!(goal = %firing.goal, %error, "heartbeat failed");
                    (DEFAULT_HEARTBEAT_MS, false)
                }
            };
            let next_at = {
                let mut beats = beats.lock().unwrap_or_else(PoisonError::into_inner);
                let beat = beats.entry(firing.goal.clone()).or_default();
                beat.quiet = if ran { 0 } else { beat.quiet.saturating_add(1) };
                let next_at = engine
                    .clock()
                    .now()
                    .saturating_add_ms(probe_delay_ms(every_ms, beat.quiet));
                beat.next_at = Some(next_at);
                next_at
            };
            engine.scheduler_wake().arm(next_at);
            drop(probing);
            drop(permit);
        });
    }

    /// Waits until every fire started so far has finished.
    pub async fn settle(&self) {
        let mut fires = self.fires.lock().await;
        while fires.join_next().await.is_some() {}
    }

    /// Ticks with `clock` until `shutdown` turns true, then waits up to
    /// `grace` for fires in flight (a run cut off here is recorded as an
    /// environmental failure at the next start).
    ///
    /// Between ticks it sleeps until the next fire, deadline or probe is
    /// due, at most `every` and at least [`MIN_SLEEP`], so a fire starts
    /// about when it is due rather than up to a whole `every` later. A
    /// backlog that runs down to [`REFILL_AT`] queued goals ends the sleep
    /// too, so fires never wait for a tick to be listed. A write
    /// that arms a goal sooner than that (a create, a resume, a recorded
    /// iteration) wakes it through the engine's [`SchedulerWake`]; it ticks
    /// then only if that goal is due by now.
    ///
    /// [`SchedulerWake`]: crate::engine::SchedulerWake
    pub async fn run(
        self: Arc<Self>,
        clock: Arc<dyn Clock>,
        every: Duration,
        grace: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let every = every.max(MIN_SLEEP);
        let wake = self.engine.scheduler_wake();
        'ticks: loop {
            let now = clock.now();
            // Every arm from here on wakes the loop; what was armed before
            // is seen by this tick or by the read of the next due time.
            wake.unplan();
            wake.take();
            if let Err(error) = self.tick(now).await {
                tracing::warn!(%error, "scheduler tick failed");
            }
            let mut wake_at = self.next_wake(now, every).await;
            if self.backlogged() {
                self.await_refill();
            }
            wake.plan(wake_at);
            // Bounded both ways on tokio's monotonic time, so a wall clock
            // that jumps back cannot stretch the sleep past `every`.
            let (earliest, latest) = (Instant::now() + MIN_SLEEP, Instant::now() + every);
            let bounded = |at| instant_at(clock.as_ref(), at).min(latest).max(earliest);
            let mut deadline = bounded(wake_at);
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => break,
                    () = self.refill.notified() => break,
                    () = wake.notified() => {
                        let Some(at) = wake.take() else { continue };
                        let floor = self.backlog_floor_ms(u64::try_from(every.as_millis()).unwrap_or(u64::MAX));
                        let at = at.max(clock.now().saturating_add_ms(floor));
                        if at < wake_at {
                            wake_at = at;
                            wake.plan(wake_at);
                            deadline = bounded(wake_at);
                        }
                    }
                    changed = shutdown.changed() => {
                        if changed.is_err() || *shutdown.borrow() {
                            break 'ticks;
                        }
                    }
                }
            }
        }
        if tokio::time::timeout(grace, self.settle()).await.is_err() {
            self.fires.lock().await.abort_all();
        }
    }

    /// When to tick next after a tick at `now`: the next fire or deadline
    /// after `now`, the next heartbeat probe, or `now + every`, whichever is
    /// first.
    async fn next_wake(&self, now: Timestamp, every: Duration) -> Timestamp {
        let every_ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
        let mut at = now.saturating_add_ms(every_ms);
        // With fires waiting for a slot, a tick re-lists the backlog to
        // look past it, so the loop wakes for what comes due no sooner
        // than a millisecond per [`BACKLOG_PER_MS`] goals queued. It does
        // wake: the queue is fair, and a goal of a tenant below its share
        // starts at once however long the others' queues are (it waited
        // for the next periodic tick behind two attackers' backlogs: fire
        // lag p99 106 ms against 13 ms alone).
        let floor_ms = self.backlog_floor_ms(every_ms);
        match self.engine.next_due_after(now).await {
            Ok(Some(due)) => at = at.min(due.max(now.saturating_add_ms(floor_ms))),
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "cannot read when the next goal is due"),
        }
        if let Some(due) = self.engine.attention_next_due(now) {
            at = at.min(due.max(now.saturating_add_ms(floor_ms)));
        }
        // A beat due by `now` was probed at `now` or is waiting for a probe
        // slot (the periodic tick retries it); only later ones wake.
        let beats = self.beats.lock().unwrap_or_else(PoisonError::into_inner);
        beats
            .values()
            .filter_map(|beat| beat.next_at)
            .filter(|next| *next > now)
            .fold(at, Timestamp::min)
    }

    /// The least time between ticks while fires wait for a slot: a
    /// millisecond per [`BACKLOG_PER_MS`] goals queued, at most `every_ms`
    /// (none without a backlog: [`MIN_SLEEP`] bounds the loop then).
    fn backlog_floor_ms(&self, every_ms: u64) -> u64 {
        if !self.backlogged() {
            return 0;
        }
        let queued = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        (u64::try_from(queued).unwrap_or(u64::MAX) / BACKLOG_PER_MS).min(every_ms)
    }

    /// Has the fire that takes the queue down to [`REFILL_AT`] wake the
    /// loop, which [`Scheduler::next_wake`] did not plan to wake for what
    /// comes due meanwhile.
    fn await_refill(&self) {
        self.awaiting_refill.store(true, Ordering::SeqCst);
        // The queue may have run down before the flag went up: then no
        // later fire would see it.
        let low = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
            <= REFILL_AT;
        if low && self.awaiting_refill.swap(false, Ordering::SeqCst) {
            self.refill.notify_one();
        }
    }

    /// More than [`REFILL_AT`] due goals wait for a slot. (A short queue
    /// is not a backlog: the loop keeps waking for what comes due, so a
    /// queue that runs dry has more behind it.) No longer "and every slot
    /// is taken": with a cap per tenant, one tenant's fast fires never take
    /// every slot, and a backlog of one tenant's goals was then listed only
    /// once per tick.
    fn backlogged(&self) -> bool {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
            > REFILL_AT
    }
}

/// A fire taken off the fair queue: its tenant's count goes down however
/// the fire ends.
struct Running {
    queue: Arc<Mutex<FairQueue<Firing>>>,
    tenant: Tenant,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish(&self.tenant);
    }
}

/// A probe in flight: its tenant's count goes down however it ends.
struct Probing {
    set: Arc<Mutex<HashMap<Tenant, usize>>>,
    tenant: Tenant,
}

impl Drop for Probing {
    fn drop(&mut self) {
        let mut set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = set.get_mut(&self.tenant) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                set.remove(&self.tenant);
            }
        }
    }
}

/// The tokio instant at which `clock` will read `at` (now if it already
/// does): the loop sleeps on tokio time but plans on the injected clock.
fn instant_at(clock: &dyn Clock, at: Timestamp) -> Instant {
    let ahead_ms = at.unix_ms().saturating_sub(clock.now().unix_ms());
    Instant::now() + Duration::from_millis(u64::try_from(ahead_ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_probes_slow_down_to_a_bound() {
        assert_eq!(probe_delay_ms(20, 0), 20);
        assert_eq!(probe_delay_ms(20, QUIET_PROBES_AT_FULL_RATE), 20);
        assert_eq!(probe_delay_ms(20, QUIET_PROBES_AT_FULL_RATE + 1), 40);
        assert_eq!(probe_delay_ms(20, QUIET_PROBES_AT_FULL_RATE + 3), 160);
        assert_eq!(probe_delay_ms(20, u64::MAX), SLOWEST_PROBE_MS);
        assert_eq!(
            probe_delay_ms(SLOWEST_PROBE_MS * 2, u64::MAX),
            SLOWEST_PROBE_MS * 2
        );
    }
}
