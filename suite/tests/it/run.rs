//! Whole runs through the library (the same path as `goalpost run`) against
//! the fake host: gating, dispositions, reports, filters, start errors.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use goalpost::{HostChoice, RunConfig, RunOutcome, StartError};
use goalpost_schemas::Schemas;
use serde_json::{json, Value};
use support::{FakeOptions, TOKEN_A, TOKEN_B};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-host")
}

fn harness(args: &[&str]) -> libtest_mimic::Arguments {
    use clap::Parser;
    let mut argv = vec!["goalpost"];
    argv.extend_from_slice(args);
    libtest_mimic::Arguments::try_parse_from(argv).expect("harness arguments")
}

fn config(url: String, scenarios: PathBuf, reports: &Path, args: &[&str]) -> RunConfig {
    let mut harness = harness(args);
    // The inner harness writes its own "test result:" lines; keep them out
    // of this test binary's output, where they would read as its own.
    harness.logfile = Some(reports.join("harness.log").to_string_lossy().into_owned());
    let mut config = RunConfig::bundled(scenarios, reports.to_path_buf(), harness);
    config.host = HostChoice::Remote(url);
    config.token_a = TOKEN_A.to_string();
    config.token_b = Some(TOKEN_B.to_string());
    config
}

fn report_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json written");
    serde_json::from_str(&text).expect("report.json is JSON")
}

fn requirement<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["requirements"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == id))
        .unwrap_or_else(|| panic!("no requirement {id} in {report:#}"))
}

fn bare_host() -> String {
    support::start_in_background(FakeOptions {
        advertise_seams: false,
        advertise_goals: true,
    })
}

#[test]
fn a_host_without_seams_passes_core_and_skips_behavior_with_a_reason() {
    let reports = tempfile::tempdir().unwrap();
    let outcome =
        goalpost::run(config(bare_host(), fixtures(), reports.path(), &[])).expect("run starts");
    assert_eq!(outcome.exit_code(), 0);
    assert!(!outcome.filtered);
    let report = report_json(reports.path());
    Schemas::embedded()
        .unwrap()
        .validate("report", &report)
        .unwrap_or_else(|v| panic!("report.json invalid: {v:?}"));
    assert_eq!(
        report["profiles"]["core"],
        json!({"certified": true, "status": "certified", "reason": null,
               "scope": {"judge": "verifier", "modes": ["manual"], "offered": [], "notOffered": []},
               "pass": 2, "fail": 0, "advisory": 0, "notReached": 0, "skip": 0, "notApplicable": 0, "error": 0})
    );
    // No seams: behavior's minimum scope is not met, and the report says
    // what it needs instead of "not certified".
    let behavior = &report["profiles"]["behavior"];
    assert_eq!(behavior["certified"], false);
    assert_eq!(behavior["status"], "not-attempted");
    assert!(
        behavior["reason"]
            .as_str()
            .is_some_and(|reason| reason.starts_with("needs the `continue` seam")),
        "{behavior}"
    );
    let skipped = requirement(&report, "behavior.fake.continue");
    assert_eq!(
        (&skipped["disposition"], &skipped["reason"]),
        (&json!("skip"), &json!("seam-absent"))
    );
    assert_eq!(
        requirement(&report, "core.fake.create")["scenarios"],
        json!(["core::create"])
    );
    assert_eq!(report["host"]["bundled"], false);
    let junit = std::fs::read_to_string(reports.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<skipped message="seam-absent">The host does not list"#),
        "{junit}"
    );
}

#[test]
fn an_advertised_seam_that_404s_fails_the_run() {
    let url = support::start_in_background(FakeOptions {
        advertise_seams: true,
        advertise_goals: true,
    });
    let reports = tempfile::tempdir().unwrap();
    let outcome = goalpost::run(config(url, fixtures(), reports.path(), &[])).expect("run starts");
    assert_eq!(outcome.exit_code(), 1);
    let report = report_json(reports.path());
    let failed = requirement(&report, "behavior.fake.continue");
    assert_eq!(failed["disposition"], "fail");
    assert!(
        failed["message"]
            .as_str()
            .unwrap_or_default()
            .contains("seam answered 404"),
        "{failed:#}"
    );
    let junit = std::fs::read_to_string(reports.path().join("junit.xml")).unwrap();
    assert!(junit.contains("<failure message="), "{junit}");
}

