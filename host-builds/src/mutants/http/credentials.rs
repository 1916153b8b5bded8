//! Credentials: routes that answer without one, or answer a bad one as if
//! the goal did not exist.

use axum::extract::Request;
use axum::http::header::AUTHORIZATION;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use super::{json_response, Call, Route};
use crate::mutants::Mutant;

/// Serves `request` with the credential bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    match (mutant, method, route) {
        (Mutant::AnonymousSeams, _, Route::Sub(_, "continue" | "events" | "evaluations"))
            if !request.headers().contains_key(AUTHORIZATION) =>
        {
            json_response(
                StatusCode::NOT_FOUND,
                &json!({ "error": "not_found", "message": "no such goal" }),
            )
        }
        (Mutant::BadCredentialNotFound, _, Route::Goal(_) | Route::Sub(..))
            if request.headers().contains_key(AUTHORIZATION) =>
        {
            let response = next.run(request).await;
            if response.status() != StatusCode::UNAUTHORIZED {
                return response;
            }
            json_response(
                StatusCode::NOT_FOUND,
                &json!({ "error": "not_found", "message": "no such goal" }),
            )
        }
        (Mutant::AnonymousList, &Method::GET, Route::Collection)
            if !request
                .headers()
                .contains_key(axum::http::header::AUTHORIZATION) =>
        {
            json_response(StatusCode::OK, &json!({ "goals": [] }))
        }
        _ => next.run(request).await,
    }
}
