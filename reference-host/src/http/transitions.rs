//! A person's transitions: pause, resume, abandon. Bodies are ignored.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::with_etag;
use super::{goal_id, if_match, AppState, GOALS_BASE};
use crate::domain::wire;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("{GOALS_BASE}/{{id}}/pause"), post(pause))
        .route(&format!("{GOALS_BASE}/{{id}}/resume"), post(resume))
        .route(&format!("{GOALS_BASE}/{{id}}/abandon"), post(abandon))
}

async fn pause(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let goal = state
        .engine
        .pause(&tenant, &goal_id(&id)?, if_match(&headers)?.as_ref())
        .await?;
    Ok(with_etag(StatusCode::OK, &goal, wire::goal(&goal)))
}

async fn resume(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let goal = state
        .engine
        .resume(&tenant, &goal_id(&id)?, if_match(&headers)?.as_ref())
        .await?;
    Ok(with_etag(StatusCode::OK, &goal, wire::goal(&goal)))
}

async fn abandon(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let goal = state
        .engine
        .abandon(&tenant, &goal_id(&id)?, if_match(&headers)?.as_ref())
        .await?;
    Ok(with_etag(StatusCode::OK, &goal, wire::goal(&goal)))
}
