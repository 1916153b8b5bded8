//! The disposition ledger: scenario outcomes in, one disposition per
//! requirement and a verdict per profile out.
//!
//! Pure: trials record into it (behind a mutex owned by the runner) and the
//! report is computed from it once every trial has finished.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Capability, Requirement, Scenario};
use crate::run::outcome::{
    DispositionKind, Outcome, RequirementOutcome, ScenarioResult, SkipReason,
};
use crate::run::scope::{describe_unmet, Offer, Scope, Status};

/// The disposition of one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Pass,
    /// A MUST requirement the host broke.
    Fail,
    /// A SHOULD requirement the host did not meet: reported, counted apart,
    /// never blocks certification.
    Advisory,
    /// Its checks never ran because an earlier check (of another
    /// requirement, or a setup check) failed: neither proven nor broken.
    NotReached,
    Skip(SkipReason),
    /// It names a feature the host does not advertise (the first such):
    /// it does not apply. Never blocks certification, never a pass.
    NotApplicable(Capability),
    Error,
}

impl Disposition {
    pub fn kind(self) -> DispositionKind {
        match self {
            Disposition::Pass => DispositionKind::Pass,
            Disposition::Fail => DispositionKind::Fail,
            Disposition::Advisory => DispositionKind::Advisory,
            Disposition::NotReached => DispositionKind::NotReached,
            Disposition::Skip(_) => DispositionKind::Skip,
            Disposition::NotApplicable(_) => DispositionKind::NotApplicable,
            Disposition::Error => DispositionKind::Error,
        }
    }

