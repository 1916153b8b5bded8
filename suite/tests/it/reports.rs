//! A whole run against the fake host writes every report format, and the
//! failing step's exchange reaches them; `--quiet` prints only the summary.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use goalpost::{HostChoice, RunConfig};
use serde_json::{json, Value};
use support::{FakeOptions, TOKEN_A, TOKEN_B};

/// One passing and one failing scenario in `core`, one `behavior` scenario
/// that skips (no seams).
fn scenarios() -> tempfile::TempDir {
    support::scenarios_folder(
        &[
            "core.fake.create",
            "core.fake.wrong",
            "behavior.fake.continue",
        ],
        &[
            (
                "core/create.json",
                json!({"title": "create", "profile": "core", "requirements": ["core.fake.create"], "checks": 1,
                       "steps": [{"name": "create", "request": {"method": "POST", "path": "{base}", "body": {"objective": "x"}},
                                  "expect": {"status": 201}}]}),
            ),
            (
                "core/wrong.json",
                json!({"title": "a <b>wrong</b> claim", "profile": "core", "requirements": ["core.fake.wrong"], "checks": 1,
                       "steps": [{"name": "read", "request": {"method": "GET", "path": "{base}/goal-1"},
                                  "expect": {"status": 200, "assert": [{"pointer": "/id", "equals": "goal-2"}]}}]}),
            ),
            (
                "behavior/continue.json",
                json!({"title": "continue", "profile": "behavior", "requirements": ["behavior.fake.continue"],
                       "needs": {"seams": ["continue"]}, "checks": 1,
                       "steps": [{"name": "continue", "request": {"method": "POST", "path": "{base}/goal-1/continue", "seam": "continue"},
                                  "expect": {"status": 200}}]}),
            ),
        ],
    )
}

fn host() -> String {
    support::start_in_background(FakeOptions {
        advertise_seams: false,
        advertise_goals: true,
    })
}

fn config(url: String, scenarios: &Path, reports: &Path) -> RunConfig {
    use clap::Parser;
    let mut harness = libtest_mimic::Arguments::try_parse_from(["goalpost"]).expect("harness");
    harness.logfile = Some(reports.join("harness.log").to_string_lossy().into_owned());
    let mut config = RunConfig::bundled(scenarios.to_path_buf(), reports.to_path_buf(), harness);
    config.host = HostChoice::Remote(url);
    config.token_a = TOKEN_A.to_string();
    config.token_b = Some(TOKEN_B.to_string());
    config
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_run_writes_every_format_with_the_failing_exchange() {
    let dir = scenarios();
    let reports = tempfile::tempdir().unwrap();
    let outcome = goalpost::run(config(host(), dir.path(), reports.path())).expect("run starts");
    assert_eq!(outcome.exit_code(), 1);
    let mut names: Vec<String> = outcome
        .written
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "badge-behavior.svg",
            "badge-core.svg",
            "junit.xml",
            "report.html",
            "report.json",
            "report.md"
        ]
    );

    let report: Value = serde_json::from_str(&read(reports.path(), "report.json")).unwrap();
    goalpost_schemas::Schemas::embedded()
        .unwrap()
        .validate("report", &report)
        .unwrap_or_else(|v| panic!("report.json invalid: {v:?}"));
    let wrong = report["scenarios"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == "core::wrong"))
        .expect("core::wrong");
    let step = &wrong["failedStep"];
    assert_eq!(step["check"]["pointer"], "/id");
    assert_eq!(step["check"]["expected"], "equals \"goal-2\"");
    assert_eq!(step["check"]["actual"], "\"goal-1\"");
    assert_eq!(step["response"]["status"], 200);
    // The fixture's requirements are not the bundled ones: no mutant knows
    // them, so they are reported as not mutation-verified.
    assert_eq!(
        report["requirements"][0]["mutationVerified"],
        Value::Bool(false)
    );
    let json_text = read(reports.path(), "report.json");
    assert!(
        !json_text.contains(&format!("Bearer {TOKEN_A}")),
        "{json_text}"
    );

    let html = read(reports.path(), "report.html");
    assert!(html.contains("id=\"scenario-core::wrong\""));
    assert!(html.contains("a &lt;b&gt;wrong&lt;/b&gt; claim"));
    assert!(html.contains("-H &quot;authorization: Bearer $TOKEN&quot;"));
    assert_eq!(html.matches("<tr data-profile=").count(), 3);

    let md = read(reports.path(), "report.md");
    assert!(
        md.contains(
            "- ❌ **core**: not certified — 1 MUST requirement did not pass: 1 fail (1 pass, 1 fail, 0 advisory, 0 not reached, 0 skip, 0 not applicable, 0 error)"
        ),
        "{md}"
    );
    assert!(
        md.contains("pointer /id: expected `equals \"goal-2\"`, got `\"goal-1\"`"),
        "{md}"
    );

    assert!(read(reports.path(), "badge-core.svg").contains("goalpost core: 1 failed"));
    // The fake host offers no seams: behavior could not be attempted, and
    // the badge's title says what it needs.
    let behavior = read(reports.path(), "badge-behavior.svg");
    assert!(
        behavior.contains("<title>goalpost behavior: not attempted (needs the `continue` seam"),
        "{behavior}"
    );
    let junit = read(reports.path(), "junit.xml");
    assert!(junit.contains("reproduce:\ncurl -sS -i"), "{junit}");
}

#[test]
fn quiet_prints_only_the_summary_and_keeps_the_harness_log() {
    let dir = scenarios();
    let reports = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .args([
            "run",
            "--quiet",
            "--host",
            &host(),
            "--token",
            TOKEN_A,
            "--scenarios",
            &dir.path().to_string_lossy(),
            "--report-dir",
            &reports.path().to_string_lossy(),
        ])
        .env_remove("GOALPOST_TOKEN_B")
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(!stdout.contains("test core::"), "{stdout}");
    assert!(!stdout.contains("test result"), "{stdout}");
    assert!(
        stdout
            .contains("core      not certified      1      1         0            0      0      0"),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    let log_path: PathBuf = reports.path().join("harness.log");
    assert!(
        stdout.contains(&format!("wrote {}", log_path.display())),
        "{stdout}"
    );
    let log = std::fs::read_to_string(log_path).expect("harness.log");
    assert!(
        log.lines()
            .any(|l| l.starts_with("test ") && l.contains("core::wrong") && l.ends_with("FAILED")),
        "{log}"
    );
}
