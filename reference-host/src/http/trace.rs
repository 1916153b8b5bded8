//! One span per request (method, path) and one event when it is answered
//! (status, latency). Bodies, headers and query strings are never logged:
//! they carry objective text and bearer tokens.
//!
//! Anonymous clients must not be able to fill the disk: a path is logged
//! up to [`MAX_LOGGED_PATH`] bytes, and a request answered without a known
//! credential (a refused one, or one that needed none: discovery, an
//! unknown route) at most [`MAX_ANONYMOUS_LOGGED`] a second, the rest
//! counted in the next one logged. A tenant's requests are each logged,
//! with the tenant. Unbounded, 65 KB paths made 29 MB of 401 lines in 3 s,
//! and requests needing no credential 27.6 MB in 3 s.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::domain::Tenant;

/// Set by the credential check once it knows the request's tenant: a
/// request without one is logged as anonymous.
#[derive(Debug, Clone, Default)]
pub struct LoggedCaller(Arc<OnceLock<Tenant>>);

impl LoggedCaller {
    pub fn set(&self, tenant: &Tenant) {
        let _ = self.0.set(tenant.clone());
    }
}

pub async fn request_span(anonymous: Anonymous, mut request: Request, next: Next) -> Response {
    // A latency measurement, not a decision: the monotonic clock is right
    // here and there is nothing for a test to drive.
    let started = Instant::now();
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %logged_path(request.uri().path()),
        tenant = tracing::field::Empty,
    );
    let caller = LoggedCaller::default();
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).instrument(span.clone()).await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let status = response.status().as_u16();
    let suppressed = match caller.0.get() {
        Some(tenant) => {
            span.record("tenant", tracing::field::display(tenant));
            0
        }
        None => match anonymous.0.admit(started) {
            Some(suppressed) => suppressed,
            None => return response,
        },
    };
    span.in_scope(|| {
        if suppressed > 0 {
            tracing::info!(status, latency_ms, suppressed, "answered");
        } else if response.status().is_server_error() {
            tracing::warn!(status, latency_ms, "answered");
        } else {
            tracing::info!(status, latency_ms, "answered");
        }
    });
    response
}

/// Longest path logged, in bytes; a longer one is cut at a character
/// boundary and marked.
pub const MAX_LOGGED_PATH: usize = 256;

/// Requests without a known credential logged per second.
pub const MAX_ANONYMOUS_LOGGED: u32 = 20;

fn logged_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.len() <= MAX_LOGGED_PATH {
        return path.into();
    }
    let mut end = MAX_LOGGED_PATH;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…({} bytes)", &path[..end], path.len()).into()
}

/// One router's window of logged anonymous requests: per host, not per
/// process, so hosts that share a process (the suite's matrices, the
/// tests) do not spend one another's allowance.
#[derive(Debug, Clone, Default)]
pub struct Anonymous(Arc<AnonymousLog>);

/// A one-second window of logged anonymous requests.
#[derive(Debug, Default)]
struct AnonymousLog {
    /// Start of the window, requests logged in it, requests not logged
    /// since the last one that was.
    window: Mutex<Option<(Instant, u32, u64)>>,
}

impl AnonymousLog {
    /// `Some(requests skipped before this one)` when this one is logged.
    fn admit(&self, now: Instant) -> Option<u64> {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let (start, logged, skipped) = window.get_or_insert((now, 0, 0));
        if now.duration_since(*start) >= Duration::from_secs(1) {
            *start = now;
            *logged = 0;
        }
        if *logged >= MAX_ANONYMOUS_LOGGED {
            *skipped += 1;
            return None;
        }
        *logged += 1;
        Some(std::mem::take(skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_cut_at_a_character_boundary() {
        assert_eq!(logged_path("/v1/goals"), "/v1/goals");
        let long = format!("/{}", "é".repeat(400));
        let logged = logged_path(&long);
        assert!(logged.len() < MAX_LOGGED_PATH + 32, "{logged}");
        assert!(logged.ends_with(&format!("…({} bytes)", long.len())));
    }

    #[test]
    fn anonymous_requests_are_logged_a_few_a_second() {
        let log = AnonymousLog::default();
        let start = Instant::now();
        for _ in 0..MAX_ANONYMOUS_LOGGED {
            assert_eq!(log.admit(start), Some(0));
        }
        assert_eq!(log.admit(start), None);
        assert_eq!(log.admit(start), None);
        assert_eq!(log.admit(start + Duration::from_secs(1)), Some(2));
    }
}
