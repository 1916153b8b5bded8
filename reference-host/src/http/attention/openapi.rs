//! The attention extension's part of `GET /openapi.json`: the same paths
//! the router has (`routes`), described with the attention schemas.

use serde_json::{json, Value};

use super::TENANT_BINDINGS;
use crate::http::openapi::parts::{
    body_response, goal_id_parameter, goal_response, json_content, responses,
};
use crate::http::GOALS_BASE;

/// The schemas the attention bodies name directly.
pub const SCHEMAS: &[&str] = &[
    "attention-binding",
    "attention-binding-list",
    "attention-closure",
    "attention-confirmation",
    "attention-continue-response",
    "attention-evidence",
    "attention-evidence-list",
    "attention-policy",
];

const SERVED: &str =
    " Served when discovery advertises `extensions.goalpost.attention`; 404 otherwise.";

fn binding_parameter() -> Value {
    json!({
        "name": "binding", "in": "path", "required": true,
        "description": "A binding id of the goal (`binding-<uuid>`).",
        "schema": { "type": "string" },
    })
}

fn binding_answer(description: &str, status: u16) -> Value {
    responses(
        &[(status, goal_response(description, "attention-binding"))],
        &[400, 401, 404, 409, 422],
    )
}

fn binding_transition(verb: &str, summary: &str, body: Option<Value>) -> Value {
    let mut post = json!({
        "operationId": format!("{verb}Binding"),
        "summary": format!("{summary}{SERVED}"),
        "responses": binding_answer("The binding after it.", 200),
    });
    if let Some(body) = body {
        post["requestBody"] = body;
    }
    json!({ "parameters": [goal_id_parameter(), binding_parameter()], "post": post })
}

