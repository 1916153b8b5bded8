//! Group commit: concurrent writes share one transaction and one commit.
//!
//! Every write is a job queued here. The caller that leads runs every
//! queued job in one transaction, commits once, and only then hands each
//! job its result. A job that fails is rolled back alone: the transaction
//! is rolled back, the failed job gets its error, and the others run again
//! in a new transaction (jobs are `Fn`, and write nothing outside it).
//! Failures are rare — a version conflict is a result, not a failure — so
//! this costs less than a savepoint around every job, which copied each
//! page a job touched into a sub-journal and freed it again (9% of a
//! `continue`'s samples, 5% more freeing the sub-journal, where glibc
//! trimmed its heap and the kernel shot down TLBs on both cores).
//!
//! So a caller learns its write happened only once it is durable — a run
//! is never dispatched before its reservation is on disk — while a burst
//! of writers pays for one commit instead of one each. Under load a write
//! waited mostly for the commits of the others: before group commit,
//! 30,000 creates made 104,636 context switches (3.5 a create, writers
//! queueing on the connection one after another); now 8,411 (0.28), and
//! `continue` rose from about 2.1k to 2.6k req/s in one session. A job
//! may also carry a commit hook, run once it
//! committed and before anybody in its group is woken (the goal cache).
//!
//! No writer thread: the caller that finds nobody leading leads, running
//! group after group until its own job is done, then hands the lead to the
//! oldest job still queued (or, with none, stops leading). Every other
//! caller sleeps on its own job until it is done or handed the lead, so a
//! commit wakes its whole group at once. The queue and the leading flag
//! change under one lock, so a job is never queued with nobody leading.
//!
//! Async callers ([`GroupCommit::submit`]) wait without a thread: the
//! leader among them runs the group on its worker (a group is bounded, see
//! [`MAX_GROUP`]), which spares every write two thread hand-offs into the
//! blocking pool. A dropped async caller still has its job run (it may
//! already be part of a group); if it was handed the lead it leads before
//! it goes, and it never takes the lead afterwards.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;
use tokio::sync::Notify;

use super::StoreError;

/// Most jobs one transaction takes; the rest go in the next group. Bounds
/// how long a leader holds its thread (about a millisecond here).
const MAX_GROUP: usize = 64;

type Work<T> = Box<dyn Fn(&Connection) -> Result<T, StoreError> + Send>;

/// Runs once a job's result is committed, before anybody is answered.
type OnCommit<T> = Box<dyn FnOnce(&T) + Send>;

/// A write in progress; resolves once it committed (or failed).
pub type Pending<T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'static>>;

/// One queued write and, once its group committed, its result.
struct Slot<T> {
    /// Kept until the job is settled: rolled back with a failing job of its
    /// group, it runs again.
    work: Mutex<Option<Work<T>>>,
    state: Mutex<SlotState<T>>,
    on_commit: Mutex<Option<OnCommit<T>>>,
    signal: Mutex<Signal>,
    /// Wakes a thread waiting in [`Slot::wait`].
    thread: Condvar,
    /// Wakes a task waiting in [`Slot::wait_async`] (keeps a permit when
    /// nobody waits yet, so no wake is lost).
    task: Notify,
}

enum SlotState<T> {
    Queued,
    /// Ran inside the open transaction; not yet committed (and maybe to
    /// run again).
    Ran(Result<T, StoreError>),
    /// Final: committed, failed, or rolled back with its group.
    Done(Result<T, StoreError>),
    Taken,
}

#[derive(Default)]
struct Signal {
    /// The caller is to lead.
    lead: bool,
    /// The caller is gone (a dropped async write): never hand it the lead.
    abandoned: bool,
}

