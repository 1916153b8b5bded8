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
//!
//! A goal keeps the ids of its most recent runs only, when its host caps
//! its history ([`RunIds::keep_last`]): `skipped` counts the ones it no
//! longer holds, so positions stay those of the whole list.

use std::sync::Arc;

use serde::ser::{Serialize, Serializer};

use super::ids::RunId;

/// How many ids a push may leave outside the shared base.
const TAIL: usize = 32;

/// How many ids past its cap a list may hold before [`RunIds::keep_last`]
/// drops the oldest: they go a batch at a time, and the store forgets
/// their history a batch at a time too.
pub const TRIM_BATCH: usize = 64;

#[derive(Debug, Clone, Default)]
pub struct RunIds {
    /// The ids before the first one held: no longer kept.
    skipped: usize,
    base: Arc<Vec<RunId>>,
    tail: Vec<RunId>,
    /// The last [`RunIds::keep_last`] dropped ids (cleared by a push): the
    /// write that stores this list may forget their history.
    trimmed: bool,
}

impl RunIds {
    /// The ids of the runs from position `skipped` on, the earlier ones no
    /// longer kept.
    pub fn with_skipped(skipped: usize, ids: impl IntoIterator<Item = RunId>) -> RunIds {
        RunIds {
            skipped,
            base: Arc::new(ids.into_iter().collect()),
            tail: Vec::new(),
            trimmed: false,
        }
    }

    pub fn push(&mut self, run: RunId) {
        self.trimmed = false;
        self.tail.push(run);
        if self.tail.len() >= TAIL {
            let mut frozen = Vec::with_capacity(self.base.len() + self.tail.len());
            frozen.extend(self.base.iter().cloned());
            frozen.append(&mut self.tail);
            self.base = Arc::new(frozen);
        }
    }

    /// Every run the list ever had, the ones no longer kept included.
    pub fn len(&self) -> usize {
        self.skipped + self.kept()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids held.
    pub fn kept(&self) -> usize {
        self.base.len() + self.tail.len()
    }

    /// How many of the oldest ids are no longer held.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Whether the last change to the list dropped ids ([`RunIds::keep_last`]).
    pub fn trimmed(&self) -> bool {
        self.trimmed
    }

    /// Holds at most `most` ids (and [`TRIM_BATCH`] more between trims):
    /// once past that, the oldest go.
    pub fn keep_last(&mut self, most: usize) {
        let kept = self.kept();
        if kept <= most.saturating_add(TRIM_BATCH) {
            return;
        }
        let dropped = kept - most;
        let held: Vec<RunId> = self.iter().skip(dropped).cloned().collect();
        self.base = Arc::new(held);
        self.tail.clear();
        self.skipped += dropped;
        self.trimmed = true;
    }

    pub fn last(&self) -> Option<&RunId> {
        self.tail.last().or_else(|| self.base.last())
    }

    /// The ids held.
    pub fn iter(&self) -> impl Iterator<Item = &RunId> + '_ {
        self.base.iter().chain(&self.tail)
    }

    /// The most recent `most` ids held, oldest first.
    pub fn last_n(&self, most: usize) -> impl Iterator<Item = &RunId> + '_ {
        self.iter().skip(self.kept().saturating_sub(most))
    }

    /// The ids from position `from` of the whole list on (none when `from`
    /// is past the end; those held when it is before them).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &RunId> + '_ {
        let from = from.saturating_sub(self.skipped);
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
        self.skipped == other.skipped && self.kept() == other.kept() && self.iter().eq(other.iter())
    }
}

impl FromIterator<RunId> for RunIds {
    fn from_iter<I: IntoIterator<Item = RunId>>(ids: I) -> RunIds {
        RunIds::with_skipped(0, ids)
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
    fn keeping_the_last_drops_the_oldest_a_batch_at_a_time() {
        let all = ids(300);
        let mut list = RunIds::default();
        let mut trims = 0;
        for (count, run) in all.iter().enumerate() {
            list.push(run.clone());
            list.keep_last(100);
            trims += usize::from(list.trimmed());
            assert_eq!(
                list.len(),
                count + 1,
                "positions stay those of the whole list"
            );
            assert!(list.kept() <= 100 + TRIM_BATCH);
        }
        assert_eq!(trims, 3, "a batch at a time: at 165, 230 and 295 runs");
        assert_eq!(list.skipped() + list.kept(), 300);
        assert!(list.iter().eq(all[list.skipped()..].iter()));
        assert!(list.iter_from(250).eq(all[250..].iter()));
        assert!(list.iter_from(0).eq(all[list.skipped()..].iter()));
        assert!(list.last_n(10).eq(all[290..].iter()));
        list.push(RunId::generate());
        assert!(!list.trimmed(), "a push clears the mark");
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
