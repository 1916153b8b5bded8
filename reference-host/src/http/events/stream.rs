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

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::json;

use super::super::auth::Caller;
use super::super::error::ApiError;
use super::super::{goal_id, AppState};
use super::whole_number;
use crate::engine::{FeedItem, Subscription};

/// The stream's path: `{base}/events` (a goal id never reads `events`).
pub const EVENTS_STREAM_PATH: &str = "/v1/host/sample/goals/events";

/// The SSE message type of the last message to a dropped subscriber.
pub const DROPPED: &str = "stream.dropped";

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
    let heartbeat = state.engine.feed().settings().heartbeat;
    Ok(Sse::new(messages(subscription))
        .keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat"))
        .into_response())
}

/// The subscription as SSE messages, ending after a `stream.dropped`.
fn messages(subscription: Subscription) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    futures_util::stream::unfold(Some(subscription), |subscription| async move {
        let mut subscription = subscription?;
        match subscription.next().await {
            Ok(Some(FeedItem::Event(published))) => {
                let event = &published.event;
                let message = SseEvent::default()
                    .id(event.cursor.to_string())
                    .event(event.payload.kind())
                    .data(published.json.as_ref());
                Some((Ok(message), Some(subscription)))
            }
            Ok(Some(FeedItem::Dropped { last })) => {
                let message = SseEvent::default().event(DROPPED).data(
                    json!({
                        "reason": "the subscriber fell too far behind",
                        "resumeAfter": last.to_string(),
                    })
                    .to_string(),
                );
                Some((Ok(message), None))
            }
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, "the event stream cannot read stored events");
                None
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::GOALS_BASE;

    /// The stream lives under the goals collection, where clients look.
    #[test]
    fn the_stream_is_the_collections_events() {
        assert_eq!(EVENTS_STREAM_PATH, format!("{GOALS_BASE}/events"));
    }
}
