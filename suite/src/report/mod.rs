//! The run report and its writers. Every format is a sibling module with the
//! same `write(&RunReport, impl io::Write)` function, so adding one (HTML,
//! SARIF) touches nothing else.

pub mod console;
pub mod json;
pub mod junit;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;

use crate::ledger::{Disposition, Ledger, Outcome, ProfileSummary, RequirementResult};
use crate::model::Scenario;

pub const SUITE_NAME: &str = "goalpost";
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub suite: SuiteInfo,
    pub host: HostInfo,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    pub profiles: BTreeMap<String, ProfileReport>,
    pub requirements: Vec<RequirementReport>,
    pub scenarios: Vec<ScenarioReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuiteInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostInfo {
    pub url: String,
    pub discovery_sha256: String,
    pub bundled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProfileReport {
    pub certified: bool,
    pub pass: u32,
    pub fail: u32,
    pub skip: u32,
    pub error: u32,
    /// Console only: whether the run selected the profile.
    #[serde(skip)]
    pub selected: bool,
}

impl From<ProfileSummary> for ProfileReport {
    fn from(summary: ProfileSummary) -> Self {
        ProfileReport {
            certified: summary.certified,
            pass: summary.pass,
            fail: summary.fail,
            skip: summary.skip,
            error: summary.error,
            selected: summary.selected,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequirementReport {
    pub id: String,
    pub profile: String,
    pub level: String,
    pub clause: String,
    pub text: String,
    pub disposition: String,
    pub reason: Option<String>,
    pub scenarios: Vec<String>,
    /// Why it failed or errored: the message of the first scenario (in name
    /// order) with that outcome.
    pub message: Option<String>,
}

impl RequirementReport {
    fn new(result: &RequirementResult, ledger: &Ledger) -> Self {
        let requirement = &result.requirement;
        let wanted = result.disposition.keyword();
        let message = match result.disposition {
            Disposition::Fail | Disposition::Error => result.scenarios.iter().find_map(|name| {
                match ledger.get(name).map(|r| &r.outcome) {
                    Some(outcome) if outcome.keyword() == wanted => outcome.message(),
                    None if wanted == "error" => Some(format!("{name} did not run")),
                    _ => None,
                }
            }),
            Disposition::Pass | Disposition::Skip(_) => None,
        };
        RequirementReport {
            id: requirement.id.clone(),
            profile: requirement.profile.clone(),
            level: requirement.level.clone(),
            clause: requirement.clause.clone(),
            text: requirement.text.clone(),
            disposition: wanted.to_string(),
            reason: result.disposition.reason().map(|r| r.to_string()),
            scenarios: result.scenarios.clone(),
            message,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioReport {
    pub name: String,
    pub outcome: String,
    /// Why it was skipped; null unless skipped.
    pub reason: Option<String>,
    pub checks: u32,
    pub duration_ms: u64,
    /// Why it failed or errored; null otherwise.
    pub message: Option<String>,
    /// Console and JUnit: the profile the scenario belongs to.
    #[serde(skip)]
    pub profile: String,
    /// Console only: time spent in `quietMs` steps.
    #[serde(skip)]
    pub quiet_ms: u64,
}

impl ScenarioReport {
    pub fn duration(&self) -> Duration {
        Duration::from_millis(self.duration_ms)
    }
}

/// What the report is built from.
pub struct ReportInput<'a> {
    pub host: HostInfo,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    pub scenarios: &'a [Scenario],
    pub ledger: &'a Ledger,
    pub requirements: &'a [RequirementResult],
    pub profiles: &'a BTreeMap<String, ProfileSummary>,
}

impl RunReport {
    pub fn build(input: ReportInput<'_>) -> RunReport {
        let scenarios = input
            .scenarios
            .iter()
            .map(|scenario| {
                let result = input.ledger.get(&scenario.name);
                let outcome = result.map(|r| r.outcome.clone()).unwrap_or_else(|| {
                    Outcome::Error("the scenario recorded no outcome (it did not run)".to_string())
                });
                ScenarioReport {
                    name: scenario.name.clone(),
                    outcome: outcome.keyword().to_string(),
                    reason: match &outcome {
                        Outcome::Skip(reason) => Some(reason.to_string()),
                        _ => None,
                    },
                    checks: result.map_or(0, |r| r.checks),
                    duration_ms: result.map_or(0, |r| millis(r.duration)),
                    message: match &outcome {
                        Outcome::Fail(message) | Outcome::Error(message) => Some(message.clone()),
                        Outcome::Pass | Outcome::Skip(_) => None,
                    },
                    profile: scenario.profile.clone(),
                    quiet_ms: result.map_or(0, |r| millis(r.quiet)),
                }
            })
            .collect();
        RunReport {
            suite: SuiteInfo {
                name: SUITE_NAME.to_string(),
                version: SUITE_VERSION.to_string(),
            },
            host: input.host,
            started_at: input.started_at,
            finished_at: input.finished_at,
            duration_ms: input.duration_ms,
            profiles: input
                .profiles
                .iter()
                .map(|(name, summary)| (name.clone(), ProfileReport::from(*summary)))
                .collect(),
            requirements: input
                .requirements
                .iter()
                .map(|result| RequirementReport::new(result, input.ledger))
                .collect(),
            scenarios,
        }
    }

    /// Profiles the run selected.
    pub fn selected_profiles(&self) -> BTreeSet<&str> {
        self.profiles
            .iter()
            .filter(|(_, p)| p.selected)
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Every selected profile is certified (and at least one was selected).
    pub fn all_selected_certified(&self) -> bool {
        let mut selected = self.profiles.values().filter(|p| p.selected).peekable();
        selected.peek().is_some() && selected.all(|p| p.certified)
    }

    /// Whether any scenario failed or errored (exit code 1).
    pub fn any_failed_or_errored(&self) -> bool {
        self.scenarios
            .iter()
            .any(|s| s.outcome == "fail" || s.outcome == "error")
            || self
                .requirements
                .iter()
                .any(|r| r.disposition == "fail" || r.disposition == "error")
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
pub(crate) mod sample {
    //! A small report with every outcome and disposition, for writer tests.
    use super::*;

    pub fn report() -> RunReport {
        let scenario = |name: &str, outcome: &str, message: Option<&str>| ScenarioReport {
            name: name.to_string(),
            outcome: outcome.to_string(),
            reason: (outcome == "skip").then(|| "seam-absent".to_string()),
            checks: if outcome == "skip" { 0 } else { 3 },
            duration_ms: 12,
            message: message.filter(|_| outcome != "skip").map(str::to_string),
            profile: name.split("::").next().unwrap_or_default().to_string(),
            quiet_ms: 0,
        };
        let requirement =
            |id: &str, disposition: &str, reason: Option<&str>, scenario: &str| RequirementReport {
                id: id.to_string(),
                profile: id.split('.').next().unwrap_or_default().to_string(),
                level: "MUST".to_string(),
                clause: "§2 Bounds required".to_string(),
                text: "A create with no bounds is refused.".to_string(),
                disposition: disposition.to_string(),
                reason: reason.map(str::to_string),
                scenarios: vec![scenario.to_string()],
                message: None,
            };
        let profile = |certified, pass, fail, skip, error, selected| ProfileReport {
            certified,
            pass,
            fail,
            skip,
            error,
            selected,
        };
        RunReport {
            suite: SuiteInfo {
                name: SUITE_NAME.to_string(),
                version: SUITE_VERSION.to_string(),
            },
            host: HostInfo {
                url: "http://127.0.0.1:40123".to_string(),
                discovery_sha256: "ab".repeat(32),
                bundled: true,
            },
            started_at: "2026-06-13T00:00:00.000Z".to_string(),
            finished_at: "2026-06-13T00:00:01.250Z".to_string(),
            duration_ms: 1250,
            profiles: BTreeMap::from([
                ("core".to_string(), profile(false, 1, 1, 0, 1, true)),
                ("behavior".to_string(), profile(false, 0, 0, 1, 0, true)),
                ("strict".to_string(), profile(false, 0, 0, 0, 0, false)),
            ]),
            requirements: vec![
                requirement("core.create.ok", "pass", None, "core::create"),
                requirement("core.create.bounds-required", "fail", None, "core::bounds"),
                requirement("core.discovery.shape", "error", None, "core::discovery"),
                requirement(
                    "behavior.pause.stops",
                    "skip",
                    Some("seam-absent"),
                    "behavior::pause",
                ),
            ],
            scenarios: vec![
                scenario("behavior::pause", "skip", Some("seam-absent")),
                scenario(
                    "core::bounds",
                    "fail",
                    Some("core/bounds.json step 1 \"create\" <&> failed\n  actual: \"x\""),
                ),
                scenario("core::create", "pass", None),
                scenario(
                    "core::discovery",
                    "error",
                    Some("GET http://h/.well-known/openwop: transport failure"),
                ),
            ],
        }
    }
}
