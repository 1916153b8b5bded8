//! The run report and its writers. Every format is a sibling module with the
//! same `write(&RunReport, impl io::Write)` function, so adding one (HTML,
//! SARIF) touches nothing else.

pub mod badge;
pub mod compare;
pub mod console;
pub mod escape;
pub mod html;
pub mod json;
pub mod junit;
pub mod legend;
pub mod markdown;
pub mod read;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::Scenario;
use crate::run::ledger::{Disposition, Ledger, ProfileSummary, RequirementResult};
use crate::run::outcome::observation::{Observation, RequirementObservation};
use crate::run::outcome::{DispositionKind, FailedStep, NotTaken, Outcome, OutcomeKind};
use crate::run::scope::{Scope, Status};

pub const SUITE_NAME: &str = "goalpost";
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RunReport {
    pub suite: SuiteInfo,
    /// The version of the profile (PROFILE.md, scenarios/requirements.json's
    /// `profileVersion`) the host was judged by; absent when the scenarios
    /// folder names none (an ad-hoc folder, not a published profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_version: Option<String>,
    pub host: HostInfo,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    pub profiles: BTreeMap<String, ProfileReport>,
    pub requirements: Vec<RequirementReport>,
    pub scenarios: Vec<ScenarioReport>,
    /// The skip reasons that occur in this report, each with what it means
    /// and the PROFILE.md section that says how to act on it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub legend: BTreeMap<String, legend::LegendEntry>,
    /// The order trials ran in, when it was not the catalog's (`--shuffle`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<RunOrder>,
    /// HTML and Markdown: where PROFILE.md is, relative to the report folder,
    /// so section links open from disk; `None` when the run could not find
    /// it (the sections are then named, not linked).
    #[serde(skip)]
    pub profile_href: Option<String>,
}

/// `--shuffle`: how to replay the run's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOrder {
    /// Always true when present: the trials ran shuffled.
    pub shuffled: bool,
    /// `--seed` that replays the order (at most 2^53 − 1).
    pub seed: u64,
}

