//! Lists: paging, the state filter, whose goals a list holds, and the
//! order of a goal's evaluations.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{json_response, rewrite, Call, Route};
use crate::mutants::Mutant;
use goalpost_host::domain::GoalState;

/// Serves `request` with the list bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let state = call.state;
    let switch = call.switch;
    match (mutant, method, route) {
        (Mutant::ListPagingIgnored, &Method::GET, Route::Collection) => {
            let mut request = request;
            let kept: Vec<&str> = request
                .uri()
                .query()
                .into_iter()
                .flat_map(|query| query.split('&'))
                .filter(|pair| !pair.starts_with("limit=") && !pair.starts_with("after="))
                .collect();
            let path = request.uri().path();
            let target = if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            };
            if let Ok(uri) = target.parse() {
                *request.uri_mut() = uri;
            }
            next.run(request).await
        }
        (Mutant::UnknownStateListsNothing, &Method::GET, Route::Collection) => {
            let unknown = request
                .uri()
                .query()
                .into_iter()
                .flat_map(|query| query.split('&'))
                .filter_map(|pair| pair.strip_prefix("state="))
                .any(|state| GoalState::parse(state).is_none());
            if unknown {
                return json_response(StatusCode::OK, &json!({ "goals": [] }));
            }
            next.run(request).await
        }
        (Mutant::ListLeaksTenants, &Method::GET, Route::Collection) => {
            let filter = request
                .uri()
                .query()
                .into_iter()
                .flat_map(|query| query.split('&'))
                .find_map(|pair| pair.strip_prefix("state="))
                .and_then(GoalState::parse);
            let response = next.run(request).await;
            let Some(filter) = filter else {
                return response;
            };
            if !response.status().is_success() {
                return response;
            }
            let tenants: Vec<_> = switch.memory().tenants.iter().cloned().collect();
            let mut leaked = Vec::new();
            for tenant in tenants {
                if let Ok(goals) = state.engine().list(&tenant, Some(filter)).await {
                    leaked.extend(goals.iter().filter_map(|goal| {
                        serde_json::to_value(goalpost_host::domain::wire::goal(goal)).ok()
                    }));
                }
            }
            rewrite(response, move |list| {
                let Some(goals) = list.get_mut("goals").and_then(Value::as_array_mut) else {
                    return;
                };
                for goal in leaked {
                    if !goals.iter().any(|known| known.get("id") == goal.get("id")) {
                        goals.push(goal);
                    }
                }
            })
            .await
        }
        (Mutant::EvaluationsNewestFirst, &Method::GET, Route::Sub(_, "evaluations")) => {
            let response = next.run(request).await;
            rewrite(response, |list| {
                if let Some(evaluations) = list.get_mut("evaluations").and_then(Value::as_array_mut)
                {
                    evaluations.reverse();
                }
            })
            .await
        }
        _ => next.run(request).await,
    }
}
