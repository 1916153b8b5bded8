//! `goalpost diff` as a CI gate: crafted report.json files (the shape of
//! schemas/report.schema.json), exit 1 on a MUST regression, 0 otherwise,
//! 2 when a report cannot be read.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn report(dispositions: &[(&str, &str, &str)]) -> Value {
    json!({
        "suite": {"name": "goalpost", "version": "0.1.0"},
        "profileVersion": "1.0",
        "host": {"url": "http://h", "discoverySha256": "0", "bundled": false},
        "startedAt": "2026-01-01T00:00:00.000Z",
        "finishedAt": "2026-01-01T00:00:01.000Z",
        "durationMs": 1000,
        "profiles": {"core": {"certified": true, "pass": 1, "fail": 0, "advisory": 0, "notReached": 0, "skip": 0, "error": 0}},
        "requirements": dispositions.iter().map(|(id, level, disposition)| json!({
            "id": id, "profile": "core", "level": level, "clause": "§1",
            "section": format!("PROFILE.md#{id}"), "text": "t",
            "disposition": disposition, "reason": null, "scenarios": ["core::x"],
            "message": if *disposition == "pass" { Value::Null } else { json!("it broke") },
            "mutationVerified": null
        })).collect::<Vec<_>>(),
        "scenarios": []
    })
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

fn diff(old: &str, new: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .args(["diff", old, new])
        .output()
        .expect("the binary runs")
}

#[test]
fn a_must_regression_exits_one_and_names_the_requirement() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(
        dir.path(),
        "old.json",
        &report(&[("core.a", "MUST", "pass")]),
    );
    let new = write(
        dir.path(),
        "new.json",
        &report(&[("core.a", "MUST", "fail")]),
    );
    let output = diff(&old, &new);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("core.a MUST: pass → fail: it broke"),
        "{stdout}"
    );
    // The other way round it is a recovery.
    let back = diff(&new, &old);
    let stdout = String::from_utf8_lossy(&back.stdout);
    assert_eq!(back.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("recovered (1):"), "{stdout}");
}

#[test]
fn a_should_regression_and_no_change_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(
        dir.path(),
        "old.json",
        &report(&[("core.s", "SHOULD", "pass")]),
    );
    let new = write(
        dir.path(),
        "new.json",
        &report(&[("core.s", "SHOULD", "advisory")]),
    );
    assert_eq!(diff(&old, &new).status.code(), Some(0));
    assert_eq!(diff(&old, &old).status.code(), Some(0));
}

#[test]
fn the_published_report_against_itself_and_an_unreadable_one() {
    let published = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/reference-host/report.json")
        .to_string_lossy()
        .into_owned();
    let same = diff(&published, &published);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    let missing = diff(&published, "/nonexistent/report.json");
    assert_eq!(missing.status.code(), Some(2));
}
