//! `GET /openapi.json` (public): an OpenAPI 3.1 description of this host's
//! API. Paths come from the same constants the router uses; bodies reference
//! the goalpost JSON Schemas, embedded under `components/schemas` with their
//! cross-file and local `$ref`s rewritten to point inside this document.
//! `tests/it/openapi.rs` keeps it honest against the real router.

pub(super) mod parts;

use std::collections::BTreeSet;
use std::sync::OnceLock;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use self::parts::{
    body_response, goal_id_parameter, goal_response, if_match_parameter, json_content, responses,
    schema_ref, COMPONENT_PREFIX,
};
use super::goals::SCRIPTED_JUDGE_HEADER;
use super::{AppState, EVENTS_STREAM_PATH, GOALS_BASE, VERIFIERS_BASE};

use crate::domain::notes::{MAX_ESCALATION_REASON_CHARS, MAX_RESOLUTION_NOTE_CHARS};
use crate::domain::Check;

/// The goal ids this host mints and parses (`GoalId::parse`): the prefix
/// and a lower-case hyphenated UUID.
const GOAL_ID_PATTERN: &str = "^goal-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// Where the description is served.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The schemas the API's bodies name directly; the `$ref`s inside them pull
/// in the rest.
const API_SCHEMAS: &[&str] = &[
    "attention",
    "capabilities",
    "continue-response",
    "create-request",
    "error",
    "evaluation-list",
    "event-list",
    "goal",
    "goal-list",
    "run-report-request",
    "run-report-response",
    "verifier-definition",
    "verifier-list",
    "verifier-registration",
];

pub fn routes() -> Router<AppState> {
    Router::new().route(OPENAPI_PATH, get(serve))
}

async fn serve(State(state): State<AppState>) -> Response {
    static WITH_SEAMS: OnceLock<String> = OnceLock::new();
    static WITH_SCRIPTED_JUDGE: OnceLock<String> = OnceLock::new();
    static WITHOUT_SEAMS: OnceLock<String> = OnceLock::new();
    let scripted_judge = state.seams && state.engine.choices().judge == Check::Host;
    let cell = match (state.seams, scripted_judge) {
        (true, true) => &WITH_SCRIPTED_JUDGE,
        (true, false) => &WITH_SEAMS,
        (false, _) => &WITHOUT_SEAMS,
    };
    let text = cell.get_or_init(|| document(state.seams, scripted_judge).to_string());
    (
        StatusCode::OK,
        [(CONTENT_TYPE, "application/json")],
        text.clone(),
    )
        .into_response()
}

