//! ETags and `If-Match`: the tags a host answers and the preconditions it
//! checks on a write, got wrong the way a handler does (a header dropped,
//! a weak comparison, a check made apart from the write).

use axum::extract::Request;
use axum::http::header::{ETAG, IF_MATCH};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;

use super::{load_any, Call, Route};
use crate::mutants::Mutant;
use goalpost_host::domain::GoalId;

/// `if-match-checked-apart`: how long its check and its write lie apart.
const CHECK_TO_WRITE: std::time::Duration = std::time::Duration::from_millis(50);

/// Serves `request` with the precondition bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let state = call.state;
    match (mutant, method, route) {
        (
            Mutant::EtagMissingOnTransitions,
            &Method::POST,
            Route::Sub(_, "pause" | "resume" | "abandon"),
        ) => {
            let mut response = next.run(request).await;
            response.headers_mut().remove(ETAG);
            response
        }
        (
            Mutant::IfMatchIgnoredOnTransitions,
            &Method::POST,
            Route::Sub(_, "pause" | "resume" | "abandon"),
        )
        | (Mutant::IfMatchIgnoredOnPatch, &Method::PATCH, Route::Goal(_)) => {
            let mut request = request;
            request.headers_mut().remove(IF_MATCH);
            next.run(request).await
        }
        (Mutant::IfMatchWeakAccepted, _, _) => {
            let mut request = request;
            let strong = request
                .headers()
                .get(IF_MATCH)
                .and_then(|value| value.to_str().ok())
                .map(|text| text.replace("W/", ""))
                .and_then(|text| HeaderValue::from_str(&text).ok());
            if let Some(strong) = strong {
                request.headers_mut().insert(IF_MATCH, strong);
            }
            next.run(request).await
        }
        (Mutant::EtagWeak, _, _) => {
            // Weak comparison on the way in, weak tags on the way out: the
            // host honours its own tags, and no strong comparison could.
            let mut request = request;
            let unweakened = request
                .headers()
                .get(IF_MATCH)
                .and_then(|value| value.to_str().ok())
                .map(|text| text.replace("W/", ""))
                .and_then(|text| HeaderValue::from_str(&text).ok());
            if let Some(unweakened) = unweakened {
                request.headers_mut().insert(IF_MATCH, unweakened);
            }
            let mut response = next.run(request).await;
            let weak = response
                .headers()
                .get(ETAG)
                .and_then(|value| value.to_str().ok())
                .filter(|tag| !tag.starts_with("W/"))
                .and_then(|tag| HeaderValue::from_str(&format!("W/{tag}")).ok());
            if let Some(weak) = weak {
                response.headers_mut().insert(ETAG, weak);
            }
            response
        }
        (Mutant::IfMatchCheckedApart, &Method::PATCH, Route::Goal(id)) => {
            let Some(expected) = request.headers().get(IF_MATCH).cloned() else {
                return next.run(request).await;
            };
            let current = match GoalId::parse(id) {
                Some(id) => load_any(state, &id).await,
                None => None,
            };
            let Some(current) = current else {
                return next.run(request).await;
            };
            if expected.to_str().ok() != Some(current.etag().as_str()) {
                return next.run(request).await;
            }
            // The gap between the check and the write that a real host has
            // when it checks in a filter and writes in a handler.
            tokio::time::sleep(CHECK_TO_WRITE).await;
            let mut request = request;
            request.headers_mut().remove(IF_MATCH);
            next.run(request).await
        }
        (Mutant::GetWithoutEtag, &Method::GET, Route::Goal(_)) => {
            let mut response = next.run(request).await;
            response.headers_mut().remove(ETAG);
            response
        }
        _ => next.run(request).await,
    }
}
