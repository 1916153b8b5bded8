//! The HTTP surface's side of the mutants: one middleware, outermost, that
//! gets the wire wrong the way a hand-written handler would (a header
//! forgotten, a lenient body parser, a list in the wrong order). Mounted
//! only when such a mutant is on.

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_MATCH, LOCATION};
use axum::http::HeaderValue;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::sync::Arc;

use super::body::{has_duplicate_keys, saturated};
use super::{Mutant, Switch};
use goalpost_host::domain::{GoalId, GoalState};
use goalpost_host::http::{AppState, GOALS_BASE};

/// Any goal by id, whoever owns it (the mutants check tags themselves).
async fn load_any(state: &AppState, id: &GoalId) -> Option<goalpost_host::domain::Goal> {
    let owner = state.engine().owner_of(id).await.ok().flatten()?;
    state.engine().get(&owner, id).await.ok()
}

const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// How long the first of concurrent keyed creates waits for a second
/// (`idempotency-not-atomic`); a create without company goes on after it.
const RACE_WINDOW: std::time::Duration = std::time::Duration::from_millis(200);

/// `if-match-checked-apart`: how long its check and its write lie apart.
const CHECK_TO_WRITE: std::time::Duration = std::time::Duration::from_millis(50);

/// Bodies this middleware reads: far above anything the host accepts, and
/// above the largest body the suite sends (1.1 MB), so the middleware never
/// leaves part of a request unread.
const READ_LIMIT: usize = 8 * 1024 * 1024;

/// The mutants this middleware implements.
const HERE: [Mutant; 55] = [
    Mutant::EventStreamSilent,
    Mutant::CompleteRouteServed,
    Mutant::AttentionOpenAfterClose,
    Mutant::CreateAnswersUnstamped,
    Mutant::GetTimestampsToSeconds,
    Mutant::PauseRefusalBare,
    Mutant::EtagWeak,
    Mutant::ReportedRunEscalationDropped,
    Mutant::ReportedRunKeyIgnored,
    Mutant::ReportedRunBodyUnchecked,
    Mutant::ReportedRunLenient,
    Mutant::AbandonAnswersUnsaved,
    Mutant::PauseRefused,
    Mutant::PostPutStateApplied,
    Mutant::DeepNesting500,
    Mutant::ContinueTerminalAnswers200,
    Mutant::GetWithoutEtag,
    Mutant::ListPagingIgnored,
    Mutant::IfMatchCheckedApart,
    Mutant::ListLeaksTenants,
    Mutant::EtagMissingOnTransitions,
    Mutant::IfMatchIgnoredOnTransitions,
    Mutant::IfMatchIgnoredOnPatch,
    Mutant::IfMatchWeakAccepted,
    Mutant::IdempotencyKeyIgnored,
    Mutant::IdempotencyBodyUnchecked,
    Mutant::IdempotencyKeysGlobal,
    Mutant::IdempotencyNotAtomic,
    Mutant::OversizeBodyAs400,
    Mutant::DuplicateKeysLastWins,
    Mutant::HugeNumbersSaturate,
    Mutant::ContentTypeIgnored,
    Mutant::AnonymousSeams,
    Mutant::BadCredentialNotFound,
    Mutant::CreateAnswers200,
    Mutant::LocationWrongPath,
    Mutant::BoundsRange422,
    Mutant::JudgeOwnedCreate400,
    Mutant::MalformedJsonAsInvalidRequest,
    Mutant::InvalidRequestWithoutDetails,
    Mutant::UnauthorizedAsForbidden,
    Mutant::NotFoundCodeVaries,
    Mutant::ContentTypeAs400,
    Mutant::DiscoveryDuplicateModes,
    Mutant::CreateWithoutLocation,
    Mutant::UnknownStateListsNothing,
    Mutant::AnonymousList,
    Mutant::UnknownRouteOk,
    Mutant::MalformedBodyAsEmpty,
    Mutant::MissingGoalConflict,
    Mutant::AttentionIgnoresPause,
    Mutant::ObjectiveInEvents,
    Mutant::PayloadGoalPath,
    Mutant::ContinueEvaluationNextIteration,
    Mutant::EvaluationsNewestFirst,
];

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

