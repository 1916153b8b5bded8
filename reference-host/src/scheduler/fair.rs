//! Fair shares of the scheduler's slots: work waits in one queue per
//! tenant, slots go round-robin to the tenants with work waiting, and no
//! tenant holds more than its cap at once. One queue for everyone, first
//! come first served, let a tenant with 600 hanging goals take every slot
//! while another tenant's due goals waited behind them.

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
}

impl<T> FairQueue<T> {
    /// A queue in which a tenant runs at most `cap` items at once.
    pub fn new(cap: usize) -> FairQueue<T> {
        FairQueue {
            waiting: HashMap::new(),
            turns: VecDeque::new(),
            running: HashMap::new(),
            len: 0,
            cap,
        }
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
        for _ in 0..self.turns.len() {
            let tenant = self.turns.pop_front()?;
            let running = self.running.get(&tenant).copied().unwrap_or(0);
            if running >= self.cap || !admit(&tenant) {
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
        self.turns
            .iter()
            .map(|tenant| {
                let running = self.running.get(tenant).copied().unwrap_or(0);
                let waiting = self.waiting.get(tenant).map_or(0, VecDeque::len);
                waiting.min(self.cap.saturating_sub(running))
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str) -> Tenant {
        Tenant::parse(name).expect("a tenant")
    }

    #[test]
    fn tenants_take_turns_and_stay_under_their_cap() {
        let (a, b) = (tenant("a"), tenant("b"));
        let mut queue = FairQueue::new(2);
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
}