    pub fn keyword(self) -> &'static str {
        self.kind().as_str()
    }

    pub fn reason(self) -> Option<SkipReason> {
        match self {
            Disposition::Skip(reason) => Some(reason),
            _ => None,
        }
    }

    /// report.json's `reason`: a skip's reason keyword, or the capability
    /// token a not-applicable requirement names and the host lacks.
    pub fn reason_keyword(self) -> Option<String> {
        match self {
            Disposition::Skip(reason) => Some(reason.to_string()),
            Disposition::NotApplicable(capability) => Some(capability.token()),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementResult {
    pub requirement: Requirement,
    pub disposition: Disposition,
    /// Names of the scenarios that name it, sorted.
    pub scenarios: Vec<String>,
    /// Why it did not pass, when the ledger knows better than the first
    /// failing scenario's message (an advisory's reason, "not reached: step
    /// 3 ... failed on ..."). `None`: reports fall back to that message.
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileSummary {
    pub selected: bool,
    pub certified: bool,
    /// Certified, not certified, not attempted (minimum scope unmet) or
    /// opted out.
    pub status: Status,
    /// Why it is not certified: what the minimum scope needs, or which
    /// MUST requirements did not pass. `None` when certified or opted out.
    pub reason: Option<String>,
    /// What the verdict covers.
    pub scope: Scope,
    pub pass: u32,
    pub fail: u32,
    /// SHOULD requirements not met (never block certification).
    pub advisory: u32,
    pub not_reached: u32,
    pub skip: u32,
    /// Requirements that do not apply to this host (never block).
    pub not_applicable: u32,
    pub error: u32,
}

/// Scenario outcomes as they arrive, keyed by scenario name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    results: BTreeMap<String, ScenarioResult>,
}

impl Ledger {
    /// Records an outcome; a later record for the same scenario replaces the
    /// earlier one (a skip recorded when trials are built is replaced if the
    /// harness runs the trial anyway, e.g. with `--include-ignored`).
    pub fn record(&mut self, result: ScenarioResult) {
        self.results.insert(result.name.clone(), result);
    }

    pub fn get(&self, name: &str) -> Option<&ScenarioResult> {
        self.results.get(name)
    }

    /// Results in name order.
    pub fn results(&self) -> impl Iterator<Item = &ScenarioResult> {
        self.results.values()
    }

    /// Whether any scenario failed or errored.
    pub fn any_failed_or_errored(&self) -> bool {
        self.results
            .values()
            .any(|r| matches!(r.outcome, Outcome::Fail(_) | Outcome::Error(_)))
    }
}

/// One disposition per requirement, over what each scenario naming it says
/// about it (its per-requirement outcome, or its whole outcome when it
/// recorded none): any fail → fail; else any error → error; else any
/// not-reached → not-reached; else any advisory → advisory; else all
/// skipped → skip with the first reason (scenarios in name order); else
/// pass. A SHOULD requirement never ends fail: its failure is advisory. A
/// named scenario with no recorded outcome counts as an error: a
/// requirement is never passed by a scenario that did not run. `message`
/// is the first (in scenario name order) message of the deciding kind.
///
/// A requirement naming a feature the host does not advertise is
/// `not-applicable` whatever its scenarios said (the loader holds every
/// scenario naming it to need that feature, so none of them ran: they all
/// skipped for want of it). An applicable requirement whose scenarios all
/// skipped `not-advertised` keeps that skip, and its message says the
/// suite could not judge it on this host's choices: a gap, never hidden.
pub fn dispose(
    requirements: &[Requirement],
    scenarios: &[Scenario],
    ledger: &Ledger,
    offer: &Offer,
) -> Vec<RequirementResult> {
    each_applicable(requirements, scenarios, offer, |requirement, names| {
        let verdicts: Vec<Said> = names
            .iter()
            .map(|name| match ledger.get(name) {
                None => Said::Error(format!("{name} did not run")),
                Some(result) => match result.requirement(&requirement.id) {
                    None => match result.outcome {
                        Outcome::Skip(reason) => Said::Skip(reason),
                        _ => Said::Error(format!("{name} recorded nothing")),
                    },
                    Some(outcome) => said(requirement, outcome),
                },
            })
            .collect();
        merge(&verdicts)
    })
}

/// Each requirement's result: `not-applicable` where it names a feature the
/// host does not offer, else what `decide` makes of the scenarios naming
/// it. A `not-advertised` skip's message always says why the suite could
/// not judge it, whatever `decide` said.
fn each_applicable(
    requirements: &[Requirement],
    scenarios: &[Scenario],
    offer: &Offer,
    decide: impl Fn(&Requirement, &[String]) -> (Disposition, Option<String>),
) -> Vec<RequirementResult> {
    let naming = naming(scenarios);
    requirements
        .iter()
        .map(|requirement| {
            let (names, missing) = named(requirement, &naming, offer);
            if let Some(missing) = missing {
                return not_applicable(requirement, names, missing);
            }
            let (disposition, mut message) = decide(requirement, &names);
            if disposition == Disposition::Skip(SkipReason::NotAdvertised) {
                message = Some(unjudged(scenarios, &names, offer));
            }
            RequirementResult {
                requirement: requirement.clone(),
                disposition,
                scenarios: names,
                message,
            }
        })
        .collect()
}

/// Scenario names by the requirement they name, each set sorted.
/// The scenarios naming `requirement`, with the feature it names that the
/// host does not offer, if any (then it does not apply).
fn named(
    requirement: &Requirement,
    naming: &BTreeMap<&str, BTreeSet<&str>>,
    offer: &Offer,
) -> (Vec<String>, Option<Capability>) {
    let names: Vec<String> = naming
        .get(requirement.id.as_str())
        .map(|names| names.iter().map(|n| n.to_string()).collect())
        .unwrap_or_default();
    (names, offer.missing_feature(requirement))
}

fn naming(scenarios: &[Scenario]) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut naming: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for scenario in scenarios {
        for id in &scenario.requirements {
            naming
                .entry(id.as_str())
                .or_default()
                .insert(scenario.name.as_str());
        }
    }
    naming
}

fn not_applicable(
    requirement: &Requirement,
    scenarios: Vec<String>,
    missing: Capability,
) -> RequirementResult {
    RequirementResult {
        requirement: requirement.clone(),
        disposition: Disposition::NotApplicable(missing),
        scenarios,
        message: Some(format!(
            "not applicable: the host does not advertise {}",
            missing.describe()
        )),
    }
}

/// Why an applicable requirement was not judged: every scenario of it needs
/// a feature this host does not advertise. The requirement still applies,
/// so the skip blocks; the message names what the scenarios needed.
fn unjudged(scenarios: &[Scenario], names: &[String], offer: &Offer) -> String {
    let needed: BTreeSet<String> = scenarios
        .iter()
        .filter(|scenario| names.contains(&scenario.name))
        .flat_map(|scenario| unmet_features(scenario, offer))
        .collect();
    let needed: Vec<String> = needed.into_iter().collect();
    let what = if needed.is_empty() {
        "more than this host advertises".to_string()
    } else {
        format!(
            "something this host does not advertise ({})",
            crate::model::capability::join_and(&needed)
        )
    };
    format!(
        "not judged on this host's choices: the requirement applies to the host, but each of its scenarios needs {what}; the suite could not judge it here, so it blocks certification"
    )
}

/// The features a scenario needs that the host does not advertise, in
/// words.
fn unmet_features(scenario: &Scenario, offer: &Offer) -> Vec<String> {
    let needs = &scenario.needs;
    let caps = &offer.capabilities;
    let mut unmet: Vec<String> = needs
        .continuation
        .iter()
        .filter(|mode| !caps.continuation.contains(*mode))
        .map(|mode| format!("mode `{mode}`"))
        .collect();
    if let Some(judge) = needs
        .judge
        .as_ref()
        .filter(|j| caps.judge.as_ref() != Some(j))
    {
        unmet.push(format!("judge `{judge}`"));
    }
    if needs
        .requires_bounds
        .is_some_and(|wanted| wanted != caps.requires_bounds)
    {
        unmet.push(format!(
            "`requiresBounds: {}`",
            needs.requires_bounds.unwrap_or(true)
        ));
    }
    if needs.egress_policy && !caps.egress_denies_internal {
        unmet.push("the egress policy".to_string());
    }
    if needs.reported_runs && !offer.has(Capability::ReportedRuns) {
        unmet.push("reported runs".to_string());
    }
    unmet
}

/// What a run would dispose before it runs: each requirement
/// `not-applicable` when it names a feature the host lacks, `skip` when
/// every scenario naming it would be gated out (`gated`: the run's gate,
/// with the run's selection and options; the first reason in scenario name
/// order, as [`dispose`] merges), else `pass`: what a host that holds every
/// rule it is judged on would end with. `goalpost doctor` predicts a
/// verdict with it and [`summarize`], the same verdict rules a run applies.
pub fn predict(
    requirements: &[Requirement],
    scenarios: &[Scenario],
    offer: &Offer,
    gated: impl Fn(&Scenario) -> Option<SkipReason>,
) -> Vec<RequirementResult> {
    each_applicable(requirements, scenarios, offer, |_, names| {
        let gated: Vec<Option<SkipReason>> = scenarios
            .iter()
            .filter(|scenario| names.contains(&scenario.name))
            .map(&gated)
            .collect();
        let disposition = match gated.iter().find_map(|reason| *reason) {
            Some(first) if gated.iter().all(Option::is_some) => Disposition::Skip(first),
            _ if gated.is_empty() => Disposition::Error,
            _ => Disposition::Pass,
        };
        (disposition, None)
    })
}

/// What one scenario said about one requirement at the requirement's
/// level: the one place a SHOULD requirement's failure becomes an advisory
/// (never blocking certification). Scenarios report a failed check as a
/// failure of what it proves, whatever its level.
fn said(requirement: &Requirement, outcome: RequirementOutcome) -> Said {
    match outcome {
        RequirementOutcome::Pass => Said::Pass,
        RequirementOutcome::Fail(why) if is_blocking(requirement) => Said::Fail(why.message),
        RequirementOutcome::Fail(why) => Said::Advisory(why.message),
        RequirementOutcome::NotReached(reason) => Said::NotReached(reason),
        RequirementOutcome::Error(why) => Said::Error(why.message),
    }
}

/// The disposition one scenario's outcome for `requirement` counts as.
pub fn counts_as(requirement: &Requirement, outcome: &RequirementOutcome) -> DispositionKind {
    said(requirement, outcome.clone()).kind()
}

/// What one scenario said about one requirement, level already applied.
enum Said {
    Pass,
    Fail(String),
    Advisory(String),
    NotReached(String),
    Skip(SkipReason),
    Error(String),
}

impl Said {
    fn kind(&self) -> DispositionKind {
        match self {
            Said::Pass => DispositionKind::Pass,
            Said::Fail(_) => DispositionKind::Fail,
            Said::Advisory(_) => DispositionKind::Advisory,
            Said::NotReached(_) => DispositionKind::NotReached,
            Said::Skip(_) => DispositionKind::Skip,
            Said::Error(_) => DispositionKind::Error,
        }
    }
}

fn merge(verdicts: &[Said]) -> (Disposition, Option<String>) {
    let first = |wanted: fn(&Said) -> Option<&String>| verdicts.iter().find_map(wanted).cloned();
    if let Some(message) = first(|s| match s {
        Said::Fail(m) => Some(m),
        _ => None,
    }) {
        (Disposition::Fail, Some(message))
    } else if verdicts.is_empty() {
        (
            Disposition::Error,
            Some("no scenario names this requirement".to_string()),
        )
    } else if let Some(message) = first(|s| match s {
        Said::Error(m) => Some(m),
        _ => None,
    }) {
        (Disposition::Error, Some(message))
    } else if let Some(reason) = first(|s| match s {
        Said::NotReached(m) => Some(m),
        _ => None,
    }) {
        (Disposition::NotReached, Some(reason))
    } else if let Some(message) = first(|s| match s {
        Said::Advisory(m) => Some(m),
        _ => None,
    }) {
        (Disposition::Advisory, Some(message))
    } else if verdicts.iter().all(|s| matches!(s, Said::Skip(_))) {
        let reason = verdicts.iter().find_map(|s| match s {
            Said::Skip(reason) => Some(*reason),
            _ => None,
        });
        match reason {
            Some(reason) => (Disposition::Skip(reason), None),
            None => (Disposition::Error, None),
        }
    } else {
        (Disposition::Pass, None)
    }
}

/// The scenario outcome that decided `result`'s disposition, with the
/// scenario's name: where a report finds the failed step (and exchange) of
/// the check that failed, errored on or blocked the requirement.
pub fn deciding<'a>(
    result: &RequirementResult,
    ledger: &'a Ledger,
) -> Option<(&'a str, RequirementOutcome)> {
    let wanted = match result.disposition {
        Disposition::Pass | Disposition::Skip(_) | Disposition::NotApplicable(_) => return None,
        decided => decided.kind(),
    };
    result.scenarios.iter().find_map(|name| {
        let scenario = ledger.get(name)?;
        let outcome = scenario.requirement(&result.requirement.id)?;
        (counts_as(&result.requirement, &outcome) == wanted)
            .then_some((scenario.name.as_str(), outcome))
    })
}

