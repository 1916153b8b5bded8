//! Request bodies as a lenient parser reads them: duplicate keys, huge
//! numbers, a missing content type, malformed JSON, deep nesting, and no
//! size limit at all.

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{json, Value};

use super::{buffered, json_response, with_body, Call, Route, READ_LIMIT};
use crate::mutants::body::{has_duplicate_keys, saturated};
use crate::mutants::{Mutant, Switch};

/// Most bytes a body may have under `body-limit-missing`: far beyond any
/// body the suite sends, so in effect no limit.
const NO_LIMIT: usize = 64 * 1024 * 1024;

/// The request body limit this host enforces.
pub(crate) fn body_limit(switch: &Switch, limit: usize) -> usize {
    if switch.is(Mutant::BodyLimitMissing) {
        NO_LIMIT
    } else {
        limit
    }
}

/// How deep `deep-nesting-500`'s parser recurses before it gives up.
const PARSER_DEPTH: usize = 128;

/// The deepest nesting of arrays and objects in a JSON text (strings
/// skipped), however malformed the rest.
fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in bytes {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Serves `request` with the body-parsing bug of `mutant`.
pub(super) async fn serve(call: &Call<'_>, request: Request, next: Next) -> Response {
    let (mutant, method, route) = (call.mutant, &call.method, &call.route);
    match (mutant, method, route) {
        (
            Mutant::DuplicateKeysLastWins,
            &Method::POST | &Method::PATCH,
            Route::Collection | Route::Goal(_),
        ) => {
            let (request, bytes) = buffered(request).await;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(value) if has_duplicate_keys(&bytes) => {
                    next.run(with_body(
                        request,
                        serde_json::to_vec(&value).unwrap_or_default(),
                    ))
                    .await
                }
                _ => next.run(request).await,
            }
        }
        (
            Mutant::HugeNumbersSaturate,
            &Method::POST | &Method::PATCH,
            Route::Collection | Route::Goal(_),
        ) => {
            let (request, bytes) = buffered(request).await;
            match saturated(&bytes) {
                Some(rewritten) => next.run(with_body(request, rewritten)).await,
                None => next.run(request).await,
            }
        }
        (Mutant::ContentTypeIgnored, &Method::POST | &Method::PATCH, _) => {
            let mut request = request;
            request
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            next.run(request).await
        }
        (
            Mutant::MalformedBodyAsEmpty,
            &Method::POST | &Method::PATCH,
            Route::Collection | Route::Goal(_),
        ) => {
            let (parts, body) = request.into_parts();
            let bytes = to_bytes(body, READ_LIMIT).await.unwrap_or_default();
            let bytes = if serde_json::from_slice::<Value>(&bytes).is_ok() {
                bytes
            } else {
                Bytes::from_static(b"{}")
            };
            let mut request = Request::from_parts(parts, Body::from(bytes));
            request.headers_mut().remove(CONTENT_LENGTH);
            next.run(request).await
        }
        (
            Mutant::DeepNesting500,
            &Method::POST | &Method::PATCH,
            Route::Collection | Route::Goal(_),
        ) => {
            let (request, bytes) = buffered(request).await;
            if nesting_depth(&bytes) > PARSER_DEPTH {
                // The parser's recursion error, reported as the host's own.
                return json_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({ "error": "internal", "message": "recursion limit exceeded" }),
                );
            }
            next.run(request).await
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_depth_skips_strings() {
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": "[[[["}]}"#), 3);
        assert_eq!(nesting_depth(br#""\"[""#), 0);
        assert_eq!(nesting_depth(b"[[[[]]"), 4);
    }
}
