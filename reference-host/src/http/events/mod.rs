//! A goal's events and evaluations, and the tenant's live event stream:
//! host API, served with or without the conformance seams. Every answer is
//! the caller's own (another tenant's goal is 404) and content-free.

mod frame;
mod stream;

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{get, MethodRouter};
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::{goal_id, paging, AppState, GOALS_BASE};
use crate::domain::{wire, GoalId, Tenant};
use crate::engine::Engine;

pub use stream::{CHUNK_BYTES, CHUNK_MESSAGES, EVENTS_STREAM_PATH};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(EVENTS_STREAM_PATH, get(stream::events_stream))
        .route(&GoalLog::Events.path(), GoalLog::Events.handler())
        .route(&GoalLog::Evaluations.path(), GoalLog::Evaluations.handler())
}

/// A whole number ≥ 0 named `name`, or a 400 naming where it came from.
fn whole_number(kind: &'static str, name: &str, text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().map_err(|_| {
        ApiError::invalid_input(kind, name, format!("{name} must be a whole number >= 0"))
    })
}

/// A goal's logs, each listed by where it is numbered: events by sequence,
/// evaluations by iteration.
#[derive(Debug, Clone, Copy)]
enum GoalLog {
    Events,
    Evaluations,
}

impl GoalLog {
    /// The answer's member, also the last segment of the log's route.
    fn member(self) -> &'static str {
        match self {
            GoalLog::Events => "events",
            GoalLog::Evaluations => "evaluations",
        }
    }

    /// `{base}/{id}/<member>`, read with `?after=N` (a sequence or an
    /// iteration) and `&limit=N`.
    fn path(self) -> String {
        format!("{GOALS_BASE}/{{id}}/{}", self.member())
    }

    fn handler(self) -> MethodRouter<AppState> {
        get(
            move |State(state): State<AppState>,
                  Caller(tenant): Caller,
                  Path(id): Path<String>,
                  Query(query): Query<HashMap<String, String>>| {
                listing(self, state, tenant, id, query)
            },
        )
    }

    /// One page of the log after `after`, and where the next starts when
    /// this one is full.
    async fn page(
        self,
        engine: &Engine,
        tenant: &Tenant,
        id: &GoalId,
        after: u64,
        size: usize,
    ) -> Result<paging::Page, ApiError> {
        Ok(match self {
            GoalLog::Events => {
                let events = engine.events(tenant, id, after, size + 1).await?;
                paging::Page::from_one_more(
                    events,
                    size,
                    |event| event.sequence,
                    |event| wire::event_text(event).into_bytes(),
                )
            }
            GoalLog::Evaluations => {
                let evaluations = engine.evaluations(tenant, id, after, size + 1).await?;
                let unjudged = engine.choices().confidence_without_verdict;
                paging::Page::from_one_more(
                    evaluations,
                    size,
                    |evaluation| evaluation.iteration,
                    |evaluation| {
                        wire::evaluation(evaluation, unjudged)
                            .to_string()
                            .into_bytes()
                    },
                )
            }
        })
    }
}

/// A goal's log: with `limit`, one page and a `Link` to the next; without,
/// every entry after `after`, streamed a page at a time.
async fn listing(
    log: GoalLog,
    state: AppState,
    tenant: Tenant,
    id: String,
    query: HashMap<String, String>,
) -> Result<Response, ApiError> {
    let after = match query.get("after") {
        None => 0,
        Some(text) => whole_number("parameter", "after", text)?,
    };
    let limit = paging::limit(query.get("limit"))?;
    let id = goal_id(&id)?;
    let engine = std::sync::Arc::clone(state.engine());
    let page_size = limit.unwrap_or(paging::STREAM_PAGE);
    let first = log.page(&engine, &tenant, &id, after, page_size).await?;
    let member = log.member();
    if limit.is_some() {
        let path = format!("{GOALS_BASE}/{id}/{member}");
        return Ok(paging::page_response(member, &first, &path, page_size));
    }
    Ok(paging::streamed(member, first, move |after| {
        let (engine, tenant, id) = (std::sync::Arc::clone(&engine), tenant.clone(), id.clone());
        async move {
            log.page(&engine, &tenant, &id, after, page_size)
                .await
                .map_err(|error| format!("{error:?}"))
        }
    }))
}
