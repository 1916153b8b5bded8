//! `GET {base}/events`: the tenant's events as Server-Sent Events.
//!
//! Each event is one SSE message: `id:` its tenant-wide cursor, `event:`
//! its type, `data:` the same envelope the per-goal list shows. A client
//! that reconnects with `Last-Event-ID` (or `?after=`) gets every event
//! after that cursor exactly once. `?goal=ID` keeps one goal's. An idle
//! stream sends a heartbeat comment; a subscriber that falls too far behind
//! gets a final `stream.dropped` message naming the cursor to resume after,
//! and the stream ends.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use futures_util::Stream;
use tokio::time::{Instant, Sleep};

use super::super::auth::Caller;
use super::super::error::ApiError;
use super::super::{goal_id, AppState};
use super::frame;
use super::whole_number;
use crate::engine::{FeedItem, Subscription, MAX_COALESCE};

/// The stream's path: `{base}/events` (a goal id never reads `events`).
pub const EVENTS_STREAM_PATH: &str = "/v1/host/sample/goals/events";

/// The most messages one body chunk carries: what a wake-up finds ready
/// goes out in one write, up to this many messages...
pub const CHUNK_MESSAGES: usize = 256;
/// ...or up to about this many bytes (the message that crosses it is the
/// chunk's last), so a subscriber catching up writes in bounded pieces.
pub const CHUNK_BYTES: usize = 64 * 1024;