/// Whether a requirement's level makes it block certification: MUST does,
/// SHOULD never does. Anything else (an unknown level) is treated as MUST,
/// so a typo can never quietly stop a requirement from counting.
pub fn is_blocking(requirement: &Requirement) -> bool {
    requirement.level != "SHOULD"
}

/// Counts and the verdict per profile. `profiles` lists every profile to
/// report (selected or not). A profile is certified when its minimum
/// scope is met (PROFILE.md "Minimum scope"), it has at least one MUST
/// requirement that applies to the host, and every such requirement
/// passed. `not-applicable` requirements never block and never count as
/// passes; SHOULD requirements are counted but never block. A profile
/// whose minimum scope is not met is `not attempted` unless something it
/// ran failed, errored or was not reached (then it is `not certified`).
pub fn summarize(
    results: &[RequirementResult],
    profiles: &BTreeSet<String>,
    selected: &BTreeSet<String>,
    offer: &Offer,
) -> BTreeMap<String, ProfileSummary> {
    let mut names: BTreeSet<String> = profiles.clone();
    names.extend(results.iter().map(|r| r.requirement.profile.clone()));
    names
        .into_iter()
        .map(|profile| {
            let own: Vec<&RequirementResult> = results
                .iter()
                .filter(|r| r.requirement.profile == profile)
                .collect();
            let summary = summarize_one(&profile, &own, selected.contains(&profile), offer);
            (profile, summary)
        })
        .collect()
}

