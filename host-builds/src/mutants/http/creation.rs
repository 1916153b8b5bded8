//! What a create answers: its status, its `Location`, and the goal it
//! returns.

use axum::extract::Request;
use axum::http::header::LOCATION;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use super::{rewrite, Call, Route};
use crate::mutants::Mutant;

/// Serves `request` with the creation bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    match (mutant, method, route) {
        (Mutant::CreateAnswers200, &Method::POST, Route::Collection) => {
            let mut response = next.run(request).await;
            if response.status() == StatusCode::CREATED {
                *response.status_mut() = StatusCode::OK;
            }
            response
        }
        (Mutant::LocationWrongPath, &Method::POST, Route::Collection) => {
            let mut response = next.run(request).await;
            let wrong = response
                .headers()
                .get(LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(|location| location.replace("/host/sample", ""))
                .and_then(|location| HeaderValue::from_str(&location).ok());
            if let Some(wrong) = wrong {
                response.headers_mut().insert(LOCATION, wrong);
            }
            response
        }
        (Mutant::CreateWithoutLocation, &Method::POST, Route::Collection) => {
            let mut response = next.run(request).await;
            response.headers_mut().remove(LOCATION);
            response
        }
        (Mutant::CreateAnswersUnstamped, &Method::POST, Route::Collection) => {
            // The handler answers the goal it built from the request; the
            // store stamped `updatedAt` on the copy it kept.
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            rewrite(response, |goal| {
                if let Some(goal) = goal.as_object_mut() {
                    goal.remove("updatedAt");
                }
            })
            .await
        }
        _ => next.run(request).await,
    }
}