/// An RFC 3339 timestamp with its fraction of a second dropped
/// (`…:33.123Z` → `…:33Z`); `None` if it has none.
fn to_whole_second(at: &str) -> Option<String> {
    let (whole, fraction) = at.split_once('.')?;
    let zone = fraction.trim_start_matches(|c: char| c.is_ascii_digit());
    Some(format!("{whole}{zone}"))
}

/// What the middleware reads: the host's state and its mutant switch.
#[derive(Clone)]
struct Mounted {
    state: AppState,
    switch: Arc<Switch>,
}

/// `routes` with the middleware of the host's mutant, if it has one here.
pub(crate) fn layer(
    routes: Router<AppState>,
    state: &AppState,
    switch: &Arc<Switch>,
) -> Router<AppState> {
    let mounted = Mounted {
        state: state.clone(),
        switch: Arc::clone(switch),
    };
    let routes = match switch.active() {
        Some(mutant) if HERE.contains(&mutant) => routes.layer(
            axum::middleware::from_fn_with_state(mounted.clone(), middleware),
        ),
        _ => routes,
    };
    if switch.foreign_invalid_goal().is_some() {
        routes.layer(axum::middleware::from_fn_with_state(
            mounted,
            foreign_invalid_goal,
        ))
    } else {
        routes
    }
}

/// The goal `--foreign-invalid-goal` shows first in a tenant's lists:
/// schema-invalid in several ways (a numeric objective, a state that does
/// not exist, required members missing), as a buggy client or an older
/// version of the host might have left it. No scenario created it, so no
/// check of a scenario may look at it.
fn foreign_goal(tenant: &str) -> Value {
    json!({
        "id": "goal-foreign-invalid",
        "objective": 42,
        "state": "sleeping",
        "completion": {"check": "oracle"},
        "owner": {"tenant": tenant},
    })
}

/// Puts the foreign goal first in every successful list of its tenant.
async fn foreign_invalid_goal(
    State(Mounted { state, switch }): State<Mounted>,
    request: Request,
    next: Next,
) -> Response {
    let Some(tenant) = switch.foreign_invalid_goal().map(str::to_string) else {
        return next.run(request).await;
    };
    let caller = credential(&request)
        .strip_prefix("Bearer ")
        .and_then(|token| state.tenant_of(token.trim()).cloned());
    // Whole lists only: a paged answer keeps the size and cursor order the
    // host gave it, as it would with such a goal stored (`limit=1` then
    // still holds one goal, whoever's it is).
    let query = request.uri().query().unwrap_or_default();
    let paged = query.contains("after=") || query.contains("limit=");
    let listed = request.method() == Method::GET
        && route(request.uri().path()) == Route::Collection
        && !paged
        && caller.is_some_and(|caller| caller.as_str() == tenant);
    let response = next.run(request).await;
    if !listed || !response.status().is_success() {
        return response;
    }
    rewrite(response, |list| {
        if let Some(goals) = list.get_mut("goals").and_then(Value::as_array_mut) {
            goals.insert(0, foreign_goal(&tenant));
        }
    })
    .await
}

/// Where a request goes, as far as the mutants care.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Discovery,
    Collection,
    Goal(String),
    /// `{base}/{id}/{action}` for a known action.
    Sub(String, &'static str),
    /// Under `{base}` but no route of ours.
    Unknown,
    Elsewhere,
}

const ACTIONS: [&str; 9] = [
    "runs",
    "attention",
    "escalation",
    "pause",
    "resume",
    "abandon",
    "continue",
    "events",
    "evaluations",
];

/// The attention extension's resources under a goal (`http::attention`);
/// any other path below `{id}/attention` is an unknown route.
const ATTENTION_RESOURCES: [&str; 7] = [
    "policy",
    "closure",
    "close",
    "confirmations",
    "evidence",
    "events",
    "bindings",
];

