//! Observations: the suite's own counts next to the host's claims, declared
//! by a scenario (`observations`) and filled from its variables when it
//! ends, for the report.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::assertion::json_eq;
use crate::model::ObservationSpec;
use crate::template::Vars;

/// One filled observation of one scenario run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub what: String,
    /// The requirement it speaks to; all of the scenario's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// What the suite saw itself; null when the scenario stopped before it
    /// was measured.
    pub suite: Value,
    /// What the host claims; null when it was not read, absent when the
    /// observation has no host side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Value>,
    /// Whether both sides were measured and are equal; null otherwise.
    pub agree: Option<bool>,
}

/// An observation as a requirement's report entry shows it: which scenario
/// measured it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementObservation {
    pub scenario: String,
    pub what: String,
    pub suite: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Value>,
    pub agree: Option<bool>,
}

/// The observations that speak to requirement `id`, from its scenarios in
/// order: those naming it and those naming no requirement.
pub fn for_requirement<'a>(
    id: &str,
    scenarios: &[String],
    observations_of: impl Fn(&str) -> Option<&'a [Observation]>,
) -> Vec<RequirementObservation> {
    scenarios
        .iter()
        .flat_map(|scenario| {
            observations_of(scenario)
                .unwrap_or_default()
                .iter()
                .filter(|o| o.requirement.as_deref().is_none_or(|r| r == id))
                .map(|o| RequirementObservation {
                    scenario: scenario.clone(),
                    what: o.what.clone(),
                    suite: o.suite.clone(),
                    host: o.host.clone(),
                    agree: o.agree,
                })
        })
        .collect()
}

/// Renders each side with the scenario's final variables. A side whose
/// variable was never captured (the scenario failed first) is null rather
/// than an error: the report shows what was measured.
pub fn fill(specs: &[ObservationSpec], vars: &Vars) -> Vec<Observation> {
    specs
        .iter()
        .map(|spec| {
            let render = |value: &Value| vars.render_value(value).unwrap_or(Value::Null);
            let suite = render(&spec.suite);
            let host = spec.host.as_ref().map(render);
            let agree = match &host {
                Some(host) if !suite.is_null() && !host.is_null() => Some(json_eq(&suite, host)),
                _ => None,
            };
            Observation {
                what: spec.what.clone(),
                requirement: spec.requirement.clone(),
                suite,
                host,
                agree,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(suite: Value, host: Option<Value>) -> ObservationSpec {
        ObservationSpec {
            what: "runs dispatched".to_string(),
            requirement: None,
            suite,
            host,
        }
    }

    #[test]
    fn sides_are_rendered_and_compared() {
        let mut vars = Vars::new("/b", "n", "observed::x");
        vars.set("armCalls", json!(3));
        vars.set("iterations", json!(3.0));
        vars.set("evals", json!(2));
        let filled = fill(
            &[
                spec(json!("{armCalls}"), Some(json!("{iterations}"))),
                spec(json!("{armCalls}"), Some(json!("{evals}"))),
                spec(json!("{armCalls} runs"), None),
                spec(json!("{missing}"), Some(json!("{evals}"))),
            ],
            &vars,
        );
        assert_eq!(filled[0].suite, json!(3));
        assert_eq!(filled[0].agree, Some(true));
        assert_eq!(filled[1].agree, Some(false));
        assert_eq!(filled[2].suite, json!("3 runs"));
        assert_eq!(filled[2].host, None);
        assert_eq!(filled[2].agree, None);
        assert_eq!(filled[3].suite, Value::Null);
        assert_eq!(filled[3].agree, None);
        let mut named = filled.clone();
        named[1].requirement = Some("observed.b".to_string());
        let for_a = for_requirement("observed.a", &["observed::x".to_string()], |name| {
            (name == "observed::x").then_some(named.as_slice())
        });
        assert_eq!(for_a.len(), 3);
        assert!(for_a.iter().all(|o| o.scenario == "observed::x"));
        let for_b = for_requirement("observed.b", &["observed::x".to_string()], |_| {
            Some(named.as_slice())
        });
        assert_eq!(for_b.len(), 4);
        let json = serde_json::to_value(&filled[2]).unwrap();
        assert_eq!(
            json,
            json!({"what": "runs dispatched", "suite": "3 runs", "agree": null})
        );
    }
}
