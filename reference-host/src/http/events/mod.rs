//! A goal's events and evaluations, and the tenant's live event stream:
//! host API, served with or without the conformance seams. Every answer is
//! the caller's own (another tenant's goal is 404) and content-free.

mod frame;
mod stream;

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::{goal_id, paging, AppState, GOALS_BASE};
use crate::domain::{wire, GoalId, Tenant};
use crate::engine::Engine;

pub use stream::{CHUNK_BYTES, CHUNK_MESSAGES, EVENTS_STREAM_PATH};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(EVENTS_STREAM_PATH, get(stream::events_stream))
        .route(&format!("{GOALS_BASE}/{{id}}/events"), get(events))
        .route(
            &format!("{GOALS_BASE}/{{id}}/evaluations"),
            get(evaluations),
        )
}

/// A whole number ≥ 0 named `name`, or a 400 naming where it came from.
fn whole_number(kind: &'static str, name: &str, text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().map_err(|_| {
        ApiError::invalid_input(kind, name, format!("{name} must be a whole number >= 0"))
    })
}

/// `GET {base}/{id}/events[?after=SEQ][&limit=N]`: with `limit`, one page
/// and a `Link` to the next; without, every event after `after`, streamed
/// a page at a time.
async fn events(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let after = match query.get("after") {
        None => 0,
        Some(text) => whole_number("parameter", "after", text)?,
    };
    let limit = paging::limit(query.get("limit"))?;
    let id = goal_id(&id)?;
    let engine = std::sync::Arc::clone(state.engine());
    let page_size = limit.unwrap_or(paging::STREAM_PAGE);
    let first = events_page(&engine, &tenant, &id, after, page_size).await?;
    if limit.is_some() {
        let path = format!("{GOALS_BASE}/{id}/events");
        return Ok(paging::page_response("events", &first, &path, page_size));
    }
    Ok(paging::streamed("events", first, move |after| {
        let (engine, tenant, id) = (std::sync::Arc::clone(&engine), tenant.clone(), id.clone());
        async move {
            events_page(&engine, &tenant, &id, after, page_size)
                .await
                .map_err(|error| format!("{error:?}"))
        }
    }))
}

/// One page of events after `after`, and where the next starts when this
/// one is full (one more is asked for to know).
async fn events_page(
    engine: &Engine,
    tenant: &Tenant,
    id: &GoalId,
    after: u64,
    size: usize,
) -> Result<paging::Page, ApiError> {
    let mut events = engine.events(tenant, id, after, size + 1).await?;
    let more = events.len() > size;
    events.truncate(size);
    Ok(paging::Page {
        next: more
            .then(|| events.last().map(|event| event.sequence))
            .flatten(),
        items: events
            .iter()
            .map(|event| wire::event_text(event).into_bytes())
            .collect(),
    })
}

/// `GET {base}/{id}/evaluations[?after=ITERATION][&limit=N]`, paged and
/// streamed as the events are, by iteration.
async fn evaluations(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let after = match query.get("after") {
        None => 0,
        Some(text) => whole_number("parameter", "after", text)?,
    };
    let limit = paging::limit(query.get("limit"))?;
    let id = goal_id(&id)?;
    let engine = std::sync::Arc::clone(state.engine());
    let page_size = limit.unwrap_or(paging::STREAM_PAGE);
    let first = evaluations_page(&engine, &tenant, &id, after, page_size).await?;
    if limit.is_some() {
        let path = format!("{GOALS_BASE}/{id}/evaluations");
        return Ok(paging::page_response(
            "evaluations",
            &first,
            &path,
            page_size,
        ));
    }
    Ok(paging::streamed("evaluations", first, move |after| {
        let (engine, tenant, id) = (std::sync::Arc::clone(&engine), tenant.clone(), id.clone());
        async move {
            evaluations_page(&engine, &tenant, &id, after, page_size)
                .await
                .map_err(|error| format!("{error:?}"))
        }
    }))
}

async fn evaluations_page(
    engine: &Engine,
    tenant: &Tenant,
    id: &GoalId,
    after: u64,
    size: usize,
) -> Result<paging::Page, ApiError> {
    let mut evaluations = engine.evaluations(tenant, id, after, size + 1).await?;
    let more = evaluations.len() > size;
    evaluations.truncate(size);
    let unjudged = engine.choices().confidence_without_verdict;
    Ok(paging::Page {
        next: more
            .then(|| evaluations.last().map(|evaluation| evaluation.iteration))
            .flatten(),
        items: evaluations
            .iter()
            .map(|evaluation| {
                wire::evaluation(evaluation, unjudged)
                    .to_string()
                    .into_bytes()
            })
            .collect(),
    })
}