impl RunOrder {
    pub fn of(order: crate::shuffle::TrialOrder) -> Option<RunOrder> {
        order.seed().map(|seed| RunOrder {
            shuffled: true,
            seed,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostInfo {
    pub url: String,
    pub discovery_sha256: String,
    pub bundled: bool,
}

/// A profile's verdict, its scope and its requirements counted by
/// disposition. `certified`: the minimum scope ran, at least one MUST
/// requirement applies to the host, and every one that applies passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProfileReport {
    pub certified: bool,
    /// `certified`, `not-certified`, `not-attempted` (its minimum scope was
    /// not met) or `opted-out`. `None` only in a report written before
    /// statuses existed; read it through [`ProfileReport::status`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Why it is not certified (what the minimum scope needs, or which MUST
    /// requirements did not pass); null when certified or opted out.
    pub reason: Option<String>,
    /// What the verdict covers: judge, modes, the features its
    /// requirements name that the host offers, and those it does not.
    pub scope: Scope,
    pub pass: u32,
    pub fail: u32,
    /// SHOULD requirements not met: counted apart, never block.
    pub advisory: u32,
    #[serde(rename = "notReached")]
    pub not_reached: u32,
    pub skip: u32,
    /// Requirements that do not apply to this host: never block, never a
    /// pass.
    #[serde(rename = "notApplicable")]
    pub not_applicable: u32,
    pub error: u32,
    /// Console only: whether the run selected the profile.
    #[serde(skip)]
    pub selected: bool,
}

impl ProfileReport {
    /// Its requirements counted by disposition, each with the words the
    /// reports name it by, in the order every report lists them.
    pub fn counts(&self) -> [(&'static str, u32); 7] {
        [
            ("pass", self.pass),
            ("fail", self.fail),
            ("advisory", self.advisory),
            ("not reached", self.not_reached),
            ("skip", self.skip),
            ("not applicable", self.not_applicable),
            ("error", self.error),
        ]
    }

    /// Requirements whose checks ran (everything but skips and
    /// requirements that do not apply).
    pub fn ran(&self) -> u32 {
        self.pass + self.fail + self.advisory + self.not_reached + self.error
    }

    /// The verdict; for a report written before statuses existed, what its
    /// `certified` says.
    pub fn status(&self) -> Status {
        match self.status {
            Some(status) => status,
            None if self.certified => Status::Certified,
            None => Status::NotCertified,
        }
    }

    /// The verdict in words, with the advisories of a certified profile:
    /// `certified, 2 advisory`, `not attempted`.
    pub fn verdict_words(&self) -> String {
        match self.status() {
            Status::Certified if self.advisory > 0 => {
                format!("certified, {} advisory", self.advisory)
            }
            status => status.to_string(),
        }
    }

    /// The verdict with what it covers, or what it needs, in one line:
    /// `certified — judge verifier; modes manual, schedule; not offered:
    /// heartbeat`, `not attempted — needs 2+ endpoints of one deployment
    /// (--host once per replica)`.
    pub fn verdict_line(&self) -> String {
        let words = self.verdict_words();
        match (self.status(), &self.reason) {
            (Status::Certified, _) if !self.scope.is_empty() => {
                format!("{words} — {}", self.scope)
            }
            (Status::NotAttempted | Status::NotCertified, Some(reason)) => {
                format!("{words} — {reason}")
            }
            _ => words,
        }
    }
}

impl From<ProfileSummary> for ProfileReport {
    fn from(summary: ProfileSummary) -> Self {
        ProfileReport {
            certified: summary.certified,
            status: Some(summary.status),
            reason: summary.reason,
            scope: summary.scope,
            pass: summary.pass,
            fail: summary.fail,
            advisory: summary.advisory,
            not_reached: summary.not_reached,
            skip: summary.skip,
            not_applicable: summary.not_applicable,
            error: summary.error,
            selected: summary.selected,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequirementReport {
    pub id: String,
    pub profile: String,
    /// `MUST` (blocks certification) or `SHOULD` (never blocks).
    pub level: String,
    pub clause: String,
    /// `PROFILE.md#<id>`: the section that states the rule, its level, its
    /// source and what a host may choose.
    pub section: String,
    pub text: String,
    pub disposition: DispositionKind,
    /// Why it was skipped, or does not apply (a `legend` key): a skip
    /// reason, or the capability token of a `not-applicable` requirement
    /// that the host does not advertise; null otherwise.
    pub reason: Option<String>,
    pub scenarios: Vec<String>,
    /// Why it did not pass: for fail, error, advisory and not-reached, what
    /// the ledger recorded (which check, or which earlier failure kept it
    /// from being reached), else the message of the first scenario (in name
    /// order) with that outcome.
    pub message: Option<String>,
    /// The check that failed it (fail, advisory) or errored on it (error):
    /// where to look in which scenario. Absent when there is none (pass,
    /// skip, not-reached: its message names what blocked it).
    #[serde(rename = "failedCheck", skip_serializing_if = "Option::is_none")]
    pub failed_check: Option<FailedCheck>,
    /// HTML: that check's step with its exchange.
    #[serde(skip)]
    pub failed_step: Option<Box<FailedStep>>,
    /// Whether a mutant of the reference host that breaks this requirement
    /// is caught by its scenarios (see `mutation`; the kill matrix proves
    /// it). `None` only in reports built without the registry.
    #[serde(rename = "mutationVerified")]
    pub mutation_verified: Option<bool>,
    /// The mutants that prove it can fail, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mutants: Vec<String>,
    /// The suite's own counts next to the host's claims, from the scenarios
    /// that name it (observed profile).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<RequirementObservation>,
}

/// Where the check that decided a requirement is: its scenario, step and
/// the claim's place in the scenario file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedCheck {
    /// Trial name of the scenario.
    pub scenario: String,
    /// 1-based step of that scenario.
    pub step: usize,
    /// The step's name.
    pub name: String,
    /// JSON pointer of the claim in the scenario file; null when the step
    /// errored rather than a claim failing.
    pub at: Option<String>,
}

impl RequirementReport {
    fn new(result: &RequirementResult, ledger: &Ledger) -> Self {
        let requirement = &result.requirement;
        let deciding = crate::run::ledger::deciding(result, ledger);
        let failed_step: Option<Box<FailedStep>> = deciding
            .as_ref()
            .and_then(|(_, outcome)| outcome.failed_step().cloned().map(Box::new));
        let failed_check = deciding.as_ref().and_then(|(scenario, _)| {
            failed_step.as_deref().map(|step| FailedCheck {
                scenario: scenario.to_string(),
                step: step.step,
                name: step.name.clone(),
                at: step.check.as_ref().map(|check| check.at.clone()),
            })
        });
        let wanted = result.disposition.kind();
        let message = match result.disposition {
            _ if result.message.is_some() => result.message.clone(),
            Disposition::Fail | Disposition::Error => result.scenarios.iter().find_map(|name| {
                match ledger.get(name).map(|r| &r.outcome) {
                    Some(outcome) if DispositionKind::from(outcome.kind()) == wanted => {
                        outcome.message()
                    }
                    None if wanted == DispositionKind::Error => Some(format!("{name} did not run")),
                    _ => None,
                }
            }),
            Disposition::Advisory | Disposition::NotReached => result
                .scenarios
                .iter()
                .find_map(|name| ledger.get(name).and_then(|r| r.outcome.message())),
            Disposition::Pass | Disposition::Skip(_) | Disposition::NotApplicable(_) => None,
        };
        RequirementReport {
            id: requirement.id.clone(),
            profile: requirement.profile.clone(),
            level: requirement.level.clone(),
            clause: requirement.clause.clone(),
            section: legend::requirement_section(&requirement.id),
            text: requirement.text.clone(),
            disposition: wanted,
            reason: result.disposition.reason_keyword(),
            scenarios: result.scenarios.clone(),
            message,
            failed_check,
            failed_step,
            mutation_verified: Some(crate::mutation::verified(&requirement.id)),
            mutants: crate::mutation::mutants_for(&requirement.id),
            observations: crate::run::outcome::observation::for_requirement(
                &requirement.id,
                &result.scenarios,
                |name| ledger.get(name).map(|r| r.observations.as_slice()),
            ),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScenarioReport {
    pub name: String,
    pub outcome: OutcomeKind,
    /// Why it was skipped; null unless skipped.
    pub reason: Option<String>,
    pub checks: u32,
    pub duration_ms: u64,
    /// Why it failed or errored; null otherwise.
    pub message: Option<String>,
    /// The step that failed or errored, with its exchange (credentials
    /// redacted); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<Box<FailedStep>>,
    /// The suite's own counts next to the host's claims (observed profile).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Observation>,
    /// Conditional steps that did not run, because the step they depend
    /// on answered otherwise; absent when every step ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_taken: Vec<NotTaken>,
    /// HTML and Markdown: the scenario's title.
    #[serde(skip)]
    pub title: String,
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
    /// `profileVersion` of scenarios/requirements.json, if it has one.
    pub profile_version: Option<String>,
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
                    outcome: outcome.kind(),
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
                    failed_step: result.and_then(|r| r.failed_step.clone()),
                    observations: result.map(|r| r.observations.clone()).unwrap_or_default(),
                    not_taken: result.map(|r| r.not_taken.clone()).unwrap_or_default(),
                    title: scenario.title.clone(),
                    profile: scenario.profile.clone(),
                    quiet_ms: result.map_or(0, |r| millis(r.quiet)),
                }
            })
            .collect();
        let mut report = RunReport {
            suite: SuiteInfo {
                name: SUITE_NAME.to_string(),
                version: SUITE_VERSION.to_string(),
            },
            profile_version: input.profile_version,
            host: input.host,
            started_at: input.started_at,
            finished_at: input.finished_at,
            duration_ms: input.duration_ms,
            profiles: input
                .profiles
                .iter()
                .map(|(name, summary)| (name.clone(), ProfileReport::from(summary.clone())))
                .collect(),
            requirements: input
                .requirements
                .iter()
                .map(|result| RequirementReport::new(result, input.ledger))
                .collect(),
            scenarios,
            legend: BTreeMap::new(),
            order: None,
            profile_href: None,
        };
        report.refresh_legend();
        report
    }

    /// Recomputes `legend` from the skip reasons the requirements and
    /// scenarios carry (after a caller changed them).
    pub fn refresh_legend(&mut self) {
        let reasons = self
            .requirements
            .iter()
            .filter_map(|r| r.reason.as_deref())
            .chain(self.scenarios.iter().filter_map(|s| s.reason.as_deref()));
        self.legend = legend::skip_legend(reasons);
    }

    /// The link to a PROFILE.md section (`PROFILE.md#anchor`) as the HTML
    /// and Markdown reports write it, or `None` when PROFILE.md was not found.
    pub fn section_href(&self, section: &str) -> Option<String> {
        let anchor = section
            .strip_prefix(legend::PROFILE_DOCUMENT)
            .unwrap_or(section);
        self.profile_href
            .as_ref()
            .map(|href| format!("{href}{anchor}"))
    }

    /// Scenarios whose trial ran (neither skipped nor left unrecorded).
    pub fn scenarios_run(&self) -> usize {
        self.scenarios
            .iter()
            .filter(|s| s.outcome != OutcomeKind::Skip)
            .count()
    }

    /// Profiles the run selected.
    pub fn selected_profiles(&self) -> BTreeSet<&str> {
        self.profiles
            .iter()
            .filter(|(_, p)| p.selected)
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Every selected profile the run could attempt is certified (and at
    /// least one was attempted). A profile whose minimum scope the run did
    /// not meet (`not attempted`: the `cluster` profile against one
    /// endpoint) is left out: it says nothing against the others.
    pub fn all_selected_certified(&self) -> bool {
        let mut attempted = self
            .profiles
            .values()
            .filter(|p| p.selected && p.status() != Status::NotAttempted)
            .peekable();
        attempted.peek().is_some() && attempted.all(|p| p.certified)
    }

    /// Whether any scenario failed or errored (exit code 1). Advisories
    /// never count: a SHOULD requirement does not fail a run; a not-reached
    /// requirement does (something blocking failed before it).
    pub fn any_failed_or_errored(&self) -> bool {
        self.scenarios.iter().any(|s| s.outcome.is_failure())
            || self
                .requirements
                .iter()
                .any(|r| r.disposition.is_blocking_failure())
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
pub(crate) mod sample {
    //! A small report with every outcome and disposition, for writer tests.
    use super::*;

    /// A profile with these counts and nothing else set.
    pub fn profile(
        certified: bool,
        pass: u32,
        fail: u32,
        skip: u32,
        error: u32,
        selected: bool,
    ) -> ProfileReport {
        ProfileReport {
            certified,
            pass,
            fail,
            skip,
            error,
            selected,
            ..ProfileReport::default()
        }
    }

    /// What a writer writes for `report`, as text.
    pub fn written(
        write: impl FnOnce(&RunReport, &mut Vec<u8>) -> std::io::Result<()>,
        report: &RunReport,
    ) -> String {
        let mut out = Vec::new();
        write(report, &mut out).expect("writing to memory");
        String::from_utf8(out).expect("a writer writes UTF-8")
    }

    pub fn report() -> RunReport {
        let scenario = |name: &str, outcome: OutcomeKind, message: Option<&str>| ScenarioReport {
            name: name.to_string(),
            outcome,
            reason: (outcome == OutcomeKind::Skip).then(|| "seam-absent".to_string()),
            checks: if outcome == OutcomeKind::Skip { 0 } else { 3 },
            duration_ms: 12,
            message: message
                .filter(|_| outcome != OutcomeKind::Skip)
                .map(str::to_string),
            profile: name.split("::").next().unwrap_or_default().to_string(),
            ..ScenarioReport::default()
        };
        let requirement = |id: &str,
                           disposition: DispositionKind,
                           reason: Option<&str>,
                           scenario: &str| RequirementReport {
            id: id.to_string(),
            profile: id.split('.').next().unwrap_or_default().to_string(),
            level: if disposition == DispositionKind::Advisory {
                "SHOULD"
            } else {
                "MUST"
            }
            .to_string(),
            clause: "§2 Bounds required".to_string(),
            section: legend::requirement_section(id),
            text: "A create with no bounds is refused.".to_string(),
            disposition,
            reason: reason.map(str::to_string),
            scenarios: vec![scenario.to_string()],
            ..RequirementReport::default()
        };
        let mut report = RunReport {
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
                requirement(
                    "core.create.ok",
                    DispositionKind::Pass,
                    None,
                    "core::create",
                ),
                requirement(
                    "core.create.bounds-required",
                    DispositionKind::Fail,
                    None,
                    "core::bounds",
                ),
                requirement(
                    "core.discovery.shape",
                    DispositionKind::Error,
                    None,
                    "core::discovery",
                ),
                requirement(
                    "behavior.pause.stops",
                    DispositionKind::Skip,
                    Some("seam-absent"),
                    "behavior::pause",
                ),
                requirement(
                    "core.create.location",
                    DispositionKind::Advisory,
                    None,
                    "core::create",
                ),
                requirement(
                    "core.lifecycle.abandon",
                    DispositionKind::NotReached,
                    None,
                    "core::bounds",
                ),
                requirement(
                    "behavior.heartbeat.fires",
                    DispositionKind::NotApplicable,
                    Some("mode:heartbeat"),
                    "behavior::pause",
                ),
            ],
            scenarios: vec![
                scenario("behavior::pause", OutcomeKind::Skip, Some("seam-absent")),
                scenario(
                    "core::bounds",
                    OutcomeKind::Fail,
                    Some("core/bounds.json step 1 \"create\" <&> failed\n  actual: \"x\""),
                ),
                scenario("core::create", OutcomeKind::Pass, None),
                scenario(
                    "core::discovery",
                    OutcomeKind::Error,
                    Some("GET http://h/.well-known/openwop: transport failure"),
                ),
            ],
            legend: BTreeMap::new(),
            order: None,
            profile_version: Some("1.0".to_string()),
            profile_href: Some("../../PROFILE.md".to_string()),
        };
        report.scenarios[1].failed_step = Some(Box::new(
            crate::run::outcome::exchange::sample::failed_step(),
        ));
        report.scenarios[2].not_taken = vec![NotTaken {
            step: 3,
            name: "refused: the goal is as it was".to_string(),
            when_step: "PATCH the objective".to_string(),
            answered: Some(200),
        }];
        let scope = |not_offered: &[&str]| Scope {
            judge: Some("verifier".to_string()),
            modes: vec!["manual".to_string(), "schedule".to_string()],
            offered: Vec::new(),
            not_offered: not_offered.iter().map(|t| t.to_string()).collect(),
        };
        let core = report.profiles.get_mut("core").expect("core");
        (core.advisory, core.not_reached) = (1, 1);
        core.status = Some(Status::NotCertified);
        core.reason =
            Some("3 MUST requirements did not pass: 1 error, 1 fail, 1 not-reached".to_string());
        core.scope = scope(&[]);
        let behavior = report.profiles.get_mut("behavior").expect("behavior");
        behavior.status = Some(Status::NotCertified);
        behavior.reason = Some("1 MUST requirement did not pass: 1 skip (seam-absent)".to_string());
        behavior.not_applicable = 1;
        behavior.scope = scope(&["mode:heartbeat"]);
        let strict = report.profiles.get_mut("strict").expect("strict");
        strict.status = Some(Status::OptedOut);
        report.requirements[6].message = Some(
            "not applicable: the host does not advertise the `heartbeat` continuation mode (`mode:heartbeat`)"
                .to_string(),
        );
        report.requirements[4].message =
            Some("core/create.json step 1 \"create\": header location is absent".to_string());
        let step = crate::run::outcome::exchange::sample::failed_step();
        report.requirements[4].failed_check = Some(FailedCheck {
            scenario: "core::create".to_string(),
            step: step.step,
            name: step.name.clone(),
            at: step.check.as_ref().map(|c| c.at.clone()),
        });
        report.requirements[4].failed_step = Some(Box::new(step));
        report.requirements[5].message = Some(
            "not reached: step 1 \"create\" failed on core.create.bounds-required".to_string(),
        );
        report.refresh_legend();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every profile certified except `cluster`, with `status`.
    fn certified_but(status: Status) -> RunReport {
        let mut report = sample::report();
        for profile in report.profiles.values_mut() {
            (profile.certified, profile.selected) = (true, true);
            profile.status = Some(Status::Certified);
        }
        report.profiles.insert(
            "cluster".to_string(),
            ProfileReport {
                selected: true,
                status: Some(status),
                skip: 1,
                ..ProfileReport::default()
            },
        );
        report
    }

    #[test]
    fn a_profile_the_run_could_not_attempt_does_not_count_against_the_others() {
        assert!(certified_but(Status::NotAttempted).all_selected_certified());
        assert!(!certified_but(Status::NotCertified).all_selected_certified());
        let mut none = certified_but(Status::NotAttempted);
        for profile in none.profiles.values_mut() {
            profile.status = Some(Status::NotAttempted);
            profile.certified = false;
        }
        assert!(
            !none.all_selected_certified(),
            "a run that attempted nothing certifies nothing"
        );
    }

    #[test]
    fn a_verdict_line_says_what_it_covers_or_what_it_needs() {
        let mut profile = ProfileReport {
            certified: true,
            status: Some(Status::Certified),
            advisory: 1,
            scope: Scope {
                judge: Some("verifier".to_string()),
                modes: vec!["manual".to_string()],
                offered: vec!["reported-runs".to_string()],
                not_offered: vec!["mode:heartbeat".to_string(), "egress-policy".to_string()],
            },
            ..ProfileReport::default()
        };
        assert_eq!(
            profile.verdict_line(),
            "certified, 1 advisory — judge verifier; mode manual; reported runs; not offered: heartbeat, egress policy"
        );
        profile.certified = false;
        profile.status = Some(Status::NotAttempted);
        profile.reason =
            Some("needs 2+ endpoints of one deployment (--host once per replica)".to_string());
        assert_eq!(
            profile.verdict_line(),
            "not attempted — needs 2+ endpoints of one deployment (--host once per replica)"
        );
        // A report from before statuses reads its verdict from `certified`.
        let old = ProfileReport {
            certified: true,
            ..ProfileReport::default()
        };
        assert_eq!(old.status(), Status::Certified);
        assert_eq!(ProfileReport::default().status(), Status::NotCertified);
    }
}
