//! The goals collection: list, create, read, edit, attention.

use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::header::{HeaderValue, CONTENT_TYPE, ETAG, LINK};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::auth::Caller;
use super::error::ApiError;
use super::json::{created, json, with_etag, JsonBody};
use super::{goal_id, if_match, AppState, GOALS_BASE};
use futures_util::StreamExt;

use crate::choices::CreateStatus;
use crate::domain::{wire, GoalId, GoalState};
use crate::engine::{IdempotencyKey, MAX_KEY_CHARS};

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

/// The largest page `?limit=` gets; a larger `limit` is answered with
/// pages of this size (the `Link` says where the next one is).
pub const MAX_PAGE: usize = 1000;
/// The pages an unpaged list is read and written in: its memory is one
/// such page, however many goals the tenant has.
const STREAM_PAGE: usize = 256;

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
    // Digits only: `+5` or ` 5` would parse in Rust and mean nothing to
    // another host.
    let limit = query
        .get("limit")
        .map(|text| {
            text.bytes()
                .all(|byte| byte.is_ascii_digit())
                .then(|| text.parse::<u64>().ok())
                .flatten()
                .filter(|limit| *limit >= 1)
                .map(|limit| usize::try_from(limit).unwrap_or(MAX_PAGE).min(MAX_PAGE))
                .ok_or_else(|| {
                    ApiError::invalid_input(
                        "parameter",
                        "limit",
                        "limit must be a whole number of at least 1",
                    )
                })
        })
        .transpose()?;
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

/// The unpaged list as a body of chunks, one page of goals each. The
/// first page is read before answering, so a failing store is still a 500
/// with an envelope; a failure after that cuts the body short (the status
/// is already sent), which a client sees as a broken answer, never as a
/// shorter list. Pages are separate reads: a goal created while the list
/// streams may appear in it, and none appears twice.
async fn stream_list(
    state: AppState,
    tenant: crate::domain::Tenant,
    query: ListQuery,
) -> Result<Response, ApiError> {
    let filter = query.state;
    let first = state
        .engine
        .list_page(&tenant, filter, query.after.clone(), STREAM_PAGE)
        .await?;
    let engine = std::sync::Arc::clone(state.engine());
    let shown = shown(&state);
    let opening = page_chunk(&first, true, first.len() < STREAM_PAGE, shown);
    // The id the next page starts after; `None` once the list is out.
    let next = continue_after(&first);
    let rest = futures_util::stream::unfold(next, move |after| {
        let (engine, tenant) = (std::sync::Arc::clone(&engine), tenant.clone());
        async move {
            let after = after?;
            match engine
                .list_page(&tenant, filter, Some(after), STREAM_PAGE)
                .await
            {
                Ok(goals) => {
                    let chunk = page_chunk(&goals, false, goals.len() < STREAM_PAGE, shown);
                    Some((Ok(chunk), continue_after(&goals)))
                }
                Err(error) => Some((Err(std::io::Error::other(error.to_string())), None)),
            }
        }
    });
    let chunks = futures_util::stream::once(std::future::ready(Ok::<_, std::io::Error>(opening)))
        .chain(rest);
    let mut response = Response::new(Body::from_stream(chunks));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Where the page after a full `page` starts; `None` after a short one.
fn continue_after(page: &[crate::domain::Goal]) -> Option<GoalId> {
    if page.len() < STREAM_PAGE {
        return None;
    }
    page.last().map(|goal| goal.id.clone())
}

/// One page of a streamed list: `{"goals":[` before the first, commas
/// between goals and pages, `]}` after the last.
fn page_chunk(goals: &[crate::domain::Goal], first: bool, last: bool, shown: usize) -> Bytes {
    let mut chunk = Vec::with_capacity(goals.len() * 768 + 16);
    if first {
        chunk.extend_from_slice(b"{\"goals\":[");
    }
    for (n, goal) in goals.iter().enumerate() {
        if n > 0 || !first {
            chunk.push(b',');
        }
        // Writing into a Vec fails only if serialization does, which a
        // wire goal never does (no maps with non-string keys).
        if serde_json::to_writer(&mut chunk, &wire::goal_shown(goal, shown)).is_err() {
            chunk.extend_from_slice(b"null");
        }
    }
    if last {
        chunk.extend_from_slice(b"]}");
    }
    Bytes::from(chunk)
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
        .await?;
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
