//! The HTTP surface. Only this module knows axum: handlers turn requests
//! into engine calls and engine answers into wire JSON.

pub mod attention;
mod auth;
mod discovery;
mod envelope;
mod error;
mod escalation;
mod events;
mod faults;
mod goals;
mod json;
mod openapi;
mod paging;
mod runs;
mod seams;
pub mod throttle;
pub(crate) mod trace;
mod transitions;
mod verifiers;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::header::IF_MATCH;
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use serde_json::Value;
use tower_http::timeout::TimeoutLayer;

use crate::choices::{ErrorCodes, ReportedRuns};
use crate::domain::GoalId;
use crate::engine::{Engine, IfMatch};

pub use auth::{TokenError, Tokens};
pub use discovery::document as discovery_document;
pub use error::ApiError;
pub use events::{CHUNK_BYTES, CHUNK_MESSAGES, EVENTS_STREAM_PATH};
pub use faults::{NoRouteFaults, RouteFaults};
pub use openapi::{document as openapi_document, OPENAPI_PATH};
pub use verifiers::VERIFIERS_BASE;

/// The goals collection path `{base}`.
pub const GOALS_BASE: &str = "/v1/host/sample/goals";
/// Request bodies above this are refused with 413.
pub const BODY_LIMIT: usize = 64 * 1024;
/// A request still unanswered after this is 408. Longer than an iteration
/// can take (run and judge limits), so `continue` answers in time.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(45);

#[derive(Clone)]
pub struct AppState {
    engine: Arc<Engine>,
    tokens: Arc<Tokens>,
    seams: bool,
    discovery: Arc<Value>,
    throttle: Arc<throttle::CredentialThrottle>,
    /// Proxies whose `X-Forwarded-For` names the client.
    trusted_proxies: Arc<[crate::domain::egress::Cidr]>,
    /// How this host's routes get the wire wrong, if they do.
    faults: Arc<dyn RouteFaults>,
    /// Credentials that hold the host's or a principal's authority (the
    /// attention extension's confirmations), apart from tenant tokens.
    authorities: Arc<attention::Authorities>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("seams", &self.seams)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The seams are on exactly when the engine runs with
    /// `conformance_seams`.
    pub fn new(engine: Arc<Engine>, tokens: Tokens) -> AppState {
        let seams = engine.settings().conformance_seams;
        let mut document = discovery::document(seams, engine.choices());
        discovery::advertise_attention(&mut document, &engine);
        AppState {
            engine,
            tokens: Arc::new(tokens),
            seams,
            discovery: Arc::new(document),
            throttle: Arc::default(),
            trusted_proxies: Arc::from(Vec::new()),
            faults: Arc::new(NoRouteFaults),
            authorities: Arc::default(),
        }
    }

    /// Takes the client address from `X-Forwarded-For` when a request
    /// comes from one of `proxies` (and only then).
    #[must_use]
    pub fn with_trusted_proxies(mut self, proxies: Vec<crate::domain::egress::Cidr>) -> AppState {
        self.trusted_proxies = Arc::from(proxies);
        self
    }

    /// The state with credentials that hold an authority (confirmations of
    /// the attention extension).
    #[must_use]
    pub fn with_authorities(mut self, authorities: attention::Authorities) -> AppState {
        self.authorities = Arc::new(authorities);
        self
    }

    /// The state of a host whose routes get the wire wrong (the kill
    /// matrix).
    #[must_use]
    pub fn with_faults(mut self, faults: Arc<dyn RouteFaults>) -> AppState {
        self.faults = faults;
        self
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The tenant of a bearer token, for middleware that runs before any
    /// extractor.
    pub fn tenant_of(&self, token: &str) -> Option<&crate::domain::Tenant> {
        self.tokens.tenant(token)
    }
}

/// The whole service. Every 4xx/5xx it answers is an error envelope.
pub fn app(state: AppState) -> Router {
    let mut routes = Router::new()
        .merge(discovery::routes())
        .merge(openapi::routes())
        .merge(escalation::routes())
        .merge(events::routes())
        .merge(goals::routes())
        .merge(transitions::routes())
        .merge(verifiers::routes())
        .merge(attention::routes(state.seams));
    if state.engine.choices().reported_runs == ReportedRuns::Offered {
        routes = routes.merge(runs::routes());
    }
    if state.seams {
        routes = routes.merge(seams::routes(state.engine.choices().judge));
    }
    let faults = Arc::clone(&state.faults);
    let body_limit = faults.body_limit(BODY_LIMIT);
    let routes = routes
        .method_not_allowed_fallback(envelope::method_not_allowed)
        .fallback(envelope::not_found)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn(move |request, next| {
            json::refuse_declared_oversize(body_limit, request, next)
        }))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .layer(axum::middleware::map_response(envelope::ensure_envelope));
    // Outside the envelope layer, so every envelope is re-coded, its own
    // included; only a host that chose another vocabulary pays for it.
    let routes = match state.engine.choices().error_codes {
        ErrorCodes::Goalpost => routes,
        ErrorCodes::Openwop => routes.layer(axum::middleware::map_response(|response| async {
            error::recode(response, crate::choices::openwop_code)
        })),
    };
    let anonymous = trace::Anonymous::default();
    let routes = routes.layer(axum::middleware::from_fn(move |request, next| {
        trace::request_span(anonymous.clone(), request, next)
    }));
    faults.layer(routes, &state).with_state(state)
}

/// A path id that this host could not have minted names nothing.
fn goal_id(text: &str) -> Result<GoalId, ApiError> {
    GoalId::parse(text).ok_or_else(ApiError::not_found)
}

fn if_match(headers: &HeaderMap) -> Result<Option<IfMatch>, ApiError> {
    headers
        .get(IF_MATCH)
        .map(|value| {
            value.to_str().map(IfMatch::parse).map_err(|_| {
                ApiError::invalid_input("header", "If-Match", "If-Match must be visible ASCII")
            })
        })
        .transpose()
}
