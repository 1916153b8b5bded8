//! `Idempotency-Key` on creates: a key ignored, shared across tenants,
//! replayed without comparing bodies, or looked up and stored apart.

use axum::extract::Request;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;

use super::{buffered, credential, with_body, Call, Route};
use crate::mutants::Mutant;

const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// How long the first of concurrent keyed creates waits for a second
/// (`idempotency-not-atomic`); a create without company goes on after it.
const RACE_WINDOW: std::time::Duration = std::time::Duration::from_millis(200);

fn idempotency_key(request: &Request) -> Option<String> {
    request
        .headers()
        .get(IDEMPOTENCY_KEY)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

/// Serves `request` with the idempotency bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    let switch = call.switch;
    match (mutant, method, route) {
        (Mutant::IdempotencyKeyIgnored, &Method::POST, Route::Collection) => {
            let mut request = request;
            request.headers_mut().remove(IDEMPOTENCY_KEY);
            next.run(request).await
        }
        (Mutant::IdempotencyBodyUnchecked, &Method::POST, Route::Collection) => {
            let Some(key) = idempotency_key(&request) else {
                return next.run(request).await;
            };
            let owner = (credential(&request), key);
            let (request, bytes) = buffered(request).await;
            let first = switch
                .memory()
                .keyed_bodies
                .entry(owner)
                .or_insert_with(|| bytes.to_vec())
                .clone();
            next.run(with_body(request, first)).await
        }
        (Mutant::IdempotencyKeysGlobal, &Method::POST, Route::Collection) => {
            let Some(key) = idempotency_key(&request) else {
                return next.run(request).await;
            };
            let mut request = request;
            let first = switch
                .memory()
                .key_owners
                .entry(key)
                .or_insert_with(|| credential(&request))
                .clone();
            if let Ok(first) = HeaderValue::from_str(&first) {
                request.headers_mut().insert(AUTHORIZATION, first);
            }
            next.run(request).await
        }
        (Mutant::IdempotencyNotAtomic, &Method::POST, Route::Collection) => {
            let Some(key) = idempotency_key(&request) else {
                return next.run(request).await;
            };
            let owner = (credential(&request), key);
            let mut request = request;
            let first = switch.memory().keys_in_flight.insert(owner.clone());
            if first {
                // The bug's window between lookup and insert. A host whose
                // create never yields would close it before a concurrent
                // request arrives, so the first request waits (briefly) for
                // one: the race this mutant models then always happens.
                let raced = switch.raced.notified();
                let _ = tokio::time::timeout(RACE_WINDOW, raced).await;
            } else {
                // Raced past the lookup: this one inserts as if unkeyed.
                request.headers_mut().remove(IDEMPOTENCY_KEY);
                switch.raced.notify_waiters();
            }
            let response = next.run(request).await;
            if first {
                switch.memory().keys_in_flight.remove(&owner);
            }
            response
        }
        _ => next.run(request).await,
    }
}
