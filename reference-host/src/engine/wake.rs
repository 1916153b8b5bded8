//! How the engine wakes the scheduler. The scheduler sleeps until
//! the next thing it knows is due; a write that arms a goal earlier than
//! that (a create, a resume, an edit, a recorded iteration) tells it here,
//! so the goal need not wait for the next periodic tick.
//!
//! Cheap on the write path: an armed time at or after the scheduler's
//! planned wake costs two atomic loads and no wake at all, so the steady
//! stream of "next fire in one interval" records under load wakes nobody.

use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::Notify;

use super::Engine;
use crate::domain::{Goal, GoalState, Mode, Timestamp};

/// No time: nothing armed, or no plan.
const NONE: i64 = i64::MAX;

/// The engine's side of the scheduler's sleep.
///
/// Why no wake is lost: the engine arms only after its write committed, and
/// the scheduler withdraws its plan ([`SchedulerWake::unplan`]) before it
/// reads what is due. An arm that sees a plan therefore came after a commit
/// that the scheduler's next read (after its planned wake) will see; an arm
/// that sees no plan notifies, and `Notify` keeps that for the next wait.
#[derive(Debug)]
pub struct SchedulerWake {
    notify: Notify,
    /// The earliest time armed since the scheduler last took it (unix ms).
    earliest: AtomicI64,
    /// When the scheduler wakes anyway (unix ms); [`NONE`] when unknown.
    planned: AtomicI64,
}

impl Default for SchedulerWake {
    fn default() -> SchedulerWake {
        SchedulerWake {
            notify: Notify::new(),
            earliest: AtomicI64::new(NONE),
            planned: AtomicI64::new(NONE),
        }
    }
}

impl SchedulerWake {
    /// Something is due at `at`: wakes the scheduler unless it plans to
    /// wake by then anyway. Call only after the write that armed it is
    /// durable, so the scheduler's next read sees it.
    pub fn arm(&self, at: Timestamp) {
        let at = at.unix_ms();
        if at < self.planned.load(Ordering::SeqCst) {
            self.earliest.fetch_min(at, Ordering::SeqCst);
            self.notify.notify_one();
        }
    }

    /// Completes at the next [`SchedulerWake::arm`] that woke, or at once
    /// if one woke since the last wait. One waiter: the scheduler loop.
    pub async fn notified(&self) {
        self.notify.notified().await;
    }

    /// The earliest time armed since the last take, and forgets it.
    pub fn take(&self) -> Option<Timestamp> {
        match self.earliest.swap(NONE, Ordering::SeqCst) {
            NONE => None,
            ms => Timestamp::from_unix_ms(ms),
        }
    }

    /// The scheduler will wake by `at` whatever happens.
    pub fn plan(&self, at: Timestamp) {
        self.planned.store(at.unix_ms(), Ordering::SeqCst);
    }

    /// The scheduler is about to read what is due: from now on every arm
    /// wakes it.
    pub fn unplan(&self) {
        self.planned.store(NONE, Ordering::SeqCst);
    }
}

/// When the scheduler next has to act on `goal` as just written: its
/// deadline, or its next fire if it is an unpaused `schedule` goal (`None`
/// means at once). With `probe`, also at once for an unpaused `heartbeat`
/// goal: a goal a person just created, resumed or switched to heartbeat is
/// probed at once. Nothing for a goal that is not active.
pub(super) fn due_at(goal: &Goal, now: Timestamp, probe: bool) -> Option<Timestamp> {
    if goal.state != GoalState::Active {
        return None;
    }
    let action = match goal.continuation.mode {
        Mode::Schedule if !goal.paused => Some(goal.next_fire_at.unwrap_or(now)),
        // Only a commitment made (or the first check-in) is armed.
        Mode::Commitment if !goal.paused => goal.next_fire_at,
        Mode::Heartbeat if probe && !goal.paused => Some(now),
        _ => None,
    };
    match (action, goal.deadline()) {
        (Some(action), Some(deadline)) => Some(action.min(deadline)),
        (action, deadline) => action.or(deadline),
    }
}

impl Engine {
    /// What the scheduler waits on between ticks.
    pub fn scheduler_wake(&self) -> &SchedulerWake {
        &self.wake
    }

    /// Tells the scheduler about `goal`, just written (see [`due_at`]).
    pub(super) fn armed(&self, goal: &Goal, now: Timestamp, probe: bool) {
        if let Some(at) = due_at(goal, now, probe) {
            self.wake.arm(at);
        }
        self.attention_armed(goal, now);
    }
}
