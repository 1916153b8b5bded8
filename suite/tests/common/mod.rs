//! What several integration tests share: one run of the suite against an
//! in-process reference host (the kill matrix starts it with a mutant, the
//! variant matrix as a conforming variant) and the headless Chromium that
//! the browser tests drive; the host that misbehaves on purpose.
//!
//! Each test binary compiles this module on its own and uses part of it.
#![allow(dead_code)]

pub mod chromium;
pub mod hostile;

use std::path::{Path, PathBuf};

use goalpost::bundled::{DEFAULT_TOKEN_A, DEFAULT_TOKEN_B, TENANT_A, TENANT_B};
use goalpost::report::RunReport;
use goalpost::{HostChoice, RunConfig};

/// The checkout's scenarios folder.
pub fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// The reference host's configuration for a conformance run: in memory,
/// the suite's two tenants, the webhook secret it shares with the suite.
pub fn host_config(secret: &str) -> goalpost_host::Config {
    let mut config = goalpost_host::Config::conformance_in_memory(vec![
        (DEFAULT_TOKEN_A.to_string(), TENANT_A.to_string()),
        (DEFAULT_TOKEN_B.to_string(), TENANT_B.to_string()),
    ]);
    config.webhook_secret = Some(secret.to_string());
    config
}

/// Starts a host with `config` on its own runtime (threads named `thread`),
/// runs the suite against it with `choose` applied to the run's
/// configuration (which profiles), stops the host and returns the report.
/// `config` must carry `secret` as its webhook secret ([`host_config`]).
pub fn run_suite(
    config: goalpost_host::Config,
    secret: &str,
    thread: &str,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name(thread)
        .build()
        .map_err(|error| format!("cannot start a runtime: {error}"))?;
    let host = runtime
        .block_on(goalpost_host::RunningHost::start(config))
        .map_err(|error| format!("cannot start the host: {error}"))?;
    let reports = tempfile::tempdir().map_err(|error| error.to_string())?;
    let harness = {
        use clap::Parser;
        libtest_mimic::Arguments::try_parse_from(["goalpost"]).map_err(|error| error.to_string())?
    };
    let mut run = RunConfig::bundled(scenarios(), reports.path().to_path_buf(), harness);
    run.host = HostChoice::Remote(host.base_url());
    run.token_a = DEFAULT_TOKEN_A.to_string();
    run.token_b = Some(DEFAULT_TOKEN_B.to_string());
    run.callback.secret = Some(secret.to_string());
    run.harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    choose(&mut run);
    let outcome = goalpost::run(run);
    runtime.block_on(host.shutdown());
    let outcome = outcome.map_err(|error| format!("the run did not start: {error}"))?;
    outcome
        .report
        .ok_or_else(|| "the run wrote no report".to_string())
}
