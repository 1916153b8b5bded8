//! The `goalpost-host` command line: `serve` (also what runs without a
//! subcommand, so `goalpost-host --token …` keeps working) and the `goals`
//! client.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::client::GoalsArgs;
use crate::config;
use crate::host::{Ports, RunningHost};
use crate::logging::{self, LogFormat};

/// Threads for store reads (and other blocking work); as many as the
/// store keeps idle read connections. tokio's default of 512 let a burst
/// of 64 concurrent lists of 1,000 goals grow hundreds of threads, each
/// with its own mimalloc heap: 1,885 MiB resident right after, 978 MiB
/// 30 s later. With 4: 78 MiB (16 threads: 136 MiB).
const BLOCKING_THREADS: usize = 4;

/// `goalpost-host`: the reference host for RFC 0097 standing goals, and a
/// client for any host that advertises them. Without a subcommand it serves.
#[derive(Debug, Parser)]
#[command(
    name = "goalpost-host",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API until SIGINT or SIGTERM (the default).
    Serve(Box<ServeArgs>),
    /// Manage goals on a running host (any host that advertises
    /// agents.goals).
    #[command(after_help = EXIT_CODES)]
    Goals(GoalsArgs),
}

/// Exit codes of `goals`, as the openwop CLI's goals group has them.
pub const EXIT_CODES: &str =
    "Exit codes: 0 satisfied; 3 escalated or still open (active, paused or not); \
1 bound-exceeded, abandoned or any error (transport, a refusal, a host without agents.goals); \
2 usage. `list` exits 0 on success.";

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub host: config::Args,

    /// Log format on stderr; RUST_LOG filters (default `info`).
    #[arg(long, env = "GOALPOST_HOST_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl ServeArgs {
    /// The host configuration these flags ask for.
    pub fn config(self) -> config::Config {
        self.host.into_config()
    }
}

/// Serves `config`, assembled from `ports` and logging as `log_format`
/// says, until SIGINT or SIGTERM: what `goalpost-host serve` runs (with
/// this host's own ports).
pub fn serve(config: config::Config, log_format: LogFormat, ports: Ports) -> ExitCode {
    if let Err(error) = logging::init(log_format) {
        eprintln!("goalpost-host: cannot set up logging: {error}");
        return ExitCode::FAILURE;
    }
    // Store reads run on tokio's blocking threads, up to 512 of them by
    // default. Under 64 concurrent lists the pool grew to hundreds of
    // threads, and mimalloc gives each thread its own heap and segments:
    // the host went from 37 MiB to 1.9 GiB resident, and a thread's freed
    // pages are only returned when that thread next allocates, so 30 s
    // later it still held 978 MiB (BENCHMARKS.md, "growth"). Reads are
    // short and the machine has few cores: a small pool does the same work
    // with a bounded number of heaps, and the threads that stay are the
    // ones that keep allocating, so their freed pages are purged.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("goalpost-host: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_until_signal(config, ports)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("goalpost-host: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_until_signal(config: config::Config, ports: Ports) -> anyhow::Result<()> {
    let host = RunningHost::start_with(config, ports)
        .await
        .context("cannot start")?;
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

/// What a command line asks for.
#[derive(Debug)]
pub enum Invocation {
    // Boxed: the serve flags are most of the command line's size.
    Serve(Box<ServeArgs>),
    Goals(GoalsArgs),
}

impl Cli {
    pub fn invocation(self) -> Invocation {
        match self.command {
            None => Invocation::Serve(Box::new(self.serve)),
            Some(Command::Serve(serve)) => Invocation::Serve(serve),
            Some(Command::Goals(goals)) => Invocation::Goals(goals),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::client::args::GoalsCommand;

    fn parse(args: &[&str]) -> Result<Invocation, clap::Error> {
        let mut argv = vec!["goalpost-host"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).map(Cli::invocation)
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn plain_flags_serve() {
        let Ok(Invocation::Serve(serve)) = parse(&["--db", ":memory:", "--log-format", "json"])
        else {
            panic!("expected serve");
        };
        assert_eq!(serve.log_format, LogFormat::Json);
        assert_eq!(serve.host.db, ":memory:");
        assert!(matches!(parse(&[]), Ok(Invocation::Serve(_))));
    }

    /// The suite's other builds of this host (mutants, variants) live in
    /// `goalpost-host-builds`: this binary has no switch for them.
    #[test]
    fn the_host_has_no_switch_for_another_build() {
        assert!(parse(&["serve", "--mutant", "off-by-one-iterations"]).is_err());
        assert!(parse(&["serve", "--variant", "judge-host"]).is_err());
        assert!(parse(&["--foreign-invalid-goal", "tenant-a"]).is_err());
    }

    #[test]
    fn serve_takes_the_same_flags() {
        let Ok(Invocation::Serve(serve)) =
            parse(&["serve", "--tick-ms", "25", "--token", "t=acme"])
        else {
            panic!("expected serve");
        };
        assert_eq!(serve.host.tick_ms.as_millis(), 25);
        assert_eq!(serve.log_format, LogFormat::Text);
    }

    #[test]
    fn goals_take_connection_flags_anywhere() {
        let Ok(Invocation::Goals(goals)) = parse(&[
            "goals", "get", "goal-1", "--host", "http://h", "--token", "t", "--json",
        ]) else {
            panic!("expected goals");
        };
        assert_eq!(goals.connection.host.as_deref(), Some("http://h"));
        assert!(goals.connection.json);
        assert!(matches!(goals.command, GoalsCommand::Get { ref id } if id == "goal-1"));
    }

    #[test]
    fn serve_flags_do_not_mix_with_subcommands() {
        assert!(parse(&["--db", "x", "goals", "list"]).is_err());
        assert!(parse(&[
            "goals",
            "create",
            "--max-iterations",
            "0",
            "--objective",
            "o"
        ])
        .is_err());
        assert!(parse(&[
            "goals",
            "create",
            "--max-cost-usd",
            "-1",
            "--objective",
            "o"
        ])
        .is_err());
        assert!(parse(&["goals", "list", "--state", "paused"]).is_err());
        assert!(parse(&["goals", "create"]).is_err());
    }

    #[test]
    fn openwop_spellings_are_accepted() {
        let Ok(Invocation::Goals(goals)) = parse(&[
            "goals",
            "create",
            "--objective",
            "o",
            "--judge",
            "host",
            "--continuation",
            "schedule",
            "--max-cost",
            "2.5",
        ]) else {
            panic!("expected goals");
        };
        let GoalsCommand::Create(create) = goals.command else {
            panic!("expected create");
        };
        assert_eq!(create.check, Some(crate::client::args::Check::Host));
        assert_eq!(create.mode, crate::client::args::Mode::Schedule);
        assert_eq!(create.max_cost_usd, Some(2.5));
    }
}
