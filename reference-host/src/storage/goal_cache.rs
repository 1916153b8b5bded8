//! Goals kept in memory as last committed, so reading a goal (every GET,
//! and the fail-closed check that starts every iteration) skips SQLite: a
//! read transaction on a file database takes the WAL's shared-memory lock
//! (a process-wide mutex and two `fcntl` calls, where the two runtime
//! workers met) and parses the stored record and run ids again. With the
//! cache GET rose from about 38k to 58k req/s, `continue` from about 4.2k
//! to 7.6k, in one session (with mimalloc, commits without savepoints and
//! checkpoints beside the writes, which landed together).
//!
//! The cache is never ahead of the database and never behind what any
//! caller was told:
//! - A write puts its goal here after its transaction committed and before
//!   its caller (or anybody in its group) is answered (`GroupCommit`'s
//!   commit hook), even when that caller has gone away.
//! - A read that missed fills the entry from the database only if its goal
//!   cannot have been written in between: it takes a [`Ticket`] (the
//!   shard's generation) before reading, and writes bump the generation. A
//!   goal written after the ticket is either here (a write always puts its
//!   goal here), and a fill never replaces an entry, or it left the shard
//!   since, and the shard remembers the latest write that left (`hidden`):
//!   a fill older than that is dropped. A read that began before a commit
//!   cannot put the older goal back. The check is per goal, not per shard,
//!   so a batch read (the scheduler warming the goals it is about to fire)
//!   still fills while other goals are written.
//! - Commits reach the cache in the order they committed: one group
//!   leads at a time and its hooks run before the next group begins. So
//!   the last commit's goal is the cached one, whatever its version says.
//!
//! Bounded by an estimate of the bytes it holds; the oldest entries go
//! first. Only `storage` writes goals, so nothing else can make it stale.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::domain::{Goal, GoalId};

/// Independent locks, so reads on two workers rarely meet.
const SHARDS: usize = 16;

/// What one entry costs beyond its text (maps, the `Goal` itself).
const ENTRY_OVERHEAD: usize = 512;

pub(super) struct GoalCache {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    bytes_per_shard: usize,
}

#[derive(Default)]
struct Shard {
    goals: HashMap<GoalId, Entry>,
    /// Ids in the order they were first put here: who goes first.
    order: VecDeque<GoalId>,
    bytes: usize,
    /// Bumped by every write put here.
    generation: u64,
    /// The latest generation whose goal is no longer here: evicted, or too
    /// big to keep. A read that began before it may have missed a write.
    hidden: u64,
}

struct Entry {
    goal: Arc<Goal>,
    weight: usize,
    /// The generation that wrote this entry; 0 for an entry filled by a
    /// read, whose leaving hides no write.
    written: u64,
}

/// A shard's generation, taken before a read of the database.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticket(u64);

/// About what a goal holds in memory, from the length of its stored
/// record (its text: objective, verdict, references) and its run ids.
fn weight(goal: &Goal, record_len: usize) -> usize {
    ENTRY_OVERHEAD + record_len + goal.progress.contributing_run_ids.kept() * 48
}

