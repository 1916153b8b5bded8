//! One async mutex per goal, so iterations of a goal never overlap: two
//! `continue` calls or a `continue` racing a scheduled fire run one after the
//! other, each re-reading the goal first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::domain::{GoalId, Tenant};

type Slots = Arc<Mutex<HashMap<GoalId, Arc<AsyncMutex<()>>>>>;

#[derive(Debug, Default, Clone)]
pub struct GoalLocks {
    slots: Slots,
}

/// Holds a goal's lock; the slot is dropped once nobody holds or awaits it.
#[derive(Debug)]
pub struct GoalGuard {
    guard: Option<OwnedMutexGuard<()>>,
    slot: Arc<AsyncMutex<()>>,
    slots: Slots,
    goal: GoalId,
}

impl GoalLocks {
    fn slot(&self, goal: &GoalId) -> Arc<AsyncMutex<()>> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(slots.entry(goal.clone()).or_default())
    }

    fn guard(
        &self,
        goal: &GoalId,
        slot: Arc<AsyncMutex<()>>,
        guard: OwnedMutexGuard<()>,
    ) -> GoalGuard {
        GoalGuard {
            guard: Some(guard),
            slot,
            slots: Arc::clone(&self.slots),
            goal: goal.clone(),
        }
    }

    pub async fn lock(&self, goal: &GoalId) -> GoalGuard {
        let slot = self.slot(goal);
        let guard = Arc::clone(&slot).lock_owned().await;
        self.guard(goal, slot, guard)
    }

    /// `None` when an iteration of the goal is under way.
    pub fn try_lock(&self, goal: &GoalId) -> Option<GoalGuard> {
        let slot = self.slot(goal);
        let attempt = Arc::clone(&slot).try_lock_owned();
        match attempt {
            Ok(guard) => Some(self.guard(goal, slot, guard)),
            Err(_) => {
                drop(slot);
                self.forget_if_idle(goal);
                None
            }
        }
    }

    fn forget_if_idle(&self, goal: &GoalId) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        // Only the map holds it: nobody owns or awaits this lock.
        if slots
            .get(goal)
            .is_some_and(|slot| Arc::strong_count(slot) == 1)
        {
            slots.remove(goal);
        }
    }

    #[cfg(test)]
    fn slot_count(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for GoalGuard {
    fn drop(&mut self) {
        self.guard.take();
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        // The map and this guard: nobody else holds or awaits the lock.
        // Clones are only made under the map lock, so this cannot race.
        if slots
            .get(&self.goal)
            .is_some_and(|slot| Arc::ptr_eq(slot, &self.slot) && Arc::strong_count(slot) == 2)
        {
            slots.remove(&self.goal);
        }
    }
}

/// One async mutex per tenant, for the writes that must check a count of
/// the tenant's goals and change it as one step (arming a goal against the
/// armed-goals quota). Tenants come from the configured credentials, so
/// the map stays as small as that list.
#[derive(Debug, Default, Clone)]
pub struct TenantLocks {
    slots: Arc<Mutex<HashMap<Tenant, Arc<AsyncMutex<()>>>>>,
}

impl TenantLocks {
    pub async fn lock(&self, tenant: &Tenant) -> OwnedMutexGuard<()> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(slots.entry(tenant.clone()).or_default())
        };
        slot.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_held_lock_refuses_try_lock_and_is_forgotten_when_released() {
        let locks = GoalLocks::default();
        let goal = GoalId::generate();
        let held = locks.lock(&goal).await;
        assert!(locks.try_lock(&goal).is_none());
        let other = GoalId::generate();
        assert!(locks.try_lock(&other).is_some());
        drop(held);
        assert_eq!(locks.slot_count(), 0);
        assert!(locks.try_lock(&goal).is_some());
        assert_eq!(locks.slot_count(), 0);
    }

    #[tokio::test]
    async fn waiters_run_one_after_the_other() {
        let locks = GoalLocks::default();
        let goal = GoalId::generate();
        let first = locks.lock(&goal).await;
        let waiter = {
            let locks = locks.clone();
            let goal = goal.clone();
            tokio::spawn(async move {
                let _second = locks.lock(&goal).await;
            })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(first);
        waiter.await.expect("waiter finishes");
        assert_eq!(locks.slot_count(), 0);
    }
}