fn summarize_one(
    profile: &str,
    results: &[&RequirementResult],
    selected: bool,
    offer: &Offer,
) -> ProfileSummary {
    let mut summary = ProfileSummary {
        selected,
        scope: offer.scope(profile, results.iter().map(|r| &r.requirement)),
        ..ProfileSummary::default()
    };
    for result in results {
        match result.disposition {
            Disposition::Pass => summary.pass += 1,
            Disposition::Fail => summary.fail += 1,
            Disposition::Advisory => summary.advisory += 1,
            Disposition::NotReached => summary.not_reached += 1,
            Disposition::Skip(_) => summary.skip += 1,
            Disposition::NotApplicable(_) => summary.not_applicable += 1,
            Disposition::Error => summary.error += 1,
        }
    }
    // The MUST requirements that apply to this host, and those that did
    // not pass.
    let applicable: Vec<&&RequirementResult> = results
        .iter()
        .filter(|r| is_blocking(&r.requirement))
        .filter(|r| !matches!(r.disposition, Disposition::NotApplicable(_)))
        .collect();
    let unpassed: Vec<Disposition> = applicable
        .iter()
        .map(|r| r.disposition)
        .filter(|d| *d != Disposition::Pass)
        .collect();
    let broke = unpassed.iter().any(|d| d.kind().is_blocking_failure());
    let unmet = offer.unmet(profile);
    (summary.status, summary.reason) = if !selected {
        (Status::OptedOut, None)
    } else if !unmet.is_empty() && !broke {
        (Status::NotAttempted, Some(describe_unmet(&unmet)))
    } else if !unmet.is_empty() {
        (
            Status::NotCertified,
            Some(format!(
                "{}; {}",
                unpassed_reason(&unpassed),
                describe_unmet(&unmet)
            )),
        )
    } else if applicable.is_empty() {
        (
            Status::NotCertified,
            Some("no MUST requirement of it applies to this host".to_string()),
        )
    } else if !unpassed.is_empty() {
        (Status::NotCertified, Some(unpassed_reason(&unpassed)))
    } else {
        (Status::Certified, None)
    };
    summary.certified = summary.status == Status::Certified;
    summary
}