fn route(path: &str) -> Route {
    if path == "/.well-known/openwop" {
        return Route::Discovery;
    }
    if path == GOALS_BASE {
        return Route::Collection;
    }
    let Some(rest) = path
        .strip_prefix(GOALS_BASE)
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return Route::Elsewhere;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        // The attention extension's routes are ours too; no mutant here
        // is about them.
        ["attention", "bindings"] => Route::Elsewhere,
        [id, "attention", resource, ..]
            if !id.is_empty() && ATTENTION_RESOURCES.contains(resource) =>
        {
            Route::Elsewhere
        }
        [id] if !id.is_empty() => Route::Goal((*id).to_string()),
        [id, action] if !id.is_empty() => match ACTIONS.iter().find(|known| *known == action) {
            Some(known) => Route::Sub((*id).to_string(), known),
            None => Route::Unknown,
        },
        _ => Route::Unknown,
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, axum::Json(body.clone())).into_response()
}

/// Splits a response into its parts and its JSON body (`None` when the body
/// is not JSON or cannot be read).
async fn read_json(response: Response) -> (axum::http::response::Parts, Option<Value>, Bytes) {
    let (parts, body) = response.into_parts();
    let bytes = to_bytes(body, READ_LIMIT).await.unwrap_or_default();
    let value = serde_json::from_slice(&bytes).ok();
    (parts, value, bytes)
}

fn rebuild(mut parts: axum::http::response::Parts, value: &Value) -> Response {
    parts.headers.remove(CONTENT_LENGTH);
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    Response::from_parts(parts, Body::from(bytes))
}

