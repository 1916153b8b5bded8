//! Fair shares of the scheduler's slots: work waits in one queue per
//! tenant, slots go round-robin to the tenants with work waiting, and no
//! tenant holds more than its share at once. One queue for everyone, first
//! come first served, let a tenant with 600 hanging goals take every slot
//! while another tenant's due goals waited behind them.
//!
//! The share is max-min fair with room kept for one more: with `n`
//! tenants running or waiting, each may hold `slots / (n + 1)` (and never
//! more than the per-tenant cap), so whatever the number of busy tenants,
//! a tenant that comes due finds its share free at once. A fixed cap per
//! tenant held against one attacker but not two: two tenants at a cap of
//! 256 took all 320 fire slots.

use std::collections::{HashMap, VecDeque};

use crate::domain::Tenant;

#[derive(Debug)]
pub struct FairQueue<T> {
    waiting: HashMap<Tenant, VecDeque<T>>,
    /// Tenants with work waiting, in the order they get their next turn.
    turns: VecDeque<Tenant>,
    running: HashMap<Tenant, usize>,
    len: usize,
    cap: usize,
    slots: usize,
}

impl<T> FairQueue<T> {
    /// A queue whose items share `slots`, in which a tenant runs at most
    /// `cap` items at once (and less while other tenants have work: see
    /// [`FairQueue::share`]).
    pub fn new(cap: usize, slots: usize) -> FairQueue<T> {
        FairQueue {
            waiting: HashMap::new(),
            turns: VecDeque::new(),
            running: HashMap::new(),
            len: 0,
            cap,
            slots,
        }
    }

    /// What one tenant may run at once now: `slots / (n + 1)` of `n`
    /// tenants with work running or waiting, at most the cap, at least
    /// one.
    pub fn share(&self) -> usize {
        let waiting_only = self
            .waiting
            .keys()
            .filter(|tenant| !self.running.contains_key(*tenant))
            .count();
        share(self.cap, self.slots, self.running.len() + waiting_only)
    }

    pub fn push(&mut self, tenant: Tenant, item: T) {
        let queue = self.waiting.entry(tenant.clone()).or_default();
        if queue.is_empty() {
            self.turns.push_back(tenant);
        }
        queue.push_back(item);
        self.len += 1;
    }

    /// The next item of the next tenant in turn that is below its cap,
    /// counted as running until [`FairQueue::finish`]. `None` when nothing
    /// waits or every tenant with work waiting is at its cap.
    pub fn pop(&mut self) -> Option<(Tenant, T)> {
        self.pop_admitted(|_| true)
    }

    /// [`FairQueue::pop`], skipping tenants `admit` refuses (it is asked
    /// only about a tenant whose item would be taken).
    pub fn pop_admitted(&mut self, mut admit: impl FnMut(&Tenant) -> bool) -> Option<(Tenant, T)> {
        let share = self.share();
        for _ in 0..self.turns.len() {
            let tenant = self.turns.pop_front()?;
            let running = self.running.get(&tenant).copied().unwrap_or(0);
            if running >= share || !admit(&tenant) {
                self.turns.push_back(tenant);
                continue;
            }
            let queue = self.waiting.get_mut(&tenant)?;
            let item = queue.pop_front()?;
            if queue.is_empty() {
                self.waiting.remove(&tenant);
            } else {
                self.turns.push_back(tenant.clone());
            }
            *self.running.entry(tenant.clone()).or_default() += 1;
            self.len -= 1;
            return Some((tenant, item));
        }
        None
    }

    /// One item `pop` gave out for `tenant` is done.
    pub fn finish(&mut self, tenant: &Tenant) {
        if let Some(running) = self.running.get_mut(tenant) {
            *running = running.saturating_sub(1);
            if *running == 0 {
                self.running.remove(tenant);
            }
        }
    }

    /// Items waiting, whoever's.
    pub fn len(&self) -> usize {
        self.len
    }

    /// How many waiting items could start now, their tenants' caps allowing.
    pub fn startable(&self) -> usize {
        let share = self.share();
        self.turns
            .iter()
            .map(|tenant| {
                let running = self.running.get(tenant).copied().unwrap_or(0);
                let waiting = self.waiting.get(tenant).map_or(0, VecDeque::len);
                waiting.min(share.saturating_sub(running))
            })
            .sum()
    }
}

/// One tenant's share of `slots` while `tenants` have work: room is kept
/// for one more tenant, so a tenant that comes due finds its share free.
pub fn share(cap: usize, slots: usize, tenants: usize) -> usize {
    (slots / (tenants + 1)).clamp(1, cap.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture::tenant;

    #[test]
    fn tenants_take_turns_and_stay_under_their_cap() {
        let (a, b) = (tenant("a"), tenant("b"));
        let mut queue = FairQueue::new(2, 100);
        for n in 0..5 {
            queue.push(a.clone(), n);
        }
        queue.push(b.clone(), 100);
        queue.push(b.clone(), 101);
        let order: Vec<(Tenant, i32)> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            vec![
                (a.clone(), 0),
                (b.clone(), 100),
                (a.clone(), 1),
                (b.clone(), 101)
            ]
        );
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.startable(), 0, "a is at its cap");
        queue.finish(&a);
        assert_eq!(queue.startable(), 1);
        assert_eq!(queue.pop(), Some((a.clone(), 2)));
        assert_eq!(queue.pop(), None);
        assert_eq!(queue.len(), 2);
    }

    #[test]
    fn any_number_of_busy_tenants_leaves_a_newcomer_its_share() {
        for attackers in 1..=5 {
            let slots = 48;
            let mut queue = FairQueue::new(16, slots);
            for n in 0..attackers {
                let name = format!("attacker-{n}");
                for item in 0..100 {
                    queue.push(tenant(&name), item);
                }
            }
            // The attackers take all they may; every item hangs.
            let mut taken = 0;
            while queue.pop().is_some() {
                taken += 1;
            }
            assert!(
                taken <= slots,
                "{attackers} attackers took {taken} of {slots} slots"
            );
            let free = slots - taken;
            for item in 0..12 {
                queue.push(tenant("victim"), item);
            }
            let victim_share = queue.share();
            let mut victim = 0;
            while let Some((who, _)) = queue.pop_admitted(|who| who.as_str() == "victim") {
                assert_eq!(who.as_str(), "victim");
                victim += 1;
            }
            assert!(
                victim >= victim_share.min(12) && victim <= free,
                "{attackers} attackers: the victim got {victim} (share {victim_share}, {free} free)"
            );
            // Its share never falls below the equal split of the slots with
            // one kept free.
            assert_eq!(victim_share, share(16, slots, attackers + 1));
        }
    }
}
