//! A person's transitions: pause, resume, abandon. Bodies are ignored,
//! except a JSON object sent to `resume`, whose `note` (a string, bounded)
//! is the person's resolution of an escalation.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::with_etag;
use super::{goal_id, if_match, AppState, GOALS_BASE};
use crate::domain::{notes, wire};
use serde_json::Value;

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
            move |state: State<AppState>,
                  caller: Caller,
                  id: Path<String>,
                  headers: HeaderMap,
                  body: Result<Bytes, BytesRejection>| {
                // Only `resume` reads its body, and a body it cannot read
                // (too large, cut off) carries no note: transitions never
                // failed on their bodies.
                let body = match (transition, body) {
                    (Transition::Resume, Ok(body)) => body,
                    _ => Bytes::new(),
                };
                apply(transition, state, caller, id, headers, body)
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
    body: Bytes,
) -> Result<Response, ApiError> {
    let (id, if_match) = (goal_id(&id)?, if_match(&headers)?);
    let (engine, if_match) = (&state.engine, if_match.as_ref());
    let goal = match transition {
        Transition::Pause => engine.pause(&tenant, &id, if_match).await?,
        Transition::Resume => {
            let note = resolution_note(&body)?;
            engine.resume(&tenant, &id, if_match, note).await?
        }
        Transition::Abandon => engine.abandon(&tenant, &id, if_match).await?,
    };
    Ok(with_etag(
        StatusCode::OK,
        &goal,
        wire::goal_shown(&goal, state.engine().settings().run_ids_shown),
    ))
}

/// The `note` of a JSON object body, checked. Any other body (none, not
/// JSON, not an object, no `note`) carries no note, as bodies of
/// transitions never did.
fn resolution_note(body: &[u8]) -> Result<Option<String>, ApiError> {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) else {
        return Ok(None);
    };
    match object.get("note") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => notes::resolution_note(text)
            .map(Some)
            .map_err(|message| ApiError::invalid("/note", message)),
        Some(_) => Err(ApiError::invalid("/note", "note must be a string")),
    }
}
