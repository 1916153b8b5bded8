//! `goalpost-host serve --judge host` certifies `core` and `behavior`: the
//! host judges with its own verifiers and discovery says `judge: "host"`;
//! with its conformance seams on it also serves the seam `scriptedJudge`,
//! through which the suite scripts the verdicts of the scenarios whose rule
//! is not about the judge kind (`needs.judge: "scripted"`). The host is
//! built from the same command-line flags an operator passes (not a
//! variant of `goalpost-host-builds`), and the suite runs through the library path of
//! `goalpost run` (`common::run_suite`, as the kill and variant matrices
//! run it). Scenarios about what a verifier ref does (`needs.judge:
//! "verifier"`) skip as not advertised; the host-judge path of reported
//! runs (`behavior.runs.claims-not-verdicts`) runs and passes.

use crate::common;

use std::collections::BTreeSet;

use clap::Parser;
use goalpost::bundled::{DEFAULT_TOKEN_A, DEFAULT_TOKEN_B, TENANT_A, TENANT_B};

/// The webhook secret the operator gives the host and the suite, as
/// `common::run_suite` expects of every host it runs (no scenario of
/// `core` or `behavior` calls a webhook, so it changes no disposition).
const SECRET: &str = "goalpost-judge-host-secret";

#[test]
fn a_host_that_judges_itself_certifies_core_and_behavior() {
    let token_a = format!("{DEFAULT_TOKEN_A}={TENANT_A}");
    let token_b = format!("{DEFAULT_TOKEN_B}={TENANT_B}");
    let args = goalpost_host::config::Args::try_parse_from([
        "goalpost-host",
        "--judge",
        "host",
        "--db",
        ":memory:",
        "--listen",
        "127.0.0.1:0",
        "--conformance-seams",
        "--webhook-secret",
        SECRET,
        "--token",
        &token_a,
        "--token",
        &token_b,
    ])
    .expect("the flags parse");
    // With the seams on the host may call loopback, the suite's callback
    // among it.
    let config = args.into_config();
    let callback = common::callback_listen().expect("a callback port");
    let report = common::run_suite(config, SECRET, callback, "judge-host", |run| {
        run.profiles = Some(BTreeSet::from(["core".to_string(), "behavior".to_string()]));
    })
    .unwrap_or_else(|error| panic!("{error}"));

    // `core` and `behavior` are certified: the seam scripts every goal at
    // its create, so even one that runs before the client asks (a
    // schedule, heartbeat or commitment goal) is judged by the script from
    // its first run. What does not pass does not apply to a host judge.
    let unpassed = |profile: &str| -> Vec<(String, String)> {
        report
            .requirements
            .iter()
            .filter(|requirement| {
                requirement.profile == profile
                    && !matches!(requirement.disposition.as_str(), "pass" | "not-applicable")
            })
            .map(|requirement| {
                (
                    requirement.id.clone(),
                    requirement.disposition.as_str().to_string(),
                )
            })
            .collect()
    };
    for profile in ["core", "behavior"] {
        assert!(
            report.profiles[profile].certified,
            "{profile} is not certified: {:?}",
            unpassed(profile)
        );
    }
    let ended = |id: &str| {
        report
            .requirements
            .iter()
            .find(|requirement| requirement.id == id)
            .unwrap_or_else(|| panic!("{id} is in the report"))
            .clone()
    };
    // The host-judge path: judged by the host, never by the worker's word.
    assert_eq!(
        ended("behavior.runs.claims-not-verdicts").disposition,
        goalpost::run::outcome::DispositionKind::Pass
    );
    // Verdicts scripted through the seam: a reported run judged by the
    // verifier the suite named for the goal.
    assert_eq!(ended("behavior.runs.judged").disposition.as_str(), "pass");
    let scripted = report
        .scenarios
        .iter()
        .find(|scenario| scenario.name == "behavior::convergence")
        .expect("the convergence scenario ran");
    assert_eq!(scripted.outcome.as_str(), "pass");
    // A schedule goal, scripted at its create, before its first fire.
    let scheduled = report
        .scenarios
        .iter()
        .find(|scenario| scenario.name == "behavior::pause-schedule")
        .expect("the schedule scenario ran");
    assert_eq!(
        scheduled.outcome.as_str(),
        "pass",
        "{:?}",
        scheduled.message
    );
    // What a verifier ref does is what this host does not offer: skipped,
    // and the report says why.
    let verifier_only = report
        .scenarios
        .iter()
        .find(|scenario| scenario.name == "behavior::patch-verifier-ref")
        .expect("the verifier-ref scenario is reported");
    assert_eq!(verifier_only.outcome.as_str(), "skip");
    assert_eq!(verifier_only.reason.as_deref(), Some("not-advertised"));
}
