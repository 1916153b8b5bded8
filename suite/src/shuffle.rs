//! `--shuffle`: the order trials are handed to the harness, from a seed the
//! report records, so an order-dependent failure can be replayed exactly.
//!
//! The generator is SplitMix64 and the shuffle Fisher–Yates; both are a few
//! lines, and owning them keeps a seed meaning the same order in every
//! build of the suite, whatever a dependency does to its algorithms.

/// Largest seed we hand out or accept: JSON readers that hold numbers as
/// doubles (JavaScript) read every seed up to here exactly.
pub const MAX_SEED: u64 = (1 << 53) - 1;

/// The order trials run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrialOrder {
    /// Scenario-name order (the catalog's).
    #[default]
    Catalog,
    /// Shuffled from this seed.
    Shuffled { seed: u64 },
}

impl TrialOrder {
    pub fn seed(self) -> Option<u64> {
        match self {
            TrialOrder::Catalog => None,
            TrialOrder::Shuffled { seed } => Some(seed),
        }
    }
}

/// A fresh seed for `--shuffle` without `--seed`.
pub fn random_seed() -> u64 {
    let bits = uuid::Uuid::new_v4().as_u128();
    (bits as u64 ^ (bits >> 64) as u64) & MAX_SEED
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, full-period, and good enough
/// to pick an order.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` ≥ 1), without modulo bias.
    fn below(&mut self, bound: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % bound;
        loop {
            let value = self.next();
            if value < zone {
                return value % bound;
            }
        }
    }
}

/// Shuffles `items` in place; the same seed and length give the same order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = SplitMix64(seed);
    for last in (1..items.len()).rev() {
        let bound = u64::try_from(last + 1).unwrap_or(u64::MAX);
        let pick = usize::try_from(rng.below(bound)).unwrap_or(last);
        items.swap(last, pick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_order() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        shuffle(&mut a, 42);
        shuffle(&mut b, 42);
        assert_eq!(a, b);
    }

    #[test]
    fn a_shuffle_is_a_permutation_that_moves_things() {
        let original: Vec<u32> = (0..50).collect();
        let mut shuffled = original.clone();
        shuffle(&mut shuffled, 7);
        assert_ne!(shuffled, original);
        let mut sorted = shuffled.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, original);
    }

    #[test]
    fn different_seeds_give_different_orders() {
        let orders: std::collections::BTreeSet<Vec<u32>> = (0..20)
            .map(|seed| {
                let mut items: Vec<u32> = (0..10).collect();
                shuffle(&mut items, seed);
                items
            })
            .collect();
        assert!(orders.len() > 15, "{} distinct orders of 20", orders.len());
    }

    #[test]
    fn every_position_is_reachable() {
        // Each element lands in each slot for some seed: no slot is fixed.
        let mut seen = [[false; 5]; 5];
        for seed in 0..200 {
            let mut items: Vec<usize> = (0..5).collect();
            shuffle(&mut items, seed);
            for (slot, item) in items.iter().enumerate() {
                seen[*item][slot] = true;
            }
        }
        assert!(seen.iter().flatten().all(|hit| *hit), "{seen:?}");
    }

    #[test]
    fn tiny_inputs_are_fine() {
        let mut empty: Vec<u8> = Vec::new();
        shuffle(&mut empty, 1);
        let mut one = vec![9];
        shuffle(&mut one, 1);
        assert_eq!(one, [9]);
    }

    #[test]
    fn random_seeds_fit_in_a_double() {
        for _ in 0..100 {
            assert!(random_seed() <= MAX_SEED);
        }
    }
}
