//! report.html in a real browser: headless Chromium loads the file from
//! disk, runs its script, and the test reads the DOM it dumps: the table
//! rows, a filter driven through the URL fragment exactly as a click on the
//! select would, a failing step's curl command, and that a hostile host's
//! body stayed text. A screenshot is written next to the report.
//!
//! Ignored by default (it needs Chromium); `.ci/run` installs Debian's
//! `chromium` package and runs it with `-- --ignored`. `GOALPOST_CHROMIUM`
//! names another binary. With `GOALPOST_BLESS=1` the published report's
//! screenshot in `reports/reference-host/` is rewritten.

use crate::common;
use crate::sample_report;

use std::path::{Path, PathBuf};

use common::chromium::{dump_dom, screenshot};

const SCREENSHOT: &str = "screenshot.png";

/// The requirement rows of a dumped DOM: (disposition, profile, hidden).
fn rows(dom: &str) -> Vec<(String, String, bool)> {
    let attribute = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
        let end = tag[start..].find('"')? + start;
        Some(tag[start..end].to_string())
    };
    dom.match_indices("<tr data-profile=")
        .map(|(at, _)| {
            let tag = &dom[at..at + dom[at..].find('>').expect("tag ends")];
            (
                attribute(tag, "data-disposition").unwrap_or_default(),
                attribute(tag, "data-profile").unwrap_or_default(),
                tag.contains(" hidden"),
            )
        })
        .collect()
}

fn element_text<'a>(dom: &'a str, start_tag: &str) -> &'a str {
    let start = dom
        .find(start_tag)
        .unwrap_or_else(|| panic!("no {start_tag} in the DOM"))
        + start_tag.len();
    let end = dom[start..].find("</").expect("element closes") + start;
    &dom[start..end]
}

fn write_sample(dir: &Path) -> PathBuf {
    let path = dir.join("report.html");
    let file = std::fs::File::create(&path).expect("create report.html");
    goalpost::report::html::write(&sample_report::report(), file).expect("write report.html");
    path
}

#[test]
#[ignore = "needs chromium; .ci/run installs it and runs it"]
fn a_failing_report_shows_every_row_filters_and_the_curl_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = write_sample(dir.path());

    let dom = dump_dom(&report, "");
    let all = rows(&dom);
    assert_eq!(all.len(), 13, "{dom}");
    assert!(all.iter().all(|(_, _, hidden)| !hidden), "{all:?}");
    assert!(
        !dom.contains("<form id=\"filters\" hidden"),
        "the script shows the filters"
    );
    assert_eq!(
        element_text(&dom, "<output id=\"shown\">"),
        "13 of 13 requirements shown"
    );

    // The fragment sets the select and fires its change event, the same
    // path as choosing "fail" with the mouse.
    let failed = dump_dom(&report, "#disposition=fail");
    let rows_after = rows(&failed);
    assert_eq!(rows_after.len(), 13);
    for (disposition, _, hidden) in &rows_after {
        assert_eq!(*hidden, disposition != "fail", "{rows_after:?}");
    }
    assert_eq!(
        element_text(&failed, "<output id=\"shown\">"),
        "2 of 13 requirements shown"
    );
    assert!(failed.contains("data-filter-disposition=\"fail\""));

    // Advisories are a disposition of their own, never shown as failures.
    let advisory = dump_dom(&report, "#disposition=advisory");
    assert_eq!(
        element_text(&advisory, "<output id=\"shown\">"),
        "2 of 13 requirements shown"
    );

    let core_failed = dump_dom(&report, "#profile=core&disposition=fail");
    let visible: Vec<_> = rows(&core_failed)
        .into_iter()
        .filter(|(_, _, h)| !h)
        .collect();
    assert_eq!(visible, [("fail".to_string(), "core".to_string(), false)]);

    // The failing step's curl command, as the DOM holds it.
    let curl = element_text(&dom, "<pre class=\"curl\" id=\"curl-1\">");
    assert!(curl.starts_with("curl -sS -i \\\n  -X POST \\\n"), "{curl}");
    assert!(
        curl.contains("-H \"authorization: Bearer $TOKEN\""),
        "{curl}"
    );
    assert!(
        curl.contains(r#"--data-binary '{"objective":"goalpost 0123456789abcdef it'\''s done""#),
        "{curl}"
    );

    // The hostile body stayed text: no element, no script ran.
    assert!(!dom.contains("<img"), "{dom}");
    assert_eq!(dom.matches("<script").count(), 1);
    assert!(
        dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"),
        "{dom}"
    );
    assert!(!element_text(&dom, "<title>").contains("pwned"));

    screenshot(&report, "#disposition=fail", &dir.path().join(SCREENSHOT));
}

#[test]
#[ignore = "needs chromium; .ci/run installs it and runs it"]
fn the_published_report_renders_every_requirement() {
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/reference-host");
    let published = published.canonicalize().unwrap_or(published);
    let report = published.join("report.html");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(published.join("report.json")).expect("published report.json"),
    )
    .expect("report.json is JSON");
    let expected: Vec<String> = json["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .map(|r| r["disposition"].as_str().unwrap_or_default().to_string())
        .collect();
    let dom = dump_dom(&report, "");
    let shown: Vec<String> = rows(&dom).into_iter().map(|(d, _, _)| d).collect();
    assert_eq!(shown, expected);

    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join(SCREENSHOT);
    screenshot(&report, "", &fresh);
    let committed = published.join(SCREENSHOT);
    if std::env::var_os("GOALPOST_BLESS").is_some_and(|v| v == "1") {
        std::fs::copy(&fresh, &committed).expect("write the published screenshot");
    }
    let bytes = std::fs::read(&committed).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; GOALPOST_BLESS=1 cargo test -p goalpost --test it -- --ignored browser:: writes it",
            committed.display()
        )
    });
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
}