/// `2 MUST requirements did not pass: 1 fail, 1 skip (seam-absent)`.
fn unpassed_reason(unpassed: &[Disposition]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for disposition in unpassed {
        let key = match disposition.reason() {
            Some(reason) => format!("{} ({reason})", disposition.keyword()),
            None => disposition.keyword().to_string(),
        };
        *counts.entry(key).or_default() += 1;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(what, count)| format!("{count} {what}"))
        .collect();
    format!(
        "{} MUST requirement{} did not pass: {}",
        unpassed.len(),
        if unpassed.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Needs;
    use crate::run::outcome::{Attributed, FailedStep};
    use crate::testing::assert_contains;
    use std::path::PathBuf;
    use std::time::Duration;

    fn requirement(id: &str) -> Requirement {
        Requirement {
            id: id.to_string(),
            profile: id.split('.').next().unwrap_or_default().to_string(),
            level: "MUST".to_string(),
            clause: "§2".to_string(),
            text: "t".to_string(),
            capability: Vec::new(),
        }
    }

    /// A host that advertises everything the profiles need, seams and
    /// both judges' scripts aside: the verifier judge with its fixtures, two
    /// modes, two tenants and two endpoints.
    fn offer() -> Offer {
        let document = serde_json::json!({
            "agents": {"goals": {"judge": "verifier", "continuation": ["manual", "schedule"]}},
            "conformanceSeams": {"goals": {"continue": true, "events": true,
                                           "fixtures": true, "webhooks": true}}
        });
        Offer {
            capabilities: crate::run::discovery::Capabilities::from_document(Some(&document)),
            attention: false,
            second_tenant: true,
            endpoints: 2,
        }
    }

    fn scenario(name: &str, requirements: &[&str]) -> Scenario {
        Scenario {
            name: name.to_string(),
            profile: name.split("::").next().unwrap_or_default().to_string(),
            path: PathBuf::from(format!("{name}.json")),
            title: name.to_string(),
            requirements: requirements.iter().map(|r| r.to_string()).collect(),
            should: Default::default(),
            needs: Needs::default(),
            checks: 1,
            steps: Vec::new(),
            mock: None,
            observations: Vec::new(),
            generated: Default::default(),
        }
    }

    fn result(name: &str, outcome: Outcome) -> ScenarioResult {
        ScenarioResult {
            name: name.to_string(),
            outcome,
            checks: 1,
            duration: Duration::from_millis(3),
            quiet: Duration::ZERO,
            failed_step: None,
            observations: Vec::new(),
            requirements: BTreeMap::new(),
            not_taken: Vec::new(),
        }
    }

    /// One requirement `core.r` named by scenarios `core::s0..` with these outcomes.
    fn disposition_of(outcomes: &[Option<Outcome>]) -> Disposition {
        let names: Vec<String> = (0..outcomes.len()).map(|i| format!("core::s{i}")).collect();
        let scenarios: Vec<Scenario> = names.iter().map(|n| scenario(n, &["core.r"])).collect();
        let mut ledger = Ledger::default();
        for (name, outcome) in names.iter().zip(outcomes) {
            if let Some(outcome) = outcome {
                ledger.record(result(name, outcome.clone()));
            }
        }
        let results = dispose(&[requirement("core.r")], &scenarios, &ledger, &offer());
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].scenarios, names);
        results[0].disposition
    }

    /// What one scenario said about `core.r`: a per-requirement outcome, or
    /// only a whole-scenario one (a skip, or a run that recorded nothing
    /// finer).
    enum Says {
        Req(RequirementOutcome),
        Whole(Outcome),
    }

    fn why(message: &str) -> Attributed {
        Attributed {
            message: message.to_string(),
            failed_step: None,
        }
    }

    /// `core.r` at `level`, named by scenarios `core::s0..` that said these
    /// things about it (each scenario also names `core.other`, which failed
    /// everywhere: per-requirement outcomes keep it apart).
    fn merged(level: &str, says: Vec<Says>) -> RequirementResult {
        let names: Vec<String> = (0..says.len()).map(|i| format!("core::s{i}")).collect();
        let scenarios: Vec<Scenario> = names
            .iter()
            .map(|n| scenario(n, &["core.r", "core.other"]))
            .collect();
        let mut ledger = Ledger::default();
        for (name, said) in names.iter().zip(says) {
            let recorded = match said {
                Says::Whole(outcome) => result(name, outcome),
                Says::Req(outcome) => {
                    let mut recorded = result(name, Outcome::Fail("core.other failed".into()));
                    recorded.requirements = [
                        ("core.r".to_string(), outcome),
                        (
                            "core.other".to_string(),
                            RequirementOutcome::Fail(why("core.other failed")),
                        ),
                    ]
                    .into();
                    recorded
                }
            };
            ledger.record(recorded);
        }
        let requirement = Requirement {
            level: level.to_string(),
            ..requirement("core.r")
        };
        let results = dispose(&[requirement], &scenarios, &ledger, &offer());
        results.into_iter().next().expect("one result")
    }

    fn pass() -> Says {
        Says::Req(RequirementOutcome::Pass)
    }

    #[test]
    fn per_requirement_outcomes_decide_not_the_scenario_outcome() {
        let result = merged("MUST", vec![pass(), pass()]);
        assert_eq!(result.disposition, Disposition::Pass);
        assert_eq!(result.message, None);
    }

    #[test]
    fn merging_follows_fail_error_not_reached_advisory_skip_pass() {
        let fail = || Said::Fail("broke it".into());
        let error = || Said::Error("garbage".into());
        let not_reached = || Said::NotReached("not reached: x".into());
        let advisory = || Said::Advisory("should have".into());
        let skip = || Said::Skip(SkipReason::SeamAbsent);
        let pass = || Said::Pass;
        let cases: Vec<(Vec<Said>, Disposition, Option<&str>)> = vec![
            (
                vec![pass(), advisory(), not_reached(), error(), fail(), skip()],
                Disposition::Fail,
                Some("broke it"),
            ),
            (
                vec![pass(), advisory(), not_reached(), error(), skip()],
                Disposition::Error,
                Some("garbage"),
            ),
            (
                vec![pass(), advisory(), not_reached(), skip()],
                Disposition::NotReached,
                Some("not reached: x"),
            ),
            (
                vec![skip(), pass(), advisory()],
                Disposition::Advisory,
                Some("should have"),
            ),
            (
                vec![skip(), Said::Skip(SkipReason::NotConfigured)],
                Disposition::Skip(SkipReason::SeamAbsent),
                None,
            ),
            (vec![skip(), pass()], Disposition::Pass, None),
        ];
        for (said, disposition, message) in cases {
            let (merged, why) = merge(&said);
            assert_eq!(merged, disposition);
            assert_eq!(why.as_deref(), message, "{disposition:?}");
        }
    }

    #[test]
    fn a_should_requirement_never_fails() {
        let result = merged(
            "SHOULD",
            vec![pass(), Says::Req(RequirementOutcome::Fail(why("missed")))],
        );
        assert_eq!(result.disposition, Disposition::Advisory);
        assert_eq!(result.message.as_deref(), Some("missed"));
        // Scenarios that recorded nothing finer fail it as a whole: still
        // only an advisory.
        let result = merged("SHOULD", vec![Says::Whole(Outcome::Fail("whole".into()))]);
        assert_eq!(result.disposition, Disposition::Advisory);
        let result = merged("MUST", vec![Says::Whole(Outcome::Fail("whole".into()))]);
        assert_eq!(result.disposition, Disposition::Fail);
    }

    #[test]
    fn the_deciding_scenario_carries_the_failed_step() {
        let names = ["core::s0", "core::s1"];
        let scenarios: Vec<Scenario> = names.iter().map(|n| scenario(n, &["core.r"])).collect();
        let mut ledger = Ledger::default();
        ledger.record(result(names[0], Outcome::Pass));
        let mut failing = result(names[1], Outcome::Pass);
        let step = FailedStep {
            step: 2,
            ..FailedStep::default()
        };
        failing.requirements = [(
            "core.r".to_string(),
            RequirementOutcome::Fail(Attributed {
                message: "no Location".to_string(),
                failed_step: Some(Box::new(step.clone())),
            }),
        )]
        .into();
        ledger.record(failing);
        let requirement = Requirement {
            level: "SHOULD".to_string(),
            ..requirement("core.r")
        };
        let results = dispose(&[requirement], &scenarios, &ledger, &offer());
        assert_eq!(results[0].disposition, Disposition::Advisory);
        let (name, outcome) = deciding(&results[0], &ledger).expect("a deciding scenario");
        assert_eq!(name, "core::s1");
        assert_eq!(outcome.failed_step(), Some(&step));
    }

    #[test]
    fn any_fail_wins() {
        let outcomes = [
            Some(Outcome::Pass),
            Some(Outcome::Error("e".into())),
            Some(Outcome::Fail("f".into())),
            Some(Outcome::Skip(SkipReason::SeamAbsent)),
        ];
        assert_eq!(disposition_of(&outcomes), Disposition::Fail);
    }

    #[test]
    fn error_beats_pass_and_skip() {
        let outcomes = [
            Some(Outcome::Pass),
            Some(Outcome::Skip(SkipReason::SeamAbsent)),
            Some(Outcome::Error("e".into())),
        ];
        assert_eq!(disposition_of(&outcomes), Disposition::Error);
    }

    #[test]
    fn all_skipped_takes_the_first_reason() {
        let outcomes = [
            Some(Outcome::Skip(SkipReason::NeedsSecondTenant)),
            Some(Outcome::Skip(SkipReason::SeamAbsent)),
        ];
        assert_eq!(
            disposition_of(&outcomes),
            Disposition::Skip(SkipReason::NeedsSecondTenant)
        );
    }

    #[test]
    fn pass_with_some_skips_is_a_pass() {
        let outcomes = [
            Some(Outcome::Skip(SkipReason::SeamAbsent)),
            Some(Outcome::Pass),
        ];
        assert_eq!(disposition_of(&outcomes), Disposition::Pass);
        assert_eq!(disposition_of(&[Some(Outcome::Pass)]), Disposition::Pass);
    }

    #[test]
    fn a_scenario_that_never_recorded_is_an_error_not_a_pass() {
        assert_eq!(
            disposition_of(&[Some(Outcome::Pass), None]),
            Disposition::Error
        );
        assert_eq!(disposition_of(&[]), Disposition::Error);
    }

    #[test]
    fn a_later_record_replaces_an_earlier_one() {
        let mut ledger = Ledger::default();
        ledger.record(ScenarioResult::skipped("core::a", SkipReason::OptedOut));
        ledger.record(result("core::a", Outcome::Pass));
        assert_eq!(ledger.results().count(), 1);
        assert_eq!(
            ledger.get("core::a").map(|r| &r.outcome),
            Some(&Outcome::Pass)
        );
        assert!(!ledger.any_failed_or_errored());
        ledger.record(result("core::b", Outcome::Error("x".into())));
        assert!(ledger.any_failed_or_errored());
    }

    fn summaries(
        dispositions: &[(&str, Disposition)],
        selected: &[&str],
    ) -> BTreeMap<String, ProfileSummary> {
        let levelled: Vec<(&str, &str, Disposition)> = dispositions
            .iter()
            .map(|(id, disposition)| (*id, "MUST", *disposition))
            .collect();
        summaries_at_levels(&levelled, selected)
    }

    /// `(id, level, disposition)` per requirement.
    fn summaries_at_levels(
        dispositions: &[(&str, &str, Disposition)],
        selected: &[&str],
    ) -> BTreeMap<String, ProfileSummary> {
        let results: Vec<RequirementResult> = dispositions
            .iter()
            .map(|(id, level, disposition)| RequirementResult {
                requirement: Requirement {
                    level: level.to_string(),
                    ..requirement(id)
                },
                disposition: *disposition,
                scenarios: Vec::new(),
                message: None,
            })
            .collect();
        let profiles: BTreeSet<String> = ["core", "behavior", "strict"].map(String::from).into();
        let selected: BTreeSet<String> = selected.iter().map(|s| s.to_string()).collect();
        summarize(&results, &profiles, &selected, &offer())
    }

    #[test]
    fn a_profile_is_certified_only_when_every_requirement_passed() {
        let summary = summaries(
            &[
                ("core.a", Disposition::Pass),
                ("core.b", Disposition::Pass),
                ("behavior.a", Disposition::Pass),
                ("behavior.b", Disposition::Skip(SkipReason::SeamAbsent)),
            ],
            &["core", "behavior"],
        );
        let core = &summary["core"];
        assert!(core.certified && core.selected);
        assert_eq!((core.pass, core.fail, core.skip, core.error), (2, 0, 0, 0));
        let behavior = &summary["behavior"];
        assert!(!behavior.certified);
        assert_eq!((behavior.pass, behavior.skip), (1, 1));
    }

    #[test]
    fn fails_and_errors_are_counted_and_block_certification() {
        let summary = summaries(
            &[
                ("core.a", Disposition::Fail),
                ("core.b", Disposition::Error),
            ],
            &["core"],
        );
        let core = &summary["core"];
        assert_eq!((core.pass, core.fail, core.error), (0, 1, 1));
        assert!(!core.certified);
    }

    #[test]
    fn a_profile_with_zero_requirements_is_not_certified() {
        let summary = summaries(&[("core.a", Disposition::Pass)], &["core", "strict"]);
        let strict = &summary["strict"];
        assert!(strict.selected);
        assert!(!strict.certified);
        assert_eq!(strict.pass + strict.fail + strict.skip + strict.error, 0);
        assert!(!summary["behavior"].selected);
    }

    #[test]
    fn should_requirements_never_block_certification() {
        let summary = summaries_at_levels(
            &[
                ("core.a", "MUST", Disposition::Pass),
                ("core.b", "SHOULD", Disposition::Advisory),
                (
                    "core.c",
                    "SHOULD",
                    Disposition::Skip(SkipReason::SeamAbsent),
                ),
                ("core.d", "SHOULD", Disposition::NotReached),
                ("core.e", "SHOULD", Disposition::Error),
                ("core.f", "SHOULD", Disposition::Pass),
            ],
            &["core"],
        );
        let core = &summary["core"];
        assert!(core.certified);
        assert_eq!(
            (
                core.pass,
                core.advisory,
                core.skip,
                core.not_reached,
                core.error
            ),
            (2, 1, 1, 1, 1)
        );
    }

    #[test]
    fn every_must_requirement_must_pass() {
        for blocked in [
            Disposition::Fail,
            Disposition::NotReached,
            Disposition::Error,
            Disposition::Skip(SkipReason::Filtered),
            Disposition::Skip(SkipReason::NotConfigured),
            // A MUST requirement should never end advisory; if it does it
            // still did not pass.
            Disposition::Advisory,
        ] {
            let rows = [
                ("core.a", "MUST", Disposition::Pass),
                ("core.b", "MUST", blocked),
                ("core.c", "SHOULD", Disposition::Pass),
            ];
            assert!(!core_certified(&rows), "{blocked:?} certified core");
        }
    }

    /// Whether `core` is certified by requirements of these ids, levels and
    /// dispositions.
    fn core_certified(rows: &[(&str, &str, Disposition)]) -> bool {
        summaries_at_levels(rows, &["core"])["core"].certified
    }

    #[test]
    fn a_profile_of_only_should_requirements_is_not_certified() {
        let summary = summaries_at_levels(
            &[
                ("core.a", "SHOULD", Disposition::Pass),
                ("core.b", "SHOULD", Disposition::Pass),
            ],
            &["core"],
        );
        assert!(!summary["core"].certified);
        assert_eq!(summary["core"].pass, 2);
    }

    #[test]
    fn an_unknown_level_blocks_like_must() {
        let rows = [
            ("core.a", "MUST", Disposition::Pass),
            ("core.b", "MAY-BE", Disposition::Fail),
        ];
        assert!(!core_certified(&rows));
    }

    fn with_capability(id: &str, tokens: &[&str]) -> Requirement {
        Requirement {
            capability: tokens
                .iter()
                .map(|t| Capability::parse(t).expect("a token"))
                .collect(),
            ..requirement(id)
        }
    }

    /// [`offer`] without `mode` in its continuation modes.
    fn offer_without_mode(mode: &str) -> Offer {
        let mut offer = offer();
        offer.capabilities.continuation.remove(mode);
        offer
    }

    #[test]
    fn a_missing_feature_is_not_applicable_over_the_skips_it_causes() {
        let names = ["behavior::s0", "behavior::s1"];
        let scenarios: Vec<Scenario> = names
            .iter()
            .map(|n| scenario(n, &["behavior.sched"]))
            .collect();
        let mut ledger = Ledger::default();
        ledger.record(ScenarioResult::skipped(names[0], SkipReason::NotAdvertised));
        ledger.record(ScenarioResult::skipped(names[1], SkipReason::Filtered));
        let requirement = with_capability("behavior.sched", &["mode:schedule"]);
        let results = dispose(
            std::slice::from_ref(&requirement),
            &scenarios,
            &ledger,
            &offer_without_mode("schedule"),
        );
        assert_eq!(
            results[0].disposition,
            Disposition::NotApplicable(Capability::Mode("schedule"))
        );
        assert_eq!(
            results[0].disposition.reason_keyword().as_deref(),
            Some("mode:schedule")
        );
        assert!(
            results[0]
                .message
                .as_deref()
                .unwrap_or_default()
                .contains("`schedule` continuation mode"),
            "{:?}",
            results[0].message
        );
        assert_eq!(results[0].scenarios, names);
        // Advertised, the same skips are skips again (the first reason).
        let results = dispose(&[requirement], &scenarios, &ledger, &offer());
        assert_eq!(
            results[0].disposition,
            Disposition::Skip(SkipReason::NotAdvertised)
        );
    }

    #[test]
    fn an_applicable_requirement_no_scenario_could_judge_here_blocks_and_says_so() {
        let mut needy = scenario("behavior::s0", &["behavior.any"]);
        needy.needs.continuation = vec!["schedule".to_string()];
        needy.needs.judge = Some("host".to_string());
        let mut ledger = Ledger::default();
        ledger.record(ScenarioResult::skipped(
            "behavior::s0",
            SkipReason::NotAdvertised,
        ));
        let offer = offer_without_mode("schedule");
        let results = dispose(&[requirement("behavior.any")], &[needy], &ledger, &offer);
        assert_eq!(
            results[0].disposition,
            Disposition::Skip(SkipReason::NotAdvertised)
        );
        let message = results[0].message.clone().unwrap_or_default();
        assert_contains(&message, "not judged on this host's choices");
        assert_contains(
            &message,
            "needs something this host does not advertise (judge `host` and mode `schedule`)",
        );
        let profiles: BTreeSet<String> = ["behavior".to_string()].into();
        let summary = &summarize(&results, &profiles, &profiles, &offer)["behavior"];
        assert_eq!(summary.status, Status::NotCertified);
        assert!(!summary.certified);
        assert_eq!(
            summary.reason.as_deref(),
            Some("1 MUST requirement did not pass: 1 skip (not-advertised)")
        );
    }

    /// One result per `(id, tokens, disposition)`, MUST, summarized for
    /// every profile named under `offer`.
    fn summarized(
        results: &[(&str, &[&str], Disposition)],
        offer: &Offer,
    ) -> BTreeMap<String, ProfileSummary> {
        let results: Vec<RequirementResult> = results
            .iter()
            .map(|(id, tokens, disposition)| RequirementResult {
                requirement: with_capability(id, tokens),
                disposition: *disposition,
                scenarios: Vec::new(),
                message: None,
            })
            .collect();
        let profiles: BTreeSet<String> = results
            .iter()
            .map(|r| r.requirement.profile.clone())
            .collect();
        summarize(&results, &profiles, &profiles, offer)
    }

    #[test]
    fn not_applicable_never_blocks_and_never_counts_as_a_pass() {
        let na = Disposition::NotApplicable(Capability::Mode("heartbeat"));
        let offer = offer_without_mode("heartbeat");
        let summary = summarized(
            &[
                ("behavior.a", &[], Disposition::Pass),
                ("behavior.b", &["mode:heartbeat"], na),
            ],
            &offer,
        );
        let behavior = &summary["behavior"];
        assert!(behavior.certified);
        assert_eq!(behavior.status, Status::Certified);
        assert_eq!((behavior.pass, behavior.not_applicable), (1, 1));
        assert_eq!(behavior.scope.not_offered, ["mode:heartbeat"]);
        assert_eq!(behavior.reason, None);
        // Nothing but requirements that do not apply: nothing certified.
        let summary = summarized(&[("behavior.b", &["mode:heartbeat"], na)], &offer);
        let behavior = &summary["behavior"];
        assert!(!behavior.certified);
        assert_eq!(behavior.pass, 0);
        assert_eq!(
            behavior.reason.as_deref(),
            Some("no MUST requirement of it applies to this host")
        );
    }

    #[test]
    fn an_unmet_minimum_scope_is_not_attempted_unless_something_broke() {
        let mut one_endpoint = offer();
        one_endpoint.endpoints = 1;
        let skip = Disposition::Skip(SkipReason::NeedsEndpoints);
        let summary = summarized(
            &[
                ("cluster.a", &["endpoints:2"], skip),
                ("core.a", &[], Disposition::Pass),
            ],
            &one_endpoint,
        );
        assert_eq!(summary["cluster"].status, Status::NotAttempted);
        assert!(!summary["cluster"].certified);
        assert_eq!(
            summary["cluster"].reason.as_deref(),
            Some("needs 2+ endpoints of one deployment (--host once per replica)")
        );
        assert_eq!(summary["core"].status, Status::Certified);
        // Everything passing does not make up for a minimum scope unmet.
        let summary = summarized(&[("cluster.a", &[], Disposition::Pass)], &one_endpoint);
        assert_eq!(summary["cluster"].status, Status::NotAttempted);
        // A failure is never hidden behind "not attempted".
        let summary = summarized(
            &[
                ("cluster.a", &["endpoints:2"], skip),
                ("cluster.b", &[], Disposition::Fail),
            ],
            &one_endpoint,
        );
        assert_eq!(summary["cluster"].status, Status::NotCertified);
        let reason = summary["cluster"].reason.clone().unwrap_or_default();
        assert!(reason.starts_with("2 MUST requirements did not pass: 1 fail, 1 skip (needs-endpoints); needs 2+ endpoints"), "{reason}");
        // Unselected: opted out, whatever else.
        let results = vec![RequirementResult {
            requirement: requirement("core.a"),
            disposition: Disposition::Pass,
            scenarios: Vec::new(),
            message: None,
        }];
        let profiles: BTreeSet<String> = ["core".to_string()].into();
        let summary = summarize(&results, &profiles, &BTreeSet::new(), &offer());
        assert_eq!(summary["core"].status, Status::OptedOut);
        assert!(!summary["core"].certified);
    }

    #[test]
    fn a_prediction_gates_as_a_run_would_and_passes_what_would_run() {
        let mut manual = scenario("behavior::manual", &["behavior.a", "behavior.b"]);
        manual.needs.continuation = vec!["manual".to_string()];
        manual.needs.seams = vec!["continue".to_string()];
        let mut tenancy = scenario("hardening::tenancy", &["hardening.t"]);
        tenancy.needs.tenants = 2;
        let mut heartbeat = scenario("behavior::heartbeat", &["behavior.h"]);
        heartbeat.needs.continuation = vec!["heartbeat".to_string()];
        let scenarios = [manual, tenancy, heartbeat];
        let requirements = [
            requirement("behavior.a"),
            with_capability("behavior.b", &["seam:continue"]),
            with_capability("hardening.t", &["tenants:2"]),
            with_capability("behavior.h", &["mode:heartbeat"]),
        ];
        let mut offer = offer_without_mode("heartbeat");
        offer.second_tenant = false;
        offer.capabilities.seams.remove("continue");
        let selected: BTreeSet<String> = ["behavior", "hardening"].map(String::from).into();
        let gated = |offer: &Offer| {
            let offer = offer.clone();
            let selected = selected.clone();
            move |scenario: &Scenario| {
                crate::run::gate::gate(
                    scenario,
                    &offer.capabilities,
                    &selected,
                    offer.second_tenant,
                    &BTreeSet::new(),
                    offer.endpoints,
                )
            }
        };
        let predicted = predict(&requirements, &scenarios, &offer, gated(&offer));
        let dispositions: Vec<Disposition> = predicted.iter().map(|r| r.disposition).collect();
        assert_eq!(
            dispositions,
            [
                Disposition::Skip(SkipReason::SeamAbsent),
                Disposition::Skip(SkipReason::SeamAbsent),
                Disposition::Skip(SkipReason::NeedsSecondTenant),
                Disposition::NotApplicable(Capability::Mode("heartbeat")),
            ]
        );
        offer.capabilities.seams.insert("continue".to_string());
        offer.second_tenant = true;
        let predicted = predict(&requirements, &scenarios, &offer, gated(&offer));
        let summary = summarize(&predicted, &selected, &selected, &offer);
        assert_eq!(summary["behavior"].status, Status::Certified, "{summary:?}");
        assert_eq!(summary["behavior"].scope.not_offered, ["mode:heartbeat"]);
        assert_eq!(summary["hardening"].status, Status::Certified);
    }

    #[test]
    fn skip_reason_keywords_round_trip() {
        for reason in SkipReason::ALL {
            assert_eq!(SkipReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(SkipReason::Filtered.as_str(), "filtered");
        assert_eq!(SkipReason::NotConfigured.as_str(), "not-configured");
        assert_eq!(Disposition::Advisory.keyword(), "advisory");
        assert_eq!(Disposition::NotReached.keyword(), "not-reached");
        assert_eq!(SkipReason::parse("nope"), None);
    }
}
