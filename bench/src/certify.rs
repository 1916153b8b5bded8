//! Measurement 1, time to certify: the whole suite (every profile, strict
//! included) against the bundled host, in-process through the suite
//! library exactly as `goalpost run` does it, against the waits written
//! into the scenario files (see [`crate::waits`]).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use goalpost::config::DEFAULT_TEST_THREADS;
use goalpost::RunConfig;
use goalpost_host::engine::EngineSettings;

use crate::stats::duration;
use crate::table::Row;
use crate::waits;

/// Target: the whole suite in under this many seconds.
const TARGET_WALL_S: f64 = 10.0;
/// Target: wall time at most this multiple of the unavoidable wait.
const TARGET_RATIO: f64 = 1.5;

pub fn measure(root: &Path) -> Result<Vec<Row>> {
    let scenarios = root.join("scenarios");
    let webhook_timeout = EngineSettings::default().webhook_timeout;
    let waits = waits::load(&scenarios, webhook_timeout, DEFAULT_TEST_THREADS)?;
    let unavoidable = waits.unavoidable();

    let out = tempfile::tempdir().context("cannot make a report folder")?;
    let harness = libtest_mimic::Arguments {
        // The harness's progress lines would bury the table.
        logfile: Some(
            out.path()
                .join("harness.log")
                .to_string_lossy()
                .into_owned(),
        ),
        ..libtest_mimic::Arguments::default()
    };
    let mut config = RunConfig::bundled(scenarios, out.path().join("report"), harness);
    config.strict = true;

    let started = Instant::now();
    let outcome = goalpost::run(config).context("the suite could not start")?;
    let wall = started.elapsed();

    let report = outcome
        .report
        .as_ref()
        .context("the suite wrote no report")?;
    let scenarios_run = report.scenarios.len();
    let all_passed = outcome.exit_code() == 0;
    let wall_s = wall.as_secs_f64();
    let ratio = wall_s / unavoidable.as_secs_f64().max(f64::EPSILON);
    let longest = waits
        .longest()
        .map(|wait| format!("{} {} ms", wait.name, wait.total_ms()))
        .unwrap_or_default();

    let verdict = if all_passed {
        "every scenario passed"
    } else {
        "SOMETHING FAILED: the timing is not a certification"
    };
    Ok(vec![
        Row::target(
            format!("certify: wall time, {scenarios_run} scenarios, all profiles ({verdict})"),
            duration(wall),
            format!("< {TARGET_WALL_S:.0} s"),
            all_passed && wall_s < TARGET_WALL_S,
        ),
        Row::target(
            format!(
                "certify: wall / unavoidable wait (longest {longest}; ΣW {} ms over {DEFAULT_TEST_THREADS} threads)",
                waits.sum_ms()
            ),
            duration(wall),
            format!("≤ {TARGET_RATIO}"),
            ratio <= TARGET_RATIO,
        )
        .with_baseline(duration(unavoidable), ratio),
    ])
}