#[test]
fn a_host_without_goals_skips_everything_as_not_advertised() {
    let url = support::start_in_background(FakeOptions::default());
    let reports = tempfile::tempdir().unwrap();
    let outcome = goalpost::run(config(url, fixtures(), reports.path(), &[])).expect("run starts");
    assert_eq!(outcome.exit_code(), 0);
    let report = report_json(reports.path());
    for requirement in report["requirements"].as_array().unwrap() {
        assert_eq!(requirement["reason"], "not-advertised", "{requirement:#}");
    }
    assert_eq!(
        outcome.report.as_ref().map(|r| r.all_selected_certified()),
        Some(false)
    );
}

#[test]
fn unselected_profiles_are_opted_out_and_filtered_trials_filtered() {
    let reports = tempfile::tempdir().unwrap();
    let mut config = config(bare_host(), fixtures(), reports.path(), &["core::auth"]);
    config.profiles = Some(BTreeSet::from(["core".to_string()]));
    let outcome = goalpost::run(config).expect("run starts");
    assert!(outcome.filtered);
    assert_eq!(outcome.exit_code(), 0);
    assert_eq!(outcome.conclusion.num_passed, 1);
    assert_eq!(outcome.conclusion.num_filtered_out, 2);
    let report = report_json(reports.path());
    assert_eq!(
        requirement(&report, "core.fake.auth")["disposition"],
        "pass"
    );
    assert_eq!(
        requirement(&report, "core.fake.create")["reason"],
        "filtered"
    );
    assert_eq!(
        requirement(&report, "behavior.fake.continue")["reason"],
        "opted-out"
    );
    // A partial run certifies nothing.
    assert_eq!(report["profiles"]["core"]["certified"], false);
    // Each skip reason present is explained, with the section to read.
    assert_eq!(
        report["legend"]["filtered"]["section"],
        "PROFILE.md#skip-filtered"
    );
    assert_eq!(
        report["legend"]["opted-out"]["section"],
        "PROFILE.md#skip-opted-out"
    );
    assert!(report["legend"].get("seam-absent").is_none(), "{report:#}");
    let mut summary = Vec::new();
    goalpost::report::console::write(outcome.report.as_ref().expect("report"), &mut summary)
        .expect("summary");
    let summary = String::from_utf8(summary).expect("utf-8");
    assert!(
        summary.contains(
            "1 scenario (trials) ran, 1 skipped, 1 filtered out: the harness counts these trials"
        ),
        "{summary}"
    );
}

#[test]
fn list_runs_nothing_and_writes_no_report() {
    let reports = tempfile::tempdir().unwrap();
    let outcome: RunOutcome =
        goalpost::run(config(bare_host(), fixtures(), reports.path(), &["--list"]))
            .expect("run starts");
    assert!(outcome.report.is_none());
    assert_eq!(outcome.exit_code(), 0);
    assert!(!reports.path().join("report.json").exists());
    let log = std::fs::read_to_string(reports.path().join("harness.log")).unwrap();
    assert!(log.contains("core::create: test"), "{log}");
}

#[test]
fn a_failing_scenario_makes_exit_code_one() {
    let dir = support::scenarios_folder(
        &["core.fake.wrong"],
        &[(
            "core/wrong.json",
            json!({"title": "wrong", "profile": "core", "requirements": ["core.fake.wrong"], "checks": 1,
                   "steps": [{"name": "read", "request": {"method": "GET", "path": "{base}/goal-1"},
                              "expect": {"status": 418}}]}),
        )],
    );
    let reports = tempfile::tempdir().unwrap();
    let outcome = goalpost::run(config(
        bare_host(),
        dir.path().to_path_buf(),
        reports.path(),
        &[],
    ))
    .expect("run starts");
    assert_eq!(outcome.exit_code(), 1);
    assert_eq!(outcome.conclusion.num_failed, 1);
    let report = report_json(reports.path());
    assert_eq!(report["scenarios"][0]["outcome"], "fail");
    assert_eq!(report["profiles"]["core"]["fail"], 1);
}

#[test]
fn an_unreachable_host_cannot_start() {
    let reports = tempfile::tempdir().unwrap();
    let error = goalpost::run(config(
        "http://127.0.0.1:9".into(),
        fixtures(),
        reports.path(),
        &[],
    ))
    .expect_err("no host there");
    assert!(matches!(error, StartError::Discovery(_)), "{error:?}");
}

#[test]
fn selecting_a_profile_without_scenarios_cannot_start() {
    let reports = tempfile::tempdir().unwrap();
    let mut config = config(bare_host(), fixtures(), reports.path(), &[]);
    config.profiles = None;
    config.strict = true;
    // core + behavior + strict: fine, strict is simply empty.
    assert!(goalpost::run(config.clone()).is_ok());
    config.profiles = Some(BTreeSet::new());
    let error = goalpost::run(config).expect_err("only strict, which has no scenarios");
    assert!(
        error.to_string().contains("no scenario files matched"),
        "{error}"
    );
}