/// The description of a host with the conformance seams on or off (their
/// paths are described only when they are served); `scripted_judge`: the
/// seam `scriptedJudge` is served too (a host that judges itself).
pub fn document(seams: bool, scripted_judge: bool) -> Value {
    let mut paths = Map::new();
    paths.insert("/.well-known/openwop".into(), discovery_path());
    paths.insert(OPENAPI_PATH.into(), openapi_path());
    paths.insert(GOALS_BASE.into(), collection_path(seams, scripted_judge));
    paths.insert(format!("{GOALS_BASE}/{{id}}"), goal_path());
    paths.insert(format!("{GOALS_BASE}/{{id}}/attention"), attention_path());
    paths.insert(format!("{GOALS_BASE}/{{id}}/runs"), runs_path());
    for (verb, effect) in [
        ("pause", "Disarms continuation; the goal stays `active` (attention `paused`). 409 `goal_escalated` on an escalated goal."),
        ("resume", "Re-arms continuation of a paused goal, or makes an escalated goal `active` again. Progress and spent cost are kept."),
        ("abandon", "Closes an active or escalated goal as `abandoned` (one `goal.closed` event)."),
    ] {
        paths.insert(
            format!("{GOALS_BASE}/{{id}}/{verb}"),
            transition_path(verb, effect),
        );
    }
    paths.insert(VERIFIERS_BASE.into(), verifiers_path());
    paths.insert(format!("{VERIFIERS_BASE}/{{name}}"), verifier_path());
    paths.insert(format!("{GOALS_BASE}/{{id}}/events"), events_path());
    paths.insert(
        format!("{GOALS_BASE}/{{id}}/evaluations"),
        evaluations_path(),
    );
    paths.insert(format!("{GOALS_BASE}/{{id}}/escalation"), escalation_path());
    paths.insert(EVENTS_STREAM_PATH.into(), stream_path());
    if seams {
        paths.insert(format!("{GOALS_BASE}/{{id}}/continue"), continue_path());
    }
    if seams && scripted_judge {
        paths.insert(format!("{GOALS_BASE}/{{id}}/judge"), judge_path());
    }
    for (path, item) in super::attention::openapi::paths(seams) {
        paths.insert(path, item);
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "goalpost-host",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Reference host for RFC 0097 standing goals",
            "description": "Standing goals keep an agent working across runs until a judge says the goal is met, a bound is crossed, or the agent escalates. Only the judge completes a goal: no request body can set `state`, `progress` or `completion.lastVerdict`. Every 4xx/5xx answer is an error envelope `{error, message, details?}`. The conformance seams (`continue`, fixture refs) are served and described only when the host runs with `--conformance-seams`; a goal's events and evaluations, its escalation and the live event stream are served either way.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
        },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token configured on the host with `--token TOKEN=TENANT`; every goal belongs to the token's tenant.",
                },
            },
            "parameters": {
                "goalId": {
                    "name": "id", "in": "path", "required": true,
                    "description": "A goal id (`goal-<uuid>`, the UUID in lower-case hyphenated form). Another tenant's goal is 404, and so is a text this host could not have minted.",
                    // The pattern is exactly what the host parses; it also
                    // tells generators that `events` (the stream, a path of
                    // its own) is not a goal id.
                    "schema": { "type": "string", "pattern": GOAL_ID_PATTERN },
                },
                "ifMatch": {
                    "name": "If-Match", "in": "header", "required": false,
                    "description": "Apply only if the goal's current `ETag` matches (else 412).",
                    "schema": { "type": "string" },
                },
            },
            "headers": {
                "ETag": {
                    "description": "Strong tag `\"<version>\"`; the version grows by one on every stored change of the goal.",
                    "schema": { "type": "string" },
                },
            },
            "schemas": components(),
        },
    })
}

fn discovery_path() -> Value {
    json!({ "get": {
        "operationId": "discovery",
        "summary": "Discovery document: `agents.goals` and, with seams on, `conformanceSeams`",
        "security": [],
        "responses": responses(&[(200, body_response("The capabilities document.", "capabilities"))], &[]),
    } })
}

fn openapi_path() -> Value {
    json!({ "get": {
        "operationId": "openapi",
        "summary": "This description",
        "security": [],
        "responses": responses(&[(200, json!({
            "description": "An OpenAPI 3.1 document.",
            "content": json_content(json!({ "type": "object" })),
        }))], &[]),
    } })
}

/// OpenAPI links from a created goal to every operation on it, so a
/// stateful client (Schemathesis) works on real goals, not random ids.
fn goal_links(seams: bool, scripted_judge: bool) -> Value {
    let mut operations = vec![
        "getGoal",
        "editGoal",
        "getAttention",
        "pauseGoal",
        "resumeGoal",
        "abandonGoal",
        "listEvents",
        "listEvaluations",
        "getEscalation",
    ];
    if seams {
        operations.push("continueGoal");
    }
    if seams && scripted_judge {
        operations.push("scriptJudge");
    }
    let links: Map<String, Value> = operations
        .into_iter()
        .map(|operation| {
            (
                operation.to_string(),
                json!({ "operationId": operation, "parameters": { "id": "$response.body#/id" } }),
            )
        })
        .collect();
    Value::Object(links)
}

