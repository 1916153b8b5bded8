//! The loader's part for the observed profile: the scenario's `mock` block,
//! `mockLog` steps and `observations`, with the cross-checks the schema
//! cannot make.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{invalid, no_headers, LoadError};
use crate::model::{
    Action, Capture, Expect, MockScript, MockStep, MockWindow, Needs, ObservationSpec, Repeat,
    Scenario,
};
use crate::template::{names_in_str, names_in_value};

/// Variables a scenario with a `mock` block has from its first step on.
pub const MOCK_VARIABLES: &[&str] = &["mock.base", "mock.verifier", "mock.arm", "mock.attention"];
/// The seam the mock exercises; a scenario using it must need it.
const WEBHOOKS: &str = "webhooks";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawMockLog {
    goal_id: Option<String>,
    since_ms: Option<Value>,
    grace_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawObservation {
    what: String,
    requirement: Option<String>,
    suite: Value,
    host: Option<Value>,
}

impl RawObservation {
    pub(super) fn into_spec(self) -> ObservationSpec {
        ObservationSpec {
            what: self.what,
            requirement: self.requirement,
            suite: self.suite,
            host: self.host,
        }
    }
}

pub(super) fn parse_mock(
    path: &Path,
    block: &Value,
    needs: &Needs,
) -> Result<MockScript, LoadError> {
    if !needs.seams.iter().any(|seam| seam == WEBHOOKS) {
        return Err(invalid(
            path,
            "/mock",
            "a scenario with a `mock` block exercises seam `webhooks` but `needs.seams` does not list it",
        ));
    }
    MockScript::parse(block)
        .map_err(|problem| invalid(path, format!("/mock{}", problem.pointer), problem.message))
}

/// A whole-variable template (`"{since}"`) or a number of ms ≥ 0.
fn is_ms_operand(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.as_f64().is_some_and(|ms| ms >= 0.0),
        Value::String(text) => {
            let names = names_in_str(text);
            names.len() == 1 && *text == format!("{{{}}}", names[0])
        }
        _ => false,
    }
}

pub(super) fn mock_step(
    path: &Path,
    pointer: &str,
    raw: RawMockLog,
    expect: Expect,
    capture: BTreeMap<String, Capture>,
    repeat: Repeat,
) -> Result<Action, LoadError> {
    if !expect.status.is_empty() || expect.schema.is_some() {
        return Err(invalid(
            path,
            format!("{pointer}/expect"),
            "a `mockLog` step sends nothing: its expect takes only `assert`",
        ));
    }
    no_headers(
        path,
        pointer,
        (&expect, &capture),
        (
            "the mock log has no headers: assert with `pointer`",
            "the mock log has no headers: capture with `pointer` or `clock`",
        ),
    )?;
    if let Some(since) = &raw.since_ms {
        if !is_ms_operand(since) {
            return Err(invalid(
                path,
                format!("{pointer}/mockLog/sinceMs"),
                "sinceMs is milliseconds ≥ 0 or exactly one `{variable}`",
            ));
        }
    }
    if raw.grace_ms.is_some() && raw.since_ms.is_none() {
        return Err(invalid(
            path,
            format!("{pointer}/mockLog/graceMs"),
            "graceMs only makes sense with sinceMs",
        ));
    }
    Ok(Action::MockLog(Box::new(MockStep {
        window: MockWindow {
            goal_id: raw.goal_id,
            since_ms: raw.since_ms,
            grace_ms: raw.grace_ms.unwrap_or(0),
        },
        expect,
        capture,
        repeat,
    })))
}

/// `mockLog` steps need a `mock` block; observations name the scenario's
/// own requirements.
pub(super) fn check_mock_use(scenario: &Scenario) -> Result<(), LoadError> {
    if scenario.mock.is_none() {
        if let Some(step) = scenario
            .steps
            .iter()
            .find(|step| matches!(step.action, Action::MockLog(_)))
        {
            return Err(invalid(
                &scenario.path,
                format!("{}/mockLog", step.pointer),
                "a `mockLog` step needs the scenario's `mock` block (it may be `{}`)",
            ));
        }
    }
    for (index, observation) in scenario.observations.iter().enumerate() {
        if let Some(requirement) = &observation.requirement {
            if !scenario.requirements.contains(requirement) {
                return Err(invalid(
                    &scenario.path,
                    format!("/observations/{index}/requirement"),
                    format!("`{requirement}` is not one of this scenario's requirements"),
                ));
            }
        }
    }
    Ok(())
}

/// Script bodies are rendered when the scenario starts, so they may use
/// only the built-ins and the mock's own variables.
pub(super) fn check_script_variables(
    scenario: &Scenario,
    known: &BTreeSet<String>,
) -> Result<(), LoadError> {
    let Some(script) = &scenario.mock else {
        return Ok(());
    };
    let names = script
        .templated_values()
        .into_iter()
        .flat_map(names_in_value)
        .chain(
            script
                .templated_strings()
                .into_iter()
                .flat_map(names_in_str),
        );
    for name in names {
        if !known.contains(name) {
            return Err(invalid(
                &scenario.path,
                "/mock",
                format!("unknown variable `{{{name}}}` (mock answers are rendered when the scenario starts: only built-ins)"),
            ));
        }
    }
    Ok(())
}

pub(super) fn window_names<'a>(pointer: &str, window: &'a MockWindow) -> Vec<(String, &'a str)> {
    let at = format!("{pointer}/mockLog");
    let mut used: Vec<(String, &str)> = Vec::new();
    if let Some(goal) = &window.goal_id {
        used.extend(
            names_in_str(goal)
                .into_iter()
                .map(|n| (format!("{at}/goalId"), n)),
        );
    }
    if let Some(since) = &window.since_ms {
        used.extend(
            names_in_value(since)
                .into_iter()
                .map(|n| (format!("{at}/sinceMs"), n)),
        );
    }
    used
}

/// Observations are rendered when the scenario ends: any variable a step
/// captures may appear (an uncaptured one renders as null).
pub(super) fn check_observation_variables(
    scenario: &Scenario,
    known: &BTreeSet<String>,
) -> Result<(), LoadError> {
    for (index, observation) in scenario.observations.iter().enumerate() {
        let sides = [
            ("suite", Some(&observation.suite)),
            ("host", observation.host.as_ref()),
        ];
        for (side, value) in sides {
            let Some(value) = value else { continue };
            if let Some(name) = names_in_value(value)
                .into_iter()
                .find(|name| !known.contains(*name))
            {
                return Err(invalid(
                    &scenario.path,
                    format!("/observations/{index}/{side}"),
                    format!("unknown variable `{{{name}}}` (no step captures it)"),
                ));
            }
        }
    }
    Ok(())
}
