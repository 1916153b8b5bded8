//! The command line of `goalpost-host goals`.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use crate::domain;

/// Where and as whom; global, so they may follow the subcommand.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Connection")]
pub struct Connection {
    /// Base URL of the host, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "GOALPOST_HOST", global = true, value_name = "URL")]
    pub host: Option<String>,

    /// Bearer token; goals belong to its tenant.
    #[arg(
        long,
        env = "GOALPOST_TOKEN",
        global = true,
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,

    /// Print the host's raw JSON (one event per line for `watch`) instead of
    /// the rendered view.
    #[arg(long, env = "GOALPOST_JSON", global = true)]
    pub json: bool,

    /// Give up on a request after this many milliseconds.
    #[arg(
        long,
        env = "GOALPOST_REQUEST_TIMEOUT_MS",
        global = true,
        default_value = "10000",
        value_name = "MS",
        value_parser = parse_ms
    )]
    pub request_timeout_ms: Duration,
}

fn parse_ms(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(ms) if ms >= 1 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "expected a whole number of milliseconds >= 1, got {text:?}"
        )),
    }
}

fn parse_cost(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
        _ => Err(format!(
            "expected a number of US dollars >= 0, got {text:?}"
        )),
    }
}

/// `goalpost-host goals`: the connection, then one verb.
#[derive(Debug, Clone, Args)]
pub struct GoalsArgs {
    #[command(flatten)]
    pub connection: Connection,

    #[command(subcommand)]
    pub command: GoalsCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum GoalsCommand {
    /// List the goals of the token's tenant.
    List {
        /// Only goals in this state.
        #[arg(long, value_name = "STATE", value_parser = ["active", "satisfied", "escalated", "abandoned", "bound-exceeded"])]
        state: Option<String>,
    },
    /// Show one goal (exit code from its state).
    Get {
        /// The goal id.
        id: String,
    },
    /// Create a goal (exit 3: it starts active).
    Create(CreateArgs),
    /// Disarm a goal's continuation; it stays active.
    Pause {
        /// The goal id.
        id: String,
    },
    /// Re-arm a paused goal, or reactivate an escalated one.
    Resume {
        /// The goal id.
        id: String,
        /// How the escalation was resolved; the next run's worker gets it
        /// (at most 2048 characters).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Close a goal as abandoned (needs --yes).
    Abandon {
        /// The goal id.
        id: String,
        /// Confirm: abandoning cannot be undone.
        #[arg(long)]
        yes: bool,
    },
    /// Print events as they come: the tenant's, until interrupted, or one
    /// goal's until it closes or escalates (exit code from its final
    /// state). Over the host's live stream when it has one, reconnecting
    /// where it left off; else by polling.
    Watch {
        /// The goal id (or --goal).
        id: Option<String>,
        /// Only this goal's events; stop when it stops running.
        #[arg(long = "goal", value_name = "ID")]
        goal: Option<String>,
        /// Poll every this many milliseconds.
        #[arg(
            long,
            env = "GOALPOST_WATCH_INTERVAL_MS",
            default_value = "1000",
            value_name = "MS",
            value_parser = parse_ms
        )]
        interval_ms: Duration,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Check {
    /// An RFC 0090 verifier decides.
    Verifier,
    /// The host's own evaluator decides.
    Host,
}

/// The words on the wire are the host's own ([`domain::Check::as_str`]).
impl From<Check> for domain::Check {
    fn from(check: Check) -> domain::Check {
        match check {
            Check::Verifier => domain::Check::Verifier,
            Check::Host => domain::Check::Host,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Runs only when asked.
    Manual,
    /// The host fires runs on a schedule.
    Schedule,
    /// An RFC 0068 commitment brings the next run.
    Commitment,
    /// A heartbeat probe decides when to run.
    Heartbeat,
}

/// The words on the wire are the host's own ([`domain::Mode::as_str`]).
impl From<Mode> for domain::Mode {
    fn from(mode: Mode) -> domain::Mode {
        match mode {
            Mode::Manual => domain::Mode::Manual,
            Mode::Schedule => domain::Mode::Schedule,
            Mode::Commitment => domain::Mode::Commitment,
            Mode::Heartbeat => domain::Mode::Heartbeat,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// What the goal keeps working toward (no secrets: hosts store it).
    #[arg(long, value_name = "TEXT")]
    pub objective: String,

    /// Who judges completion (completion.check); default: what the host
    /// advertises in agents.goals.judge.
    #[arg(long, alias = "judge", value_enum)]
    pub check: Option<Check>,

    /// The verifier that judges (completion.verifierRef).
    #[arg(long, value_name = "REF")]
    pub verifier: Option<String>,

    /// What brings the next run about (continuation.mode).
    #[arg(long, alias = "continuation", value_enum, default_value_t = Mode::Manual)]
    pub mode: Mode,

    /// The arm that runs the work (continuation.armRef).
    #[arg(long, value_name = "REF")]
    pub arm: Option<String>,

    /// Bound: at most this many runs (bounds.maxLoopIterations).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_iterations: Option<u64>,

    /// Bound: total run cost in USD (bounds.maxCostUsd).
    #[arg(long, alias = "max-cost", value_name = "USD", value_parser = parse_cost)]
    pub max_cost_usd: Option<f64>,

    /// Bound: wall-clock budget from creation, in ms (bounds.runTimeoutMs).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
}
