//! Request bodies in and JSON responses out, with our envelope for every
//! refusal (malformed JSON, wrong content type, too large).

use axum::body::{Bytes, HttpBody};
use axum::extract::{FromRequest, Request};
use axum::http::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, ETAG, LOCATION};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use super::error::ApiError;
use crate::domain::request::parse_body;
use crate::domain::Goal;

/// A JSON request body as a `Value`; typing it is the domain's job.
#[derive(Debug, Clone)]
pub struct JsonBody(pub Value);

/// `application/json` or any `application/*+json`, parameters allowed. A
/// request without a content type is read as JSON.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return true;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let essence = text
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"))
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<JsonBody, ApiError> {
        if !is_json(request.headers()) {
            return Err(ApiError::unsupported_media_type());
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::payload_too_large()
                } else {
                    ApiError::malformed_json(format!("cannot read the body: {rejection}"))
                }
            })?;
        parse_body(&bytes)
            .map(JsonBody)
            .map_err(|error| ApiError::malformed_json(format!("the body is not JSON: {error}")))
    }
}

/// Most bytes of an oversized body read (and thrown away) before its 413.
const DRAIN_CAP: u64 = 8 * 1024 * 1024;

/// Refuses a body whose declared length is over `limit` with 413, after
/// reading it: a server that answers and closes with the client's bytes
/// still unread resets the connection, and the client may then lose the
/// answer (RFC 9112 §9.6 asks for this "lingering close"). A body beyond
/// [`DRAIN_CAP`] is answered without reading the rest. Bodies that do not
/// declare their length are limited while they are read, as before.
pub async fn refuse_declared_oversize(limit: usize, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    let Some(declared) = declared.filter(|length| *length > limit as u64) else {
        return next.run(request).await;
    };
    if declared <= DRAIN_CAP {
        let mut body = request.into_body();
        let mut read = 0u64;
        while let Some(Ok(frame)) =
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Some(data) = frame.data_ref() {
                read += data.len() as u64;
            }
            if read > DRAIN_CAP {
                break;
            }
        }
    }
    ApiError::payload_too_large().into_response()
}

/// A JSON response.
pub fn json(status: StatusCode, body: impl Serialize) -> Response {
    (status, axum::Json(body)).into_response()
}

/// A goal-carrying response with the goal's `ETag`.
pub fn with_etag(status: StatusCode, goal: &Goal, body: impl Serialize) -> Response {
    let mut response = json(status, body);
    if let Ok(etag) = HeaderValue::from_str(&goal.etag()) {
        response.headers_mut().insert(ETAG, etag);
    }
    response
}

/// A create's answer (`201 Created`, or `200 OK` when the host chose so)
/// with `Location` and `ETag`.
pub fn created(status: StatusCode, location: &str, goal: &Goal, body: impl Serialize) -> Response {
    let mut response = with_etag(status, goal, body);
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_str(content_type).expect("valid header"),
        );
        headers
    }

    #[test]
    fn json_content_types() {
        assert!(is_json(&HeaderMap::new()));
        assert!(is_json(&headers("application/json")));
        assert!(is_json(&headers("Application/JSON; charset=utf-8")));
        assert!(is_json(&headers("application/merge-patch+json")));
        assert!(!is_json(&headers("text/plain")));
        assert!(!is_json(&headers("application/x-www-form-urlencoded")));
        assert!(!is_json(&headers("application/jsonp")));
    }
}
