//! The attention extension's routes (PROFILE.md "Profile `attention`"),
//! under each goal (`{base}/{id}/attention/…`) and one tenant-wide list
//! (`{base}/attention/bindings`). Tenant credentials and tenancy as the
//! goal endpoints; confirmations take a credential that holds an
//! authority. A host that does not serve the extension answers 404 on all
//! of them (after the credential check, as for any goal route).

mod auth;
pub mod openapi;

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::header::{HeaderValue, LOCATION};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

pub use auth::{Authorities, Confirmer};

use super::auth::Caller;
use super::error::ApiError;
use super::json::{json, with_etag, JsonBody};
use super::{goal_id, AppState, GOALS_BASE};
use crate::domain::attention::{wire, AttentionMode, AttentionState, StatusChange};
use crate::domain::request::{parse_body, parse_confirmation, parse_pause};
use crate::domain::{BindingId, EvidenceId, Goal, GoalId};
use crate::engine::{BindingFilter, EngineError, BINDING_STATUSES};

/// `{base}/attention/bindings`: the tenant-wide list.
pub const TENANT_BINDINGS: &str = "/v1/host/sample/goals/attention/bindings";

pub fn routes(seams: bool) -> Router<AppState> {
    let goal = format!("{GOALS_BASE}/{{id}}/attention");
    let binding = format!("{goal}/bindings/{{binding}}");
    let mut routes = Router::new()
        .route(TENANT_BINDINGS, get(tenant_bindings))
        .route(&format!("{goal}/policy"), get(read_policy).put(put_policy))
        .route(&format!("{goal}/closure"), get(read_closure))
        .route(&format!("{goal}/close"), post(close))
        .route(&format!("{goal}/confirmations"), post(confirm))
        .route(&format!("{goal}/evidence"), get(list_evidence))
        .route(&format!("{goal}/events"), get(list_events))
        .route(
            &format!("{goal}/evidence/{{evidence}}/resolve"),
            post(resolve),
        )
        .route(&format!("{goal}/bindings"), get(list).post(create))
        .route(&binding, get(read))
        .route(&format!("{binding}/pause"), post(pause))
        .route(&format!("{binding}/resume"), post(resume))
        .route(&format!("{binding}/stop"), post(stop))
        .route(&format!("{binding}/supersede"), post(supersede));
    if seams {
        routes = routes.route(&format!("{binding}/continue"), post(continue_binding));
    }
    routes
}

fn binding_id(text: &str) -> Result<BindingId, ApiError> {
    BindingId::parse(text).ok_or_else(ApiError::not_found)
}

fn binding_json(state: &AppState, goal: &Goal, id: &BindingId) -> Result<Value, ApiError> {
    let binding = goal
        .notes
        .attention
        .as_deref()
        .and_then(|attention| attention.binding(id))
        .ok_or_else(ApiError::not_found)?;
    let now = state.engine.clock().now();
    Ok(wire::binding(goal, binding, now, state.engine.pause_wake()))
}

fn binding_location(goal: &GoalId, binding: &BindingId) -> String {
    format!(
        "{GOALS_BASE}/{}/attention/bindings/{}",
        goal.as_str(),
        binding.as_str()
    )
}

fn created(location: &str, goal: &Goal, body: Value) -> Response {
    let mut response = with_etag(StatusCode::CREATED, goal, body);
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// An optional JSON body: none (or only whitespace) reads as absent.
fn optional_body(bytes: &Bytes) -> Result<Option<Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    parse_body(bytes)
        .map(Some)
        .map_err(|error| ApiError::malformed_json(format!("the body is not JSON: {error}")))
}

fn policy_json(goal: &Goal, attention: &AttentionState) -> Value {
    let mut body = attention.policy.to_json();
    if let Some(object) = body.as_object_mut() {
        object.insert("goalId".into(), Value::from(goal.id.as_str()));
        object.insert("revision".into(), Value::from(attention.revision_of(goal)));
    }
    body
}

