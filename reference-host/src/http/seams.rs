//! The conformance seams `continue` and `events` (SPEC §4). Mounted only
//! when the host runs with them on; otherwise these paths are 404.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{json, with_etag};
use super::{goal_id, AppState, GOALS_BASE};
use crate::domain::wire;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("{GOALS_BASE}/{{id}}/continue"),
            post(continue_once),
        )
        .route(&format!("{GOALS_BASE}/{{id}}/events"), get(events))
        .route(
            &format!("{GOALS_BASE}/{{id}}/evaluations"),
            get(evaluations),
        )
}

async fn continue_once(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let outcome = state.engine.continue_once(&tenant, &goal_id(&id)?).await?;
    let unjudged = state.engine.choices().confidence_without_verdict;
    let body = wire::continue_response(&outcome.goal, outcome.evaluation.as_ref(), unjudged);
    Ok(with_etag(StatusCode::OK, &outcome.goal, body))
}

async fn events(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let after = match query.get("after") {
        None => 0,
        Some(text) => text.parse::<u64>().map_err(|_| {
            ApiError::invalid_input("parameter", "after", "after must be a whole number >= 0")
        })?,
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
