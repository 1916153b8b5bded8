//! Where the HTTP surface lets a bug in (the suite's kill matrix:
//! `crate::mutants`): a body limit and one outermost middleware. The
//! defaults leave the router as it is.

use axum::Router;

use super::AppState;

/// How a host's routes get the wire wrong.
pub trait RouteFaults: Send + Sync {
    /// The request body limit the host enforces.
    fn body_limit(&self, limit: usize) -> usize {
        limit
    }

    /// The routes with whatever middleware the bug needs.
    fn layer(&self, routes: Router<AppState>, _state: &AppState) -> Router<AppState> {
        routes
    }
}

/// The faithful router: every hook its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRouteFaults;

impl RouteFaults for NoRouteFaults {}
