//! The judge pool: where criteria judgements run, shared fairly between
//! tenants.
//!
//! Judging is CPU work over whatever a run answered, so it runs on
//! blocking threads, never on the async runtime. Three rules keep one
//! tenant's judgements from hurting another's:
//!
//! - **Slices.** A judgement works [`SLICE_STEPS`] steps at a time and then
//!   gives its slot back ([`Judging::work`]). One tenant's long judgement
//!   holds a slot for a slice, not to its end.
//! - **Max-min fair slots.** The pool has one slot per core. A free slot
//!   goes to the tenant with work waiting that runs the fewest slices
//!   right now (ties in turn), so any number of busy tenants leaves each
//!   other tenant an equal share of the slots.
//! - **A budget per tenant.** Each tenant's judgements may take
//!   `steps_per_sec` steps a second (a bucket that holds a second's worth,
//!   on the engine's clock); a tenant over it waits for its own budget
//!   while the others go on. At most [`MAX_WAITING_PER_TENANT`]
//!   judgements of one tenant wait at once; more fail at once.
//!
//! A judgement's limit is its own step budget ([`crate::domain::JUDGE_STEPS`]),
//! never wall time: waiting for a slot behind other tenants, or between
//! slices, costs it nothing. Before this, a host-wide pool of two
//! first-come slots with the 10 s judge limit around the wait let one
//! tenant's expensive judgements fail another's one-criterion runs as
//! environmental (median 10 s, 12 of 21 runs).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::bucket::{Bucket, TenantBuckets};
use crate::clock::Clock;
use crate::domain::criteria::{Judging, OutOfSteps};
use crate::domain::{Judgement, Tenant, Timestamp};

/// Steps a judgement works before it gives its slot back: a few
/// milliseconds of matching.
pub const SLICE_STEPS: u64 = 1_000_000;

/// The default per-tenant budget: one judgement that spends the whole
/// per-judgement budget each second, far above what real criteria take
/// (microseconds each).
pub const DEFAULT_JUDGE_STEPS_PER_SEC: u64 = crate::domain::JUDGE_STEPS;

/// Judgements of one tenant that may wait for a slot at once; one more
/// fails at once (an environmental failure of that tenant's run).
pub const MAX_WAITING_PER_TENANT: usize = 64;

/// Slots when nothing says otherwise: one per core.
pub fn default_slots() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}

/// Why a judgement was not judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error("the criteria need more than the judge's budget of steps")]
    OutOfSteps,
    #[error("the tenant already has {0} judgements waiting")]
    TooManyWaiting(usize),
    #[error("the judge pool stopped")]
    Stopped,
}

struct Job {
    judging: Judging,
    done: oneshot::Sender<Result<Judgement, OutOfSteps>>,
    handle: tokio::runtime::Handle,
}

#[derive(Default)]
struct State {
    waiting: HashMap<Tenant, VecDeque<Job>>,
    /// Tenants with work waiting, in the order they take turns on a tie.
    turns: VecDeque<Tenant>,
    /// Slices running per tenant.
    running: HashMap<Tenant, usize>,
    busy: usize,
    /// Each tenant's steps, filled at the budget's rate; a slice's
    /// overshoot puts them into debt.
    buckets: TenantBuckets,
    /// A wake-up for a tenant out of budget is planned.
    timer: bool,
}

struct Inner {
    state: Mutex<State>,
    slots: usize,
    steps_per_sec: Option<u64>,
    clock: Arc<dyn Clock>,
}

/// The pool; clones share it.
#[derive(Clone)]
pub struct JudgePool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for JudgePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgePool")
            .field("slots", &self.inner.slots)
            .field("steps_per_sec", &self.inner.steps_per_sec)
            .finish_non_exhaustive()
    }
}