/// What the leader needs of a job, whatever its result type.
trait Job: Send + Sync {
    /// Runs the work; `false` when it failed and the transaction must go.
    fn run(&self, connection: &Connection) -> bool;
    /// The group committed (`None`) or failed as a whole (`Some`): the
    /// result is final and the commit hook ran. The caller is not woken
    /// yet ([`Job::wake`]).
    fn settle(&self, group_failed: Option<&str>);
    fn wake(&self);
    /// Tells the job's caller to lead; `false` if the caller is gone.
    fn hand_lead(&self) -> bool;
    fn is_done(&self) -> bool;
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in a job is caught below; a poisoned lock still holds a
    // consistent value (every state change is one assignment).
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T: Send> Job for Slot<T> {
    fn run(&self, connection: &Connection) -> bool {
        let work = lock(&self.work);
        let Some(work) = work.as_ref() else {
            return true;
        };
        let result = catch_unwind(AssertUnwindSafe(|| work(connection))).unwrap_or_else(|_| {
            Err(StoreError::Corrupt(
                "a storage write panicked; it was rolled back".to_string(),
            ))
        });
        let ok = result.is_ok();
        *lock(&self.state) = SlotState::Ran(result);
        ok
    }

    fn settle(&self, group_failed: Option<&str>) {
        drop(lock(&self.work).take());
        let mut state = lock(&self.state);
        let result = match std::mem::replace(&mut *state, SlotState::Taken) {
            SlotState::Ran(Err(error)) => Err(error),
            SlotState::Ran(Ok(value)) => match group_failed {
                None => Ok(value),
                Some(reason) => Err(StoreError::GroupCommit(reason.to_string())),
            },
            SlotState::Queued | SlotState::Taken | SlotState::Done(_) => Err(
                StoreError::GroupCommit(group_failed.unwrap_or("the write never ran").to_string()),
            ),
        };
        if let (Ok(value), Some(hook)) = (&result, lock(&self.on_commit).take()) {
            hook(value);
        }
        *state = SlotState::Done(result);
    }

    fn wake(&self) {
        // Taking `signal` orders this wake after a waiting thread's check.
        drop(lock(&self.signal));
        self.thread.notify_one();
        self.task.notify_one();
    }

    fn hand_lead(&self) -> bool {
        {
            let mut signal = lock(&self.signal);
            if signal.abandoned {
                return false;
            }
            signal.lead = true;
        }
        Job::wake(self);
        true
    }

    fn is_done(&self) -> bool {
        matches!(*lock(&self.state), SlotState::Done(_) | SlotState::Taken)
    }
}

impl<T: Send> Slot<T> {
    fn new(work: Work<T>, on_commit: Option<OnCommit<T>>) -> Slot<T> {
        Slot {
            work: Mutex::new(Some(work)),
            state: Mutex::new(SlotState::Queued),
            on_commit: Mutex::new(on_commit),
            signal: Mutex::new(Signal::default()),
            thread: Condvar::new(),
            task: Notify::new(),
        }
    }

    /// Sleeps until the job is done (`false`) or its caller is to lead
    /// (`true`).
    fn wait(&self) -> bool {
        let mut signal = lock(&self.signal);
        loop {
            if signal.lead {
                return true;
            }
            if self.is_done() {
                return false;
            }
            signal = self
                .thread
                .wait(signal)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// [`Slot::wait`] for a task.
    async fn wait_async(&self) -> bool {
        loop {
            if lock(&self.signal).lead {
                return true;
            }
            if self.is_done() {
                return false;
            }
            self.task.notified().await;
        }
    }

    fn take(&self) -> Result<T, StoreError> {
        match std::mem::replace(&mut *lock(&self.state), SlotState::Taken) {
            SlotState::Done(result) => result,
            _ => Err(StoreError::GroupCommit("the write never ran".to_string())),
        }
    }
}

/// The write connection and the queue of writes waiting for it.
pub(super) struct GroupCommit {
    connection: Mutex<Connection>,
    shared: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Arc<dyn Job>>,
    /// A caller is leading (or has been handed the lead and will).
    leading: bool,
}

/// How handing on the lead went.
enum Passed {
    /// A queued job's caller leads now.
    Handed,
    /// Nothing is queued; nobody leads.
    Idle,
    /// Only jobs whose callers are gone are queued: keep leading.
    NobodyTakes,
}

/// Passes the lead on if a leader unwinds, so writers never wait for a
/// leader that is gone.
struct Leading<'a> {
    shared: &'a Mutex<Queue>,
    done: bool,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.done {
            if let Passed::NobodyTakes = pass_lead(self.shared) {
                lock(self.shared).leading = false;
            }
        }
    }
}

fn pass_lead(shared: &Mutex<Queue>) -> Passed {
    let mut queue = lock(shared);
    if queue.jobs.is_empty() {
        queue.leading = false;
        return Passed::Idle;
    }
    if queue.jobs.iter().any(|job| job.hand_lead()) {
        Passed::Handed
    } else {
        Passed::NobodyTakes
    }
}

/// An async caller waiting for its job; leads on drop if it was handed the
/// lead, and is never handed it afterwards.
struct Waiting<'a, T: Send> {
    commit: &'a GroupCommit,
    slot: &'a Arc<Slot<T>>,
    armed: bool,
}

