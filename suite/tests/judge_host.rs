//! `goalpost-host serve --judge host` certifies `core`: the host judges with
//! its own verifiers and discovery says `judge: "host"`. The host is built
//! from the same command-line flags an operator passes (no `variants`
//! feature), and the whole suite runs through the library path of
//! `goalpost run`. Scenarios that script a verifier (`needs.judge:
//! "verifier"`) skip as not advertised; the host-judge path of reported runs
//! (`behavior.runs.claims-not-verdicts`) runs and passes.

use std::collections::BTreeSet;
use std::path::Path;

use clap::Parser;
use goalpost::bundled::{DEFAULT_TOKEN_A, DEFAULT_TOKEN_B, TENANT_A, TENANT_B};
use goalpost::{HostChoice, RunConfig};

#[test]
fn a_host_that_judges_itself_certifies_core() {
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
        "--token",
        &token_a,
        "--token",
        &token_b,
    ])
    .expect("the flags parse");
    let config = args.into_config();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let host = runtime
        .block_on(goalpost_host::RunningHost::start(config))
        .expect("the host starts");
    let reports = tempfile::tempdir().expect("a temporary directory");
    let harness = libtest_mimic::Arguments::try_parse_from(["goalpost"]).expect("no arguments");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut run = RunConfig::bundled(scenarios, reports.path().to_path_buf(), harness);
    run.host = HostChoice::Remote(host.base_url());
    run.token_a = DEFAULT_TOKEN_A.to_string();
    run.token_b = Some(DEFAULT_TOKEN_B.to_string());
    run.profiles = Some(BTreeSet::from(["core".to_string(), "behavior".to_string()]));
    run.harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    let outcome = goalpost::run(run);
    runtime.block_on(host.shutdown());
    let report = outcome
        .expect("the run starts")
        .report
        .expect("the run writes a report");

    let core = &report.profiles["core"];
    let unpassed: Vec<String> = report
        .requirements
        .iter()
        .filter(|requirement| {
            requirement.profile == "core" && requirement.disposition.as_str() != "pass"
        })
        .map(|requirement| format!("{}: {}", requirement.id, requirement.disposition))
        .collect();
    assert!(core.certified, "core is not certified: {unpassed:?}");
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
    // A scripted verifier is what this host does not offer: skipped, and
    // the report says why.
    let scripted = ended("behavior.runs.judged");
    assert_eq!(scripted.disposition.as_str(), "skip");
    assert_eq!(scripted.reason.as_deref(), Some("not-advertised"));
}
