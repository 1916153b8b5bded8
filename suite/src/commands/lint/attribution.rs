//! Two rules over what a scenario's checks claim and what it creates:
//!
//! - `requirement-unproven`: every requirement a scenario names is proven
//!   by at least one of its checks. A step's `proves` (absent: every named
//!   requirement; `[]`: none, a setup step) covers its status and schema
//!   checks and every assertion without a `proves` of its own. A named
//!   requirement no check proves would always pass.
//! - `create-without-nonce`: every create body's objective carries
//!   `goalpost {nonce}`, the text by which a scenario finds its own goals
//!   in a list (isolation): a goal without it is invisible to its own
//!   scenario's list checks and may sit in every other scenario's tenant.

use std::collections::BTreeSet;

use serde_json::Value;

/// The text every created goal's objective carries.
pub const NONCE_MARK: &str = "goalpost {nonce}";

/// `(pointer, requirement)` for every named requirement no check proves.
pub fn unproven(scenario: &Value) -> Vec<(String, String)> {
    let named: Vec<&str> = scenario
        .get("requirements")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut proven: BTreeSet<&str> = BTreeSet::new();
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for step in steps {
        let Some(expect) = step.get("expect").and_then(Value::as_object) else {
            continue;
        };
        let step_proves = ids(step.get("proves")).unwrap_or_else(|| named.clone());
        if ["status", "schema", "schemas"]
            .iter()
            .any(|key| expect.contains_key(*key))
        {
            proven.extend(&step_proves);
        }
        for assertion in expect
            .get("assert")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            match ids(assertion.get("proves")) {
                Some(own) => proven.extend(own),
                None => proven.extend(&step_proves),
            }
        }
    }
    named
        .iter()
        .enumerate()
        .filter(|(_, id)| !proven.contains(*id))
        .map(|(index, id)| (format!("/requirements/{index}"), id.to_string()))
        .collect()
}

fn ids(value: Option<&Value>) -> Option<Vec<&str>> {
    value
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
}

/// Pointers of create-body objectives that lack [`NONCE_MARK`]. A create is
/// a POST to `{base}`; a body that is an array is checked element by
/// element; an objective that is not a string (a wrong-type refusal) is
/// left alone, since no host can store it as a goal's objective.
pub fn objectives_without_nonce(scenario: &Value) -> Vec<String> {
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut found = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let Some(request) = step.get("request") else {
            continue;
        };
        let is_create = request.get("method").and_then(Value::as_str) == Some("POST")
            && request
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|path| path == "{base}" || path.starts_with("{base}?"));
        if !is_create {
            continue;
        }
        let at = format!("/steps/{index}/request/body");
        let bodies: Vec<(String, &Value)> = match request.get("body") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| (format!("{at}/{i}"), item))
                .collect(),
            Some(body) => vec![(at, body)],
            None => Vec::new(),
        };
        for (pointer, body) in bodies {
            if let Some(Value::String(objective)) = body.get("objective") {
                if !objective.contains(NONCE_MARK) {
                    found.push(format!("{pointer}/objective"));
                }
            }
        }
    }
    found
}