pub(super) async fn events_stream(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let header = headers
        .get("last-event-id")
        .map(|value| {
            value.to_str().map_err(|_| {
                ApiError::invalid_input(
                    "header",
                    "Last-Event-ID",
                    "Last-Event-ID must be visible ASCII",
                )
            })
        })
        .transpose()?;
    // The header wins: a browser's EventSource sends it on reconnect to
    // the same URL, whose `after` is the first connect's.
    let after = match (header, query.get("after")) {
        (Some(text), _) => whole_number("header", "Last-Event-ID", text.trim())?,
        (None, Some(text)) => whole_number("parameter", "after", text)?,
        (None, None) => 0,
    };
    let goal = query.get("goal").map(|text| goal_id(text)).transpose()?;
    let subscription = state
        .engine
        .subscribe(&tenant, goal.as_ref(), after)
        .await?;
    let settings = state.engine.feed().settings();
    let coalesce = settings.coalesce.min(MAX_COALESCE);
    let body = Body::from_stream(chunks(subscription, settings.heartbeat, coalesce));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// A stream's state between two chunks.
struct Chunks {
    subscription: Subscription,
    heartbeat: Duration,
    /// Fires at the latest `heartbeat` after `sent`. Set when it fires,
    /// not for every chunk: with many subscribers, re-setting a timer per
    /// chunk was a timer-wheel update per delivery.
    idle: Pin<Box<Sleep>>,
    /// When the stream last wrote anything (a chunk or a heartbeat).
    sent: Instant,
    coalesce: Duration,
    /// The coalescing wait (one timer, reset for each chunk).
    linger: Pin<Box<Sleep>>,
    /// When the last chunk of events was written.
    written: Option<Instant>,
}

/// Appends `item` to `out`; `false` when the stream ends after it.
fn append(out: &mut Vec<u8>, item: FeedItem) -> bool {
    match item {
        FeedItem::Event(published) => {
            let event = &published.event;
            frame::message(
                out,
                Some(event.cursor),
                event.payload.kind(),
                &published.json,
            );
            true
        }
        FeedItem::Dropped { last } => {
            frame::dropped(out, last);
            false
        }
    }
}

/// Until when a stream that has an event to write waits for more: a busy
/// stream (its last chunk, `written`, went out less than `coalesce` ago)
/// waits `coalesce` from now; `None` (write now) for a stream that has been
/// quiet longer than that, or has written nothing yet.
fn linger_until(written: Option<Instant>, coalesce: Duration, now: Instant) -> Option<Instant> {
    written
        .filter(|&at| now.saturating_duration_since(at) < coalesce)
        .map(|_| now + coalesce)
}

/// The subscription as body chunks: each chunk is every message ready when
/// the stream wakes (at most [`CHUNK_MESSAGES`] / about [`CHUNK_BYTES`]),
/// whole messages only; a heartbeat comment after `heartbeat` without one;
/// the stream ends after a `stream.dropped` message.
///
/// A busy stream, one whose event comes less than `coalesce` after its last
/// chunk, waits `coalesce` for more to share the write; a quiet stream (a
/// goal's follower, a tenant with little going on) writes its event at
/// once instead of waiting for company that is not coming.
///
/// Why chunks and not one message each: with many subscribers per tenant,
/// a wake-up and a socket write per event per subscriber was most of the
/// fan-out's cost, and a subscriber that is behind has several events
/// waiting whenever it runs.
fn chunks(
    subscription: Subscription,
    heartbeat: Duration,
    coalesce: Duration,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    let state = Chunks {
        subscription,
        heartbeat,
        idle: Box::pin(tokio::time::sleep(heartbeat)),
        sent: Instant::now(),
        coalesce,
        linger: Box::pin(tokio::time::sleep(coalesce)),
        written: None,
    };
    futures_util::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        // Both are cancel-safe: `next` changes nothing until it returns.
        let first = loop {
            tokio::select! {
                biased;
                first = state.subscription.next() => break first,
                () = &mut state.idle => {
                    let due = state.sent + state.heartbeat;
                    let now = Instant::now();
                    if now < due {
                        // Something went out since the timer was set.
                        state.idle.as_mut().reset(due);
                        continue;
                    }
                    state.sent = now;
                    state.idle.as_mut().reset(now + state.heartbeat);
                    return Some((Ok(Bytes::from_static(frame::HEARTBEAT)), Some(state)));
                }
            }
        };
        let first = match first {
            Ok(Some(item)) => item,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(%error, "the event stream cannot read stored events");
                return None;
            }
        };
        let mut out = Vec::with_capacity(1024);
        if !append(&mut out, first) {
            return Some((Ok(Bytes::from(out)), None));
        }
        let mut messages = 1;
        // Waits once, and only when nothing more is ready yet and the
        // stream is busy: a stream catching up, or a quiet one, writes at
        // once.
        let mut lingered = false;
        while messages < CHUNK_MESSAGES && out.len() < CHUNK_BYTES {
            let Some(item) = state.subscription.ready() else {
                let until = (!lingered)
                    .then(|| linger_until(state.written, state.coalesce, Instant::now()))
                    .flatten();
                let Some(until) = until else {
                    break;
                };
                lingered = true;
                state.linger.as_mut().reset(until);
                state.linger.as_mut().await;
                continue;
            };
            messages += 1;
            if !append(&mut out, item) {
                return Some((Ok(Bytes::from(out)), None));
            }
        }
        let now = Instant::now();
        state.written = Some(now);
        state.sent = now;
        Some((Ok(Bytes::from(out)), Some(state)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::GOALS_BASE;

    #[test]
    fn a_busy_stream_waits_out_its_interval_and_a_quiet_one_writes_at_once() {
        let coalesce = Duration::from_millis(10);
        let now = Instant::now();
        // Nothing written yet: the first event goes out at once.
        assert_eq!(linger_until(None, coalesce, now), None);
        // A chunk 4 ms ago: a busy stream, it waits a whole interval for
        // more events to share the write.
        let recent = now - Duration::from_millis(4);
        assert_eq!(
            linger_until(Some(recent), coalesce, now),
            Some(now + coalesce)
        );
        // A chunk 10 ms ago or longer: the stream is quiet, write now.
        assert_eq!(linger_until(Some(now - coalesce), coalesce, now), None);
        assert_eq!(
            linger_until(Some(now - Duration::from_secs(5)), coalesce, now),
            None
        );
        // No coalescing asked: never wait.
        assert_eq!(linger_until(Some(now), Duration::ZERO, now), None);
    }

    /// The stream lives under the goals collection, where clients look.
    #[test]
    fn the_stream_is_the_collections_events() {
        assert_eq!(EVENTS_STREAM_PATH, format!("{GOALS_BASE}/events"));
    }
}