fn collection_path(seams: bool, scripted_judge: bool) -> Value {
    let mut create_parameters = vec![json!({
        "name": "Idempotency-Key", "in": "header", "required": false,
        "description": "1 to 255 visible ASCII characters, scoped to the tenant and kept 24 h: the same key with the same body (as parsed JSON) answers the goal it made (`Idempotent-Replayed: true`), with another body 409 `idempotency_conflict`.",
        "schema": { "type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$" },
    })];
    if scripted_judge {
        create_parameters.push(json!({
            "name": SCRIPTED_JUDGE_HEADER, "in": "header", "required": false,
            "description": "Conformance seam `scriptedJudge`: the verifier ref (a `conformance:verifier` fixture or an http(s) URL) this goal is judged by from its first run, stored with the goal and not in it; `PUT {base}/{id}/judge` replaces it. A ref the host cannot use refuses the create (400 or 422, `details.header` names the header).",
            "schema": { "type": "string", "pattern": "^[ -~]+$" },
        }));
    }
    json!({
        "get": {
            "operationId": "listGoals",
            "summary": "The caller's tenant's goals, in id order (creation order)",
            "description": "Without `limit`, every goal (after `after`, if given) in one body. With `limit`, at most that many, and a `Link: <…>; rel=\"next\"` header (RFC 8288) to the next page while there is one; the body is `{goals}` either way.",
            "parameters": [{
                "name": "state", "in": "query", "required": false,
                "description": "Only goals in this state (anything else is 400).",
                "schema": { "type": "string", "enum": ["active", "satisfied", "escalated", "abandoned", "bound-exceeded"] },
            }, {
                "name": "limit", "in": "query", "required": false,
                "description": "Most goals in this page (digits only, at least 1; above 1000 the page holds 1000). Anything else is 400.",
                "schema": { "type": "integer", "minimum": 1 },
            }, {
                "name": "after", "in": "query", "required": false,
                "description": "Start after this goal id (the cursor a `next` link carries); not a goal id is 400.",
                "schema": { "type": "string", "pattern": "^goal-" },
            }],
            "responses": responses(&[(200, json!({
                "description": "The goals.",
                "headers": { "Link": {
                    "description": "`<…>; rel=\"next\"`: where the next page is; only on a page of a paged list that has one after it.",
                    "schema": { "type": "string" },
                } },
                "content": json_content(schema_ref("goal-list")),
            }))], &[400, 401]),
        },
        "post": {
            "operationId": "createGoal",
            "summary": "Create a goal (state `active`, owner from the credential)",
            "parameters": create_parameters,
            "requestBody": { "required": true, "content": json_content(schema_ref("create-request")) },
            "responses": responses(&[(201, json!({
                "description": "The new goal (or, replayed, the goal the key made, as it is now).",
                "headers": {
                    "ETag": { "$ref": "#/components/headers/ETag" },
                    "Location": { "description": "`{base}/{id}` of the new goal.", "schema": { "type": "string" } },
                    "Idempotent-Replayed": { "description": "`true` when the answer replays an earlier create with the same `Idempotency-Key`.", "schema": { "type": "string", "enum": ["true"] } },
                },
                "content": json_content(schema_ref("goal")),
                "links": goal_links(seams, scripted_judge),
            }))], &[400, 401, 409, 413, 415, 422, 429]),
        },
    })
}

fn goal_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "get": {
            "operationId": "getGoal",
            "summary": "One goal",
            "responses": responses(&[(200, goal_response("The goal.", "goal"))], &[401, 404]),
        },
        "patch": {
            "operationId": "editGoal",
            "summary": "Edit `objective`, `completion.verifierRef` or `continuation` of an active or escalated goal",
            "parameters": [if_match_parameter()],
            "requestBody": { "required": true, "content": json_content(json!({
                "type": "object",
                "description": "Judge-owned fields (`state`, `progress`, `completion.lastVerdict`, `owner`, `id`) are 422 `judge_owned_field`; `completion.check`, `bounds`, `createdAt`, `updatedAt` are 422 `immutable_field`.",
                "properties": {
                    "objective": { "type": "string" },
                    "completion": {
                        "type": "object",
                        "properties": { "verifierRef": { "type": ["string", "null"] } },
                    },
                    "continuation": { "$ref": format!("{COMPONENT_PREFIX}goal/properties/continuation") },
                },
            })) },
            "responses": responses(&[(200, goal_response("The edited goal.", "goal"))], &[400, 401, 404, 409, 412, 413, 415, 422, 429]),
        },
    })
}

