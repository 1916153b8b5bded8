//! The whole suite against the bundled reference host, in-process, through
//! the same library path as `goalpost run`. Fails unless every selected
//! profile is certified (or, when a filter narrows the run, unless anything
//! that ran failed or errored), and unless the published report in
//! `reports/reference-host/` reaches the same conclusions as this run.

use std::path::Path;
use std::process::ExitCode;

use goalpost::report::console;
use goalpost::RunConfig;

fn main() -> ExitCode {
    let harness = libtest_mimic::Arguments::from_args();
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let reports = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("reference_host: cannot create a report folder: {error}");
            return ExitCode::from(2);
        }
    };
    let listing = harness.list;
    let mut config = RunConfig::bundled(scenarios, reports.path().to_path_buf(), harness);
    // `strict` is opt-in for `goalpost run`; the reference host must pass it
    // too, so this certifies every profile.
    config.strict = true;
    let outcome = match goalpost::run(config) {
        Ok(outcome) => outcome,
        Err(error) => {
            eprintln!("reference_host: the run could not start: {error}");
            return ExitCode::from(2);
        }
    };
    let Some(report) = &outcome.report else {
        return if listing {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    };
    if console::write(report, std::io::stdout().lock()).is_err() {
        return ExitCode::FAILURE;
    }
    if outcome.exit_code() != 0 {
        return ExitCode::FAILURE;
    }
    if let Err(problem) = check_written_report(reports.path()) {
        eprintln!("reference_host: {problem}");
        return ExitCode::FAILURE;
    }
    if !outcome.filtered && !report.all_selected_certified() {
        eprintln!("reference_host: the reference host must certify every selected profile");
        return ExitCode::FAILURE;
    }
    if !outcome.filtered {
        if let Err(problem) = check_published_report(reports.path()) {
            eprintln!("reference_host: {problem}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The committed report of the reference host must not go stale: every
/// requirement's disposition, every scenario's outcome and every profile's
/// certification in this run must match it.
fn check_published_report(dir: &Path) -> Result<(), String> {
    let published = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/reference-host")
        .join(goalpost::runner::REPORT_JSON);
    let read = |path: &Path| -> Result<serde_json::Value, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
    };
    let committed = read(&published)?;
    let fresh = read(&dir.join(goalpost::runner::REPORT_JSON))?;
    let differences = goalpost::report::compare::differences(&committed, &fresh);
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the published report {} is stale:\n  {}\nRegenerate it (see README, \"Published report\"):\n  \
         cargo run --release -p goalpost -- run --strict --report-dir reports/reference-host\n  \
         GOALPOST_BLESS=1 cargo test -p goalpost --test it -- --ignored browser::",
        published.display(),
        differences.join("\n  ")
    ))
}

/// The report on disk must be exactly what the schema allows.
fn check_written_report(dir: &Path) -> Result<(), String> {
    let path = dir.join(goalpost::runner::REPORT_JSON);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("report.json is not JSON: {e}"))?;
    let schemas = goalpost_schemas::Schemas::embedded().map_err(|e| e.to_string())?;
    schemas.validate("report", &value).map_err(|violations| {
        let shown: Vec<String> = violations.iter().map(ToString::to_string).collect();
        format!(
            "report.json violates the report schema: {}",
            shown.join("; ")
        )
    })
}
