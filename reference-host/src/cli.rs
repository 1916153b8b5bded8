//! The `goalpost-host` command line: `serve` (also what runs without a
//! subcommand, so `goalpost-host --token …` keeps working) and the `goals`
//! client.

use clap::{Args, Parser, Subcommand};

use crate::client::GoalsArgs;
use crate::config;
use crate::logging::LogFormat;

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

    /// Run as a conforming variant: one other choice the profile allows (a
    /// build with the `variants` feature only; see src/variants/).
    #[cfg(feature = "variants")]
    #[arg(long, value_parser = crate::variants::parse_arg)]
    pub variant: Option<crate::variants::Variant>,
}

impl ServeArgs {
    /// The host configuration these flags ask for, as the variant (if any)
    /// makes it.
    pub fn config(self) -> config::Config {
        let config = self.host.into_config();
        #[cfg(feature = "variants")]
        let config = match self.variant {
            Some(variant) => variant.apply(config),
            None => config,
        };
        config
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
