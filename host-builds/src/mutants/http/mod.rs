//! The HTTP surface's side of the mutants: one middleware, outermost, that
//! gets the wire wrong the way a hand-written handler would (a header
//! forgotten, a lenient body parser, a list in the wrong order). Mounted
//! only when such a mutant is on.
//!
//! Each family of wire bugs is a module of its own, holding the arms of its
//! mutants; `middleware` only says which family a mutant belongs to, so a
//! new mutant goes beside the bugs it resembles.

mod actions;
mod attention;
mod bodies;
mod creation;
mod credentials;
mod errors;
mod events;
mod foreign;
mod idempotency;
mod lists;
mod preconditions;
mod reads;
mod reported_runs;
mod undefined_routes;

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use std::sync::Arc;

use super::{Mutant, Switch};
use goalpost_host::domain::GoalId;
use goalpost_host::http::{AppState, GOALS_BASE};

pub(crate) use bodies::body_limit;

/// Any goal by id, whoever owns it (the mutants check tags themselves).
async fn load_any(state: &AppState, id: &GoalId) -> Option<goalpost_host::domain::Goal> {
    let owner = state.engine().owner_of(id).await.ok().flatten()?;
    state.engine().get(&owner, id).await.ok()
}

/// Bodies this middleware reads: far above anything the host accepts, and
/// above the largest body the suite sends (1.1 MB), so the middleware never
/// leaves part of a request unread.
const READ_LIMIT: usize = 8 * 1024 * 1024;

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
        Some(mutant) if family(mutant).is_some() => routes.layer(
            axum::middleware::from_fn_with_state(mounted.clone(), middleware),
        ),
        _ => routes,
    };
    if switch.foreign_invalid_goal().is_some() {
        routes.layer(axum::middleware::from_fn_with_state(
            mounted,
            foreign::foreign_invalid_goal,
        ))
    } else {
        routes
    }
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

fn credential(request: &Request) -> String {
    request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string()
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

/// The families of wire bugs, one module each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    ErrorCodes,
    Credentials,
    Preconditions,
    Idempotency,
    ReportedRuns,
    Bodies,
    Lists,
    Creation,
    Reads,
    UndefinedRoutes,
    Actions,
    Attention,
    Events,
}

/// The family `mutant` belongs to; `None` for the mutants that are not on
/// the wire (their bugs are in the engine, the webhook client or the store).
fn family(mutant: Mutant) -> Option<Family> {
    let family = match mutant {
        Mutant::OversizeBodyAs400
        | Mutant::BoundsRange422
        | Mutant::JudgeOwnedCreate400
        | Mutant::MalformedJsonAsInvalidRequest
        | Mutant::InvalidRequestWithoutDetails
        | Mutant::UnauthorizedAsForbidden
        | Mutant::NotFoundCodeVaries
        | Mutant::ContentTypeAs400 => Family::ErrorCodes,
        Mutant::AnonymousSeams | Mutant::BadCredentialNotFound | Mutant::AnonymousList => {
            Family::Credentials
        }
        Mutant::EtagMissingOnTransitions
        | Mutant::IfMatchIgnoredOnTransitions
        | Mutant::IfMatchIgnoredOnPatch
        | Mutant::IfMatchWeakAccepted
        | Mutant::EtagWeak
        | Mutant::IfMatchCheckedApart
        | Mutant::GetWithoutEtag => Family::Preconditions,
        Mutant::IdempotencyKeyIgnored
        | Mutant::IdempotencyBodyUnchecked
        | Mutant::IdempotencyKeysGlobal
        | Mutant::IdempotencyNotAtomic => Family::Idempotency,
        Mutant::ReportedRunEscalationDropped
        | Mutant::ReportedRunKeyIgnored
        | Mutant::ReportedRunLenient
        | Mutant::ReportedRunBodyUnchecked => Family::ReportedRuns,
        Mutant::DuplicateKeysLastWins
        | Mutant::HugeNumbersSaturate
        | Mutant::ContentTypeIgnored
        | Mutant::MalformedBodyAsEmpty
        | Mutant::DeepNesting500 => Family::Bodies,
        Mutant::ListPagingIgnored
        | Mutant::UnknownStateListsNothing
        | Mutant::ListLeaksTenants
        | Mutant::EvaluationsNewestFirst => Family::Lists,
        Mutant::CreateAnswers200
        | Mutant::LocationWrongPath
        | Mutant::CreateWithoutLocation
        | Mutant::CreateAnswersUnstamped => Family::Creation,
        Mutant::DiscoveryDuplicateModes | Mutant::GetTimestampsToSeconds => Family::Reads,
        Mutant::CompleteRouteServed | Mutant::PostPutStateApplied | Mutant::UnknownRouteOk => {
            Family::UndefinedRoutes
        }
        Mutant::MissingGoalConflict
        | Mutant::ContinueTerminalAnswers200
        | Mutant::AbandonAnswersUnsaved
        | Mutant::PauseRefused
        | Mutant::PauseRefusalBare
        | Mutant::ContinueEvaluationNextIteration => Family::Actions,
        Mutant::AttentionOpenAfterClose | Mutant::AttentionIgnoresPause => Family::Attention,
        Mutant::EventStreamSilent | Mutant::ObjectiveInEvents | Mutant::PayloadGoalPath => {
            Family::Events
        }
        _ => return None,
    };
    Some(family)
}

/// What a family's arms know of the request in hand: the active mutant,
/// the method and where the request goes, and the host's state and switch.
struct Call<'a> {
    mutant: Mutant,
    method: Method,
    route: Route,
    state: &'a AppState,
    switch: &'a Switch,
}

/// Serves `request` through the family of the active mutant.
async fn middleware(
    State(Mounted { state, switch }): State<Mounted>,
    request: Request,
    next: Next,
) -> Response {
    let Some((mutant, family)) = switch
        .active()
        .and_then(|mutant| Some((mutant, family(mutant)?)))
    else {
        return next.run(request).await;
    };
    let call = Call {
        mutant,
        method: request.method().clone(),
        route: route(request.uri().path()),
        state: &state,
        switch: &switch,
    };
    match family {
        Family::ErrorCodes => errors::serve(&call, request, next).await,
        Family::Credentials => credentials::serve(&call, request, next).await,
        Family::Preconditions => preconditions::serve(&call, request, next).await,
        Family::Idempotency => idempotency::serve(&call, request, next).await,
        Family::ReportedRuns => reported_runs::serve(&call, request, next).await,
        Family::Bodies => bodies::serve(&call, request, next).await,
        Family::Lists => lists::serve(&call, request, next).await,
        Family::Creation => creation::serve(&call, request, next).await,
        Family::Reads => reads::serve(&call, request, next).await,
        Family::UndefinedRoutes => undefined_routes::serve(&call, request, next).await,
        Family::Actions => actions::serve(&call, request, next).await,
        Family::Attention => attention::serve(&call, request, next).await,
        Family::Events => events::serve(&call, request, next).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