impl GoalCache {
    /// A cache of at most about `bytes` (0 keeps nothing).
    pub(super) fn new(bytes: usize) -> GoalCache {
        GoalCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            bytes_per_shard: bytes / SHARDS,
        }
    }

    fn shard(&self, id: &GoalId) -> MutexGuard<'_, Shard> {
        let index = (self.hasher.hash_one(id) % SHARDS as u64) as usize;
        // Every change to a shard is complete before its lock is let go.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn get(&self, id: &GoalId) -> Option<Arc<Goal>> {
        self.shard(id)
            .goals
            .get(id)
            .map(|entry| Arc::clone(&entry.goal))
    }

    /// Take before reading `id` from the database; hand to [`fill`].
    ///
    /// [`fill`]: GoalCache::fill
    pub(super) fn ticket(&self, id: &GoalId) -> Ticket {
        Ticket(self.shard(id).generation)
    }

    /// Keeps a goal read from the database, unless it may have been written
    /// since the ticket was taken.
    pub(super) fn fill(&self, ticket: Ticket, goal: Goal, record_len: usize) {
        let weight = weight(&goal, record_len);
        let mut shard = self.shard(&goal.id);
        if shard.hidden > ticket.0 || shard.goals.contains_key(&goal.id) {
            return;
        }
        self.insert(&mut shard, Arc::new(goal), weight, 0);
    }

    /// Keeps a goal just committed (commits come in commit order).
    pub(super) fn committed(&self, goal: Goal, record_len: usize) {
        let weight = weight(&goal, record_len);
        let mut guard = self.shard(&goal.id);
        let shard = &mut *guard;
        shard.generation += 1;
        let written = shard.generation;
        if let Some(entry) = shard.goals.get_mut(&goal.id) {
            shard.bytes = shard.bytes - entry.weight + weight;
            *entry = Entry {
                goal: Arc::new(goal),
                weight,
                written,
            };
            Self::evict(shard, self.bytes_per_shard);
            return;
        }
        self.insert(shard, Arc::new(goal), weight, written);
    }

    /// Drops a goal just deleted (retention), as a write: a read that
    /// began before the delete cannot put it back.
    pub(super) fn forgotten(&self, id: &GoalId) {
        let mut guard = self.shard(id);
        let shard = &mut *guard;
        shard.generation += 1;
        shard.hidden = shard.generation;
        if let Some(entry) = shard.goals.remove(id) {
            shard.bytes -= entry.weight;
        }
        // Its id stays in `order` (eviction skips ids no longer held)
        // until forgotten ids are most of it: compacting now and then
        // keeps a purge O(1) per goal and `order` bounded.
        if shard.order.len() > 2 * shard.goals.len() + 64 {
            let Shard { goals, order, .. } = shard;
            order.retain(|kept| goals.contains_key(kept));
        }
    }

    fn insert(&self, shard: &mut Shard, goal: Arc<Goal>, weight: usize, written: u64) {
        if weight > self.bytes_per_shard {
            shard.hidden = shard.hidden.max(written);
            return;
        }
        shard.order.push_back(goal.id.clone());
        shard.bytes += weight;
        shard.goals.insert(
            goal.id.clone(),
            Entry {
                goal,
                weight,
                written,
            },
        );
        Self::evict(shard, self.bytes_per_shard);
    }

    fn evict(shard: &mut Shard, budget: usize) {
        while shard.bytes > budget {
            let Some(oldest) = shard.order.pop_front() else {
                break;
            };
            if let Some(entry) = shard.goals.remove(&oldest) {
                shard.bytes -= entry.weight;
                shard.hidden = shard.hidden.max(entry.written);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().expect("unpoisoned").goals.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture;

    const RECORD: usize = 300;

    fn goal(version: u64) -> Goal {
        let mut goal = fixture::goal(Some(10), None, None);
        goal.version = version;
        goal
    }

    fn with_version(goal: &Goal, version: u64) -> Goal {
        let mut changed = goal.clone();
        changed.version = version;
        changed
    }

    #[test]
    fn a_commit_is_read_back() {
        let cache = GoalCache::new(1 << 20);
        let stored = goal(1);
        cache.committed(stored.clone(), RECORD);
        assert_eq!(cache.get(&stored.id).as_deref(), Some(&stored));
    }

    /// The stored goal is whatever committed last, even a change that
    /// kept its version (the suite's mutants make such hosts).
    #[test]
    fn the_last_commit_is_what_is_read() {
        let cache = GoalCache::new(1 << 20);
        let first = goal(2);
        cache.committed(first.clone(), RECORD);
        cache.committed(with_version(&first, 3), RECORD);
        assert_eq!(cache.get(&first.id).map(|g| g.version), Some(3));
        let mut same_version = with_version(&first, 3);
        same_version.progress.iterations = 7;
        cache.committed(same_version, RECORD);
        assert_eq!(cache.get(&first.id).map(|g| g.progress.iterations), Some(7));
    }

    /// A read of the database that began before a commit must not put the
    /// goal back as it was before that commit, even once the committed
    /// entry is gone again.
    #[test]
    fn a_fill_that_a_commit_overtook_is_dropped() {
        let cache = GoalCache::new(1 << 20);
        let before = goal(1);
        let ticket = cache.ticket(&before.id);
        cache.committed(with_version(&before, 2), RECORD);
        cache.fill(ticket, before.clone(), RECORD);
        assert_eq!(cache.get(&before.id).map(|g| g.version), Some(2));
        // Evicted between the commit and the fill.
        evict_everything(&cache, &before.id);
        assert!(cache.get(&before.id).is_none());
        cache.fill(ticket, before.clone(), RECORD);
        assert!(cache.get(&before.id).is_none(), "a stale fill landed");
        // A read that starts afterwards fills.
        let fresh = cache.ticket(&before.id);
        cache.fill(fresh, with_version(&before, 2), RECORD);
        assert_eq!(cache.get(&before.id).map(|g| g.version), Some(2));
    }

    /// A forgotten goal is gone from memory, and a read of the database
    /// that began before it was deleted cannot put it back; many forgotten
    /// goals leave the eviction order no longer than what is held.
    #[test]
    fn a_forgotten_goal_stays_forgotten() {
        let cache = GoalCache::new(1 << 20);
        let stored = goal(3);
        cache.committed(stored.clone(), RECORD);
        let ticket = cache.ticket(&stored.id);
        cache.forgotten(&stored.id);
        assert!(cache.get(&stored.id).is_none());
        cache.fill(ticket, stored.clone(), RECORD);
        assert!(
            cache.get(&stored.id).is_none(),
            "a stale fill brought it back"
        );
        let kept = goal(1);
        cache.committed(kept.clone(), RECORD);
        for _ in 0..2_000 {
            let gone = goal(1);
            cache.committed(gone.clone(), RECORD);
            cache.forgotten(&gone.id);
        }
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&kept.id).map(|g| g.version), Some(1));
        let longest = cache
            .shards
            .iter()
            .map(|shard| shard.lock().expect("unpoisoned").order.len())
            .max()
            .unwrap_or(0);
        // Compacted past twice what is held (one goal) plus 64.
        assert!(longest <= 67, "order grew to {longest}");
    }

    /// Evicts everything `id`'s shard holds.
    fn evict_everything(cache: &GoalCache, id: &GoalId) {
        GoalCache::evict(&mut cache.shard(id), 0);
    }

    /// Writes to other goals of the same shard, and fills of other goals,
    /// do not stop a goal that was not written from being filled: the
    /// scheduler warms a batch of goals while others commit.
    #[test]
    fn a_fill_is_kept_while_other_goals_are_written_and_filled() {
        let cache = GoalCache::new(1 << 20);
        let stored = goal(4);
        let ticket = cache.ticket(&stored.id);
        for _ in 0..50 {
            cache.committed(goal(1), RECORD);
            let other = goal(1);
            let other_ticket = cache.ticket(&other.id);
            cache.fill(other_ticket, other, RECORD);
        }
        cache.fill(ticket, stored.clone(), RECORD);
        assert_eq!(cache.get(&stored.id).as_deref(), Some(&stored));
    }

    /// Once a goal written after the ticket has been evicted, a fill from
    /// before cannot tell whether it was its own goal: dropped. Entries
    /// filled by reads leave without hiding anything.
    #[test]
    fn an_evicted_write_stops_older_fills_of_its_shard() {
        // Room for two entries a shard.
        let cache = GoalCache::new(SHARDS * 2 * (ENTRY_OVERHEAD + RECORD));
        let target = goal(1);
        // Fills that get evicted by other fills hide nothing.
        let ticket = cache.ticket(&target.id);
        for _ in 0..(SHARDS * 32) {
            let other = goal(1);
            let other_ticket = cache.ticket(&other.id);
            cache.fill(other_ticket, other, RECORD);
        }
        cache.fill(ticket, target.clone(), RECORD);
        assert!(
            cache.get(&target.id).is_some(),
            "a fill was dropped for nothing"
        );

        // A write that is evicted again hides itself from older fills.
        let late = goal(1);
        let ticket = cache.ticket(&late.id);
        cache.committed(with_version(&late, 2), RECORD);
        for _ in 0..(SHARDS * 32) {
            cache.committed(goal(1), RECORD);
        }
        assert!(cache.get(&late.id).is_none(), "the write was not evicted");
        cache.fill(ticket, late.clone(), RECORD);
        assert!(cache.get(&late.id).is_none(), "a stale fill landed");
    }

    #[test]
    fn a_fill_without_writes_is_kept() {
        let cache = GoalCache::new(1 << 20);
        let stored = goal(4);
        let ticket = cache.ticket(&stored.id);
        cache.fill(ticket, stored.clone(), RECORD);
        assert_eq!(cache.get(&stored.id).as_deref(), Some(&stored));
    }

    #[test]
    fn the_oldest_entries_go_when_it_is_full() {
        // Room for two entries a shard.
        let cache = GoalCache::new(SHARDS * 2 * (ENTRY_OVERHEAD + RECORD));
        let goals: Vec<Goal> = (0..200).map(|_| goal(1)).collect();
        for stored in &goals {
            cache.committed(stored.clone(), RECORD);
        }
        let kept = cache.len();
        assert!(kept > SHARDS / 2 && kept <= SHARDS * 2, "kept {kept}");
        let last = goals.last().expect("goals");
        assert!(
            cache.get(&last.id).is_some(),
            "the newest entry was evicted"
        );
        assert!(cache.get(&goals[0].id).is_none(), "the oldest entry stayed");
    }

    /// A write too big to keep leaves nothing behind to stop an older
    /// fill of its goal: the shard remembers it instead.
    #[test]
    fn a_write_too_big_to_keep_stops_older_fills() {
        let cache = GoalCache::new(1 << 20);
        let stored = goal(1);
        let ticket = cache.ticket(&stored.id);
        cache.committed(with_version(&stored, 2), 1 << 20);
        assert!(
            cache.get(&stored.id).is_none(),
            "kept a write past the budget"
        );
        cache.fill(ticket, stored.clone(), RECORD);
        assert!(cache.get(&stored.id).is_none(), "a stale fill landed");
    }

    #[test]
    fn a_zero_sized_cache_keeps_nothing() {
        let cache = GoalCache::new(0);
        let stored = goal(1);
        cache.committed(stored.clone(), RECORD);
        let ticket = cache.ticket(&stored.id);
        cache.fill(ticket, stored.clone(), RECORD);
        assert!(cache.get(&stored.id).is_none());
    }
}
