//! `goalpost-host`: serve until SIGINT or SIGTERM.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use goalpost_host::config::Args;
use goalpost_host::RunningHost;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let config = Args::parse().into_config();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("goalpost-host: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("goalpost-host: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: goalpost_host::Config) -> anyhow::Result<()> {
    let host = RunningHost::start(config).await.context("cannot start")?;
    shutdown_signal().await.context("cannot wait for signals")?;
    tracing::info!("shutting down");
    host.shutdown().await;
    Ok(())
}

async fn shutdown_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted,
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
