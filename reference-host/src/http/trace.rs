//! One span per request (method, path) and one event when it is answered
//! (status, latency). Bodies, headers and query strings are never logged:
//! they carry objective text and bearer tokens.

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

pub async fn request_span(request: Request, next: Next) -> Response {
    // A latency measurement, not a decision: the monotonic clock is right
    // here and there is nothing for a test to drive.
    let started = Instant::now();
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
    );
    let response = next.run(request).instrument(span.clone()).await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let status = response.status().as_u16();
    span.in_scope(|| {
        if response.status().is_server_error() {
            tracing::warn!(status, latency_ms, "answered");
        } else {
            tracing::info!(status, latency_ms, "answered");
        }
    });
    response
}
