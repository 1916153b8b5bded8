//! `goalpost validate`, `goalpost schemas` and `goalpost explain` through the
//! built binary: output and exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn goalpost(args: &[&str], stdin: &str, cwd: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("the binary ends")
}

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const GOAL: &str = r#"{
  "id": "goal-1", "objective": "ship it", "state": "active",
  "completion": {"check": "verifier", "verifierRef": null},
  "continuation": {"mode": "manual", "armRef": null},
  "bounds": {"maxLoopIterations": 3},
  "owner": {"tenant": "acme"},
  "createdAt": "2026-06-13T00:00:00.000Z"
}"#;

#[test]
fn a_valid_file_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("goal.json"), GOAL).unwrap();
    let output = goalpost(&["validate", "goal", "goal.json"], "", dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "goal.json: valid\n");
}

#[test]
fn an_invalid_payload_exits_one_with_pointer_and_message_lines() {
    let dir = tempfile::tempdir().unwrap();
    let bad = GOAL
        .replace("\"active\"", "\"done\"")
        .replace("\"maxLoopIterations\": 3", "\"maxLoopIterations\": 0");
    let output = goalpost(&["validate", "goal", "-"], &bad, dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("(stdin): invalid, "), "{out}");
    assert!(lines.iter().any(|l| l.starts_with("/state: ")), "{out}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/bounds/maxLoopIterations: ")),
        "{out}"
    );
}

#[test]
fn several_files_take_the_worst_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.json"), GOAL).unwrap();
    std::fs::write(dir.path().join("bad.json"), r#"{"id": 1}"#).unwrap();
    std::fs::write(dir.path().join("garbage.json"), "not json").unwrap();
    let invalid = goalpost(
        &["validate", "goal", "good.json", "bad.json"],
        "",
        dir.path(),
    );
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stdout(&invalid).starts_with("good.json: valid\nbad.json: invalid, "));
    let unreadable = goalpost(
        &[
            "validate",
            "goal",
            "good.json",
            "garbage.json",
            "missing.json",
        ],
        "",
        dir.path(),
    );
    assert_eq!(unreadable.status.code(), Some(2));
    let err = stderr(&unreadable);
    assert!(err.contains("garbage.json: not JSON"), "{err}");
    assert!(err.contains("missing.json: cannot read"), "{err}");
}

#[test]
fn an_unknown_schema_exits_two() {
    let output = goalpost(&["validate", "goals", "-"], GOAL, workspace());
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("unknown schema `goals`"));
    let usage = goalpost(&["validate"], "", workspace());
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn every_suite_file_validates_against_its_schema() {
    // The published report and the registry are payloads too.
    let root = workspace();
    for (schema, file) in [
        ("requirements", "scenarios/requirements.json"),
        ("scenario", "scenarios/core/create.json"),
        ("report", "reports/reference-host/report.json"),
    ] {
        let output = goalpost(&["validate", schema, file], "", root);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{file}: {}{}",
            stdout(&output),
            stderr(&output)
        );
    }
}

#[test]
fn schemas_lists_every_name() {
    let output = goalpost(&["schemas"], "", workspace());
    assert_eq!(output.status.code(), Some(0));
    let names: Vec<String> = stdout(&output)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, goalpost_schemas::NAMES);
}

#[test]
fn explain_prints_the_requirement_and_what_proves_it() {
    let output = goalpost(&["explain", "core.create.bounds-required"], "", workspace());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.starts_with(
            "core.create.bounds-required  (core profile, MUST)\n\
             Level: MUST (a failure blocks certification of core)\n\
             Section: PROFILE.md#core.create.bounds-required\n"
        ),
        "{out}"
    );
    assert!(out.contains("  core::create-bounds-required  "), "{out}");
    assert!(
        out.contains("(scenarios/core/create-bounds-required.json)"),
        "{out}"
    );
    assert!(
        out.ends_with("Mutation-verified by: default-bounds\n"),
        "{out}"
    );
}

#[test]
fn explain_of_an_unknown_id_exits_two() {
    let output = goalpost(&["explain", "core.create.bounds"], "", workspace());
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("did you mean: core.create.bounds-required"),
        "{}",
        stderr(&output)
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let output = goalpost(
        &["explain", "core.x", "--scenarios", "nowhere"],
        "",
        elsewhere.path(),
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn list_requirements_shows_each_with_its_mutants() {
    let output = goalpost(&["list", "--requirements"], "", workspace());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let line = out
        .lines()
        .find(|line| line.starts_with("core.create.bounds-required "))
        .unwrap_or_else(|| panic!("no line for core.create.bounds-required in {out}"));
    assert!(line.contains(" MUST "), "{line}");
    assert!(line.contains(" yes "), "{line}");
    assert!(line.contains("default-bounds"), "{line}");
    assert!(
        out.lines()
            .last()
            .is_some_and(|last| last.contains(" mutation-verified")),
        "{out}"
    );
    let bare = goalpost(&["list"], "", workspace());
    assert_eq!(bare.status.code(), Some(2), "`list` needs --requirements");
}
