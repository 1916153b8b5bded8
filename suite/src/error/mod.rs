//! The suite's error types.
//!
//! Two families: [`crate::start::StartError`] means the run could not start (exit 2), and
//! [`RunError`] is a step of a running scenario finding the host not
//! answering usably at all (the scenario errors). The host answering
//! something the profile forbids is no error but a failed check
//! ([`crate::run::outcome::CheckResult`]).

use std::time::Duration;

/// The host could not be used: nothing can be concluded from this exchange.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// No connection could be opened (refused, unresolvable, connect
    /// timeout): the host is not there, as opposed to answering badly.
    #[error("{method} {url}: transport failure: cannot connect: {message}")]
    Connect {
        method: String,
        url: String,
        message: String,
    },
    #[error("{method} {url}: transport failure: {message}")]
    Transport {
        method: String,
        url: String,
        message: String,
    },
    #[error("{method} {url}: no complete response within {}", human(*after))]
    Timeout {
        method: String,
        url: String,
        after: Duration,
    },
    #[error("{method} {url}: response body exceeds {cap} bytes")]
    BodyTooLarge {
        method: String,
        url: String,
        cap: usize,
    },
    #[error(
        "{method} {url}: answered {status} with a body that is not JSON ({reason}): {excerpt}"
    )]
    NotJson {
        method: String,
        url: String,
        status: u16,
        reason: String,
        excerpt: String,
    },
    /// The scenario itself is broken at run time (an unknown variable, a
    /// header value that cannot be sent). The loader rejects most of these
    /// before the run; this is the backstop.
    #[error("scenario error: {0}")]
    Scenario(String),
}

fn human(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}
