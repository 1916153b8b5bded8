//! Routes the RFC does not define, served anyway: a completion route, an
//! upsert on a goal, and anything unknown under `{base}` answered 200.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{buffered, credential, json_response, Call, Route};
use crate::mutants::engine::UPSERT_STATE;
use crate::mutants::Mutant;
use goalpost_host::domain::GoalId;
use goalpost_host::http::GOALS_BASE;

/// Serves `request` with the undefined-route bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let state = call.state;
    match (mutant, method, route) {
        (Mutant::CompleteRouteServed, &Method::POST, Route::Unknown) => {
            // A completion route the RFC says does not exist, served as
            // the upsert of `post-put-state-applied` with state satisfied.
            let id = request
                .uri()
                .path()
                .strip_prefix(GOALS_BASE)
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|rest| rest.strip_suffix("/complete"))
                .and_then(GoalId::parse);
            let tenant = credential(&request)
                .strip_prefix("Bearer ")
                .and_then(|token| state.tenant_of(token.trim()).cloned());
            let (Some(id), Some(tenant)) = (id, tenant) else {
                return next.run(request).await;
            };
            let body = json!({ UPSERT_STATE: "satisfied" });
            match state.engine().patch(&tenant, &id, &body, None).await {
                Ok(goal) => json_response(
                    StatusCode::OK,
                    &serde_json::to_value(goalpost_host::domain::wire::goal(&goal))
                        .unwrap_or_default(),
                ),
                Err(_) => next.run(request).await,
            }
        }
        (Mutant::PostPutStateApplied, &Method::POST | &Method::PUT, Route::Goal(id)) => {
            // An upsert handler that trusts the body's state: served as the
            // PATCH whose engine side of this mutant applies it.
            let (request, bytes) = buffered(request).await;
            let state_claimed = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|body| body.get("state").cloned());
            let tenant = credential(&request)
                .strip_prefix("Bearer ")
                .and_then(|token| state.tenant_of(token.trim()).cloned());
            let (Some(claimed), Some(tenant), Some(id)) =
                (state_claimed, tenant, GoalId::parse(id))
            else {
                return next.run(request).await;
            };
            let body = json!({ UPSERT_STATE: claimed });
            match state.engine().patch(&tenant, &id, &body, None).await {
                Ok(goal) => json_response(
                    StatusCode::OK,
                    &serde_json::to_value(goalpost_host::domain::wire::goal(&goal))
                        .unwrap_or_default(),
                ),
                Err(_) => next.run(request).await,
            }
        }
        (Mutant::UnknownRouteOk, _, Route::Unknown) => json_response(StatusCode::OK, &json!({})),
        _ => next.run(request).await,
    }
}
