//! The conformance seam `continue` (SPEC §4). Mounted only when the host
//! runs with the seams on; otherwise the path is 404. (The events and
//! evaluations the `events` seam reads are this host's own API:
//! `http/events`.)

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::with_etag;
use super::{goal_id, AppState, GOALS_BASE};
use crate::domain::wire;

pub fn routes() -> Router<AppState> {
    Router::new().route(
        &format!("{GOALS_BASE}/{{id}}/continue"),
        post(continue_once),
    )
}

async fn continue_once(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let outcome = state.engine.continue_once(&tenant, &goal_id(&id)?).await?;
    let unjudged = state.engine.choices().confidence_without_verdict;
    let body = wire::continue_response(
        &outcome.goal,
        outcome.evaluation.as_ref(),
        unjudged,
        state.engine.settings().run_ids_shown,
    );
    Ok(with_etag(StatusCode::OK, &outcome.goal, body))
}
