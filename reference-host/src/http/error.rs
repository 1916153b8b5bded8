//! The error envelope `{error, message, details?}`: the only shape of a
//! 4xx/5xx body. [`ApiError`] owns the status → code mapping.

use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::domain::attention::AttentionError;
use crate::domain::RequestError;
use crate::engine::EngineError;

/// Boxed so `Result<_, ApiError>` stays small on the happy path.
#[derive(Debug, Clone)]
pub struct ApiError(Box<Envelope>);

#[derive(Debug, Clone)]
struct Envelope {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Option<Value>,
    header: Option<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError(Box::new(Envelope {
            status,
            code,
            message: message.into(),
            details: None,
            header: None,
        }))
    }

    pub fn with_details(mut self, details: Value) -> ApiError {
        self.0.details = Some(details);
        self
    }

    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    pub fn code(&self) -> &'static str {
        self.0.code
    }

    pub fn not_found() -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such resource")
    }

    pub fn method_not_allowed() -> ApiError {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this resource does not accept that method",
        )
    }

    pub fn unauthorized() -> ApiError {
        let mut error = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a known bearer token is required",
        );
        error.0.header = Some((WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
        error
    }

    /// Too many refused credentials from this source: try again in `wait`.
    pub fn too_many_failures(wait: std::time::Duration) -> ApiError {
        let seconds = wait.as_secs().max(1);
        let mut error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_failures",
            "too many refused credentials from this address; try again later",
        )
        .with_details(json!({ "retryAfterSeconds": seconds }));
        error.0.header = Some((axum::http::header::RETRY_AFTER, HeaderValue::from(seconds)));
        error
    }

    pub fn invalid(pointer: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
            .with_details(json!({ "pointer": pointer }))
    }

    /// A bad query parameter or header: not part of the body, so no pointer.
    pub fn invalid_input(kind: &'static str, name: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
            .with_details(json!({ kind: name }))
    }

    pub fn malformed_json(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", message)
    }

    pub fn payload_too_large() -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the body is larger than 64 KiB",
        )
    }

    pub fn unsupported_media_type() -> ApiError {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be application/json",
        )
    }

    pub fn internal() -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the host failed; see its log",
        )
    }

    /// The envelope for a status produced outside our handlers (axum's own
    /// rejections, the timeout layer).
    pub fn for_status(status: StatusCode) -> ApiError {
        match status {
            StatusCode::BAD_REQUEST => {
                ApiError::new(status, "invalid_request", "the request is malformed")
            }
            StatusCode::UNAUTHORIZED => ApiError::unauthorized(),
            StatusCode::NOT_FOUND => ApiError::not_found(),
            StatusCode::METHOD_NOT_ALLOWED => ApiError::method_not_allowed(),
            StatusCode::REQUEST_TIMEOUT => {
                ApiError::new(status, "request_timeout", "the request took too long")
            }
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::payload_too_large(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::unsupported_media_type(),
            StatusCode::SERVICE_UNAVAILABLE => {
                ApiError::new(status, "service_unavailable", "the host cannot answer now")
            }
            status if status.is_server_error() => {
                let mut error = ApiError::internal();
                error.0.status = status;
                error
            }
            status => ApiError::new(status, "invalid_request", "the request was refused"),
        }
    }

    pub fn body(&self) -> Value {
        let mut body = json!({ "error": self.0.code, "message": self.0.message });
        if let (Some(details), Some(object)) = (&self.0.details, body.as_object_mut()) {
            object.insert("details".into(), details.clone());
        }
        body
    }
}

