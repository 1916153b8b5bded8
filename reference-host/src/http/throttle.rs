//! Throttling of failed credentials per source address: after
//! [`MAX_FAILURES`] refused credentials (a token presented and not known;
//! a request without one guesses nothing) from one address within
//! [`WINDOW`], every request from it that needs a credential is answered
//! 429 `too_many_failures` until the window ends, before its token is even
//! compared. Unthrottled, a client could guess 64k tokens a second.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Refused credentials one source may present per window: far more than a
/// client with a mistyped token (or the suite's handful of bad-credential
/// checks) sends, far fewer than a guesser needs.
pub const MAX_FAILURES: u32 = 100;
/// How long a source's failures count, from its first.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Sources remembered at once; beyond that, expired windows are dropped
/// and, if none has, the oldest.
const MAX_SOURCES: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
    since: Instant,
    count: u32,
}

/// Failures per source. `None` is a request without a known peer (the
/// router used in-process, without connect info): one shared bucket.
#[derive(Debug, Default)]
pub struct CredentialThrottle {
    sources: Mutex<HashMap<Option<IpAddr>, Failures>>,
}

impl CredentialThrottle {
    /// How long `source` must wait, if it is throttled at `now`.
    pub fn blocked_at(&self, source: Option<IpAddr>, now: Instant) -> Option<Duration> {
        let sources = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
        let failures = sources.get(&source)?;
        let ends = failures.since + WINDOW;
        (failures.count >= MAX_FAILURES && now < ends).then(|| ends - now)
    }

    /// Counts one refused credential from `source` at `now`.
    pub fn fail_at(&self, source: Option<IpAddr>, now: Instant) {
        let mut sources = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
        if sources.len() >= MAX_SOURCES && !sources.contains_key(&source) {
            sources.retain(|_, failures| now < failures.since + WINDOW);
            if sources.len() >= MAX_SOURCES {
                let oldest = sources
                    .iter()
                    .min_by_key(|(_, failures)| failures.since)
                    .map(|(source, _)| *source);
                if let Some(oldest) = oldest {
                    sources.remove(&oldest);
                }
            }
        }
        let failures = sources.entry(source).or_insert(Failures {
            since: now,
            count: 0,
        });
        if now >= failures.since + WINDOW {
            *failures = Failures {
                since: now,
                count: 0,
            };
        }
        failures.count = failures.count.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_throttled_for_the_rest_of_its_window() {
        let throttle = CredentialThrottle::default();
        let start = Instant::now();
        let here = Some(IpAddr::from([10, 0, 0, 1]));
        let there = Some(IpAddr::from([10, 0, 0, 2]));
        for _ in 0..MAX_FAILURES - 1 {
            throttle.fail_at(here, start);
        }
        assert_eq!(throttle.blocked_at(here, start), None);
        throttle.fail_at(here, start);
        let later = start + Duration::from_secs(10);
        assert_eq!(
            throttle.blocked_at(here, later),
            Some(WINDOW - Duration::from_secs(10))
        );
        assert_eq!(throttle.blocked_at(there, later), None);
        let after = start + WINDOW;
        assert_eq!(throttle.blocked_at(here, after), None);
        throttle.fail_at(here, after);
        assert_eq!(throttle.blocked_at(here, after), None, "a new window");
    }
}
