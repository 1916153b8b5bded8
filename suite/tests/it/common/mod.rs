//! What several integration tests share: one run of the suite against an
//! in-process reference host (the kill matrix starts it with a mutant, the
//! variant matrix as a conforming variant), or against several replicas of
//! it on PostgreSQL (`postgres`); judging a mutant's run (`kills`); the
//! headless Chromium that the browser tests drive; the host that misbehaves
//! on purpose.
//!
//! Each test binary compiles this module on its own and uses part of it.
#![allow(dead_code)]

pub mod chromium;
pub mod hostile;
pub mod kills;
pub mod postgres;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use goalpost::bundled::{
    DEFAULT_HOST_AUTHORITY_TOKEN, DEFAULT_PRINCIPAL_TOKEN, DEFAULT_TOKEN_A, DEFAULT_TOKEN_B,
    TENANT_A, TENANT_B,
};
use goalpost::report::RunReport;
use goalpost::{HostChoice, RunConfig};
use goalpost_host_builds::mutants::Selection;

/// One host to start: its configuration and the mutant it runs, if any
/// (a plain configuration is the faithful host).
pub struct Hosted {
    pub config: goalpost_host::Config,
    pub mutant: Selection,
}

impl From<goalpost_host::Config> for Hosted {
    fn from(config: goalpost_host::Config) -> Hosted {
        Hosted {
            config,
            mutant: Selection::default(),
        }
    }
}

/// The checkout's scenarios folder.
pub fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// A free port on 127.0.0.1 for the suite's callback, chosen before the
/// host starts so the host may call that port and no other loopback one
/// (as `goalpost`'s bundled host does). The probe socket is closed at
/// once; the mock binds the port moments later.
pub fn callback_listen() -> Result<SocketAddr, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|probe| probe.local_addr())
        .map_err(|error| format!("cannot find a callback port: {error}"))
}

/// The reference host's configuration for a conformance run: in memory,
/// the suite's two tenants, the webhook secret it shares with the suite,
/// and an egress allowlist of the suite's callback and nothing else.
pub fn host_config(secret: &str, callback: SocketAddr) -> Result<goalpost_host::Config, String> {
    let mut config = goalpost_host::Config::conformance_in_memory(vec![
        (DEFAULT_TOKEN_A.to_string(), TENANT_A.to_string()),
        (DEFAULT_TOKEN_B.to_string(), TENANT_B.to_string()),
    ]);
    config.webhook_secret = Some(secret.to_string());
    config.webhook_allow = vec![goalpost_host::domain::egress::AllowEntry::parse(
        &callback.to_string(),
    )?];
    // The credentials holding an authority the suite is given by default
    // (the attention profile's confirmations).
    config.principal_tokens = vec![(DEFAULT_PRINCIPAL_TOKEN.to_string(), TENANT_A.to_string())];
    config.host_authority_tokens = vec![(
        DEFAULT_HOST_AUTHORITY_TOKEN.to_string(),
        TENANT_A.to_string(),
    )];
    Ok(config)
}

/// Starts a host with `config` on its own runtime (threads named `thread`),
/// runs the suite against it with `choose` applied to the run's
/// configuration (which profiles), stops the host and returns the report.
/// `config` must carry `secret` as its webhook secret and allow `callback`
/// ([`host_config`]).
pub fn run_suite(
    config: impl Into<Hosted>,
    secret: &str,
    callback: SocketAddr,
    thread: &str,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    run_suite_checked(config, secret, callback, thread, |_, _| Ok(()), choose)
}

/// [`run_suite`], with `check` run against the started host (its runtime
/// and base URL) before the suite: a test whose host must be in some state
/// first proves it is, so it cannot pass by testing a host that is not.
/// The host is stopped whatever `check` answers.
pub fn run_suite_checked(
    config: impl Into<Hosted>,
    secret: &str,
    callback: SocketAddr,
    thread: &str,
    check: impl FnOnce(&tokio::runtime::Runtime, &str) -> Result<(), String>,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    deploy_and_run(vec![config.into()], secret, callback, thread, check, choose)
}

/// [`run_suite`] against a deployment of several replicas, one per config
/// (the same database, tokens and secret): the suite is given each as an
/// endpoint (`--host` once per replica), the first as the host.
pub fn run_suite_on(
    configs: Vec<Hosted>,
    secret: &str,
    callback: SocketAddr,
    thread: &str,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    deploy_and_run(configs, secret, callback, thread, |_, _| Ok(()), choose)
}

/// Starts one host per config, runs `check` against the first, then the
/// suite against all of them; every host is stopped whatever happens.
fn deploy_and_run(
    configs: Vec<Hosted>,
    secret: &str,
    callback: SocketAddr,
    thread: &str,
    check: impl FnOnce(&tokio::runtime::Runtime, &str) -> Result<(), String>,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name(thread)
        .build()
        .map_err(|error| format!("cannot start a runtime: {error}"))?;
    let mut hosts = Vec::with_capacity(configs.len());
    let stop = |hosts: Vec<goalpost_host::RunningHost>| {
        for host in hosts {
            runtime.block_on(host.shutdown());
        }
    };
    for Hosted { config, mutant } in configs {
        match runtime.block_on(goalpost_host::RunningHost::start_with(
            config,
            mutant.ports(),
        )) {
            Ok(host) => hosts.push(host),
            Err(error) => {
                stop(hosts);
                return Err(format!("cannot start the host: {error}"));
            }
        }
    }
    let Some(first) = hosts.first().map(goalpost_host::RunningHost::base_url) else {
        return Err("no host to run against".to_string());
    };
    if let Err(error) = check(&runtime, &first) {
        stop(hosts);
        return Err(error);
    }
    let reports = tempfile::tempdir().map_err(|error| error.to_string())?;
    let harness = {
        use clap::Parser;
        libtest_mimic::Arguments::try_parse_from(["goalpost"]).map_err(|error| error.to_string())?
    };
    let mut run = RunConfig::bundled(scenarios(), reports.path().to_path_buf(), harness);
    run.host = HostChoice::Remote(first);
    run.replicas = hosts.iter().skip(1).map(|host| host.base_url()).collect();
    run.token_a = DEFAULT_TOKEN_A.to_string();
    run.token_b = Some(DEFAULT_TOKEN_B.to_string());
    run.callback.secret = Some(secret.to_string());
    run.callback.listen = Some(callback);
    run.harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    choose(&mut run);
    let outcome = goalpost::run(run);
    stop(hosts);
    let outcome = outcome.map_err(|error| format!("the run did not start: {error}"))?;
    outcome
        .report
        .ok_or_else(|| "the run wrote no report".to_string())
}

/// The worker count in `variable` when it is a whole number of at least
/// one, else `default`.
pub fn jobs(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|text| text.parse().ok())
        .filter(|jobs| *jobs >= 1)
        .unwrap_or(default)
}

/// Runs `work` on `jobs` threads, each taking the next item.
pub fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    jobs: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let queue = std::sync::Mutex::new(items.into_iter().collect::<std::collections::VecDeque<T>>());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some(item) = next else { break };
                let result = work(item);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(result);
            });
        }
    });
    results.into_inner().unwrap_or_else(|p| p.into_inner())
}
