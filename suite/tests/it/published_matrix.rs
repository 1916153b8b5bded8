//! reports/matrix/ cannot go stale: it is built again from the reports it
//! shows (the reference host's, then each conforming variant's under
//! reports/variants/, in name order) and must be byte for byte what is
//! committed. Regenerate with `scripts/publish-matrix.sh` (or, for the
//! matrix alone, `SKIP_VARIANTS=1 scripts/publish-matrix.sh`).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The reports the published matrix is built from, in column order.
fn sources() -> Vec<PathBuf> {
    let mut sources = vec![root().join("reports/reference-host/report.json")];
    let variants = root().join("reports/variants");
    if let Ok(entries) = std::fs::read_dir(&variants) {
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("report.json"))
            .filter(|report| report.is_file())
            .collect();
        found.sort();
        sources.extend(found);
    }
    sources
}

#[test]
fn the_published_matrix_is_built_from_the_published_reports() {
    let out = root().join("reports/matrix");
    let columns =
        goalpost::commands::matrix::columns(&sources(), &out).expect("the published reports read");
    let fix =
        "regenerate it: scripts/publish-matrix.sh (SKIP_VARIANTS=1 to keep the variants' reports)";
    for (file, fresh) in [
        (
            goalpost::commands::matrix::HTML_FILE,
            goalpost::commands::matrix::html_page(&columns),
        ),
        (
            goalpost::commands::matrix::MARKDOWN_FILE,
            goalpost::commands::matrix::markdown_page(&columns),
        ),
    ] {
        let committed = std::fs::read_to_string(out.join(file))
            .unwrap_or_else(|error| panic!("reports/matrix/{file}: {error}; {fix}"));
        assert!(committed == fresh, "reports/matrix/{file} is stale; {fix}");
    }
}

#[test]
fn every_column_links_its_report_page() {
    let out = root().join("reports/matrix");
    let columns =
        goalpost::commands::matrix::columns(&sources(), &out).expect("the published reports read");
    assert_eq!(columns[0].label, "reference-host");
    for column in &columns {
        let href = column
            .report_html
            .as_deref()
            .unwrap_or_else(|| panic!("{} has no report.html", column.label));
        assert!(out.join(href).is_file(), "{href}");
    }
}

/// Every conforming variant in scenarios/variants.json has a published
/// report, and no report is left of a variant that is gone: the matrix shows
/// exactly the variants there are.
#[test]
fn every_conforming_variant_has_a_published_report() {
    let registry = root().join("scenarios/variants.json");
    let text = std::fs::read_to_string(&registry).expect("scenarios/variants.json");
    let document: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let mut expected: Vec<String> = document["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .filter_map(|variant| variant["name"].as_str().map(str::to_string))
        .collect();
    expected.sort();
    let mut published: Vec<String> = sources()
        .iter()
        .skip(1)
        .filter_map(|report| report.parent()?.file_name()?.to_str().map(str::to_string))
        .collect();
    published.sort();
    assert_eq!(
        published, expected,
        "reports/variants/ does not match scenarios/variants.json; run scripts/publish-matrix.sh"
    );
}
