//! Events: the stream discovery advertises and a goal's event log, with
//! what its payloads carry.

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{rewrite, Call, Route, READ_LIMIT};
use crate::mutants::Mutant;
use goalpost_host::domain::GoalId;
use goalpost_host::http::GOALS_BASE;

/// Serves `request` with the event bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let state = call.state;
    let switch = call.switch;
    match (mutant, method, route) {
        (Mutant::EventStreamSilent, &Method::GET, Route::Goal(id)) if id == "events" => {
            // Advertised, answered, and silent.
            let mut response = Response::new(Body::from(": no events here\n\n"));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            response
        }
        (Mutant::ObjectiveInEvents, &Method::PATCH, Route::Goal(id)) => {
            let (parts, body) = request.into_parts();
            let bytes = to_bytes(body, READ_LIMIT).await.unwrap_or_default();
            let objective = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|body| {
                    body.get("objective")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            if let (Some(objective), Some(id), true) =
                (objective, GoalId::parse(id), response.status().is_success())
            {
                switch.memory().edits.entry(id).or_default().push(objective);
            }
            response
        }
        (Mutant::ObjectiveInEvents, &Method::GET, Route::Sub(id, "events")) => {
            let edits = GoalId::parse(id)
                .and_then(|id| switch.memory().edits.get(&id).cloned())
                .unwrap_or_default();
            let at = state.engine().clock().now().to_wire();
            let goal = id.clone();
            let response = next.run(request).await;
            rewrite(response, move |list| {
                let Some(events) = list.get_mut("events").and_then(Value::as_array_mut) else {
                    return;
                };
                let mut sequence = events
                    .iter()
                    .filter_map(|event| event.get("sequence").and_then(Value::as_u64))
                    .max()
                    .unwrap_or(0);
                for objective in edits {
                    sequence += 1;
                    events.push(json!({
                        "sequence": sequence,
                        "type": "goal.updated",
                        "at": at,
                        "payload": { "goalId": goal, "objective": objective },
                    }));
                }
            })
            .await
        }
        (Mutant::PayloadGoalPath, &Method::GET, Route::Sub(id, "events")) => {
            let path = format!("{GOALS_BASE}/{id}");
            let response = next.run(request).await;
            rewrite(response, move |list| {
                for event in list
                    .get_mut("events")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(goal) = event.pointer_mut("/payload/goalId") {
                        *goal = json!(path);
                    }
                }
            })
            .await
        }
        _ => next.run(request).await,
    }
}
