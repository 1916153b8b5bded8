//! A `goalpost` binary copied out of the build tree (into a container, a CI
//! cache, `~/.cargo/bin`) carries the profile it certifies: run from an empty
//! folder with a fresh HOME it judges the bundled reference host exactly as
//! a run with the checkout's scenarios does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The binary, copied into `dir`.
fn copy_binary(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_BIN_EXE_goalpost"));
    let copy = dir.join(source.file_name().expect("a file name"));
    std::fs::copy(source, &copy).expect("copy the binary");
    copy
}

fn run_in(binary: &Path, cwd: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("GOALPOST_HOST")
        .env_remove("GOALPOST_TOKEN")
        .env_remove("GOALPOST_TOKEN_B")
        .env_remove("GOALPOST_BASE_PATH")
        .output()
        .expect("the binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// requirement id → disposition, from a report.json.
fn dispositions(report: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(report).expect("report.json");
    let value: Value = serde_json::from_str(&text).expect("JSON");
    value["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .map(|requirement| {
            (
                requirement["id"].as_str().expect("id").to_string(),
                requirement["disposition"]
                    .as_str()
                    .expect("disposition")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn a_copied_binary_runs_from_an_empty_folder_like_the_checkout() {
    let empty = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("temp dir");
    let binary = copy_binary(empty.path());
    assert!(
        !empty
            .path()
            .ancestors()
            .any(|dir| dir.join("scenarios").exists()),
        "the temp folder must have no scenarios/ above it"
    );
    let alone = run_in(
        &binary,
        empty.path(),
        home.path(),
        &[
            "run",
            "--profile",
            "core",
            "--quiet",
            "--report-dir",
            "alone",
        ],
    );
    assert_eq!(alone.status.code(), Some(0), "{}", text(&alone));
    let alone_report = empty.path().join("alone");
    // The section links of the report open from disk: the profile came too.
    let profile = std::fs::read_to_string(alone_report.join("PROFILE.md")).expect("PROFILE.md");
    assert!(profile.contains("<a id=\"skip-seam-absent\"></a>"));
    let html = std::fs::read_to_string(alone_report.join("report.html")).expect("report.html");
    assert!(
        html.contains("href=\"PROFILE.md#"),
        "no local PROFILE.md links"
    );

    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let checkout = run_in(
        &binary,
        empty.path(),
        home.path(),
        &[
            "run",
            "--profile",
            "core",
            "--quiet",
            "--report-dir",
            "checkout",
            "--scenarios",
            scenarios.to_str().expect("UTF-8 path"),
        ],
    );
    assert_eq!(checkout.status.code(), Some(0), "{}", text(&checkout));
    let embedded = dispositions(&alone_report.join("report.json"));
    let from_files = dispositions(&empty.path().join("checkout/report.json"));
    assert!(!embedded.is_empty());
    assert_eq!(embedded, from_files);
}

#[test]
fn version_names_the_profile_it_certifies() {
    let empty = tempfile::tempdir().expect("temp dir");
    let binary = copy_binary(empty.path());
    let output = run_in(&binary, empty.path(), empty.path(), &["--version"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("certifies goalpost profile 1.0"),
        "{stdout}"
    );
}

#[test]
fn explain_and_list_work_from_an_empty_folder() {
    let empty = tempfile::tempdir().expect("temp dir");
    let binary = copy_binary(empty.path());
    let explain = run_in(
        &binary,
        empty.path(),
        empty.path(),
        &["explain", "core.create.bounds-required"],
    );
    assert_eq!(explain.status.code(), Some(0), "{}", text(&explain));
    assert!(String::from_utf8_lossy(&explain.stdout).contains("scenarios/core/"));
    let list = run_in(
        &binary,
        empty.path(),
        empty.path(),
        &["list", "--requirements"],
    );
    assert_eq!(list.status.code(), Some(0), "{}", text(&list));
    assert!(String::from_utf8_lossy(&list.stdout).contains("core.create.bounds-required"));
}
