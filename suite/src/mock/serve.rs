//! The HTTP side of the mock: `POST /mock/{nonce}/verifier` and
//! `POST /mock/{nonce}/arm` (runs and heartbeat probes). Every call is
//! logged before it is answered, so a call that arrives is counted even when
//! the answer is delayed past the host's timeout.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use super::contract;
use super::log::{CallRecord, SecretCheck};
use super::{signature, Shared, BODY_LIMIT};
use crate::model::mock_script::{AnswerBody, CallFacts, Endpoint};

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/mock/{nonce}/{endpoint}", post(call))
        .fallback(|| async { refuse(StatusCode::NOT_FOUND, "not_found", "no such mock endpoint") })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": code, "message": message})),
    )
        .into_response()
}

async fn call(
    State(shared): State<Arc<Shared>>,
    Path((nonce, path_endpoint)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    if !["verifier", "arm", "attention"].contains(&path_endpoint.as_str()) {
        return refuse(StatusCode::NOT_FOUND, "not_found", "no such mock endpoint");
    }
    let Some(session) = shared.sessions().get(&nonce).cloned() else {
        shared
            .strays
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return refuse(
            StatusCode::NOT_FOUND,
            "not_found",
            "this mock namespace is closed: its scenario is over",
        );
    };
    let at_ms = session.elapsed_ms();
    let at = crate::timestamp::timestamp((shared.wall)());
    let mut problems = Vec::new();
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if !is_json {
        problems.push("Content-Type is not application/json".to_string());
    }
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(body) => Some(body),
        Err(error) => {
            problems.push(format!("(root): the body is not JSON ({error})"));
            None
        }
    };
    let endpoint = match (path_endpoint.as_str(), &body) {
        ("verifier", _) => Endpoint::Verifier,
        ("attention", _) => Endpoint::Attention,
        (_, Some(body)) => contract::arm_url_endpoint(body),
        (_, None) => Endpoint::Arm,
    };
    if let Some(body) = &body {
        problems.extend(contract::problems(endpoint, body, &shared.schemas));
    }
    let text = |key: &str| {
        body.as_ref()
            .and_then(|b| b.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let goal_id = text("goalId");
    let run_id = text("runId");
    let (mode, binding_id) = match endpoint {
        Endpoint::Attention => (text("mode"), text("bindingId")),
        _ => (None, None),
    };
    let iteration = body
        .as_ref()
        .and_then(|b| b.get("iteration"))
        .and_then(Value::as_u64);
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let secret: SecretCheck = signature::check(
        header(signature::SIGNATURE_HEADER),
        header(signature::TENANT_HEADER),
        &bytes,
        shared.secret.as_deref(),
        (shared.wall)().unix_timestamp(),
    );
    let (seq, answer) = {
        let mut log = session.log();
        let number = match endpoint {
            Endpoint::Attention => log.next_attention_number(goal_id.as_deref(), mode.as_deref()),
            _ => log.next_number(endpoint, goal_id.as_deref()),
        };
        let answer = session.script.answer(&CallFacts {
            endpoint,
            iteration,
            number,
            run_id: run_id.clone(),
            mode: mode.clone(),
        });
        let seq = log.next_seq();
        log.push(CallRecord {
            seq,
            endpoint,
            number,
            at_ms,
            at,
            goal_id,
            run_id,
            iteration,
            mode,
            binding_id,
            body: body.unwrap_or(Value::Null),
            problems,
            secret,
            answer: answer.clone(),
            answered_ms: None,
        });
        (seq, answer)
    };
    if !answer.delay.is_zero() {
        let mut closed = session.closed.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(answer.delay) => {}
            _ = closed.wait_for(|closed| *closed) => {
                return refuse(StatusCode::SERVICE_UNAVAILABLE, "scenario_over",
                              "the scenario ended before this answer was due");
            }
        }
    }
    session.log().answered(seq, session.elapsed_ms());
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let text = match answer.body {
        AnswerBody::Json(value) => value.to_string(),
        AnswerBody::Raw(raw) => raw,
    };
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}
