//! The pieces every path description is built of: references into the
//! document's components, JSON bodies, and the error answers each path
//! lists. The host's paths and the attention extension's share them.

use serde_json::{json, Map, Value};

/// Where the document's schemas live.
pub(in crate::http) const COMPONENT_PREFIX: &str = "#/components/schemas/";

pub(in crate::http) fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("{COMPONENT_PREFIX}{name}") })
}

pub(in crate::http) fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

pub(in crate::http) fn body_response(description: &str, schema: &str) -> Value {
    json!({ "description": description, "content": json_content(schema_ref(schema)) })
}

/// A goal answer carries the goal's `ETag`.
pub(in crate::http) fn goal_response(description: &str, schema: &str) -> Value {
    json!({
        "description": description,
        "headers": { "ETag": { "$ref": "#/components/headers/ETag" } },
        "content": json_content(schema_ref(schema)),
    })
}

fn error_response(status: u16) -> Value {
    let description = match status {
        400 => "`malformed_json` (the body is not JSON) or `invalid_request` (wrong types, unknown keys, out-of-range values, a bad parameter or header); `details` names the field.",
        401 => "`unauthorized`: no known bearer token.",
        404 => "`not_found`: no such goal for this tenant (another tenant's goal included).",
        409 => "`goal_terminal` (the goal is satisfied, abandoned or bound-exceeded), `goal_escalated`, `goal_paused`, `verifier_exists` (the name is taken), `idempotency_conflict` (the `Idempotency-Key` came with another body), `runs_not_accepted` (a run reported to a goal that is not `manual`), `run_conflict` (a `runId` reported before with another body) or `judge_not_host` (a judge scripted for a goal its verifier judges); nothing changed.",
        412 => "`precondition_failed`: `If-Match` does not match the current `ETag`.",
        413 => "`payload_too_large`: the body is over 64 KiB.",
        415 => "`unsupported_media_type`: a body that is not JSON.",
        422 => "`bounds_required`, `judge_owned_field`, `immutable_field`, `objective_too_long` (over 8 KiB of UTF-8), `unsupported_continuation`, `unsupported_judge`, `fixtures_disabled`, `unknown_verifier` or `unknown_arm`.",
        429 => "`quota_exceeded`: the tenant's open goals, or open `schedule`/`heartbeat` goals, are at the host's limit; `details` names the quota and its limit. `rate_limited` (a `continue` or a reported run): the tenant started as much outbound work as it may this second; `Retry-After` and `details.retryAfterSeconds` say when to try again. `too_many_failures`: too many unknown tokens from this client.",
        _ => "Any other refusal: 405 `method_not_allowed`, 408 `request_timeout`, 500 `internal_error`, 503 `service_unavailable`.",
    };
    body_response(description, "error")
}

/// `(status, response)` for the success, then the error statuses, then a
/// `default` envelope for everything else.
pub(in crate::http) fn responses(success: &[(u16, Value)], errors: &[u16]) -> Value {
    let mut map = Map::new();
    for (status, response) in success {
        map.insert(status.to_string(), response.clone());
    }
    for status in errors {
        map.insert(status.to_string(), error_response(*status));
    }
    map.insert("default".into(), error_response(0));
    Value::Object(map)
}

pub(in crate::http) fn goal_id_parameter() -> Value {
    json!({ "$ref": "#/components/parameters/goalId" })
}

pub(in crate::http) fn if_match_parameter() -> Value {
    json!({ "$ref": "#/components/parameters/ifMatch" })
}
