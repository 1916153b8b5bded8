//! Error answers: the status and code of a client error, rewritten on the
//! way out the way a host that maps its errors by hand gets them wrong.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{rewrite_parts, Call, Route};
use crate::mutants::Mutant;

/// The error codes a mutant gets wrong: (status, code) it answers instead.
fn wrong_error(
    mutant: Mutant,
    route: &Route,
    status: StatusCode,
    code: &str,
    body: &Value,
) -> Option<(StatusCode, &'static str)> {
    match (mutant, status.as_u16(), code) {
        (Mutant::OversizeBodyAs400, 413, _) => Some((StatusCode::BAD_REQUEST, "malformed_json")),
        (Mutant::BoundsRange422, 400, "invalid_request")
            if *route == Route::Collection
                && body
                    .pointer("/details/pointer")
                    .and_then(Value::as_str)
                    .is_some_and(|pointer| pointer.starts_with("/bounds")) =>
        {
            Some((StatusCode::UNPROCESSABLE_ENTITY, "invalid_request"))
        }
        (Mutant::JudgeOwnedCreate400, 422, "judge_owned_field") if *route == Route::Collection => {
            Some((StatusCode::BAD_REQUEST, "invalid_request"))
        }
        (Mutant::MalformedJsonAsInvalidRequest, 400, "malformed_json") => {
            Some((StatusCode::BAD_REQUEST, "invalid_request"))
        }
        (Mutant::UnauthorizedAsForbidden, 401, _) => Some((StatusCode::UNAUTHORIZED, "forbidden")),
        (Mutant::NotFoundCodeVaries, 404, "not_found")
            if matches!(route, Route::Goal(_) | Route::Sub(..)) =>
        {
            Some((StatusCode::NOT_FOUND, "goal_not_found"))
        }
        (Mutant::ContentTypeAs400, 415, _) => Some((StatusCode::BAD_REQUEST, "invalid_request")),
        _ => None,
    }
}

/// Serves `request`, then rewrites its client error the way `mutant` gets
/// it wrong.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, route) = (call.mutant, &call.route);
    let response = next.run(request).await;
    if !(response.status().is_client_error()) {
        return response;
    }
    rewrite_parts(response, |parts, body| {
        let code = body
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if mutant == Mutant::InvalidRequestWithoutDetails && code == "invalid_request" {
            if let Some(object) = body.as_object_mut() {
                object.remove("details");
            }
        } else if let Some((status, code)) = wrong_error(mutant, route, parts.status, &code, body) {
            parts.status = status;
            body["error"] = json!(code);
        }
    })
    .await
}
