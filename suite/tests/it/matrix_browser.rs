//! matrix.html in a real browser: headless Chromium loads the page from
//! disk, runs its script, and the test reads the DOM it dumps: every row,
//! the filters driven through the URL fragment (a disposition some host
//! has, only the rows where hosts differ), and a failing cell's link to
//! that host's report.html at the failing exchange.
//!
//! Ignored by default (it needs Chromium, Debian package `chromium`, or
//! `GOALPOST_CHROMIUM`); `.ci/run` runs the ignored tests with it.

use crate::common;

use std::path::{Path, PathBuf};

use common::chromium::dump_dom;
use serde_json::json;

/// A report folder holding report.json (and an empty report.html).
fn host(dir: &Path, name: &str, dispositions: &[(&str, &str)]) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let report = json!({
        "suite": {"name": "goalpost", "version": "0.1.0"},
        "profileVersion": "1.0",
        "host": {"url": format!("http://{name}"), "discoverySha256": "0", "bundled": false},
        "startedAt": "2026-01-01T00:00:00.000Z", "finishedAt": "2026-01-01T00:00:01.000Z", "durationMs": 1000,
        "profiles": {"core": {"certified": false, "pass": 1, "fail": 1, "advisory": 0, "notReached": 0, "skip": 0, "error": 0}},
        "requirements": dispositions.iter().map(|(id, disposition)| json!({
            "id": id, "profile": id.split('.').next().unwrap(), "level": "MUST", "clause": "§1",
            "section": format!("PROFILE.md#{id}"), "text": "t", "disposition": disposition,
            "reason": null, "scenarios": ["core::x"], "message": null, "mutationVerified": null,
            "failedCheck": if *disposition == "fail" { json!({"scenario": "core::x", "step": 1, "name": "create", "at": "/steps/0/expect/status"}) } else { json!(null) }
        })).collect::<Vec<_>>(),
        "scenarios": []
    });
    let path = folder.join("report.json");
    std::fs::write(&path, report.to_string()).unwrap();
    std::fs::write(
        folder.join("report.html"),
        "<!DOCTYPE html><title>r</title>",
    )
    .unwrap();
    path
}

/// `(id, hidden)` of every matrix row in a dumped DOM.
fn rows(dom: &str) -> Vec<(String, bool)> {
    dom.match_indices("<tr data-profile=")
        .filter_map(|(at, _)| {
            let tag = &dom[at..at + dom[at..].find('>')?];
            let start = tag.find("id=\"requirement-")? + "id=\"requirement-".len();
            let id = &tag[start..start + tag[start..].find('"')?];
            Some((id.to_string(), tag.contains(" hidden")))
        })
        .collect()
}

fn visible(dom: &str) -> Vec<String> {
    rows(dom)
        .into_iter()
        .filter(|(_, hidden)| !hidden)
        .map(|(id, _)| id)
        .collect()
}

#[test]
#[ignore = "needs chromium; .ci/run installs it and runs it"]
fn the_matrix_filters_in_a_browser_and_links_failures() {
    let dir = tempfile::tempdir().unwrap();
    let one = host(dir.path(), "one", &[("core.a", "pass"), ("core.b", "pass")]);
    let two = host(dir.path(), "two", &[("core.a", "fail"), ("core.b", "pass")]);
    let out = dir.path().join("matrix");
    std::fs::create_dir_all(&out).unwrap();
    let columns = goalpost::commands::matrix::columns(&[one, two], &out).unwrap();
    goalpost::commands::matrix::write(&columns, &out).unwrap();
    let page = out.join(goalpost::commands::matrix::HTML_FILE);

    let dom = dump_dom(&page, "");
    assert_eq!(visible(&dom), ["core.a", "core.b"], "{dom}");
    assert!(
        !dom.contains("<form id=\"filters\" hidden"),
        "the script shows the filters"
    );
    assert!(
        dom.contains("href=\"../two/report.html#scenario-core::x\""),
        "{dom}"
    );

    let failing = dump_dom(&page, "#disposition=fail");
    assert_eq!(visible(&failing), ["core.a"]);
    assert!(failing.contains("1 of 2 requirements shown"), "{failing}");

    let differ = dump_dom(&page, "#differ=1");
    assert_eq!(visible(&differ), ["core.a"]);
    assert_eq!(dom.matches("<script").count(), 1);
}