impl JudgePool {
    /// `slots` at once (at least one); each tenant's judgements take at
    /// most `steps_per_sec` steps a second on `clock` (`None`: no budget).
    pub fn new(slots: usize, steps_per_sec: Option<u64>, clock: Arc<dyn Clock>) -> JudgePool {
        JudgePool {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                slots: slots.max(1),
                steps_per_sec: steps_per_sec.map(|steps| steps.max(1)),
                clock,
            }),
        }
    }

    /// Judges `judging` as `tenant`'s work; resolves once it is done.
    pub async fn judge(&self, tenant: &Tenant, judging: Judging) -> Result<Judgement, PoolError> {
        let (done, answer) = oneshot::channel();
        let job = Job {
            judging,
            done,
            handle: tokio::runtime::Handle::current(),
        };
        {
            let mut state = self.lock();
            let queue = state.waiting.entry(tenant.clone()).or_default();
            if queue.len() >= MAX_WAITING_PER_TENANT {
                return Err(PoolError::TooManyWaiting(queue.len()));
            }
            let first = queue.is_empty();
            queue.push_back(job);
            if first {
                state.turns.push_back(tenant.clone());
            }
        }
        self.pump();
        match answer.await {
            Ok(Ok(judgement)) => Ok(judgement),
            Ok(Err(OutOfSteps)) => Err(PoolError::OutOfSteps),
            Err(_) => Err(PoolError::Stopped),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a slice in every free slot there is work for.
    fn pump(&self) {
        loop {
            let now = self.inner.clock.now();
            let (tenant, job) = {
                let mut state = self.lock();
                if state.busy >= self.inner.slots {
                    return;
                }
                match pick(&mut state, now, self.inner.steps_per_sec) {
                    Picked::Job(tenant, job) => {
                        state.busy += 1;
                        *state.running.entry(tenant.clone()).or_default() += 1;
                        (tenant, job)
                    }
                    Picked::Nothing => return,
                    Picked::OutOfBudget(wait) => {
                        if !state.timer {
                            state.timer = true;
                            if let Some(handle) = any_handle(&state) {
                                let pool = self.clone();
                                handle.spawn(async move {
                                    tokio::time::sleep(wait).await;
                                    pool.lock().timer = false;
                                    pool.pump();
                                });
                            } else {
                                state.timer = false;
                            }
                        }
                        return;
                    }
                }
            };
            let pool = self.clone();
            let handle = job.handle.clone();
            handle.spawn_blocking(move || pool.run_slice(tenant, job));
        }
    }

    /// One slice of `job` on a blocking thread; then its slot goes to
    /// whoever is next.
    fn run_slice(&self, tenant: Tenant, mut job: Job) {
        let (spent, finished) = job.judging.work(SLICE_STEPS);
        {
            let mut state = self.lock();
            state.busy = state.busy.saturating_sub(1);
            if let Some(running) = state.running.get_mut(&tenant) {
                *running = running.saturating_sub(1);
                if *running == 0 {
                    state.running.remove(&tenant);
                }
            }
            if let Some(per_sec) = self.inner.steps_per_sec {
                let now = self.inner.clock.now();
                let bucket = refilled(&mut state, &tenant, now, per_sec);
                #[allow(clippy::cast_precision_loss)] // steps far below 2^52
                {
                    bucket.level -= spent as f64;
                }
            }
            match finished {
                Some(result) => {
                    // The caller may have gone (its request timed out):
                    // the judgement is simply dropped.
                    let _ = job.done.send(result);
                }
                None => {
                    // Back to the front of its tenant's queue: the tenant's
                    // own judgements stay in order.
                    let queue = state.waiting.entry(tenant.clone()).or_default();
                    let first = queue.is_empty();
                    queue.push_front(job);
                    if first {
                        state.turns.push_back(tenant);
                    }
                }
            }
        }
        self.pump();
    }

    /// Slices running now (for tests).
    pub fn busy(&self) -> usize {
        self.lock().busy
    }
}

fn any_handle(state: &State) -> Option<tokio::runtime::Handle> {
    state
        .waiting
        .values()
        .find_map(|queue| queue.front().map(|job| job.handle.clone()))
}

enum Picked {
    Job(Tenant, Job),
    Nothing,
    /// Work waits, but only from tenants out of budget: the soonest of
    /// them has steps again after this long.
    OutOfBudget(Duration),
}

/// The tenant's bucket, filled up to `now`.
fn refilled<'a>(
    state: &'a mut State,
    tenant: &Tenant,
    now: Timestamp,
    per_sec: u64,
) -> &'a mut Bucket {
    #[allow(clippy::cast_precision_loss)] // steps far below 2^52
    let per_sec = per_sec as f64;
    state.buckets.refilled(tenant, now, per_sec)
}

