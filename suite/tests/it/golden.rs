//! Every report format, written from a fixed hand-made report into a
//! `Vec<u8>` and compared byte for byte with `tests/golden/`. After an
//! intended change, `GOALPOST_BLESS=1 cargo test -p goalpost --test it -- golden::`
//! rewrites the files; review them in the diff.

use crate::sample_report;

use std::path::{Path, PathBuf};

use goalpost::report::console::{self, Style};
use goalpost::report::{badge, html, json, junit, markdown, RunReport};

type Writer = fn(&RunReport, &mut Vec<u8>) -> std::io::Result<()>;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn blessing() -> bool {
    std::env::var_os("GOALPOST_BLESS").is_some_and(|v| v == "1")
}

/// Compares with the golden file (or rewrites it when blessing) and says
/// where the first difference is.
fn check(name: &str, writer: Writer) {
    let mut written = Vec::new();
    writer(&sample_report::report(), &mut written).expect("writing into memory cannot fail");
    let path = golden_dir().join(name);
    if blessing() {
        std::fs::create_dir_all(golden_dir()).expect("golden folder");
        std::fs::write(&path, &written).expect("write golden file");
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read {}: {error}; run with GOALPOST_BLESS=1 to create it",
            path.display()
        )
    });
    if written == expected {
        return;
    }
    let (written, expected) = (
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&expected),
    );
    let line = written
        .lines()
        .zip(expected.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| written.lines().count().min(expected.lines().count()));
    panic!(
        "{name} differs from {} at line {}:\n  golden:  {:?}\n  written: {:?}\n\
         (GOALPOST_BLESS=1 cargo test -p goalpost --test it -- golden:: rewrites it after an intended change)",
        path.display(),
        line + 1,
        expected.lines().nth(line).unwrap_or("(end of file)"),
        written.lines().nth(line).unwrap_or("(end of file)"),
    );
}

#[test]
fn report_json() {
    check("report.json", |r, out| json::write(r, out));
}

#[test]
fn junit_xml() {
    check("junit.xml", |r, out| junit::write(r, out));
}

#[test]
fn report_html() {
    check("report.html", |r, out| html::write(r, out));
}

#[test]
fn report_md() {
    check("report.md", |r, out| markdown::write(r, out));
}

#[test]
fn badges() {
    check("badge-behavior.svg", |r, out| {
        badge::write_profile(r, "behavior", out)
    });
    check("badge-core.svg", |r, out| {
        badge::write_profile(r, "core", out)
    });
    check("badge-hardening.svg", |r, out| {
        badge::write_profile(r, "hardening", out)
    });
    check("badge-observed.svg", |r, out| {
        badge::write_profile(r, "observed", out)
    });
    check("badge-strict.svg", |r, out| {
        badge::write_profile(r, "strict", out)
    });
}

#[test]
fn console_summary() {
    check("console.txt", |r, out| console::write(r, out));
    check("console-colour.txt", |r, out| {
        console::write_styled(r, out, Style { colour: true })
    });
}

#[test]
fn the_golden_json_is_valid_against_the_report_schema() {
    let text = std::fs::read_to_string(golden_dir().join("report.json")).expect("golden json");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    let schemas = goalpost_schemas::Schemas::embedded().expect("schemas");
    if let Err(violations) = schemas.validate("report", &value) {
        panic!("golden report.json violates the schema: {violations:?}");
    }
}
