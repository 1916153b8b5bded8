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
    /// Fires when the stream has been idle for `heartbeat`.
    idle: Pin<Box<Sleep>>,
    coalesce: Duration,
    /// The pause between two chunks (one timer, reset for each chunk).
    pause: Pin<Box<Sleep>>,
    /// When the last chunk of events was written.
    written: Option<Instant>,
    /// The last chunk stopped at a bound: more was ready, write on at once.
    full: bool,
}

impl Chunks {
    fn rearm(&mut self) {
        self.idle.as_mut().reset(Instant::now() + self.heartbeat);
    }
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

/// Until when a stream lets events gather before it looks for them again:
/// `coalesce` after its last chunk of events (`written`), unless that chunk
/// stopped at a bound (`full`: a subscriber catching up writes on at once)
/// or the time has passed. `None`: look now.
///
/// So a stream writes at most once per `coalesce`, and an event waits at
/// most that long: one that comes during the pause goes out at its end
/// with everything that came meanwhile; one that comes to a stream that
/// has been quiet longer (a goal's follower, a tenant with little going
/// on) goes out at once.
fn pause_until(
    written: Option<Instant>,
    full: bool,
    coalesce: Duration,
    now: Instant,
) -> Option<Instant> {
    written
        .filter(|_| !full)
        .map(|at| at + coalesce)
        .filter(|&until| until > now)
}

/// The subscription as body chunks: each chunk is every message ready when
/// the stream looks (at most [`CHUNK_MESSAGES`] / about [`CHUNK_BYTES`]),
/// whole messages only; a heartbeat comment after `heartbeat` without one;
/// the stream ends after a `stream.dropped` message. Between two chunks
/// the stream pauses as [`pause_until`] says.
///
/// Why chunks and not one message each: with many subscribers per tenant,
/// a wake-up and a socket write per event per subscriber was most of the
/// fan-out's cost, and a subscriber that is behind has several events
/// waiting whenever it runs. Why a pause after a write rather than a wait
/// after an event: a pausing stream is not waiting for the feed, so
/// publishing an event wakes none of the busy streams; each wakes once per
/// chunk, on its own timer.
fn chunks(
    subscription: Subscription,
    heartbeat: Duration,
    coalesce: Duration,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    let state = Chunks {
        subscription,
        heartbeat,
        idle: Box::pin(tokio::time::sleep(heartbeat)),
        coalesce,
        pause: Box::pin(tokio::time::sleep(coalesce)),
        written: None,
        full: false,
    };
    futures_util::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        if let Some(until) = pause_until(state.written, state.full, state.coalesce, Instant::now())
        {
            state.pause.as_mut().reset(until);
            state.pause.as_mut().await;
        }
        // Both are cancel-safe: `next` changes nothing until it returns.
        let first = tokio::select! {
            biased;
            first = state.subscription.next() => first,
            () = &mut state.idle => {
                state.rearm();
                return Some((Ok(Bytes::from_static(frame::HEARTBEAT)), Some(state)));
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
        while messages < CHUNK_MESSAGES && out.len() < CHUNK_BYTES {
            let Some(item) = state.subscription.ready() else {
                break;
            };
            messages += 1;
            if !append(&mut out, item) {
                return Some((Ok(Bytes::from(out)), None));
            }
        }
        state.full = messages >= CHUNK_MESSAGES || out.len() >= CHUNK_BYTES;
        state.written = Some(Instant::now());
        state.rearm();
        Some((Ok(Bytes::from(out)), Some(state)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::GOALS_BASE;

    #[test]
    fn a_stream_pauses_after_a_chunk_unless_it_filled_up() {
        let coalesce = Duration::from_millis(10);
        let now = Instant::now();
        // Nothing written yet: look at once.
        assert_eq!(pause_until(None, false, coalesce, now), None);
        // A chunk 4 ms ago: pause until 10 ms after it.
        let recent = now - Duration::from_millis(4);
        assert_eq!(
            pause_until(Some(recent), false, coalesce, now),
            Some(recent + coalesce)
        );
        // The same chunk stopped at a bound: more is ready, write on.
        assert_eq!(pause_until(Some(recent), true, coalesce, now), None);
        // A chunk 10 ms ago or longer: the pause is over.
        assert_eq!(
            pause_until(Some(now - coalesce), false, coalesce, now),
            None
        );
        assert_eq!(
            pause_until(Some(now - Duration::from_secs(5)), false, coalesce, now),
            None
        );
        // No coalescing asked: never pause.
        assert_eq!(pause_until(Some(now), false, Duration::ZERO, now), None);
    }

    /// The stream lives under the goals collection, where clients look.
    #[test]
    fn the_stream_is_the_collections_events() {
        assert_eq!(EVENTS_STREAM_PATH, format!("{GOALS_BASE}/events"));
    }
}