impl<T: Send> Drop for Waiting<'_, T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let lead = {
            let mut signal = lock(&self.slot.signal);
            signal.abandoned = true;
            signal.lead
        };
        if lead {
            self.commit.lead(self.slot.as_ref());
        }
    }
}

impl GroupCommit {
    pub(super) fn new(connection: Connection) -> GroupCommit {
        GroupCommit {
            connection: Mutex::new(connection),
            shared: Mutex::new(Queue::default()),
        }
    }

    /// The write connection, for reads that must see it (an in-memory
    /// database has no other) and for set-up.
    pub(super) fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no open transaction: a
        // group ends with COMMIT or ROLLBACK before the lock is let go.
        lock(&self.connection)
    }

    /// Queues a job; `true` when its caller is to lead at once.
    fn enqueue(&self, job: Arc<dyn Job>) -> bool {
        let mut queue = lock(&self.shared);
        queue.jobs.push(job);
        !std::mem::replace(&mut queue.leading, true)
    }

    /// Runs groups until `mine` is done, then hands the lead on.
    fn lead(&self, mine: &dyn Job) {
        let mut leading = Leading {
            shared: &self.shared,
            done: false,
        };
        let connection = self.connection();
        loop {
            if mine.is_done() {
                match pass_lead(&self.shared) {
                    Passed::Handed | Passed::Idle => break,
                    Passed::NobodyTakes => {}
                }
            }
            let group: Vec<Arc<dyn Job>> = {
                let mut queue = lock(&self.shared);
                let take = queue.jobs.len().min(MAX_GROUP);
                queue.jobs.drain(..take).collect()
            };
            if group.is_empty() {
                // Unreachable: a job stays queued until a group of this
                // leader takes it, and an empty queue passes as idle. Let
                // the guard stop leading rather than spin.
                return;
            }
            run_group(&connection, &group);
        }
        leading.done = true;
    }

    /// Runs `work` in a transaction shared with whatever else is queued,
    /// returning once that transaction committed (or failed). Blocks the
    /// thread: for callers off the async workers.
    pub(super) fn write<T: Send + 'static>(
        &self,
        work: impl Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let slot = Arc::new(Slot::new(Box::new(work), None));
        if self.enqueue(Arc::clone(&slot) as Arc<dyn Job>) || slot.wait() {
            self.lead(slot.as_ref());
        }
        slot.take()
    }

    /// [`GroupCommit::write`] for async callers: waits as a task, and leads
    /// on the caller's worker.
    pub(super) fn submit<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Pending<T> {
        self.submit_then(work, None)
    }

    /// [`GroupCommit::submit`], running `on_commit` with the job's result
    /// once it committed and before anybody in its group is answered, even
    /// if the caller went away meanwhile.
    pub(super) fn submit_then<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
        on_commit: Option<OnCommit<T>>,
    ) -> Pending<T> {
        let commit = Arc::clone(self);
        Box::pin(async move {
            let slot = Arc::new(Slot::new(Box::new(work), on_commit));
            let mut leads = commit.enqueue(Arc::clone(&slot) as Arc<dyn Job>);
            if !leads {
                let mut waiting = Waiting {
                    commit: &commit,
                    slot: &slot,
                    armed: true,
                };
                leads = slot.wait_async().await;
                waiting.armed = false;
            }
            if leads {
                commit.lead(slot.as_ref());
            }
            slot.take()
        })
    }
}

