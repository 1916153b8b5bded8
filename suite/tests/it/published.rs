//! The published report of the reference host is complete: every file a
//! run writes, the screenshot, and a README that shows every badge. (That
//! its conclusions are current is checked by `tests/reference_host.rs`,
//! which has a fresh run to compare with.)

use std::path::{Path, PathBuf};

fn published() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/reference-host")
}

fn report() -> serde_json::Value {
    let text = std::fs::read_to_string(published().join("report.json"))
        .expect("reports/reference-host/report.json is committed");
    serde_json::from_str(&text).expect("report.json is JSON")
}

fn profiles() -> Vec<String> {
    report()["profiles"]
        .as_object()
        .expect("profiles")
        .keys()
        .cloned()
        .collect()
}

#[test]
fn every_report_file_and_the_screenshot_are_there() {
    let mut expected: Vec<String> = [
        "junit.xml",
        "report.html",
        "report.json",
        "report.md",
        "screenshot.png",
    ]
    .map(String::from)
    .to_vec();
    expected.extend(profiles().iter().map(|p| format!("badge-{p}.svg")));
    expected.sort();
    let mut found: Vec<String> = std::fs::read_dir(published())
        .expect("reports/reference-host exists")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(
        found, expected,
        "regenerate with `cargo run --release -p goalpost -- run --strict --report-dir reports/reference-host` (see README)"
    );
}

#[test]
fn the_published_run_certified_every_profile_it_selected() {
    let report = report();
    let requirements = report["requirements"].as_array().expect("requirements");
    for (name, profile) in report["profiles"].as_object().expect("profiles") {
        // Opted out, or a profile one host cannot be judged on (cluster:
        // it needs several endpoints of one deployment).
        let opted_out = requirements
            .iter()
            .filter(|r| r["profile"] == name.as_str())
            .all(|r| r["reason"] == "opted-out" || r["reason"] == "needs-endpoints");
        assert!(
            profile["certified"] == true || opted_out,
            "the reference host is not certified for {name}: {profile}"
        );
    }
    assert_eq!(report["host"]["bundled"], true);
}

#[test]
fn the_readme_shows_every_badge_and_links_the_report() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let commands: Vec<&str> = readme.lines().skip(3).take(2).collect();
    assert!(
        commands[0].starts_with("cargo run --release -p goalpost -- run")
            && commands[1].starts_with("cargo test --workspace"),
        "the README starts with its two commands: {commands:?}"
    );
    let one_host_cannot_judge = needs_endpoints();
    for profile in profiles() {
        // A profile one host cannot be judged on shows the published
        // cluster run's badge instead.
        let folder = if one_host_cannot_judge.contains(&profile) {
            "cluster"
        } else {
            "reference-host"
        };
        let badge = format!("(reports/{folder}/badge-{profile}.svg)");
        assert!(readme.contains(&badge), "README does not show {badge}");
    }
    assert!(readme.contains("(reports/reference-host/report.html)"));
    assert!(readme.contains("(reports/cluster/report.html)"));
}

/// The profiles whose every requirement the one bundled host skipped for
/// want of endpoints.
fn needs_endpoints() -> Vec<String> {
    let report = report();
    let requirements = report["requirements"].as_array().expect("requirements");
    profiles()
        .into_iter()
        .filter(|name| {
            let mut of = requirements
                .iter()
                .filter(|r| r["profile"] == name.as_str())
                .peekable();
            of.peek().is_some() && of.all(|r| r["reason"] == "needs-endpoints")
        })
        .collect()
}

/// The cluster run (three replicas on one PostgreSQL database,
/// `scripts/certify-cluster.sh`) is published beside the reference host's:
/// every file, and every profile certified. That it is current is checked
/// by `tests/it/cluster_matrix.rs` (its clean cluster) and by `.ci/run`
/// (`goalpost diff` against a fresh cluster run).
#[test]
fn the_cluster_run_is_published_and_certified() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/cluster");
    let text = std::fs::read_to_string(folder.join("report.json")).expect(
        "reports/cluster/report.json is committed (regenerate: OUT=reports/cluster scripts/certify-cluster.sh)",
    );
    let report: serde_json::Value = serde_json::from_str(&text).expect("report.json is JSON");
    let profiles = report["profiles"].as_object().expect("profiles");
    assert!(
        !needs_endpoints().is_empty(),
        "the bundled host skips cluster"
    );
    for name in needs_endpoints() {
        assert_eq!(
            profiles[&name]["certified"], true,
            "the published cluster run certifies {name}"
        );
    }
    for (name, profile) in profiles {
        // A PostgreSQL deployment does not serve the attention extension
        // (`Store::serves_attention`), so its run leaves that profile out:
        // judged on nothing, it is neither certified nor failed.
        let judged = ["pass", "fail", "advisory", "notReached", "error"]
            .iter()
            .any(|count| profile[*count].as_u64().unwrap_or(0) > 0);
        if name == "attention" && !judged {
            continue;
        }
        assert_eq!(
            profile["certified"], true,
            "the published cluster run certifies {name}: {profile}"
        );
        assert!(
            folder.join(format!("badge-{name}.svg")).is_file(),
            "reports/cluster/badge-{name}.svg"
        );
    }
    for file in ["report.html", "report.md", "junit.xml"] {
        assert!(folder.join(file).is_file(), "reports/cluster/{file}");
    }
    assert_eq!(report["host"]["bundled"], false);
}
