//! `POST {base}/{id}/runs`: a run executed elsewhere, reported to its goal
//! (PROFILE.md "Reported runs"). Host API, served with or without the
//! conformance seams; only `manual` goals take reported runs.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::goals::IDEMPOTENT_REPLAYED;
use super::json::{with_etag, JsonBody};
use super::{goal_id, AppState, GOALS_BASE};
use crate::domain::{parse_run_report, wire};

/// Where a goal's runs are reported, relative to the goal.
pub const RUNS_SUFFIX: &str = "runs";

pub fn routes() -> Router<AppState> {
    Router::new().route(&format!("{GOALS_BASE}/{{id}}/{RUNS_SUFFIX}"), post(report))
}

async fn report(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = goal_id(&id)?;
    let report = parse_run_report(&body)?;
    let outcome = state.engine.report_run(&tenant, &id, report, &body).await?;
    let unjudged = state.engine.choices().confidence_without_verdict;
    let answer = wire::run_report_response(
        &outcome.run_id,
        outcome.iteration,
        &outcome.goal,
        outcome.evaluation.as_ref(),
        unjudged,
        state.engine.settings().run_ids_shown,
    );
    let mut response = with_etag(StatusCode::OK, &outcome.goal, answer);
    if outcome.replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    Ok(response)
}