fn attention_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "get": {
            "operationId": "getAttention",
            "summary": "Whether continuation is armed: `active`, `paused` or `stopped`",
            "responses": responses(&[(200, body_response("The attention status.", "attention"))], &[401, 404]),
        },
    })
}

fn transition_path(verb: &str, effect: &str) -> Value {
    let mut path = json!({
        "parameters": [goal_id_parameter()],
        "post": {
            "operationId": format!("{verb}Goal"),
            "summary": effect,
            "parameters": [if_match_parameter()],
            "responses": responses(&[(200, goal_response("The goal after the transition.", "goal"))], &[400, 401, 404, 409, 412]),
        },
    });
    if verb == "resume" {
        path["post"]["requestBody"] = json!({
            "required": false,
            "description": "Optional. A JSON object's `note` is the person's resolution of the goal's escalation: the next run's arm request carries it (`resolution`). Any other body is ignored; a `note` that is not a string, or longer than 2048 characters, is 400.",
            "content": json_content(json!({
                "type": "object",
                "properties": { "note": { "type": ["string", "null"], "maxLength": MAX_RESOLUTION_NOTE_CHARS } },
            })),
        });
    }
    path
}

fn escalation_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "get": {
            "operationId": "getEscalation",
            "summary": "Why the goal is escalated: the interrupt's kind and reason, for the person who resolves it",
            "description": "404 when the goal is not escalated (or is another tenant's). The reason is the arm's text; it appears in no event.",
            "responses": responses(&[(200, json!({
                "description": "The open escalation.",
                "content": json_content(json!({
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["goalId", "kind", "reason", "runId", "at"],
                    "properties": {
                        "goalId": { "type": "string" },
                        "kind": { "type": "string", "description": "`clarification`, `approval` or `x-host-…` (RFC 0044)." },
                        "reason": { "type": "string", "maxLength": MAX_ESCALATION_REASON_CHARS },
                        "runId": { "type": "string", "description": "The run that escalated." },
                        "at": { "type": "string", "format": "date-time" },
                    },
                })),
            }))], &[401, 404]),
        },
    })
}

fn stream_path() -> Value {
    json!({
        "get": {
            "operationId": "streamEvents",
            "summary": "The tenant's events as they commit (Server-Sent Events)",
            "description": "Each message: `id:` the event's tenant-wide cursor, `event:` its type, `data:` the event envelope the per-goal list shows. Events stored after the cursor (`Last-Event-ID`, else `after`, else from the first) come first, then live ones, each once. An idle stream sends a `:heartbeat` comment. A subscriber that falls too far behind gets a final `stream.dropped` message `{reason, resumeAfter}` and the stream ends; reconnecting with `Last-Event-ID: <resumeAfter>` loses nothing. A tenant holds a bounded number of streams (429 `quota_exceeded` beyond).",
            "parameters": [{
                "name": "goal", "in": "query", "required": false,
                "description": "Only this goal's events (another tenant's goal is 404).",
                "schema": { "type": "string", "pattern": "^goal-" },
            }, {
                "name": "after", "in": "query", "required": false,
                "description": "Resume after this cursor (digits; anything else is 400).",
                "schema": { "type": "integer", "minimum": 0 },
            }, {
                "name": "Last-Event-ID", "in": "header", "required": false,
                "description": "Resume after this cursor; wins over `after`.",
                "schema": { "type": "string", "pattern": "^[0-9]+$" },
            }],
            "responses": responses(&[(200, json!({
                "description": "An endless `text/event-stream`.",
                "content": { "text/event-stream": { "schema": { "type": "string" } } },
            }))], &[400, 401, 404, 429]),
        },
    })
}

