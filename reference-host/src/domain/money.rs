//! Money in integer micro-dollars, so sums are exact (0.1 + 0.2 is 0.3).

use std::fmt;

/// A non-negative amount of US dollars in millionths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct MicroUsd(u64);

impl MicroUsd {
    pub const ZERO: MicroUsd = MicroUsd(0);
    const PER_USD: f64 = 1_000_000.0;

    pub fn from_micros(micros: u64) -> MicroUsd {
        MicroUsd(micros)
    }

    /// Rounds to the nearest micro-dollar. `None` for negative or non-finite
    /// amounts; amounts beyond `u64` micro-dollars saturate (no budget that
    /// large can ever be reached anyway).
    pub fn from_usd(usd: f64) -> Option<MicroUsd> {
        if !usd.is_finite() || usd < 0.0 {
            return None;
        }
        let micros = (usd * Self::PER_USD).round();
        // `as` saturates for floats beyond the integer range.
        Some(MicroUsd(micros as u64))
    }

    pub fn micros(self) -> u64 {
        self.0
    }

    pub fn as_usd(self) -> f64 {
        self.0 as f64 / Self::PER_USD
    }

    pub fn saturating_add(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_add(other.0))
    }

    pub fn saturating_sub(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_sub(other.0))
    }
}

impl fmt::Display for MicroUsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.as_usd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_exact() {
        let a = MicroUsd::from_usd(0.1).expect("valid");
        let b = MicroUsd::from_usd(0.2).expect("valid");
        assert_eq!(a.saturating_add(b), MicroUsd::from_usd(0.3).expect("valid"));
        assert_eq!(a.saturating_add(b).as_usd(), 0.3);
    }

    #[test]
    fn refuses_negative_and_non_finite() {
        assert_eq!(MicroUsd::from_usd(-0.01), None);
        assert_eq!(MicroUsd::from_usd(f64::NAN), None);
        assert_eq!(MicroUsd::from_usd(f64::INFINITY), None);
        assert_eq!(MicroUsd::from_usd(0.0), Some(MicroUsd::ZERO));
    }

    #[test]
    fn huge_amounts_saturate() {
        assert_eq!(
            MicroUsd::from_usd(1e300).map(MicroUsd::micros),
            Some(u64::MAX)
        );
    }
}
