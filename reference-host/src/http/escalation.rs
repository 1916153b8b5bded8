//! `GET {base}/{id}/escalation`: why the caller's goal is escalated, for
//! the person who must resolve it. The goal object cannot say (openwop's
//! schema closes it), and events never carry text, so this is the place.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::json;

use super::auth::Caller;
use super::error::ApiError;
use super::json::json;
use super::{goal_id, AppState, GOALS_BASE};

pub fn routes() -> Router<AppState> {
    Router::new().route(&format!("{GOALS_BASE}/{{id}}/escalation"), get(escalation))
}

/// 404 (the envelope) when the goal is not escalated, as when it is not
/// the caller's.
async fn escalation(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = goal_id(&id)?;
    let open = state
        .engine
        .escalation(&tenant, &id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(json(
        StatusCode::OK,
        json!({
            "goalId": id.as_str(),
            "kind": open.escalation.kind.as_str(),
            "reason": open.escalation.reason,
            "runId": open.run_id.as_str(),
            "at": open.at.to_wire(),
        }),
    ))
}
