//! The goals collection: list, create, read, edit, attention.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{created, json, with_etag, JsonBody};
use super::{goal_id, if_match, AppState, GOALS_BASE};
use crate::domain::{wire, GoalState};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(GOALS_BASE, get(list).post(create))
        .route(&format!("{GOALS_BASE}/{{id}}"), get(read).patch(edit))
        .route(&format!("{GOALS_BASE}/{{id}}/attention"), get(attention))
}

async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let filter = query
        .get("state")
        .map(|text| {
            GoalState::parse(text).ok_or_else(|| {
                ApiError::invalid_input(
                    "parameter",
                    "state",
                    "state must be one of active, satisfied, escalated, abandoned, bound-exceeded",
                )
            })
        })
        .transpose()?;
    let goals = state.engine.list(&tenant, filter).await?;
    Ok(json(StatusCode::OK, wire::goal_list(&goals)))
}

async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let goal = state.engine.create(&tenant, &body).await?;
    let location = format!("{GOALS_BASE}/{}", goal.id);
    Ok(created(&location, &goal, wire::goal(&goal)))
}

async fn read(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let goal = state.engine.get(&tenant, &goal_id(&id)?).await?;
    Ok(with_etag(StatusCode::OK, &goal, wire::goal(&goal)))
}

async fn edit(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = goal_id(&id)?;
    let goal = state
        .engine
        .patch(&tenant, &id, &body, if_match(&headers)?.as_ref())
        .await?;
    Ok(with_etag(StatusCode::OK, &goal, wire::goal(&goal)))
}

async fn attention(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let goal = state.engine.get(&tenant, &goal_id(&id)?).await?;
    Ok(json(StatusCode::OK, wire::attention(&goal)))
}