fn run_group(connection: &Connection, group: &[Arc<dyn Job>]) {
    let mut pending: Vec<Arc<dyn Job>> = group.to_vec();
    loop {
        if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
            finish(&pending, Some(&error.to_string()));
            return;
        }
        let Some(failed) = pending.iter().position(|job| !job.run(connection)) else {
            match connection.execute_batch("COMMIT") {
                Ok(()) => finish(&pending, None),
                Err(error) => {
                    rollback(connection);
                    finish(&pending, Some(&error.to_string()));
                }
            }
            return;
        };
        // Nothing of the group is written; the failed job gets its own
        // error, the rest run again.
        rollback(connection);
        let job = pending.remove(failed);
        finish(&[job], None);
        if pending.is_empty() {
            return;
        }
    }
}

/// Settles every job of the group (their commit hooks run), then wakes
/// their callers: nobody woken sees a state that a hook of its own group
/// has yet to put in place.
fn finish(group: &[Arc<dyn Job>], group_failed: Option<&str>) {
    group.iter().for_each(|job| job.settle(group_failed));
    group.iter().for_each(|job| job.wake());
}

fn rollback(connection: &Connection) {
    if !connection.is_autocommit() {
        if let Err(error) = connection.execute_batch("ROLLBACK") {
            tracing::error!(%error, "rolling back a failed write group failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> GroupCommit {
        let connection = Connection::open_in_memory().expect("opens");
        connection
            .execute_batch("CREATE TABLE t (v INTEGER PRIMARY KEY)")
            .expect("creates");
        GroupCommit::new(connection)
    }

    fn count(group: &GroupCommit) -> i64 {
        group
            .connection()
            .query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0))
            .expect("counts")
    }

    #[test]
    fn a_write_commits_and_returns_its_value() {
        let group = store();
        let inserted = group
            .write(|c| Ok(c.execute("INSERT INTO t (v) VALUES (1)", [])?))
            .expect("writes");
        assert_eq!(inserted, 1);
        assert!(
            group.connection().is_autocommit(),
            "no transaction left open"
        );
        assert_eq!(count(&group), 1);
    }

    #[test]
    fn a_failing_write_changes_nothing() {
        let group = store();
        let result: Result<(), StoreError> = group.write(|c| {
            c.execute("INSERT INTO t (v) VALUES (1)", [])?;
            Err(StoreError::Corrupt("no".into()))
        });
        assert!(matches!(result, Err(StoreError::Corrupt(_))));
        assert_eq!(count(&group), 0);
    }

    #[test]
    fn a_panicking_write_is_an_error_and_changes_nothing() {
        let group = store();
        let result: Result<(), StoreError> = group.write(|c| {
            c.execute("INSERT INTO t (v) VALUES (1)", [])?;
            panic!("boom")
        });
        assert!(result.is_err());
        assert_eq!(count(&group), 0);
        group
            .write(|c| Ok(c.execute("INSERT INTO t (v) VALUES (2)", [])?))
            .expect("the store still writes");
        assert_eq!(count(&group), 1);
    }

    /// Jobs queued together: the failing one is rolled back alone, the
    /// others commit, each gets its own result.
    #[test]
    fn one_failure_in_a_group_rolls_back_only_itself() {
        let group = store();
        let slots: Vec<Arc<Slot<i64>>> = (1..=3)
            .map(|v| {
                let work: Work<i64> = Box::new(move |c: &Connection| {
                    c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
                    if v == 2 {
                        return Err(StoreError::Corrupt("two".into()));
                    }
                    Ok(v)
                });
                Arc::new(Slot::new(work, None))
            })
            .collect();
        let jobs: Vec<Arc<dyn Job>> = slots
            .iter()
            .map(|slot| Arc::clone(slot) as Arc<dyn Job>)
            .collect();
        run_group(&group.connection(), &jobs);
        let results: Vec<Result<i64, StoreError>> = slots.iter().map(|slot| slot.take()).collect();
        assert!(matches!(results[0], Ok(1)));
        assert!(matches!(results[1], Err(StoreError::Corrupt(_))));
        assert!(matches!(results[2], Ok(3)));
        assert_eq!(count(&group), 2);
        let values: Vec<i64> = group
            .connection()
            .prepare("SELECT v FROM t ORDER BY v")
            .expect("prepares")
            .query_map([], |row| row.get(0))
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads");
        assert_eq!(values, vec![1, 3]);
    }

    /// The hook sees the committed result before the caller is answered,
    /// and a failed write runs no hook.
    #[tokio::test]
    async fn the_commit_hook_runs_before_the_answer_and_only_on_success() {
        let group = Arc::new(store());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook = |seen: &Arc<Mutex<Vec<i64>>>| -> Option<OnCommit<i64>> {
            let seen = Arc::clone(seen);
            Some(Box::new(move |value: &i64| lock(&seen).push(*value)))
        };
        let written = group
            .submit_then(
                |c| Ok(c.execute("INSERT INTO t (v) VALUES (7)", [])? as i64 * 7),
                hook(&seen),
            )
            .await
            .expect("writes");
        assert_eq!(written, 7);
        assert_eq!(*lock(&seen), vec![7], "the hook ran before the answer");
        let failed = group
            .submit_then(
                |c| {
                    c.execute("INSERT INTO t (v) VALUES (8)", [])?;
                    Err(StoreError::Corrupt("no".into()))
                },
                hook(&seen),
            )
            .await;
        assert!(failed.is_err());
        assert_eq!(*lock(&seen), vec![7], "a failed write ran its hook");
        assert_eq!(count(&group), 1);
    }

    /// Many threads writing at once: every write lands exactly once and
    /// every caller sees its own result.
    #[test]
    fn concurrent_writers_all_land_once() {
        let group = Arc::new(store());
        let threads: Vec<_> = (0..16)
            .map(|t| {
                let group = Arc::clone(&group);
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let v = t * 1000 + i;
                        let got = group
                            .write(move |c| {
                                c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
                                Ok(v)
                            })
                            .expect("writes");
                        assert_eq!(got, v);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no writer panicked");
        }
        assert_eq!(count(&group), 16 * 50);
    }

    /// Tasks writing at once on two workers: every write lands exactly once
    /// and every task sees its own result, with no thread per write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_tasks_all_land_once() {
        let group = Arc::new(store());
        let tasks: Vec<_> = (0..64)
            .map(|t| {
                let group = Arc::clone(&group);
                tokio::spawn(async move {
                    for i in 0..20 {
                        let v = t * 1000 + i;
                        let got = group
                            .submit(move |c| {
                                c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
                                Ok(v)
                            })
                            .await
                            .expect("writes");
                        assert_eq!(got, v);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("no writer panicked");
        }
        assert_eq!(count(&group), 64 * 20);
    }

    /// Callers that give up while waiting (a dropped request) never leave
    /// the others without a leader: every later write still completes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_waiters_never_strand_the_queue() {
        // A stranded queue hangs; the deadline turns that into a failure.
        tokio::time::timeout(std::time::Duration::from_secs(30), dropped_waiters())
            .await
            .expect("no write waits for a leader that is gone");
    }

    async fn dropped_waiters() {
        let group = Arc::new(store());
        for round in 0..20i64 {
            let tasks: Vec<_> = (0..32i64)
                .map(|t| {
                    let group = Arc::clone(&group);
                    let write = group.submit(move |c| {
                        c.execute("INSERT INTO t (v) VALUES (?1)", [round * 1000 + t])?;
                        Ok(())
                    });
                    tokio::spawn(async move {
                        if t % 2 == 0 {
                            // Polled once, then dropped: queued, maybe
                            // handed the lead, then gone.
                            let _ = tokio::time::timeout(std::time::Duration::ZERO, write).await;
                        } else {
                            write.await.expect("writes");
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("no task panicked");
            }
        }
        // Every queued job ran, dropped callers' too; a last write proves
        // the queue still has a leader.
        group
            .submit(|c| Ok(c.execute("INSERT INTO t (v) VALUES (-1)", [])?))
            .await
            .expect("the store still writes");
        let rows = count(&group);
        assert!(rows > 20 * 16, "every kept write landed, got {rows}");
    }
}