/// `(path, path item)` for every attention route.
pub fn paths(seams: bool) -> Vec<(String, Value)> {
    let goal = format!("{GOALS_BASE}/{{id}}/attention");
    let binding = format!("{goal}/bindings/{{binding}}");
    let mut paths = vec![
        (
            TENANT_BINDINGS.to_string(),
            json!({ "get": {
                "operationId": "listTenantBindings",
                "summary": format!("Every binding of the tenant's goals; `goal`, `mode` and `status` filter.{SERVED}"),
                "parameters": [
                    { "name": "goal", "in": "query", "required": false, "schema": { "type": "string" } },
                    { "name": "mode", "in": "query", "required": false, "schema": { "type": "string" } },
                    { "name": "status", "in": "query", "required": false, "schema": { "type": "string" } },
                ],
                "responses": responses(&[(200, body_response("The bindings.", "attention-binding-list"))], &[400, 401]),
            } }),
        ),
        (
            format!("{goal}/policy"),
            json!({
                "parameters": [goal_id_parameter()],
                "get": {
                    "operationId": "getPolicy",
                    "summary": format!("The goal's completion policy (`verifier` until set) and revision.{SERVED}"),
                    "responses": responses(&[(200, body_response("The policy.", "attention-policy"))], &[401, 404]),
                },
                "put": {
                    "operationId": "putPolicy",
                    "summary": format!("Sets the completion policy: `verifier`, `host-confirmed`, `principal-confirmed`, `quorum` with `threshold`.{SERVED}"),
                    "requestBody": { "required": true, "content": json_content(json!({ "type": "object" })) },
                    "responses": responses(&[(200, goal_response("The policy set.", "attention-policy"))], &[400, 401, 404, 409, 422]),
                },
            }),
        ),
        (
            format!("{goal}/closure"),
            json!({
                "parameters": [goal_id_parameter()],
                "get": {
                    "operationId": "getClosure",
                    "summary": format!("Whether a request to close would be granted now, and what is missing.{SERVED}"),
                    "responses": responses(&[(200, body_response("The closure state.", "attention-closure"))], &[401, 404]),
                },
            }),
        ),
        (
            format!("{goal}/close"),
            json!({
                "parameters": [goal_id_parameter()],
                "post": {
                    "operationId": "requestClose",
                    "summary": format!("Asks to close the goal: the policy answers; granted, the goal is `satisfied`; refused, 409 `closure_refused` names what is missing and nothing changes.{SERVED}"),
                    "responses": responses(&[(200, goal_response("The closed goal.", "goal"))], &[401, 404, 409]),
                },
            }),
        ),
        (
            format!("{goal}/confirmations"),
            json!({
                "parameters": [goal_id_parameter()],
                "post": {
                    "operationId": "confirm",
                    "summary": format!("Confirmation evidence under the authority of the credential (host or principal, configured apart from tenant tokens); a tenant's token is 403 `authority_required`, and a body naming an authority is 400.{SERVED}"),
                    "requestBody": { "required": false, "content": json_content(json!({ "type": "object" })) },
                    "responses": responses(&[(201, goal_response("The confirmation.", "attention-confirmation"))], &[400, 401, 403, 404, 409]),
                },
            }),
        ),
        (
            format!("{goal}/evidence"),
            json!({
                "parameters": [goal_id_parameter()],
                "get": {
                    "operationId": "listEvidence",
                    "summary": format!("The evidence the goal's bindings added, oldest first.{SERVED}"),
                    "responses": responses(&[(200, body_response("The evidence.", "attention-evidence-list"))], &[401, 404]),
                },
            }),
        ),
        (
            format!("{goal}/events"),
            json!({
                "parameters": [goal_id_parameter()],
                "get": {
                    "operationId": "listAttentionEvents",
                    "summary": format!("The goal's attention events (binding changes, runs, evidence, verdicts, confirmations, closure requests), content-free, oldest first; its RFC 0097 events stay in `{{base}}/{{id}}/events`.{SERVED}"),
                    "responses": responses(&[(200, body_response("The attention events.", "event-list"))], &[401, 404]),
                },
            }),
        ),
        (
            format!("{goal}/evidence/{{evidence}}/resolve"),
            json!({
                "parameters": [goal_id_parameter(), {
                    "name": "evidence", "in": "path", "required": true, "schema": { "type": "string" },
                }],
                "post": {
                    "operationId": "resolveEvidence",
                    "summary": format!("Resolves evidence: blocking evidence then no longer holds closure.{SERVED}"),
                    "responses": responses(&[(200, goal_response("The evidence.", "attention-evidence"))], &[401, 404, 409]),
                },
            }),
        ),
        (
            format!("{goal}/bindings"),
            json!({
                "parameters": [goal_id_parameter()],
                "get": {
                    "operationId": "listBindings",
                    "summary": format!("The goal's bindings, in creation order.{SERVED}"),
                    "responses": responses(&[(200, body_response("The bindings.", "attention-binding-list"))], &[401, 404]),
                },
                "post": {
                    "operationId": "createBinding",
                    "summary": format!("Binds an agent: `{{mode, armRef}}`; a mode another live binding holds is 409 `mode_taken`.{SERVED}"),
                    "requestBody": { "required": true, "content": json_content(json!({ "type": "object" })) },
                    "responses": binding_answer("The new binding (with `Location`).", 201),
                },
            }),
        ),
        (
            binding.clone(),
            json!({
                "parameters": [goal_id_parameter(), binding_parameter()],
                "get": {
                    "operationId": "getBinding",
                    "summary": format!("One binding, read now.{SERVED}"),
                    "responses": responses(&[(200, body_response("The binding.", "attention-binding"))], &[401, 404]),
                },
            }),
        ),
        (
            format!("{binding}/pause"),
            binding_transition(
                "pause",
                "Pauses the binding, optionally `until` an instant; the goal is unchanged.",
                Some(
                    json!({ "required": false, "content": json_content(json!({ "type": "object" })) }),
                ),
            ),
        ),
        (
            format!("{binding}/resume"),
            binding_transition("resume", "Makes a paused binding active again.", None),
        ),
        (
            format!("{binding}/stop"),
            binding_transition("stop", "Ends the binding; its mode is free again.", None),
        ),
        (
            format!("{binding}/supersede"),
            json!({
                "parameters": [goal_id_parameter(), binding_parameter()],
                "post": {
                    "operationId": "supersedeBinding",
                    "summary": format!("Replaces the binding by a new one (`{{armRef, mode?}}`); the old one is `superseded` and never dispatched again.{SERVED}"),
                    "requestBody": { "required": true, "content": json_content(json!({ "type": "object" })) },
                    "responses": binding_answer("The replacement (with `Location`).", 201),
                },
            }),
        ),
    ];
    if seams {
        paths.push((
            format!("{binding}/continue"),
            json!({
                "parameters": [goal_id_parameter(), binding_parameter()],
                "post": {
                    "operationId": "continueBinding",
                    "summary": format!("Conformance seam: one run of the binding now.{SERVED}"),
                    "responses": responses(&[(200, goal_response("The run and the goal after it.", "attention-continue-response"))], &[401, 404, 409]),
                },
            }),
        ));
    }
    paths
}
