//! Fallbacks and the last line of defence: whatever produced a 4xx/5xx
//! (axum's own rejections, the timeout layer), the client gets an envelope.

use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

pub async fn not_found() -> ApiError {
    ApiError::not_found()
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"))
}

/// Replaces the body of any error response that is not already JSON (ours
/// always are) with the envelope for its status, keeping its other headers.
pub async fn ensure_envelope(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    let replacement = ApiError::for_status(status).into_response();
    let (new_parts, body) = replacement.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    for (name, value) in &new_parts.headers {
        parts.headers.insert(name.clone(), value.clone());
    }
    // The envelope's own record travels with it, so a layer that re-codes
    // envelopes (`error::recode`) sees this one too.
    parts.extensions.extend(new_parts.extensions);
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::header::ALLOW;
    use axum::http::StatusCode;
    use http_body_util::BodyExt;

    use super::*;

    async fn body(response: Response) -> serde_json::Value {
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[tokio::test]
    async fn plain_error_responses_become_envelopes_keeping_headers() {
        let plain = Response::builder()
            .status(StatusCode::REQUEST_TIMEOUT)
            .header(ALLOW, "GET")
            .header(CONTENT_TYPE, "text/plain")
            .body(Body::from("timed out"))
            .expect("response");
        let response = ensure_envelope(plain).await;
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(
            response.headers().get(ALLOW).map(|v| v.as_bytes()),
            Some(&b"GET"[..])
        );
        assert_eq!(
            response.headers().get(CONTENT_TYPE).map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
        let body = body(response).await;
        assert_eq!(body["error"], "request_timeout");
        assert!(body["message"].is_string());
    }

    #[tokio::test]
    async fn successes_and_our_envelopes_pass_through() {
        let ok = Response::builder()
            .status(StatusCode::OK)
            .body(Body::from("fine"))
            .expect("response");
        let response = ensure_envelope(ok).await;
        assert_eq!(response.status(), StatusCode::OK);
        let ours = ApiError::new(StatusCode::CONFLICT, "goal_terminal", "closed").into_response();
        let body = body(ensure_envelope(ours).await).await;
        assert_eq!(body["error"], "goal_terminal");
        assert_eq!(body["message"], "closed");
    }
}
