//! `commitment` continuation (PROFILE.md "Commitment continuation"): the
//! run's answer names when the agent commits to check in next, and the host
//! fires the goal's arm then, once. RFC 0068 defines standing commitments
//! (a durable, time-gated arm that fires a run, at most once per satisfied
//! condition) but no wire shape for goals; this is the shape this host
//! chose: `commitment: {afterMs}` in the arm's answer.

use super::timestamp::Timestamp;

/// The shortest check-in an agent may commit to: the scheduler's floor,
/// as for a schedule interval.
pub const MIN_COMMITMENT_MS: u64 = 1_000;
/// The longest: thirty days. A goal that needs longer has a schedule.
pub const MAX_COMMITMENT_MS: u64 = 30 * 24 * 60 * 60 * 1_000;

/// A commitment in range, or `None` (an answer outside it is refused by
/// whoever reads it: the run failed environmentally).
pub fn commitment_ms(after_ms: u64) -> Option<u64> {
    (MIN_COMMITMENT_MS..=MAX_COMMITMENT_MS)
        .contains(&after_ms)
        .then_some(after_ms)
}

/// When a commitment goal fires next after a run that left it active: at
/// the instant the run committed to, or never (`None`) when it committed
/// to nothing: nothing is armed until a person runs it (`continue`).
pub fn next_check_in(now: Timestamp, committed_ms: Option<u64>) -> Option<Timestamp> {
    committed_ms.map(|ms| now.saturating_add_ms(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitments_are_bounded_at_both_ends() {
        assert_eq!(commitment_ms(MIN_COMMITMENT_MS - 1), None);
        assert_eq!(commitment_ms(MIN_COMMITMENT_MS), Some(MIN_COMMITMENT_MS));
        assert_eq!(commitment_ms(MAX_COMMITMENT_MS), Some(MAX_COMMITMENT_MS));
        assert_eq!(commitment_ms(MAX_COMMITMENT_MS + 1), None);
    }

    #[test]
    fn nothing_committed_arms_nothing() {
        let now = Timestamp::from_unix_ms(1_000_000).expect("in range");
        assert_eq!(next_check_in(now, None), None);
        assert_eq!(
            next_check_in(now, Some(1_500)),
            Timestamp::from_unix_ms(1_001_500)
        );
    }
}