async fn tenant_bindings(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    if let Some(unknown) = query
        .keys()
        .find(|key| !["goal", "mode", "status"].contains(&key.as_str()))
    {
        return Err(ApiError::invalid_input(
            "parameter",
            unknown,
            "the list filters on goal, mode and status only",
        ));
    }
    let filter = BindingFilter {
        goal: query
            .get("goal")
            .map(|text| {
                GoalId::parse(text).ok_or_else(|| {
                    ApiError::invalid_input("parameter", "goal", "goal must be a goal id")
                })
            })
            .transpose()?,
        mode: query
            .get("mode")
            .map(|text| {
                AttentionMode::parse(text).ok_or_else(|| {
                    ApiError::invalid_input(
                        "parameter",
                        "mode",
                        "mode must be one of pursue, coordinate, review, falsify, judge, observe",
                    )
                })
            })
            .transpose()?,
        status: query
            .get("status")
            .map(|text| {
                BINDING_STATUSES
                    .contains(&text.as_str())
                    .then(|| text.clone())
                    .ok_or_else(|| {
                        ApiError::invalid_input(
                            "parameter",
                            "status",
                            "status must be one of active, paused, superseded, stopped",
                        )
                    })
            })
            .transpose()?,
    };
    let found = state.engine.tenant_bindings(&tenant, filter).await?;
    let now = state.engine.clock().now();
    let wake = state.engine.pause_wake();
    let bindings: Vec<Value> = found
        .iter()
        .map(|(goal, binding)| wire::binding(goal, binding, now, wake))
        .collect();
    Ok(json(StatusCode::OK, json!({ "bindings": bindings })))
}

async fn read_policy(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (goal, attention) = state.engine.attention_of(&tenant, &goal_id(&id)?).await?;
    Ok(json(StatusCode::OK, policy_json(&goal, &attention)))
}

async fn put_policy(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let goal = state
        .engine
        .set_policy(&tenant, &goal_id(&id)?, &body)
        .await?;
    let attention = goal
        .notes
        .attention
        .as_deref()
        .cloned()
        .unwrap_or_else(|| AttentionState::new(&goal));
    Ok(with_etag(
        StatusCode::OK,
        &goal,
        policy_json(&goal, &attention),
    ))
}

async fn read_closure(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (goal, attention) = state.engine.attention_of(&tenant, &goal_id(&id)?).await?;
    let revision = attention.revision_of(&goal);
    let approved = state.engine.approvals(&attention, revision);
    let decision = state.engine.decide_closure(&attention, revision);
    Ok(json(
        StatusCode::OK,
        wire::closure_state(&goal, &attention, decision, approved),
    ))
}

async fn close(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let goal = state.engine.request_close(&tenant, &goal_id(&id)?).await?;
    Ok(with_etag(
        StatusCode::OK,
        &goal,
        crate::domain::wire::goal(&goal),
    ))
}

async fn confirm(
    State(state): State<AppState>,
    confirmer: Confirmer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = goal_id(&id)?;
    let authority = match confirmer.authority {
        Some(authority) => authority,
        None => {
            // The goal is looked up first: another tenant's goal is the
            // same 404 for every credential.
            state.engine.attention_of(&confirmer.tenant, &id).await?;
            state
                .engine
                .attention_faults()
                .tenant_authority()
                .ok_or(EngineError::AuthorityRequired)?
        }
    };
    let body = optional_body(&body)?;
    let evidence = parse_confirmation(body.as_ref()).map_err(ApiError::from)?;
    let goal = state
        .engine
        .confirm(&confirmer.tenant, &id, authority, evidence)
        .await?;
    let revision = goal
        .notes
        .attention
        .as_deref()
        .map_or(1, |attention| attention.revision);
    Ok(with_etag(
        StatusCode::CREATED,
        &goal,
        json!({
            "goalId": goal.id.as_str(),
            "authority": authority.as_str(),
            "revision": revision,
        }),
    ))
}

async fn list_evidence(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (_, attention) = state.engine.attention_of(&tenant, &goal_id(&id)?).await?;
    let evidence: Vec<Value> = attention.evidence.iter().map(wire::evidence).collect();
    Ok(json(StatusCode::OK, json!({ "evidence": evidence })))
}

