//! Create bodies a lenient host rewrites, goals it stores as claimed, and
//! the reads (list filter, events) it gets wrong.

use serde_json::{json, Map, Number, Value};

use crate::mutants::{Mutant, Switch};
use goalpost_host::domain::request::MAX_OBJECTIVE_BYTES;
use goalpost_host::domain::{Goal, GoalState, LastVerdict, Objective, RunId, Tenant};

const TOP: [&str; 4] = ["objective", "completion", "continuation", "bounds"];
const COMPLETION: [&str; 2] = ["check", "verifierRef"];
const CONTINUATION: [&str; 2] = ["mode", "armRef"];
const BOUNDS: [&str; 3] = ["maxLoopIterations", "runTimeoutMs", "maxCostUsd"];

pub(super) fn retain_keys(value: &mut Value, keys: &[&str]) {
    if let Some(object) = value.as_object_mut() {
        object.retain(|key, _| keys.contains(&key.as_str()));
    }
}

pub(super) fn bounds_mut(body: &mut Value) -> Option<&mut Map<String, Value>> {
    body.get_mut("bounds").and_then(Value::as_object_mut)
}

/// The create body the parser gets: lenient hosts rewrite it first.
pub(crate) fn create_body(switch: &Switch, body: &Value) -> Value {
    let mut body = body.clone();
    let Some(top) = body.as_object_mut() else {
        return body;
    };
    match switch.active() {
        Some(Mutant::CreateClaimsKept) => {
            top.remove("state");
            top.remove("progress");
            if let Some(completion) = top.get_mut("completion").and_then(Value::as_object_mut) {
                completion.remove("lastVerdict");
            }
        }
        Some(Mutant::OwnerFromBody) => {
            top.remove("owner");
        }
        Some(Mutant::DefaultBounds) => {
            let empty = match top.get("bounds") {
                None | Some(Value::Null) => true,
                Some(Value::Object(bounds)) => bounds.is_empty(),
                Some(_) => false,
            };
            if empty {
                top.insert("bounds".into(), json!({ "maxLoopIterations": 100 }));
            }
        }
        Some(Mutant::NegativeBoundsClamped) => {
            if let Some(bounds) = bounds_mut(&mut body) {
                clamp_bounds(bounds);
            }
        }
        Some(Mutant::UnknownKeysDropped) => {
            retain_keys(&mut body, &TOP);
            if let Some(top) = body.as_object_mut() {
                for (key, keys) in [
                    ("completion", &COMPLETION[..]),
                    ("continuation", &CONTINUATION[..]),
                    ("bounds", &BOUNDS[..]),
                ] {
                    if let Some(value) = top.get_mut(key) {
                        retain_keys(value, keys);
                    }
                }
            }
        }
        Some(Mutant::MixedBoundTypesDropped) => {
            if let Some(bounds) = bounds_mut(&mut body) {
                // Each bound read on its own, and one that is not a number
                // skipped, as long as some bound is left.
                if bounds.values().any(Value::is_number) {
                    bounds.retain(|_, value| value.is_number());
                }
            }
        }
        Some(Mutant::BodyLimitMissing) => {
            let long = top
                .get("objective")
                .and_then(Value::as_str)
                .is_some_and(|objective| objective.len() > MAX_OBJECTIVE_BYTES);
            if long {
                // Parsed with a short stand-in; `created` puts it back.
                top.insert("objective".into(), Value::from("long"));
            }
        }
        Some(Mutant::NumericStringsCoerced) => {
            if let Some(bounds) = bounds_mut(&mut body) {
                for value in bounds.values_mut() {
                    let number = value
                        .as_str()
                        .and_then(|text| text.trim().parse::<u64>().ok());
                    if let Some(number) = number {
                        *value = Value::from(number);
                    }
                }
            }
        }
        _ => {}
    }
    body
}

pub(super) fn clamp_bounds(bounds: &mut Map<String, Value>) {
    if let Some(value) = bounds.get_mut("maxLoopIterations") {
        if let Some(number) = value.as_f64() {
            // Truncation is the bug being modelled.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let whole = number.max(1.0).floor() as u64;
            *value = Value::from(whole);
        }
    }
    for key in ["maxCostUsd", "runTimeoutMs"] {
        if let Some(value) = bounds.get_mut(key) {
            if value.as_f64().is_some_and(|number| number < 0.0) {
                *value = Value::Number(Number::from(0));
            }
        }
    }
}

/// The goal about to be stored, given the body as the client sent it.
pub(crate) fn created(switch: &Switch, claims: &Value, mut goal: Goal) -> Goal {
    match switch.active() {
        Some(Mutant::OwnerFromBody) => {
            let claimed = claims
                .pointer("/owner/tenant")
                .and_then(Value::as_str)
                .and_then(Tenant::parse);
            if let Some(tenant) = claimed {
                goal.owner = tenant;
            }
        }
        Some(Mutant::CreateClaimsKept) => {
            if let Some(state) = claims
                .get("state")
                .and_then(Value::as_str)
                .and_then(GoalState::parse)
            {
                goal.state = state;
            }
            if let Some(iterations) = claims
                .pointer("/progress/iterations")
                .and_then(Value::as_u64)
            {
                goal.progress.iterations = iterations;
            }
            if let Some(verdict) = claims.pointer("/completion/lastVerdict") {
                goal.completion.last_verdict = claimed_verdict(verdict);
            }
        }
        Some(Mutant::ListLeaksTenants) => {
            switch.memory().tenants.insert(goal.owner.clone());
        }
        Some(Mutant::BodyLimitMissing) => {
            if let Some(objective) = claims.get("objective").and_then(Value::as_str) {
                goal.objective = Objective::new(objective.to_string());
            }
        }
        _ => {}
    }
    goal
}

/// A claimed verdict, with a run id of our own when the claimed one is not
/// one this host could have minted.
pub(super) fn claimed_verdict(verdict: &Value) -> Option<LastVerdict> {
    Some(LastVerdict {
        satisfied: verdict.get("satisfied")?.as_bool()?,
        confidence: verdict.get("confidence")?.as_f64()?,
        run_id: verdict
            .get("runId")
            .and_then(Value::as_str)
            .and_then(RunId::parse)
            .unwrap_or_else(RunId::generate),
    })
}

pub(crate) fn list_filter(switch: &Switch, state: Option<GoalState>) -> Option<GoalState> {
    if switch.is(Mutant::ListFilterIgnored) {
        None
    } else {
        state
    }
}

/// `(after to read from storage, after to answer)`.
pub(crate) fn events_after(switch: &Switch, after: u64) -> (u64, u64) {
    match switch.active() {
        Some(Mutant::AfterCursorIgnored) => (0, 0),
        Some(Mutant::EventsSequencePerType) => (0, after),
        _ => (after, after),
    }
}

pub(crate) fn events(
    switch: &Switch,
    mut events: Vec<goalpost_host::domain::Event>,
    after: u64,
) -> Vec<goalpost_host::domain::Event> {
    if switch.is(Mutant::EventsSequencePerType) {
        let mut counters = std::collections::HashMap::new();
        for event in &mut events {
            let counter = counters.entry(event.payload.kind()).or_insert(0);
            *counter += 1;
            event.sequence = *counter;
        }
        events.retain(|event| event.sequence > after);
    }
    events
}
