//! Instants as the wire shows them: RFC 3339, UTC, millisecond precision.

use std::fmt;
use std::time::Duration;

use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

const WIRE: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// A UTC instant truncated to whole milliseconds, so what we store, compare
/// and print is always the same value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    pub fn from_datetime(at: OffsetDateTime) -> Timestamp {
        let at = at.to_offset(UtcOffset::UTC);
        let millis = at.millisecond();
        // Cannot fail: the nanosecond value comes from a valid millisecond.
        let truncated = at
            .replace_nanosecond(u32::from(millis) * 1_000_000)
            .unwrap_or(at);
        Timestamp(truncated)
    }

    pub fn from_unix_ms(ms: i64) -> Option<Timestamp> {
        let nanos = i128::from(ms) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .ok()
            .map(Timestamp)
    }

    pub fn unix_ms(self) -> i64 {
        // Every representable date fits comfortably in i64 milliseconds.
        i64::try_from(self.0.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
    }

    /// `None` when the result would leave the representable range; callers
    /// treat that as "never".
    pub fn checked_add(self, by: Duration) -> Option<Timestamp> {
        let by = time::Duration::try_from(by).ok()?;
        self.0.checked_add(by).map(Timestamp)
    }

    pub fn checked_add_ms(self, ms: u64) -> Option<Timestamp> {
        self.checked_add(Duration::from_millis(ms))
    }

    /// `by` earlier; `None` before the representable range.
    pub fn checked_sub(self, by: Duration) -> Option<Timestamp> {
        let by = time::Duration::try_from(by).ok()?;
        self.0.checked_sub(by).map(Timestamp)
    }

    /// Like [`Timestamp::checked_add_ms`], but stays at the last
    /// representable millisecond instead of failing.
    pub fn saturating_add_ms(self, ms: u64) -> Timestamp {
        self.checked_add_ms(ms).unwrap_or_else(Timestamp::max)
    }

    /// The last representable millisecond (the end of year 9999).
    pub fn max() -> Timestamp {
        Timestamp::from_datetime(time::PrimitiveDateTime::MAX.assume_utc())
    }

    pub fn parse(text: &str) -> Option<Timestamp> {
        OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            .ok()
            .map(Timestamp::from_datetime)
    }

    pub fn to_wire(self) -> String {
        // Cannot fail for years 0..=9999, the only ones a clock produces.
        self.0
            .format(WIRE)
            .unwrap_or_else(|_| self.0.unix_timestamp().to_string())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_wire())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_milliseconds_in_utc() {
        let at = Timestamp::from_unix_ms(1_781_308_800_123).expect("in range");
        assert_eq!(at.to_wire(), "2026-06-13T00:00:00.123Z");
        assert_eq!(Timestamp::parse(&at.to_wire()), Some(at));
    }

    #[test]
    fn truncates_below_a_millisecond() {
        let at =
            OffsetDateTime::from_unix_timestamp_nanos(1_000_000_999_999_999_999).expect("range");
        let stamp = Timestamp::from_datetime(at);
        assert_eq!(stamp.unix_ms(), 1_000_000_999_999);
        assert_eq!(stamp.to_wire(), "2001-09-09T02:03:19.999Z");
    }

    #[test]
    fn adding_past_the_end_of_time_is_none() {
        let at = Timestamp::from_unix_ms(0).expect("epoch");
        assert!(at.checked_add_ms(u64::MAX).is_none());
        assert_eq!(at.checked_add_ms(1500).map(Timestamp::unix_ms), Some(1500));
        assert_eq!(at.saturating_add_ms(u64::MAX), Timestamp::max());
        assert_eq!(Timestamp::max().to_wire(), "9999-12-31T23:59:59.999Z");
    }
}
