//! Time as a dependency, so tests can drive it.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use time::OffsetDateTime;

use crate::domain::Timestamp;

pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_datetime(OffsetDateTime::now_utc())
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Starts at 2026-06-13T00:00:00.000Z.
    pub fn fixed() -> ManualClock {
        ManualClock::new(Timestamp::from_unix_ms(1_781_308_800_000).unwrap_or_else(Timestamp::max))
    }

    pub fn set(&self, to: Timestamp) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = to;
    }

    /// Moves forward and returns the new time.
    pub fn advance(&self, by: Duration) -> Timestamp {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        *now = now.saturating_add_ms(ms);
        *now
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::fixed();
        let start = clock.now();
        assert_eq!(clock.now(), start);
        let later = clock.advance(Duration::from_millis(1500));
        assert_eq!(later.unix_ms() - start.unix_ms(), 1500);
        assert_eq!(clock.now(), later);
        clock.set(start);
        assert_eq!(clock.now(), start);
    }

    #[test]
    fn system_clock_is_near_now() {
        let before = OffsetDateTime::now_utc().unix_timestamp();
        let now = SystemClock.now().unix_ms() / 1000;
        assert!((now - before).abs() <= 1);
    }
}
