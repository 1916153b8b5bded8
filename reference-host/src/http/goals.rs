//! The goals collection: list, create, read, edit, attention.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::header::{HeaderValue, ETAG, LINK};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{created, json, with_etag, JsonBody};
use super::paging::{self, Page, STREAM_PAGE};
use super::{goal_id, if_match, AppState, GOALS_BASE};

use crate::choices::CreateStatus;
use crate::domain::{wire, GoalId, GoalState};
use crate::engine::{EngineError, IdempotencyKey, MAX_KEY_CHARS};

/// Names the header a create's idempotency key travels in.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Set on a create answered from an earlier request with the same key.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
/// The seam `scriptedJudge` at create (PROFILE.md "Seam contract"): the
/// verifier ref a host that judges itself judges the new goal by from its
/// first run. Read only where the seam is served.
pub const SCRIPTED_JUDGE_HEADER: &str = "X-Goalpost-Scripted-Judge";

/// The create's scripted judge, as text; `None` without the header or on
/// a host that does not serve the seam (which ignores it, as any header it
/// does not know).
fn scripted_judge(state: &AppState, headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers
        .get(SCRIPTED_JUDGE_HEADER)
        .filter(|_| state.engine.serves_scripted_judge())
    else {
        return Ok(None);
    };
    value
        .to_str()
        .map(|text| Some(text.to_string()))
        .map_err(|_| {
            ApiError::invalid_input(
                "header",
                SCRIPTED_JUDGE_HEADER,
                format!("{SCRIPTED_JUDGE_HEADER} must be a verifier ref in visible ASCII"),
            )
        })
}

/// A script the host cannot use is refused as the seam's body would be,
/// but named by its header: it is not part of the create's body.
fn script_named(error: EngineError) -> ApiError {
    match error {
        EngineError::CreateScript(refused) => ApiError::from(refused)
            .with_details(serde_json::json!({ "header": SCRIPTED_JUDGE_HEADER })),
        other => ApiError::from(other),
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(IdempotencyKey::parse)
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid_input(
                "header",
                "Idempotency-Key",
                format!("Idempotency-Key must be 1 to {MAX_KEY_CHARS} visible ASCII characters"),
            )
        })
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(GOALS_BASE, get(list).post(create))
        .route(&format!("{GOALS_BASE}/{{id}}"), get(read).patch(edit))
        .route(&format!("{GOALS_BASE}/{{id}}/attention"), get(attention))
}

/// The contributing run ids a goal body lists (`--run-ids-shown`).
fn shown(state: &AppState) -> usize {
    state.engine.settings().run_ids_shown
}

/// What `GET {base}` was asked for.
struct ListQuery {
    state: Option<GoalState>,
    limit: Option<usize>,
    after: Option<GoalId>,
}

fn list_query(query: &HashMap<String, String>) -> Result<ListQuery, ApiError> {
    let state = query
        .get("state")
        .map(|text| {
            GoalState::parse(text).ok_or_else(|| {
                ApiError::invalid_input(
                    "parameter",
                    "state",
                    "state must be one of active, satisfied, escalated, abandoned, bound-exceeded",
                )
            })
        })
        .transpose()?;
    let limit = paging::limit(query.get("limit"))?;
    let after = query
        .get("after")
        .map(|text| {
            GoalId::parse(text).ok_or_else(|| {
                ApiError::invalid_input(
                    "parameter",
                    "after",
                    "after must be a goal id, as the Link of the previous page gives it",
                )
            })
        })
        .transpose()?;
    Ok(ListQuery {
        state,
        limit,
        after,
    })
}