fn verifiers_path() -> Value {
    json!({
        "get": {
            "operationId": "listVerifiers",
            "summary": "The caller's tenant's criteria verifiers",
            "responses": responses(&[(200, body_response("The verifiers.", "verifier-list"))], &[401]),
        },
        "post": {
            "operationId": "registerVerifier",
            "summary": "Register a named criteria verifier; goals use it by naming it in `completion.verifierRef`",
            "requestBody": { "required": true, "content": json_content(schema_ref("verifier-registration")) },
            "responses": responses(&[(201, json!({
                "description": "The registered verifier.",
                "headers": {
                    "Location": { "description": "`/v1/host/sample/verifiers/{name}`.", "schema": { "type": "string" } },
                },
                "content": json_content(schema_ref("verifier-definition")),
            }))], &[400, 401, 409, 413, 415]),
        },
    })
}

fn verifier_path() -> Value {
    json!({
        "parameters": [{
            "name": "name", "in": "path", "required": true,
            "description": "The verifier's name. Another tenant's verifier is 404.",
            "schema": { "type": "string" },
        }],
        "get": {
            "operationId": "getVerifier",
            "summary": "One criteria verifier",
            "responses": responses(&[(200, body_response("The verifier.", "verifier-definition"))], &[401, 404]),
        },
    })
}

fn runs_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "post": {
            "operationId": "reportRun",
            "summary": "Report a run executed elsewhere: judged and recorded as one iteration of a manual goal",
            "requestBody": { "required": true, "content": json_content(schema_ref("run-report-request")) },
            "responses": responses(&[(200, goal_response("The run as recorded, its evaluation (null when it escalated) and the goal after it; a report sent again with the same runId answers the same run (header Idempotent-Replayed: true).", "run-report-response"))], &[400, 401, 404, 409, 413, 415, 429]),
        },
    })
}

fn continue_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "post": {
            "operationId": "continueGoal",
            "summary": "Conformance seam: run exactly one iteration now",
            "responses": responses(&[(200, goal_response("The goal after the iteration and its evaluation (null when the run escalated).", "continue-response"))], &[401, 404, 409, 429]),
        },
    })
}

/// A page of a goal's history: `{member}` of `schema`, with the `Link` to
/// the next page.
fn history_response(description: &str, schema: &str) -> Value {
    json!({
        "description": description,
        "headers": { "Link": {
            "description": "`<…>; rel=\"next\"`: where the next page is; only on a page of a paged list (`limit`) that has one after it.",
            "schema": { "type": "string" },
        } },
        "content": json_content(schema_ref(schema)),
    })
}

fn history_limit() -> Value {
    json!({
        "name": "limit", "in": "query", "required": false,
        "description": "Most items in this page (digits only, at least 1; above 1000 the page holds 1000), with a `Link` to the next; without it the whole list, written a page at a time. Anything else is 400.",
        "schema": { "type": "integer", "minimum": 1 },
    })
}

fn judge_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "put": {
            "operationId": "scriptJudge",
            "summary": "Conformance seam: the verifier the host judges this goal's runs by (a fixture or an http URL), kept beside the goal, never on it",
            "requestBody": { "required": true, "content": json_content(json!({
                "type": "object",
                "required": ["verifierRef"],
                "additionalProperties": false,
                "properties": { "verifierRef": { "type": "string", "minLength": 1 } },
            })) },
            "responses": responses(&[(204, json!({ "description": "Scripted; the goal, its `ETag` and `updatedAt` are unchanged." }))], &[400, 401, 404, 409, 422]),
        },
    })
}

fn events_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "get": {
            "operationId": "listEvents",
            "summary": "The goal's events, oldest first (content-free)",
            "parameters": [{
                "name": "after", "in": "query", "required": false,
                "description": "Only events with a larger sequence (the cursor a `next` link carries).",
                "schema": { "type": "integer", "minimum": 0 },
            }, history_limit()],
            "responses": responses(&[(200, history_response("`goal.evaluated` and `goal.closed` events.", "event-list"))], &[400, 401, 404]),
        },
    })
}

