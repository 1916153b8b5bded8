//! The conformance seams `continue` and `scriptedJudge` (PROFILE.md "Seam
//! contract"). Mounted only when the host runs with the seams on (and, for
//! `scriptedJudge`, judges with its own evaluator); otherwise the paths
//! are 404. (The events and evaluations the `events` seam reads are this
//! host's own API: `http/events`.)

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{post, put};
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{with_etag, JsonBody};
use super::{goal_id, AppState, GOALS_BASE};
use crate::domain::{wire, Check};

pub fn routes(judge: Check) -> Router<AppState> {
    let routes = Router::new().route(
        &format!("{GOALS_BASE}/{{id}}/continue"),
        post(continue_once),
    );
    match judge {
        Check::Host => routes.route(&format!("{GOALS_BASE}/{{id}}/judge"), put(script_judge)),
        Check::Verifier => routes,
    }
}

/// `PUT {base}/{id}/judge {"verifierRef": REF}`: 204, the goal untouched.
async fn script_judge(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    body: JsonBody,
) -> Result<StatusCode, ApiError> {
    state
        .engine
        .script_judge(&tenant, &goal_id(&id)?, &body.0)
        .await?;
    Ok(StatusCode::NO_CONTENT)
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
