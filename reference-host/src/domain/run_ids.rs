//! A goal's contributing run ids, in order: an append-only list whose
//! copies share storage.
//!
//! Why not a `Vec`: a goal is copied on every read from the store's cache,
//! into every draft of a transition and into every write, and a standing
//! goal can run for thousands of iterations. Copying a `Vec` of ids copies
//! (and later drops) every id each time, so an iteration's cost grew with
//! the goal's age (at 1,000 runs a goal, 7.6k `continue`s a second against
//! 10.7k at 100; `Goal::clone` and its drop were 7% of the samples). With
//! the shared list, and answers serialised straight from the goal,
//! instructions per `continue` fell from 606k to 492k. Here the ids live in a
//! shared, frozen `base` plus a short private `tail`: a copy shares the
//! base and copies at most `TAIL` ids, and a push refreezes the base only
//! once every `TAIL` pushes.

use std::sync::Arc;

use serde::ser::{Serialize, Serializer};

use super::ids::RunId;

/// How many ids a push may leave outside the shared base.
const TAIL: usize = 32;

#[derive(Debug, Clone, Default)]
pub struct RunIds {
    base: Arc<Vec<RunId>>,
    tail: Vec<RunId>,
}

impl RunIds {
    pub fn push(&mut self, run: RunId) {
        self.tail.push(run);
        if self.tail.len() >= TAIL {
            let mut frozen = Vec::with_capacity(self.base.len() + self.tail.len());
            frozen.extend(self.base.iter().cloned());
            frozen.append(&mut self.tail);
            self.base = Arc::new(frozen);
        }
    }

    pub fn len(&self) -> usize {
        self.base.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn last(&self) -> Option<&RunId> {
        self.tail.last().or_else(|| self.base.last())
    }

    pub fn iter(&self) -> impl Iterator<Item = &RunId> + '_ {
        self.base.iter().chain(&self.tail)
    }

    /// The ids from position `from` on (none when `from` is past the end).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &RunId> + '_ {
        let in_base = self.base.get(from..).unwrap_or_default();
        let in_tail = self
            .tail
            .get(from.saturating_sub(self.base.len())..)
            .unwrap_or_default();
        in_base.iter().chain(in_tail)
    }
}

impl PartialEq for RunIds {
    fn eq(&self, other: &RunIds) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl FromIterator<RunId> for RunIds {
    fn from_iter<I: IntoIterator<Item = RunId>>(ids: I) -> RunIds {
        RunIds {
            base: Arc::new(ids.into_iter().collect()),
            tail: Vec::new(),
        }
    }
}

impl Serialize for RunIds {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(RunId::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(count: usize) -> Vec<RunId> {
        (0..count).map(|_| RunId::generate()).collect()
    }

    #[test]
    fn pushes_keep_their_order_across_refreezes() {
        let all = ids(3 * TAIL + 5);
        let mut list = RunIds::default();
        for (count, run) in all.iter().enumerate() {
            assert_eq!(list.len(), count);
            list.push(run.clone());
            assert_eq!(list.last(), Some(run));
        }
        assert!(list.iter().eq(all.iter()));
        for from in [0, 1, TAIL - 1, TAIL, 3 * TAIL, all.len(), all.len() + 7] {
            let expected = all.get(from..).unwrap_or_default();
            assert!(list.iter_from(from).eq(expected.iter()), "from {from}");
        }
    }

    #[test]
    fn a_copy_does_not_see_the_pushes_of_another() {
        let mut first: RunIds = ids(TAIL - 1).into_iter().collect();
        let before = first.clone();
        let mut second = first.clone();
        first.push(RunId::generate());
        second.push(RunId::generate());
        assert_ne!(first, second);
        assert_eq!(before.len(), TAIL - 1);
        assert_eq!(first.len(), TAIL);
        assert!(first.iter().take(TAIL - 1).eq(before.iter()));
        assert!(second.iter().take(TAIL - 1).eq(before.iter()));
    }

    #[test]
    fn equality_ignores_where_the_ids_are_kept() {
        let all = ids(TAIL + 3);
        let collected: RunIds = all.iter().cloned().collect();
        let mut pushed = RunIds::default();
        for run in &all {
            pushed.push(run.clone());
        }
        assert_eq!(collected, pushed);
        assert_eq!(
            serde_json::to_value(&collected).expect("serializes"),
            serde_json::json!(all.iter().map(RunId::as_str).collect::<Vec<_>>())
        );
    }
}