fn evaluations_path() -> Value {
    json!({
        "parameters": [goal_id_parameter()],
        "get": {
            "operationId": "listEvaluations",
            "summary": "Every recorded verdict, in iteration order",
            "parameters": [{
                "name": "after", "in": "query", "required": false,
                "description": "Only evaluations of a later iteration (the cursor a `next` link carries).",
                "schema": { "type": "integer", "minimum": 0 },
            }, history_limit()],
            "responses": responses(&[(200, history_response("The evaluations.", "evaluation-list"))], &[400, 401, 404]),
        },
    })
}

/// Every schema the API names, and every schema those reference, with
/// `$schema`/`$id` dropped and `$ref`s rewritten into `components/schemas`.
fn components() -> Value {
    let mut done = Map::new();
    let mut pending: Vec<String> = API_SCHEMAS
        .iter()
        .chain(super::attention::openapi::SCHEMAS)
        .map(|name| name.to_string())
        .collect();
    while let Some(name) = pending.pop() {
        if done.contains_key(&name) {
            continue;
        }
        let Some(mut schema) = goalpost_schemas::source(&name)
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
        else {
            // Leaves a dangling `$ref`, which the description test reports.
            continue;
        };
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
            object.remove("$id");
        }
        let mut referenced = BTreeSet::new();
        rewrite_refs(&name, &mut schema, &mut referenced);
        pending.extend(referenced);
        done.insert(name, schema);
    }
    let mut sorted: Vec<(String, Value)> = done.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Object(sorted.into_iter().collect())
}

fn rewrite_refs(owner: &str, value: &mut Value, referenced: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                match child {
                    Value::String(reference) if key == "$ref" => {
                        *reference = rewrite_ref(owner, reference, referenced);
                    }
                    _ => rewrite_refs(owner, child, referenced),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(owner, item, referenced);
            }
        }
        _ => {}
    }
}

