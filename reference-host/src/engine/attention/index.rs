//! When each goal's attention is next due (a timed pause to wake, an
//! interval binding to run), in memory: every write of a goal tells it
//! (`Engine::attention_armed`), and a start rebuilds it from the store.
//! One process must see every write, which is why only a store one
//! process owns serves attention (`Goals::serves_attention`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::domain::{GoalId, Timestamp};

#[derive(Debug, Default)]
pub struct DueIndex {
    due: Mutex<HashMap<GoalId, Timestamp>>,
}

impl DueIndex {
    /// `goal` is next due at `at`; `None`: nothing is due for it.
    pub fn set(&self, goal: &GoalId, at: Option<Timestamp>) {
        let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        match at {
            Some(at) => {
                due.insert(goal.clone(), at);
            }
            None => {
                due.remove(goal);
            }
        }
    }

    /// The goals due at `now`, longest due first.
    pub fn due(&self, now: Timestamp) -> Vec<GoalId> {
        let due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found: Vec<(Timestamp, GoalId)> = due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(goal, at)| (*at, goal.clone()))
            .collect();
        found.sort();
        found.into_iter().map(|(_, goal)| goal).collect()
    }

    /// The earliest instant strictly after `now` something is due at.
    pub fn next_after(&self, now: Timestamp) -> Option<Timestamp> {
        let due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        due.values().copied().filter(|at| *at > now).min()
    }
}