/// The next slice to run: of the tenants with work waiting and steps
/// left, the one running the fewest slices now, the first in turn on a
/// tie. The chosen tenant goes to the back of the turns.
fn pick(state: &mut State, now: Timestamp, per_sec: Option<u64>) -> Picked {
    let mut best: Option<(usize, usize)> = None;
    let mut soonest: Option<Duration> = None;
    for index in 0..state.turns.len() {
        let tenant = state.turns[index].clone();
        if let Some(per_sec) = per_sec {
            let bucket = refilled(state, &tenant, now, per_sec);
            if bucket.level <= 0.0 {
                #[allow(clippy::cast_precision_loss)]
                let seconds = -bucket.level / per_sec as f64;
                let wait = Duration::from_secs_f64(seconds.max(0.001));
                soonest = Some(soonest.map_or(wait, |known: Duration| known.min(wait)));
                continue;
            }
        }
        let running = state.running.get(&tenant).copied().unwrap_or(0);
        if best.is_none_or(|(_, fewest)| running < fewest) {
            best = Some((index, running));
        }
    }
    let Some((index, _)) = best else {
        return match soonest {
            Some(wait) => Picked::OutOfBudget(wait),
            None => Picked::Nothing,
        };
    };
    let Some(tenant) = state.turns.remove(index) else {
        return Picked::Nothing;
    };
    let Some(queue) = state.waiting.get_mut(&tenant) else {
        return Picked::Nothing;
    };
    let Some(job) = queue.pop_front() else {
        state.waiting.remove(&tenant);
        return Picked::Nothing;
    };
    if queue.is_empty() {
        state.waiting.remove(&tenant);
    } else {
        state.turns.push_back(tenant.clone());
    }
    Picked::Job(tenant, job)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;
    use crate::domain::fixture::{tag_verifier, tenant};
    use crate::domain::CriteriaVerifier;

    fn verifier(pattern: &str) -> Arc<CriteriaVerifier> {
        Arc::new(tag_verifier(pattern))
    }

    /// A judgement that needs about `steps` steps of matching and then
    /// runs out of its budget of `steps`.
    fn long(steps: u64) -> Judging {
        let text = "a".repeat(100_000);
        Judging::new(
            verifier(&format!("*{}b", "a".repeat(64))),
            json!({ "tag": text }),
            steps,
        )
    }

    fn quick() -> Judging {
        Judging::new(verifier("v1.*"), json!({ "tag": "v1.2" }), 1_000_000)
    }

    fn job(judging: Judging) -> (Job, oneshot::Receiver<Result<Judgement, OutOfSteps>>) {
        let (done, answer) = oneshot::channel();
        let handle = tokio::runtime::Handle::current();
        (
            Job {
                judging,
                done,
                handle,
            },
            answer,
        )
    }

    fn push(state: &mut State, tenant: &Tenant, judging: Judging) {
        let (job, _) = job(judging);
        let queue = state.waiting.entry(tenant.clone()).or_default();
        if queue.is_empty() {
            state.turns.push_back(tenant.clone());
        }
        queue.push_back(job);
    }

    fn picked(state: &mut State, now: Timestamp, per_sec: Option<u64>) -> Option<Tenant> {
        match pick(state, now, per_sec) {
            Picked::Job(tenant, _) => {
                *state.running.entry(tenant.clone()).or_default() += 1;
                Some(tenant)
            }
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_free_slot_goes_to_the_tenant_running_the_fewest() {
        let (a, b, c) = (tenant("a"), tenant("b"), tenant("c"));
        let mut state = State::default();
        let now = Timestamp::from_unix_ms(0).expect("epoch");
        for _ in 0..10 {
            push(&mut state, &a, long(1_000));
            push(&mut state, &b, long(1_000));
        }
        // The two attackers take turns while they are alone.
        let first: Vec<Tenant> = (0..4)
            .filter_map(|_| picked(&mut state, now, None))
            .collect();
        assert_eq!(first, vec![a.clone(), b.clone(), a.clone(), b.clone()]);
        // A third tenant runs nothing yet: the next slot is its, before
        // any of the attackers' waiting work.
        push(&mut state, &c, quick());
        assert_eq!(picked(&mut state, now, None), Some(c.clone()));
        assert_eq!(picked(&mut state, now, None), Some(a.clone()));
    }

    #[tokio::test]
    async fn a_tenant_out_of_steps_waits_while_the_others_go_on() {
        let (a, b) = (tenant("a"), tenant("b"));
        let mut state = State::default();
        let now = Timestamp::from_unix_ms(1_000).expect("a time");
        // Tenant a spent two seconds' worth of a budget of 1,000 a second.
        refilled(&mut state, &a, now, 1_000).level = -1_000.0;
        push(&mut state, &a, quick());
        assert!(matches!(
            pick(&mut state, now, Some(1_000)),
            Picked::OutOfBudget(wait) if wait == Duration::from_secs(1)
        ));
        push(&mut state, &b, quick());
        assert_eq!(picked(&mut state, now, Some(1_000)), Some(b));
        // A second and a bit later, its budget has filled above zero.
        let later = now.saturating_add_ms(1_001);
        assert_eq!(picked(&mut state, later, Some(1_000)), Some(a));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn judgements_are_worked_in_slices_and_answered() {
        let pool = JudgePool::new(1, None, Arc::new(ManualClock::fixed()));
        let judgement = pool.judge(&tenant("a"), quick()).await.expect("judged");
        assert!(judgement.satisfied);
        // Many slices' worth, then out of its own budget: an error, never
        // a verdict.
        let error = pool
            .judge(&tenant("a"), long(5 * SLICE_STEPS))
            .await
            .expect_err("out of steps");
        assert_eq!(error, PoolError::OutOfSteps);
        assert_eq!(pool.busy(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tenant_budget_is_charged_what_its_judgements_took() {
        let clock = Arc::new(ManualClock::fixed());
        let pool = JudgePool::new(2, Some(SLICE_STEPS), Arc::clone(&clock) as Arc<dyn Clock>);
        let a = tenant("a");
        // A judgement of about three slices, with a second's worth of
        // budget for each: it goes on only as the clock gives it steps...
        let long_one = {
            let (pool, a) = (pool.clone(), a.clone());
            tokio::spawn(async move { pool.judge(&a, long(3 * SLICE_STEPS)).await })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut seconds = 0;
        while !long_one.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "the judgement never ended"
            );
            if pool.busy() == 0 {
                clock.advance(Duration::from_secs(1));
                seconds += 1;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            seconds >= 2,
            "three slices on a second's worth took {seconds} s"
        );
        let _ = long_one.await;
        // ...and ends with its bucket empty.
        let steps = pool.lock().buckets.get(&a).map(|bucket| bucket.level);
        assert!(steps.is_some_and(|steps| steps <= 0.0), "{steps:?}");
        // ...so its next judgement waits for the clock, while another
        // tenant's does not.
        let waiting = {
            let pool = pool.clone();
            let a = a.clone();
            tokio::spawn(async move { pool.judge(&a, quick()).await })
        };
        pool.judge(&tenant("b"), quick())
            .await
            .expect("b judged at once");
        assert!(!waiting.is_finished());
        clock.advance(Duration::from_secs(3));
        let judged = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a is judged once its budget filled")
            .expect("the task");
        assert!(judged.expect("judged").satisfied);
    }

    #[tokio::test]
    async fn a_tenant_may_keep_only_so_many_judgements_waiting() {
        // No slots free: everything waits.
        let pool = JudgePool::new(1, None, Arc::new(ManualClock::fixed()));
        pool.lock().busy = 1;
        let a = tenant("a");
        let mut waiting = Vec::new();
        for _ in 0..MAX_WAITING_PER_TENANT {
            let (pool, a) = (pool.clone(), a.clone());
            waiting.push(tokio::spawn(async move { pool.judge(&a, quick()).await }));
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while pool.lock().waiting.get(&a).map_or(0, VecDeque::len) < MAX_WAITING_PER_TENANT {
            assert!(
                std::time::Instant::now() < deadline,
                "the judgements never queued"
            );
            tokio::task::yield_now().await;
        }
        assert_eq!(
            pool.judge(&a, quick()).await.expect_err("one too many"),
            PoolError::TooManyWaiting(MAX_WAITING_PER_TENANT)
        );
        // Another tenant still queues.
        let b = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.judge(&tenant("b"), quick()).await })
        };
        pool.lock().busy = 0;
        pool.pump();
        assert!(b.await.expect("task").expect("judged").satisfied);
        for judgement in waiting {
            assert!(judgement.await.expect("task").expect("judged").satisfied);
        }
    }
}