/// `https://goalpost.dev/schemas/<name>.schema.json#/x` →
/// `#/components/schemas/<name>/x`; a local `#/x` in schema `owner` →
/// `#/components/schemas/<owner>/x`.
fn rewrite_ref(owner: &str, reference: &str, referenced: &mut BTreeSet<String>) -> String {
    if let Some(rest) = reference.strip_prefix(goalpost_schemas::ID_PREFIX) {
        let (file, fragment) = rest.split_once('#').unwrap_or((rest, ""));
        if let Some(name) = file.strip_suffix(".schema.json") {
            referenced.insert(name.to_string());
            return format!("{COMPONENT_PREFIX}{name}{fragment}");
        }
    } else if let Some(fragment) = reference.strip_prefix('#') {
        return format!("{COMPONENT_PREFIX}{owner}{fragment}");
    }
    reference.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, child) in object {
                    match child {
                        Value::String(text) if key == "$ref" => out.push(text.clone()),
                        _ => refs(child, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| refs(item, out)),
            _ => {}
        }
    }

    /// The documented pattern admits exactly what the host parses, so a
    /// client generating ids from the description never builds the
    /// stream's path (`…/goals/events`) as a goal's.
    #[test]
    fn the_goal_id_pattern_is_what_the_host_parses() {
        let schema = json!({ "type": "string", "pattern": GOAL_ID_PATTERN });
        let validator = jsonschema::validator_for(&schema).expect("a valid pattern");
        let minted = crate::domain::GoalId::generate();
        for text in [
            minted.as_str(),
            "events",
            "goal-",
            "goal-01A21FD5-E711-72DB-B1DC-9261A1B50473",
            "goal-01a21fd5e71172dbb1dc9261a1b50473",
            "goal-01a21fd5-e711-72db-b1dc-9261a1b50473",
            "goal-01a21fd5-e711-72db-b1dc-9261a1b50473x",
        ] {
            assert_eq!(
                validator.is_valid(&json!(text)),
                crate::domain::GoalId::parse(text).is_some(),
                "{text}"
            );
        }
    }

    #[test]
    fn every_ref_resolves_inside_the_document() {
        for (seams, scripted_judge) in [(false, false), (true, false), (true, true)] {
            let document = document(seams, scripted_judge);
            let mut found = Vec::new();
            refs(&document, &mut found);
            assert!(found.len() > 20, "too few refs: {found:?}");
            for reference in found {
                let pointer = reference
                    .strip_prefix('#')
                    .unwrap_or_else(|| panic!("{reference} leaves the document"));
                assert!(
                    document.pointer(pointer).is_some(),
                    "{reference} resolves to nothing"
                );
            }
        }
    }

    #[test]
    fn embedded_schemas_lose_their_ids_and_pull_in_what_they_reference() {
        let document = document(true, true);
        let schemas = document["components"]["schemas"]
            .as_object()
            .expect("schemas");
        for name in [
            "goal-evaluated",
            "goal-closed",
            "event-envelope",
            "evaluation",
        ] {
            assert!(schemas.contains_key(name), "{name} missing");
        }
        for (name, schema) in schemas {
            assert!(schema.get("$id").is_none(), "{name} keeps its $id");
            assert!(schema.get("$schema").is_none(), "{name} keeps $schema");
        }
        assert!(
            !schemas.contains_key("scenario"),
            "suite-only schemas stay out"
        );
    }

    #[test]
    fn refs_are_rewritten() {
        let mut found = BTreeSet::new();
        assert_eq!(
            rewrite_ref(
                "create-request",
                "https://goalpost.dev/schemas/goal.schema.json#/properties/bounds",
                &mut found
            ),
            "#/components/schemas/goal/properties/bounds"
        );
        assert_eq!(
            rewrite_ref("evaluation", "#/$defs/failureClass", &mut found),
            "#/components/schemas/evaluation/$defs/failureClass"
        );
        assert_eq!(
            rewrite_ref("x", "https://elsewhere.example/s.json", &mut found),
            "https://elsewhere.example/s.json"
        );
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec!["goal"]);
    }

    #[test]
    fn every_link_names_a_described_operation() {
        for (seams, scripted_judge) in [(false, false), (true, false), (true, true)] {
            let document = document(seams, scripted_judge);
            let mut operations = BTreeSet::new();
            for item in document["paths"].as_object().expect("paths").values() {
                for operation in item.as_object().expect("path item").values() {
                    if let Some(id) = operation.get("operationId").and_then(Value::as_str) {
                        operations.insert(id.to_string());
                    }
                }
            }
            let links = document["paths"][GOALS_BASE]["post"]["responses"]["201"]["links"]
                .as_object()
                .expect("links");
            assert_eq!(
                links.len(),
                9 + usize::from(seams) + usize::from(scripted_judge)
            );
            for link in links.values() {
                let target = link["operationId"].as_str().expect("operationId");
                assert!(operations.contains(target), "{target} is not described");
            }
        }
    }

    #[test]
    fn seam_paths_only_with_seams() {
        let continue_path = format!("{GOALS_BASE}/{{id}}/continue");
        assert!(document(true, false)["paths"].get(&continue_path).is_some());
        assert!(document(false, false)["paths"]
            .get(&continue_path)
            .is_none());
        let judge_path = format!("{GOALS_BASE}/{{id}}/judge");
        assert!(document(true, true)["paths"].get(&judge_path).is_some());
        assert!(document(true, false)["paths"].get(&judge_path).is_none());
        assert!(document(false, true)["paths"].get(&judge_path).is_none());
        // Events, evaluations, the escalation and the stream are host API.
        for path in [
            format!("{GOALS_BASE}/{{id}}/events"),
            format!("{GOALS_BASE}/{{id}}/evaluations"),
            format!("{GOALS_BASE}/{{id}}/escalation"),
            EVENTS_STREAM_PATH.to_string(),
        ] {
            assert!(
                document(false, false)["paths"].get(&path).is_some(),
                "{path}"
            );
        }
    }
}