async fn list_events(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let events = state
        .engine
        .attention_events(&tenant, &goal_id(&id)?)
        .await?;
    Ok(json(
        StatusCode::OK,
        crate::domain::wire::event_list(events.iter()),
    ))
}

async fn resolve(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, evidence)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let evidence = EvidenceId::parse(&evidence).ok_or_else(ApiError::not_found)?;
    let goal = state
        .engine
        .resolve_evidence(&tenant, &goal_id(&id)?, &evidence)
        .await?;
    let item = goal
        .notes
        .attention
        .as_deref()
        .and_then(|attention| attention.evidence.iter().find(|item| item.id == evidence))
        .ok_or_else(ApiError::not_found)?;
    Ok(with_etag(StatusCode::OK, &goal, wire::evidence(item)))
}

async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (goal, attention) = state.engine.attention_of(&tenant, &goal_id(&id)?).await?;
    let now = state.engine.clock().now();
    let wake = state.engine.pause_wake();
    let bindings: Vec<Value> = attention
        .bindings
        .iter()
        .map(|binding| wire::binding(&goal, binding, now, wake))
        .collect();
    Ok(json(StatusCode::OK, json!({ "bindings": bindings })))
}

async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = goal_id(&id)?;
    let (goal, binding) = state.engine.create_binding(&tenant, &id, &body).await?;
    let body = binding_json(&state, &goal, &binding)?;
    Ok(created(&binding_location(&id, &binding), &goal, body))
}

async fn read(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, binding)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (goal, _) = state.engine.attention_of(&tenant, &goal_id(&id)?).await?;
    let body = binding_json(&state, &goal, &binding_id(&binding)?)?;
    Ok(json(StatusCode::OK, body))
}

async fn transition(
    state: &AppState,
    tenant: &crate::domain::Tenant,
    id: &str,
    binding: &str,
    change: StatusChange,
) -> Result<Response, ApiError> {
    let (id, binding) = (goal_id(id)?, binding_id(binding)?);
    let goal = state
        .engine
        .change_binding(tenant, &id, &binding, change)
        .await?;
    let body = binding_json(state, &goal, &binding)?;
    Ok(with_etag(StatusCode::OK, &goal, body))
}

async fn pause(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, binding)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body = optional_body(&body)?;
    let until = parse_pause(body.as_ref()).map_err(ApiError::from)?;
    transition(
        &state,
        &tenant,
        &id,
        &binding,
        StatusChange::Pause { until },
    )
    .await
}

async fn resume(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, binding)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    transition(&state, &tenant, &id, &binding, StatusChange::Resume).await
}

async fn stop(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, binding)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    transition(&state, &tenant, &id, &binding, StatusChange::Stop).await
}

async fn supersede(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, binding)): Path<(String, String)>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let (id, binding) = (goal_id(&id)?, binding_id(&binding)?);
    let (goal, replacement) = state
        .engine
        .supersede_binding(&tenant, &id, &binding, &body)
        .await?;
    let body = binding_json(&state, &goal, &replacement)?;
    Ok(created(&binding_location(&id, &replacement), &goal, body))
}

async fn continue_binding(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    Path((id, binding)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (id, binding) = (goal_id(&id)?, binding_id(&binding)?);
    let outcome = state
        .engine
        .continue_binding(&tenant, &id, &binding)
        .await?;
    let unjudged = state.engine.choices().confidence_without_verdict;
    let body = json!({
        "goal": crate::domain::wire::goal(&outcome.goal),
        "binding": binding_json(&state, &outcome.goal, &outcome.binding)?,
        "run": {
            "runId": outcome.run_id.as_str(),
            "iteration": outcome.iteration,
            "refused": outcome.refused,
            "failed": outcome.failed,
        },
        "evaluation": outcome
            .evaluation
            .as_ref()
            .map(|evaluation| crate::domain::wire::evaluation(evaluation, unjudged)),
    });
    Ok(with_etag(StatusCode::OK, &outcome.goal, body))
}
