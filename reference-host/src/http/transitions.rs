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

/// The three transitions answer alike; only the engine call differs.
#[derive(Debug, Clone, Copy)]
enum Transition {
    Pause,
    Resume,
    Abandon,
}

pub fn routes() -> Router<AppState> {
    let route = |transition: Transition| {
        post(
            move |state: State<AppState>, caller: Caller, id: Path<String>, headers: HeaderMap| {
                apply(transition, state, caller, id, headers)
            },
        )
    };
    Router::new()
        .route(
            &format!("{GOALS_BASE}/{{id}}/pause"),
            route(Transition::Pause),
        )
        .route(
            &format!("{GOALS_BASE}/{{id}}/resume"),
            route(Transition::Resume),
        )
        .route(
            &format!("{GOALS_BASE}/{{id}}/abandon"),
            route(Transition::Abandon),
        )
}

async fn apply(
    transition: Transition,
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (id, if_match) = (goal_id(&id)?, if_match(&headers)?);
    let (engine, if_match) = (&state.engine, if_match.as_ref());
    let goal = match transition {
        Transition::Pause => engine.pause(&tenant, &id, if_match).await?,
        Transition::Resume => engine.resume(&tenant, &id, if_match).await?,
        Transition::Abandon => engine.abandon(&tenant, &id, if_match).await?,
    };
    Ok(with_etag(StatusCode::OK, &goal, wire::goal(&goal)))
}