/// Rewrites the `error` code of an envelope this layer made with `code_for`,
/// keeping status, message, details and headers. Any other response passes
/// unchanged.
pub fn recode(response: Response, code_for: fn(&'static str) -> &'static str) -> Response {
    let Some(error) = response.extensions().get::<ApiError>() else {
        return response;
    };
    let mut error = error.clone();
    error.0.code = code_for(error.0.code);
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    parts.extensions.remove::<ApiError>();
    let body = serde_json::to_vec(&error.body()).unwrap_or_default();
    Response::from_parts(parts, axum::body::Body::from(body))
}

impl IntoResponse for ApiError {
    fn into_response(mut self) -> Response {
        let mut response = (self.0.status, axum::Json(self.body())).into_response();
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some((name, value)) = self.0.header.take() {
            response.headers_mut().insert(name, value);
        }
        // Kept for a layer that re-codes envelopes (see [`recode`]).
        response.extensions_mut().insert(self);
        response
    }
}

impl From<RequestError> for ApiError {
    fn from(error: RequestError) -> ApiError {
        let message = error.to_string();
        let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
        match error {
            RequestError::Invalid { pointer, message } => ApiError::invalid(&pointer, message),
            RequestError::JudgeOwned { field, pointer } => {
                ApiError::new(unprocessable, "judge_owned_field", message)
                    .with_details(json!({ "field": field, "pointer": pointer }))
            }
            RequestError::Immutable { field, pointer } => {
                ApiError::new(unprocessable, "immutable_field", message)
                    .with_details(json!({ "field": field, "pointer": pointer }))
            }
            RequestError::BoundsRequired => {
                ApiError::new(unprocessable, "bounds_required", message)
                    .with_details(json!({ "pointer": "/bounds" }))
            }
            RequestError::ObjectiveTooLong { max_bytes } => {
                ApiError::new(unprocessable, "objective_too_long", message)
                    .with_details(json!({ "pointer": "/objective", "maxBytes": max_bytes }))
            }
            RequestError::UnsupportedContinuation { .. } => {
                ApiError::new(unprocessable, "unsupported_continuation", message)
                    .with_details(json!({ "pointer": "/continuation/mode" }))
            }
            RequestError::UnsupportedJudge { .. } => {
                ApiError::new(unprocessable, "unsupported_judge", message)
                    .with_details(json!({ "pointer": "/completion/check" }))
            }
            RequestError::FixturesDisabled { pointer } => {
                ApiError::new(unprocessable, "fixtures_disabled", message)
                    .with_details(json!({ "pointer": pointer }))
            }
            RequestError::UnknownVerifier { pointer, .. } => {
                ApiError::new(unprocessable, "unknown_verifier", message)
                    .with_details(json!({ "pointer": pointer }))
            }
            RequestError::UnknownArm { pointer, .. } => {
                ApiError::new(unprocessable, "unknown_arm", message)
                    .with_details(json!({ "pointer": pointer }))
            }
            RequestError::EgressDenied { pointer, .. } => {
                ApiError::new(unprocessable, "egress_denied", message)
                    .with_details(json!({ "pointer": pointer }))
            }
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let conflict = StatusCode::CONFLICT;
        match error {
            EngineError::NotFound => ApiError::not_found(),
            EngineError::Terminal => ApiError::new(
                conflict,
                "goal_terminal",
                "the goal is closed; it accepts no transition, edit or run",
            ),
            EngineError::Escalated => ApiError::new(
                conflict,
                "goal_escalated",
                "the goal is escalated: resume or abandon it first",
            ),
            EngineError::Paused => ApiError::new(
                conflict,
                "goal_paused",
                "the goal is paused: resume it first",
            ),
            EngineError::RunsNotAccepted { mode } => ApiError::new(
                conflict,
                "runs_not_accepted",
                format!(
                    "goals in {mode} mode get their runs from the host; only manual goals take reported runs"
                ),
            )
            .with_details(json!({ "mode": mode })),
            EngineError::RunConflict => ApiError::new(
                conflict,
                "run_conflict",
                "this runId was reported before with a different body",
            )
            .with_details(json!({ "pointer": "/runId" })),
            // Refused as the seam's body would be; the create's handler
            // names the header it came in.
            EngineError::CreateScript(error) => ApiError::from(error),
            EngineError::NotHostJudged => ApiError::new(
                conflict,
                "judge_not_host",
                "the goal is judged by the verifier its completion names; script that one instead",
            ),
            EngineError::VerifierExists => ApiError::new(
                conflict,
                "verifier_exists",
                "a verifier of that name already exists; pick another name",
            ),
            EngineError::PreconditionFailed => ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "If-Match does not match the goal's current ETag",
            ),
            EngineError::IdempotencyConflict => ApiError::new(
                conflict,
                "idempotency_conflict",
                "this Idempotency-Key was used with a different body",
            ),
            EngineError::QuotaExceeded { quota, limit } => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "quota_exceeded",
                format!("the tenant's {} quota ({limit}) is used up", quota.as_str()),
            )
            .with_details(json!({ "quota": quota.as_str(), "limit": limit })),
            EngineError::RateLimited { wait } => {
                let seconds = wait.as_secs_f64().ceil().max(1.0);
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // ≥ 1, ≤ a few s
                let seconds = seconds as u64;
                let mut error = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "the tenant started as much outbound work as it may this second; try again later",
                )
                .with_details(json!({ "retryAfterSeconds": seconds }));
                error.0.header = Some((axum::http::header::RETRY_AFTER, HeaderValue::from(seconds)));
                error
            }
            EngineError::TooManyStreams(limit) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "quota_exceeded",
                format!("the tenant already holds {limit} event streams; close one first"),
            )
            .with_details(json!({ "quota": "streams", "limit": limit })),
            EngineError::AttentionNotServed => ApiError::not_found(),
            EngineError::Attention(error) => attention_refusal(error),
            EngineError::AuthorityRequired => ApiError::new(
                StatusCode::FORBIDDEN,
                "authority_required",
                "only a credential that holds the host's or a principal's authority may confirm; a tenant's token never does",
            ),
            EngineError::PolicyUnsupported(kind) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "policy_unsupported",
                format!("this host does not offer the completion policy {kind:?}"),
            )
            .with_details(json!({ "pointer": "/kind" })),
            EngineError::Request(error) => error.into(),
            EngineError::Store(error) => {
                tracing::error!(%error, "storage failed");
                ApiError::internal()
            }
            EngineError::Internal(message) => {
                tracing::error!(%message, "engine failed");
                ApiError::internal()
            }
            // The engine waits for the other replica's run instead; never
            // answered.
            EngineError::ReportedElsewhere => {
                tracing::error!("a report raced another replica's and was not waited for");
                ApiError::internal()
            }
        }
    }
}

