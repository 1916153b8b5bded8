//! Runs a client reports (`POST {base}/{id}/runs`): a valid report's
//! members dropped, unknown members let through, or a `runId` replayed
//! without comparing bodies.

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use super::{buffered, credential, with_body, Call, Route};
use crate::mutants::Mutant;

/// Serves `request` with the reported-run bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let switch = call.switch;
    match (mutant, method, route) {
        (
            Mutant::ReportedRunEscalationDropped
            | Mutant::ReportedRunKeyIgnored
            | Mutant::ReportedRunLenient,
            &Method::POST,
            Route::Sub(_, "runs"),
        ) => {
            let (request, bytes) = buffered(request).await;
            let Ok(mut body) = serde_json::from_slice::<Value>(&bytes) else {
                return next.run(request).await;
            };
            if let Some(object) = body.as_object_mut() {
                // Only well-formed members are dropped: the bug is in what
                // the host does with a valid report, not in its parser.
                let valid =
                    goalpost_host::domain::parse_run_report(&Value::Object(object.clone())).is_ok();
                match mutant {
                    Mutant::ReportedRunEscalationDropped if valid => {
                        object.remove("escalate");
                    }
                    Mutant::ReportedRunKeyIgnored if valid => {
                        object.remove("runId");
                    }
                    Mutant::ReportedRunEscalationDropped | Mutant::ReportedRunKeyIgnored => {}
                    _ => object.retain(|key, _| {
                        ["runId", "output", "costUsd", "escalate"].contains(&key.as_str())
                    }),
                }
            }
            next.run(with_body(request, body.to_string().into_bytes()))
                .await
        }
        (Mutant::ReportedRunBodyUnchecked, &Method::POST, Route::Sub(id, "runs")) => {
            let (request, bytes) = buffered(request).await;
            let run = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|body| {
                    body.get("runId")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            let Some(run) = run else {
                return next.run(request).await;
            };
            let owner = (credential(&request), format!("{id}/runs/{run}"));
            let first = switch
                .memory()
                .keyed_bodies
                .entry(owner)
                .or_insert_with(|| bytes.to_vec())
                .clone();
            next.run(with_body(request, first)).await
        }
        _ => next.run(request).await,
    }
}
