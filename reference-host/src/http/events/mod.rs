//! A goal's events and evaluations, and the tenant's live event stream:
//! host API, served with or without the conformance seams. Every answer is
//! the caller's own (another tenant's goal is 404) and content-free.

mod frame;
mod stream;

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::json;
use super::{goal_id, AppState, GOALS_BASE};
use crate::domain::wire;

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
    let events = state.engine.events(&tenant, &goal_id(&id)?, after).await?;
    Ok(json(StatusCode::OK, wire::event_list(&events)))
}

async fn evaluations(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let evaluations = state.engine.evaluations(&tenant, &goal_id(&id)?).await?;
    let unjudged = state.engine.choices().confidence_without_verdict;
    Ok(json(
        StatusCode::OK,
        wire::evaluation_list(&evaluations, unjudged),
    ))
}
