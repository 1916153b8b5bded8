//! The criteria verifier registry: `POST`/`GET /v1/host/sample/verifiers`
//! and `GET .../verifiers/{name}`, scoped to the caller's tenant.

use axum::extract::{Path, State};
use axum::http::header::{HeaderValue, LOCATION};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{json, JsonBody};
use super::AppState;
use crate::domain::wire;

/// The verifiers collection path.
pub const VERIFIERS_BASE: &str = "/v1/host/sample/verifiers";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(VERIFIERS_BASE, get(list).post(register))
        .route(&format!("{VERIFIERS_BASE}/{{name}}"), get(read))
}

async fn register(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let verifier = state.engine.register_verifier(&tenant, &body).await?;
    let mut response = json(StatusCode::CREATED, wire::verifier(&verifier));
    let location = format!("{VERIFIERS_BASE}/{}", verifier.name);
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(LOCATION, location);
    }
    Ok(response)
}

async fn list(State(state): State<AppState>, Caller(tenant): Caller) -> Result<Response, ApiError> {
    let verifiers = state.engine.verifiers(&tenant).await?;
    Ok(json(StatusCode::OK, wire::verifier_list(&verifiers)))
}

async fn read(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let verifier = state.engine.verifier(&tenant, &name).await?;
    Ok(json(StatusCode::OK, wire::verifier(&verifier)))
}