/// `GET {base}`: with `limit`, one page and a `Link` to the next when
/// there is one; without, every goal after `after`, streamed a page at a
/// time so the answer never sits whole in memory.
async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let query = list_query(&query)?;
    let Some(limit) = query.limit else {
        return stream_list(state, tenant, query).await;
    };
    // One more than asked: whether it comes back says if there is a next
    // page, without a page that turns out empty.
    let mut goals = state
        .engine
        .list_page(&tenant, query.state, query.after, limit + 1)
        .await?;
    let more = goals.len() > limit;
    goals.truncate(limit);
    let mut response = json(StatusCode::OK, wire::goal_list(&goals, shown(&state)));
    if let (true, Some(last)) = (more, goals.last()) {
        let mut next = format!("<{GOALS_BASE}?limit={limit}&after={}", last.id);
        if let Some(filter) = query.state {
            next.push_str("&state=");
            next.push_str(filter.as_str());
        }
        next.push_str(">; rel=\"next\"");
        if let Ok(value) = HeaderValue::from_str(&next) {
            response.headers_mut().insert(LINK, value);
        }
    }
    Ok(response)
}

/// The unpaged list, streamed a page of goals at a time
/// ([`paging::streamed`]). Pages are separate reads: a goal created while
/// the list streams may appear in it, and none appears twice.
async fn stream_list(
    state: AppState,
    tenant: crate::domain::Tenant,
    query: ListQuery,
) -> Result<Response, ApiError> {
    let filter = query.state;
    let shown = shown(&state);
    let first = state
        .engine
        .list_page(&tenant, filter, query.after, STREAM_PAGE)
        .await?;
    let first = goals_page(&first, shown);
    let engine = std::sync::Arc::clone(state.engine());
    Ok(paging::streamed("goals", first, move |after| {
        let (engine, tenant) = (std::sync::Arc::clone(&engine), tenant.clone());
        async move {
            engine
                .list_page(&tenant, filter, Some(after), STREAM_PAGE)
                .await
                .map(|goals| goals_page(&goals, shown))
                .map_err(|error| error.to_string())
        }
    }))
}

/// One page of a streamed list: a full page is continued after its last
/// goal, a short one is the last.
fn goals_page(goals: &[crate::domain::Goal], shown: usize) -> Page<GoalId> {
    Page {
        next: (goals.len() >= STREAM_PAGE)
            .then(|| goals.last().map(|goal| goal.id.clone()))
            .flatten(),
        // Serializing fails only if a wire goal could not be written, which
        // it never is (no maps with non-string keys).
        items: goals
            .iter()
            .map(|goal| {
                serde_json::to_vec(&wire::goal_shown(goal, shown))
                    .unwrap_or_else(|_| b"null".to_vec())
            })
            .collect(),
    }
}

async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let script = scripted_judge(&state, &headers)?;
    let outcome = state
        .engine
        .create_once(&tenant, &body, key.as_ref(), script.as_deref())
        .await
        .map_err(script_named)?;
    let goal = &outcome.goal;
    let location = format!("{GOALS_BASE}/{}", goal.id);
    let status = match state.engine.choices().create_status {
        CreateStatus::Created => StatusCode::CREATED,
        CreateStatus::Ok => StatusCode::OK,
    };
    let Some(replay) = outcome.replay else {
        return Ok(created(
            status,
            &location,
            goal,
            wire::goal_shown(goal, shown(&state)),
        ));
    };
    // The original answer again: its body and ETag, not the goal as it is
    // now (a GET shows that).
    let mut response = created(status, &location, goal, replay.answer);
    if let Ok(etag) = HeaderValue::from_str(&replay.etag) {
        response.headers_mut().insert(ETAG, etag);
    }
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    Ok(response)
}

async fn read(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let goal = state.engine.get(&tenant, &goal_id(&id)?).await?;
    Ok(with_etag(
        StatusCode::OK,
        &goal,
        wire::goal_shown(&goal, shown(&state)),
    ))
}

async fn edit(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = goal_id(&id)?;
    let goal = state
        .engine
        .patch(&tenant, &id, &body, if_match(&headers)?.as_ref())
        .await?;
    Ok(with_etag(
        StatusCode::OK,
        &goal,
        wire::goal_shown(&goal, shown(&state)),
    ))
}

async fn attention(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let goal = state.engine.get(&tenant, &goal_id(&id)?).await?;
    let body = wire::attention(&goal, state.engine.choices().attention);
    Ok(json(StatusCode::OK, body))
}