/// Rewrites a JSON response body; leaves anything else as it was.
async fn rewrite(response: Response, edit: impl FnOnce(&mut Value)) -> Response {
    let (parts, value, bytes) = read_json(response).await;
    match value {
        Some(mut value) => {
            edit(&mut value);
            rebuild(parts, &value)
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// Rewrites a JSON response's status and body together.
async fn rewrite_parts(
    response: Response,
    edit: impl FnOnce(&mut axum::http::response::Parts, &mut Value),
) -> Response {
    let (mut parts, value, bytes) = read_json(response).await;
    match value {
        Some(mut value) => {
            edit(&mut parts, &mut value);
            rebuild(parts, &value)
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// The error codes a mutant gets wrong: (status, code) it answers instead.
fn wrong_error(
    mutant: Mutant,
    route: &Route,
    status: StatusCode,
    code: &str,
    body: &Value,
) -> Option<(StatusCode, &'static str)> {
    match (mutant, status.as_u16(), code) {
        (Mutant::OversizeBodyAs400, 413, _) => Some((StatusCode::BAD_REQUEST, "malformed_json")),
        (Mutant::BoundsRange422, 400, "invalid_request")
            if *route == Route::Collection
                && body
                    .pointer("/details/pointer")
                    .and_then(Value::as_str)
                    .is_some_and(|pointer| pointer.starts_with("/bounds")) =>
        {
            Some((StatusCode::UNPROCESSABLE_ENTITY, "invalid_request"))
        }
        (Mutant::JudgeOwnedCreate400, 422, "judge_owned_field") if *route == Route::Collection => {
            Some((StatusCode::BAD_REQUEST, "invalid_request"))
        }
        (Mutant::MalformedJsonAsInvalidRequest, 400, "malformed_json") => {
            Some((StatusCode::BAD_REQUEST, "invalid_request"))
        }
        (Mutant::UnauthorizedAsForbidden, 401, _) => Some((StatusCode::UNAUTHORIZED, "forbidden")),
        (Mutant::NotFoundCodeVaries, 404, "not_found")
            if matches!(route, Route::Goal(_) | Route::Sub(..)) =>
        {
            Some((StatusCode::NOT_FOUND, "goal_not_found"))
        }
        (Mutant::ContentTypeAs400, 415, _) => Some((StatusCode::BAD_REQUEST, "invalid_request")),
        _ => None,
    }
}

const ERROR_CODES: [Mutant; 8] = [
    Mutant::OversizeBodyAs400,
    Mutant::BoundsRange422,
    Mutant::JudgeOwnedCreate400,
    Mutant::MalformedJsonAsInvalidRequest,
    Mutant::InvalidRequestWithoutDetails,
    Mutant::UnauthorizedAsForbidden,
    Mutant::NotFoundCodeVaries,
    Mutant::ContentTypeAs400,
];

fn credential(request: &Request) -> String {
    request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

fn idempotency_key(request: &Request) -> Option<String> {
    request
        .headers()
        .get(IDEMPOTENCY_KEY)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

/// The request with its body read into memory (and `None` if it could not be).
async fn buffered(request: Request) -> (Request, Bytes) {
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, READ_LIMIT).await.unwrap_or_default();
    (Request::from_parts(parts, Body::from(bytes.clone())), bytes)
}

fn with_body(request: Request, bytes: Vec<u8>) -> Request {
    let (parts, _) = request.into_parts();
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.headers_mut().remove(CONTENT_LENGTH);
    request
}

async fn middleware(
    State(Mounted { state, switch }): State<Mounted>,
    request: Request,
    next: Next,
) -> Response {
    let Some(mutant) = switch.active() else {
        return next.run(request).await;
    };
    let method = request.method().clone();
    let route = route(request.uri().path());
    if ERROR_CODES.contains(&mutant) {
        let response = next.run(request).await;
        if !(response.status().is_client_error()) {
            return response;
        }
        return rewrite_parts(response, |parts, body| {
            let code = body
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if mutant == Mutant::InvalidRequestWithoutDetails && code == "invalid_request" {
                if let Some(object) = body.as_object_mut() {
                    object.remove("details");
                }
            } else if let Some((status, code)) =
                wrong_error(mutant, &route, parts.status, &code, body)
            {
                parts.status = status;
                body["error"] = json!(code);
            }
        })
        .await;
    }
    match (mutant, &method, &route) {
        (Mutant::CompleteRouteServed, &Method::POST, Route::Unknown) => {
            // A completion route the RFC says does not exist, served as
            // the upsert of `post-put-state-applied` with state satisfied.
            let id = request
                .uri()
                .path()
                .strip_prefix(GOALS_BASE)
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|rest| rest.strip_suffix("/complete"))
                .and_then(GoalId::parse);
            let tenant = credential(&request)
                .strip_prefix("Bearer ")
                .and_then(|token| state.tenant_of(token.trim()).cloned());
            let (Some(id), Some(tenant)) = (id, tenant) else {
                return next.run(request).await;
            };
            let body = json!({ super::engine::UPSERT_STATE: "satisfied" });
            match state.engine().patch(&tenant, &id, &body, None).await {
                Ok(goal) => json_response(
                    StatusCode::OK,
                    &serde_json::to_value(goalpost_host::domain::wire::goal(&goal))
                        .unwrap_or_default(),
                ),
                Err(_) => next.run(request).await,
            }
        }
        (Mutant::EventStreamSilent, &Method::GET, Route::Goal(id)) if id == "events" => {
            // Advertised, answered, and silent.
            let mut response = Response::new(Body::from(": no events here\n\n"));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            response
        }
        (Mutant::AttentionOpenAfterClose, &Method::GET, Route::Sub(_, "attention")) => {
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            rewrite(response, |body| {
                if body.get("status").and_then(Value::as_str) == Some("stopped") {
                    body["status"] = json!("active");
                }
            })
            .await
        }
        (Mutant::PostPutStateApplied, &Method::POST | &Method::PUT, Route::Goal(id)) => {
            // An upsert handler that trusts the body's state: served as the
            // PATCH whose engine side of this mutant applies it.
            let (request, bytes) = buffered(request).await;
            let state_claimed = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|body| body.get("state").cloned());
            let tenant = credential(&request)
                .strip_prefix("Bearer ")
                .and_then(|token| state.tenant_of(token.trim()).cloned());
            let (Some(claimed), Some(tenant), Some(id)) =
                (state_claimed, tenant, GoalId::parse(id))
            else {
                return next.run(request).await;
            };
            let body = json!({ super::engine::UPSERT_STATE: claimed });
            match state.engine().patch(&tenant, &id, &body, None).await {
                Ok(goal) => json_response(
                    StatusCode::OK,
                    &serde_json::to_value(goalpost_host::domain::wire::goal(&goal))
                        .unwrap_or_default(),
                ),
                Err(_) => next.run(request).await,
            }
        }
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
                Some(id) => load_any(&state, &id).await,
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
        (Mutant::AnonymousSeams, _, Route::Sub(_, "continue" | "events" | "evaluations"))
            if !request.headers().contains_key(AUTHORIZATION) =>
        {
            json_response(
                StatusCode::NOT_FOUND,
                &json!({ "error": "not_found", "message": "no such goal" }),
            )
        }
        (Mutant::BadCredentialNotFound, _, Route::Goal(_) | Route::Sub(..))
            if request.headers().contains_key(AUTHORIZATION) =>
        {
            let response = next.run(request).await;
            if response.status() != StatusCode::UNAUTHORIZED {
                return response;
            }
            json_response(
                StatusCode::NOT_FOUND,
                &json!({ "error": "not_found", "message": "no such goal" }),
            )
        }
        (Mutant::CreateAnswers200, &Method::POST, Route::Collection) => {
            let mut response = next.run(request).await;
            if response.status() == StatusCode::CREATED {
                *response.status_mut() = StatusCode::OK;
            }
            response
        }
        (Mutant::LocationWrongPath, &Method::POST, Route::Collection) => {
            let mut response = next.run(request).await;
            let wrong = response
                .headers()
                .get(LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(|location| location.replace("/host/sample", ""))
                .and_then(|location| HeaderValue::from_str(&location).ok());
            if let Some(wrong) = wrong {
                response.headers_mut().insert(LOCATION, wrong);
            }
            response
        }
        (Mutant::DiscoveryDuplicateModes, &Method::GET, Route::Discovery) => {
            let response = next.run(request).await;
            rewrite(response, |document| {
                if let Some(modes) = document
                    .pointer_mut("/agents/goals/continuation")
                    .and_then(Value::as_array_mut)
                {
                    if let Some(first) = modes.first().cloned() {
                        modes.push(first);
                    }
                }
            })
            .await
        }
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
        (Mutant::CreateWithoutLocation, &Method::POST, Route::Collection) => {
            let mut response = next.run(request).await;
            response.headers_mut().remove(LOCATION);
            response
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
        (Mutant::AnonymousList, &Method::GET, Route::Collection)
            if !request
                .headers()
                .contains_key(axum::http::header::AUTHORIZATION) =>
        {
            json_response(StatusCode::OK, &json!({ "goals": [] }))
        }
        (Mutant::UnknownRouteOk, _, Route::Unknown) => json_response(StatusCode::OK, &json!({})),
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
            Mutant::MissingGoalConflict,
            &Method::POST,
            Route::Sub(_, "pause" | "resume" | "abandon"),
        ) => {
            let response = next.run(request).await;
            if response.status() != StatusCode::NOT_FOUND {
                return response;
            }
            json_response(
                StatusCode::CONFLICT,
                &json!({ "error": "goal_terminal", "message": "the goal cannot change" }),
            )
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
        (Mutant::ContinueTerminalAnswers200, &Method::POST, Route::Sub(id, "continue")) => {
            let response = next.run(request).await;
            if response.status() != StatusCode::CONFLICT {
                return response;
            }
            let goal = match GoalId::parse(id) {
                Some(id) => load_any(&state, &id).await,
                None => None,
            };
            match goal {
                Some(goal) if goal.state.is_terminal() => json_response(
                    StatusCode::OK,
                    &json!({
                        "goal": goalpost_host::domain::wire::goal(&goal),
                        "evaluation": null,
                    }),
                ),
                _ => response,
            }
        }
        (Mutant::AbandonAnswersUnsaved, &Method::POST, Route::Sub(id, "abandon")) => {
            let tenant = credential(&request)
                .strip_prefix("Bearer ")
                .and_then(|token| state.tenant_of(token.trim()).cloned());
            let goal = match (tenant, GoalId::parse(id)) {
                (Some(tenant), Some(id)) => state.engine().get(&tenant, &id).await.ok(),
                _ => None,
            };
            match goal {
                Some(mut goal) if !goal.state.is_terminal() => {
                    goal.state = GoalState::Abandoned;
                    json_response(
                        StatusCode::OK,
                        &serde_json::to_value(goalpost_host::domain::wire::goal(&goal))
                            .unwrap_or_default(),
                    )
                }
                _ => next.run(request).await,
            }
        }
        (Mutant::PauseRefused, &Method::POST, Route::Sub(_, "pause")) => json_response(
            StatusCode::CONFLICT,
            &json!({ "error": "conflict", "message": "pause is not supported" }),
        ),
        (Mutant::CreateAnswersUnstamped, &Method::POST, Route::Collection) => {
            // The handler answers the goal it built from the request; the
            // store stamped `updatedAt` on the copy it kept.
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            rewrite(response, |goal| {
                if let Some(goal) = goal.as_object_mut() {
                    goal.remove("updatedAt");
                }
            })
            .await
        }
        (Mutant::GetTimestampsToSeconds, &Method::GET, Route::Goal(_)) => {
            // A read model whose timestamp columns keep whole seconds.
            let response = next.run(request).await;
            if !response.status().is_success() {
                return response;
            }
            rewrite(response, |goal| {
                for key in ["createdAt", "updatedAt"] {
                    if let Some(at) = goal.get_mut(key) {
                        if let Some(whole) = at.as_str().and_then(to_whole_second) {
                            *at = json!(whole);
                        }
                    }
                }
            })
            .await
        }
        (Mutant::PauseRefusalBare, &Method::POST, Route::Sub(_, "pause")) => {
            // An early `return StatusCode::CONFLICT` in the handler, past
            // the error type that renders the envelope.
            let response = next.run(request).await;
            if response.status() != StatusCode::CONFLICT {
                return response;
            }
            StatusCode::CONFLICT.into_response()
        }
        (Mutant::GetWithoutEtag, &Method::GET, Route::Goal(_)) => {
            let mut response = next.run(request).await;
            response.headers_mut().remove(ETAG);
            response
        }
        (Mutant::AttentionIgnoresPause, &Method::GET, Route::Sub(_, "attention")) => {
            let response = next.run(request).await;
            rewrite(response, |attention| {
                if attention.get("status") == Some(&json!("paused")) {
                    attention["status"] = json!("active");
                }
            })
            .await
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
        (Mutant::ContinueEvaluationNextIteration, &Method::POST, Route::Sub(_, "continue")) => {
            let response = next.run(request).await;
            rewrite(response, |answer| {
                if let Some(iteration) = answer.pointer_mut("/evaluation/iteration") {
                    if let Some(number) = iteration.as_u64() {
                        *iteration = json!(number + 1);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_depth_skips_strings() {
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": "[[[["}]}"#), 3);
        assert_eq!(nesting_depth(br#""\"[""#), 0);
        assert_eq!(nesting_depth(b"[[[[]]"), 4);
    }

    #[test]
    fn timestamps_lose_their_fraction_only() {
        assert_eq!(
            to_whole_second("2026-06-13T00:00:07.123Z").as_deref(),
            Some("2026-06-13T00:00:07Z")
        );
        assert_eq!(
            to_whole_second("2026-06-13T00:00:07.5+01:00").as_deref(),
            Some("2026-06-13T00:00:07+01:00")
        );
        assert_eq!(to_whole_second("2026-06-13T00:00:07Z"), None);
    }

    #[test]
    fn routes_are_recognised() {
        assert_eq!(route("/.well-known/openwop"), Route::Discovery);
        assert_eq!(route(GOALS_BASE), Route::Collection);
        let id = "goal-1";
        assert_eq!(route(&format!("{GOALS_BASE}/{id}")), Route::Goal(id.into()));
        assert_eq!(
            route(&format!("{GOALS_BASE}/{id}/pause")),
            Route::Sub(id.into(), "pause")
        );
        assert_eq!(
            route(&format!("{GOALS_BASE}/{id}/frobnicate")),
            Route::Unknown
        );
        assert_eq!(
            route(&format!("{GOALS_BASE}/{id}/attention/history")),
            Route::Unknown
        );
        assert_eq!(route("/openapi.json"), Route::Elsewhere);
    }
}
