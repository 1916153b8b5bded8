//! The goals collection: list, create, read, edit, attention.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::header::{HeaderValue, ETAG};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{created, json, with_etag, JsonBody};
use super::{goal_id, if_match, AppState, GOALS_BASE};
use crate::choices::CreateStatus;
use crate::domain::{wire, GoalState};
use crate::engine::{IdempotencyKey, MAX_KEY_CHARS};

/// Names the header a create's idempotency key travels in.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Set on a create answered from an earlier request with the same key.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

fn idempotency_key(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(IdempotencyKey::parse)
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid_input(
                "header",
                "Idempotency-Key",
                format!("Idempotency-Key must be 1 to {MAX_KEY_CHARS} visible ASCII characters"),
            )
        })
}

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
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let outcome = state
        .engine
        .create_once(&tenant, &body, key.as_ref())
        .await?;
    let goal = &outcome.goal;
    let location = format!("{GOALS_BASE}/{}", goal.id);
    let status = match state.engine.choices().create_status {
        CreateStatus::Created => StatusCode::CREATED,
        CreateStatus::Ok => StatusCode::OK,
    };
    let Some(replay) = outcome.replay else {
        return Ok(created(status, &location, goal, wire::goal(goal)));
    };
    // The original answer again: its body and ETag, not the goal as it is
    // now (a GET shows that).
    let mut response = created(status, &location, goal, replay.answer);
    if let Ok(etag) = HeaderValue::from_str(&replay.etag) {
        response.headers_mut().insert(ETAG, etag);
    }
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    Ok(response)
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
    let body = wire::attention(&goal, state.engine.choices().attention);
    Ok(json(StatusCode::OK, body))
}
