//! The `goalpost` binary: argument handling and exit codes (0 nothing
//! failed or errored, 1 something did, 2 the run could not start).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use support::{FakeOptions, TOKEN_A};

fn goalpost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .args(args)
        .env_remove("GOALPOST_HOST")
        .env_remove("GOALPOST_TOKEN")
        .env_remove("GOALPOST_TOKEN_B")
        .output()
        .expect("the binary runs")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-host")
}

fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_clean_run_exits_zero_and_prints_the_summary() {
    let url = support::start_in_background(FakeOptions {
        advertise_seams: false,
        advertise_goals: true,
    });
    let reports = tempfile::tempdir().unwrap();
    let output = goalpost(&[
        "run",
        "--host",
        &url,
        "--token",
        TOKEN_A,
        "--scenarios",
        fixtures().to_str().unwrap(),
        "--report-dir",
        reports.path().to_str().unwrap(),
        "--test-threads",
        "1",
    ]);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert!(
        all.contains("test result: ok. 2 passed; 0 failed; 1 ignored"),
        "{all}"
    );
    // The harness counts trials, the table requirements: the summary says so.
    assert!(
        all.contains("2 scenarios (trials) ran, 1 skipped: the harness counts these trials; the table below counts requirements."),
        "{all}"
    );
    assert!(
        all.contains(
            "core      certified          2      0         0            0      0      0      0"
        ),
        "{all}"
    );
    // The fake host advertises no seams: behavior's minimum scope is not
    // met, so the run says what it would need rather than "not certified".
    assert!(
        all.contains(
            "behavior  not attempted      0      0         0            0      1      0      0"
        ),
        "{all}"
    );
    assert!(
        all.contains("  core: judge verifier; mode manual\n"),
        "{all}"
    );
    assert!(
        all.contains("  behavior: not attempted — needs the `continue` seam"),
        "{all}"
    );
    assert!(
        all.contains("  seam-absent: The host does not list a conformance seam"),
        "{all}"
    );
    for file in [
        "report.json",
        "junit.xml",
        "report.html",
        "report.md",
        "badge-core.svg",
    ] {
        assert!(reports.path().join(file).is_file(), "{file} not written");
    }
}

#[test]
fn a_failure_exits_one() {
    let url = support::start_in_background(FakeOptions {
        advertise_seams: true,
        advertise_goals: true,
    });
    let reports = tempfile::tempdir().unwrap();
    let output = goalpost(&[
        "run",
        "--host",
        &url,
        "--token",
        TOKEN_A,
        "--scenarios",
        fixtures().to_str().unwrap(),
        "--report-dir",
        reports.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
}

#[test]
fn list_and_filters_go_to_the_harness() {
    let url = support::start_in_background(FakeOptions {
        advertise_seams: false,
        advertise_goals: true,
    });
    let output = goalpost(&[
        "run",
        "--host",
        &url,
        "--token",
        TOKEN_A,
        "--scenarios",
        fixtures().to_str().unwrap(),
        "--list",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let listed: Vec<&str> = stdout.lines().filter(|l| l.ends_with(": test")).collect();
    assert_eq!(
        listed,
        [
            "[seam-absent] behavior::continue: test",
            "core::auth: test",
            "core::create: test"
        ]
    );
}

#[test]
fn bad_arguments_exit_two() {
    for args in [
        vec!["run", "--profile", "nope"],
        vec!["run", "--host", "http://127.0.0.1:9"],
        vec!["run", "--host", "ftp://x", "--token", "t"],
        vec!["run", "--", "--no-such-harness-flag"],
        vec!["walk"],
    ] {
        let output = goalpost(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
    }
    let help = goalpost(&["run", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--timeout-scale"));
}

#[test]
fn an_unreachable_host_exits_two() {
    let output = goalpost(&[
        "run",
        "--host",
        "http://127.0.0.1:9",
        "--token",
        "t",
        "--scenarios",
        fixtures().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("discovery"));
}

#[test]
fn an_invalid_scenario_exits_two_naming_file_and_pointer() {
    let dir = support::scenarios_folder(
        &["core.x"],
        &[(
            "core/bad.json",
            json!({"title": "bad", "profile": "core", "requirements": ["core.x"], "checks": 1,
                   "steps": [{"name": "s", "request": {"method": "GET", "path": "{base}"},
                              "expect": {"status": 200, "assert": [{"pointer": "/a", "equal": 1}]}}]}),
        )],
    );
    let output = goalpost(&[
        "run",
        "--host",
        "http://127.0.0.1:9",
        "--token",
        "t",
        "--scenarios",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        stderr.contains("core/bad.json") && stderr.contains("/steps/0/expect/assert/0"),
        "{stderr}"
    );
}

#[test]
fn zero_scenarios_exits_two() {
    let dir = support::scenarios_folder(&["core.x"], &[]);
    let output = goalpost(&[
        "run",
        "--host",
        "http://127.0.0.1:9",
        "--token",
        "t",
        "--scenarios",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no scenario files matched"));
}
