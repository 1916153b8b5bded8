//! Cancelling the work in flight for a goal that a person or the deadline
//! closed. Abandon and the deadline close do not wait for the goal's lock
//! (a webhook may take seconds); they write the close and then cancel, and
//! the iteration drops its run and records nothing (DESIGN "Webhooks").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use crate::domain::GoalId;

type Slots = Arc<Mutex<HashMap<GoalId, (u64, watch::Sender<bool>)>>>;

#[derive(Debug, Default, Clone)]
pub struct Cancels {
    slots: Slots,
    next: Arc<Mutex<u64>>,
}

/// Watches one goal for a cancel; unregisters itself when dropped.
#[derive(Debug)]
pub struct CancelWatch {
    receiver: watch::Receiver<bool>,
    slots: Slots,
    goal: GoalId,
    generation: u64,
}

impl Cancels {
    /// Starts watching `goal`. Register before the fail-closed read: a close
    /// written after that read is then always seen by this watch.
    pub fn watch(&self, goal: &GoalId) -> CancelWatch {
        let generation = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        let (sender, receiver) = watch::channel(false);
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(goal.clone(), (generation, sender));
        CancelWatch {
            receiver,
            slots: Arc::clone(&self.slots),
            goal: goal.clone(),
            generation,
        }
    }

    /// Cancels whatever is in flight for `goal` (nothing if nothing is).
    pub fn cancel(&self, goal: &GoalId) {
        if let Some((_, sender)) = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(goal)
        {
            sender.send_replace(true);
        }
    }

    #[cfg(test)]
    fn watched(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl CancelWatch {
    pub fn is_cancelled(&self) -> bool {
        *self.receiver.borrow()
    }

    /// Resolves once the goal is cancelled; never otherwise.
    pub async fn cancelled(&mut self) {
        if self
            .receiver
            .wait_for(|cancelled| *cancelled)
            .await
            .is_err()
        {
            // The sender is gone only once this watch is unregistered.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for CancelWatch {
    fn drop(&mut self) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if slots
            .get(&self.goal)
            .is_some_and(|(generation, _)| *generation == self.generation)
        {
            slots.remove(&self.goal);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_cancel_reaches_the_watch_of_its_goal_only() {
        let cancels = Cancels::default();
        let goal = GoalId::generate();
        let other = GoalId::generate();
        let mut watched = cancels.watch(&goal);
        let bystander = cancels.watch(&other);
        cancels.cancel(&goal);
        tokio::time::timeout(Duration::from_secs(1), watched.cancelled())
            .await
            .expect("cancelled");
        assert!(watched.is_cancelled());
        assert!(
            !bystander.is_cancelled(),
            "another goal's cancel reached this one"
        );
        drop(watched);
        drop(bystander);
        assert_eq!(cancels.watched(), 0);
    }

    #[tokio::test]
    async fn a_cancel_with_nothing_in_flight_is_forgotten() {
        let cancels = Cancels::default();
        let goal = GoalId::generate();
        cancels.cancel(&goal);
        let later = cancels.watch(&goal);
        assert!(
            !later.is_cancelled(),
            "a stale cancel reached a later iteration"
        );
    }
}
