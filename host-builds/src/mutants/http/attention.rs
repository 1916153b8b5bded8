//! The attention view under a goal: the status it reads when the goal is
//! closed or paused.

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{rewrite, Call, Route};
use crate::mutants::Mutant;

/// Serves `request` with the attention bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    match (mutant, method, route) {
        (Mutant::AttentionOpenAfterClose, &Method::GET, Route::Sub(_, "attention")) => {
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            rewrite(response, |body| {
                if body.get("status").and_then(Value::as_str) == Some("stopped") {
                    body["status"] = json!("active");
                }
            })
            .await
        }
        (Mutant::AttentionIgnoresPause, &Method::GET, Route::Sub(_, "attention")) => {
            let response = next.run(request).await;
            rewrite(response, |attention| {
                if attention.get("status") == Some(&json!("paused")) {
                    attention["status"] = json!("active");
                }
            })
            .await
        }
        _ => next.run(request).await,
    }
}