/// An attention rule's refusal, as the envelope says it.
fn attention_refusal(error: AttentionError) -> ApiError {
    let conflict = StatusCode::CONFLICT;
    let message = error.to_string();
    match error {
        AttentionError::BindingNotFound | AttentionError::EvidenceNotFound => ApiError::not_found(),
        AttentionError::Terminal => ApiError::from(EngineError::Terminal),
        AttentionError::Escalated => ApiError::from(EngineError::Escalated),
        AttentionError::GoalPaused => ApiError::from(EngineError::Paused),
        AttentionError::ModeTaken { mode, holder } => {
            ApiError::new(conflict, "mode_taken", message)
                .with_details(json!({ "mode": mode, "bindingId": holder.as_str() }))
        }
        AttentionError::BindingFinal { status } => {
            ApiError::new(conflict, "binding_inactive", message)
                .with_details(json!({ "status": status }))
        }
        AttentionError::BindingPaused => ApiError::new(conflict, "binding_paused", message),
        AttentionError::TooManyBindings { max } => {
            ApiError::new(conflict, "binding_limit", message).with_details(json!({ "max": max }))
        }
        AttentionError::ClosureRefused(missing) => ApiError::new(
            conflict,
            "closure_refused",
            "the completion policy does not allow closing the goal now",
        )
        .with_details(json!({
            "missing": missing.iter().map(|m| m.to_json()).collect::<Vec<_>>(),
        })),
        AttentionError::Invalid { pointer, message } => ApiError::invalid(&pointer, message),
    }
}
