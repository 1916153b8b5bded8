//! The one way the suite writes a wall-clock instant: reports and the
//! webhook mock's call log must agree to the millisecond, so both use this.

use time::OffsetDateTime;

/// RFC 3339 in UTC with exactly three fraction digits, e.g.
/// `2026-06-13T00:00:00.000Z`.
pub fn timestamp(at: OffsetDateTime) -> String {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.to_offset(time::UtcOffset::UTC)
        .format(FORMAT)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn utc_with_milliseconds_whatever_the_offset() {
        assert_eq!(
            timestamp(datetime!(2026-06-13 02:00:00.1234 +02:00)),
            "2026-06-13T00:00:00.123Z"
        );
    }
}
