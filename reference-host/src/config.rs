//! Host configuration: the embedding [`Config`] and the command line that
//! builds one.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::choices::Choices;
use crate::domain::egress::{AllowEntry, Cidr};
use crate::domain::event_webhook::EventWebhook;
use crate::domain::Check;
use crate::engine::Quotas;
use crate::serve::ConnectionLimits;
use crate::storage::DbLocation;

/// Everything a host needs to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub listen: SocketAddr,
    pub db: DbLocation,
    /// `(token, tenant)` pairs.
    pub tokens: Vec<(String, String)>,
    /// A file of more credentials, one `TOKEN=TENANT` per line, read at
    /// start.
    pub tokens_file: Option<PathBuf>,
    pub conformance_seams: bool,
    /// The longest the scheduler sleeps between ticks (it wakes sooner
    /// when something is due).
    pub tick: Duration,
    /// The master secret each tenant's webhook signing key is derived from
    /// (`X-Goalpost-Signature`); a random one per start when `None`.
    pub webhook_secret: Option<String>,
    /// Internal addresses webhook calls may reach anyway (everything
    /// public is allowed).
    pub webhook_allow: Vec<AllowEntry>,
    /// A PEM file of certificate authorities `https` webhooks may chain
    /// to besides the system's roots, read at start.
    pub webhook_ca: Option<PathBuf>,
    /// Client connection limits and the shutdown deadline.
    pub connections: ConnectionLimits,
    /// A JSON file of criteria verifiers to register at start.
    pub verifiers: Option<PathBuf>,
    /// Per-tenant limits (429 `quota_exceeded` beyond them).
    pub quotas: Quotas,
    /// How long closed goals are kept before the scheduler forgets them;
    /// `None` keeps them forever.
    pub retain_closed: Option<Duration>,
    /// The live event stream's bounds (heartbeat, lag, streams per tenant).
    pub feed: crate::engine::FeedSettings,
    /// The choices the profile leaves open (the reference host's own by
    /// default; a conforming variant makes another).
    pub choices: Choices,
    /// Outbound event webhooks: where each subscribed tenant's events are
    /// POSTed (one URL per tenant; checked at start against the tokens
    /// and the egress policy).
    pub event_webhooks: Vec<EventWebhook>,
    /// Each tenant's share of the host's work: judge threads and steps,
    /// outbound calls.
    pub work: WorkLimits,
    /// Proxies whose `X-Forwarded-For` names the client (for the
    /// credential throttle), exempt from the per-address connection share.
    pub trusted_proxies: Vec<Cidr>,
    /// What a goal keeps of its history and shows of it.
    pub history: HistoryLimits,
    /// How many replicas share the database (each enforces its share of
    /// the per-tenant rates and stream caps).
    pub replicas: u32,
    /// `(token, tenant)` credentials that hold the host's authority (the
    /// attention extension's `host-confirmed` confirmations). Apart from
    /// `tokens`: none of them opens a goal endpoint.
    pub host_authority_tokens: Vec<(String, String)>,
    /// `(token, tenant)` credentials that hold a principal's authority
    /// (`principal-confirmed` confirmations).
    pub principal_tokens: Vec<(String, String)>,
}

/// What a goal keeps of its history, and shows of it (`README.md`,
/// "Limits"; PROFILE.md, "Goals with long histories").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Criteria an evaluation keeps (the rest summed up in one more).
    pub criteria_kept: usize,
    /// Longest criterion id an evaluation keeps, in characters.
    pub criterion_id_chars: usize,
    /// The runs whose history a goal keeps; `None`: all.
    pub history_per_goal: Option<usize>,
    /// The most recent contributing run ids a goal body lists.
    pub run_ids_shown: usize,
}

impl Default for HistoryLimits {
    fn default() -> HistoryLimits {
        let criteria = crate::domain::KeptCriteria::default();
        HistoryLimits {
            criteria_kept: criteria.count,
            criterion_id_chars: criteria.id_chars,
            history_per_goal: Some(crate::engine::DEFAULT_HISTORY_PER_GOAL),
            run_ids_shown: crate::domain::wire::DEFAULT_RUN_IDS_SHOWN,
        }
    }
}

/// Each tenant's share of the host's work (`README.md`, "Limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkLimits {
    /// Criteria judgements running at once, all tenants together.
    pub judge_threads: usize,
    /// Steps of criteria judging one tenant may take per second.
    pub judge_steps_per_sec: u64,
    /// Fires, probes, `continue`s and reported runs one tenant may start
    /// per second; `None`: [`crate::engine::DEFAULT_OUTBOUND_PER_TENANT_PER_SEC`]
    /// without the conformance seams, no limit with them.
    pub outbound_per_sec: Option<u32>,
}

impl Default for WorkLimits {
    fn default() -> WorkLimits {
        WorkLimits {
            judge_threads: crate::judge::pool::default_slots(),
            judge_steps_per_sec: crate::judge::pool::DEFAULT_JUDGE_STEPS_PER_SEC,
            outbound_per_sec: None,
        }
    }
}

pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);
pub const DEFAULT_TICK: Duration = Duration::from_millis(100);
pub use crate::engine::DEFAULT_RETAIN_CLOSED;

/// What a host running for conformance may call besides public addresses:
/// 127.0.0.1 and ::1, where the suite's mock (and in-process test
/// receivers) listen by default. Other loopback addresses stay denied.
pub fn conformance_egress() -> Vec<AllowEntry> {
    ["127.0.0.1", "::1"]
        .iter()
        .filter_map(|entry| AllowEntry::parse(entry).ok())
        .collect()
}

impl Config {
    /// What the suite starts in-process: an ephemeral port on 127.0.0.1, an
    /// in-memory database, the seams on, a 100 ms tick, webhook calls
    /// allowed to loopback (where in-process receivers listen; the suite's
    /// bundled host narrows this to its callback).
    pub fn conformance_in_memory(tokens: Vec<(String, String)>) -> Config {
        Config {
            listen: SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            db: DbLocation::Memory,
            tokens,
            tokens_file: None,
            conformance_seams: true,
            tick: DEFAULT_TICK,
            webhook_secret: None,
            webhook_allow: conformance_egress(),
            webhook_ca: None,
            connections: ConnectionLimits::default(),
            verifiers: None,
            quotas: Quotas::default(),
            retain_closed: Some(DEFAULT_RETAIN_CLOSED),
            feed: crate::engine::FeedSettings::default(),
            choices: Choices::default(),
            event_webhooks: Vec::new(),
            work: WorkLimits::default(),
            trusted_proxies: Vec::new(),
            history: HistoryLimits::default(),
            replicas: 1,
            host_authority_tokens: Vec::new(),
            principal_tokens: Vec::new(),
        }
    }
}

/// Why a tokens file could not be used. Never quotes a line: it may hold a
/// token.
#[derive(Debug, thiserror::Error)]
pub enum TokensFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} line {line}: expected TOKEN=TENANT")]
    Line { path: String, line: usize },
}

/// One `TOKEN=TENANT` per line; blank lines and lines starting with `#`
/// are skipped, surrounding whitespace is ignored.
pub fn parse_tokens_file(text: &str, path: &str) -> Result<Vec<(String, String)>, TokensFileError> {
    let mut pairs = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let pair = parse_token(line).map_err(|_| TokensFileError::Line {
            path: path.to_string(),
            line: index + 1,
        })?;
        pairs.push(pair);
    }
    Ok(pairs)
}

pub fn read_tokens_file(path: &std::path::Path) -> Result<Vec<(String, String)>, TokensFileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TokensFileError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_tokens_file(&text, &shown)
}

/// Parses `TOKEN=TENANT`. The tenant follows the last `=`, so tokens may end
/// in base64 padding.
/// `--judge`: `verifier` or `host`.
pub fn parse_judge(text: &str) -> Result<Check, String> {
    Check::parse(text).ok_or_else(|| format!("{text:?} is not a judge: verifier or host"))
}

pub fn parse_token(text: &str) -> Result<(String, String), String> {
    match text.rsplit_once('=') {
        Some((token, tenant)) if !token.is_empty() && !tenant.is_empty() => {
            Ok((token.to_string(), tenant.to_string()))
        }
        _ => Err(format!("expected TOKEN=TENANT, got {text:?}")),
    }
}

fn parse_limit(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(limit) if limit >= 1 => Ok(limit),
        _ => Err(format!("expected a whole number >= 1, got {text:?}")),
    }
}

/// At least `least`.
fn parse_at_least(text: &str, least: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(value) if value >= least => Ok(value),
        _ => Err(format!("expected a whole number >= {least}, got {text:?}")),
    }
}

fn parse_cidr(text: &str) -> Result<Cidr, String> {
    Cidr::parse(text).ok_or_else(|| format!("expected an IP address or CIDR, got {text:?}"))
}

/// 0 (keep everything) or at least 100 (the profile's floor).
fn parse_history(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(value) if value == 0 || value >= 100 => Ok(value),
        _ => Err(format!(
            "expected 0 (keep everything) or a whole number >= 100, got {text:?}"
        )),
    }
}

fn parse_rate(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(rate) if rate >= 1 => Ok(rate),
        _ => Err(format!("expected a whole number >= 1, got {text:?}")),
    }
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(seconds) if seconds >= 1 => Ok(Duration::from_secs(seconds)),
        _ => Err(format!(
            "expected a whole number of seconds >= 1, got {text:?}"
        )),
    }
}

/// A retention period: a whole number with a unit (`30d`, `12h`, `90m`,
/// `45s`), or `0` to keep closed goals forever.
fn parse_retention(text: &str) -> Result<Retention, String> {
    if text == "0" {
        return Ok(Retention(None));
    }
    let invalid = || format!("expected a number with d, h, m or s (e.g. 30d), or 0, got {text:?}");
    let split = text.len().checked_sub(1).ok_or_else(invalid)?;
    let (number, unit) = text.split_at_checked(split).ok_or_else(invalid)?;
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let seconds = match unit {
        "d" => number.checked_mul(24 * 3600),
        "h" => number.checked_mul(3600),
        "m" => number.checked_mul(60),
        "s" => Some(number),
        _ => None,
    }
    .filter(|seconds| *seconds >= 1)
    .ok_or_else(invalid)?;
    Ok(Retention(Some(Duration::from_secs(seconds))))
}

/// A parsed `--retain-closed` (its own type: clap reads an `Option` field
/// as a flag that may be missing, not as a value that may be "forever").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention(pub Option<Duration>);

fn parse_tick(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(ms) if ms >= 1 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "expected a whole number of milliseconds >= 1, got {text:?}"
        )),
    }
}

fn parse_coalesce(text: &str) -> Result<u64, String> {
    let most = crate::engine::MAX_COALESCE.as_millis();
    match text.parse::<u64>() {
        Ok(ms) if u128::from(ms) <= most => Ok(ms),
        _ => Err(format!(
            "expected a whole number of milliseconds from 0 to {most}, got {text:?}"
        )),
    }
}

/// `goalpost-host`: the reference host for RFC 0097 standing goals.
#[derive(Debug, Parser)]
#[command(name = "goalpost-host", version, about)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, env = "GOALPOST_HOST_LISTEN", default_value_t = DEFAULT_LISTEN)]
    pub listen: SocketAddr,

    /// SQLite database file, `:memory:`, or a PostgreSQL URL
    /// (`postgres://user:password@host/db`) that several replicas share.
    #[arg(long, env = "GOALPOST_HOST_DB", default_value = "goalpost-host.db")]
    pub db: String,

    /// A credential as TOKEN=TENANT; repeat for more. The environment
    /// variable takes a comma-separated list. Arguments show in `ps`: for a
    /// real deployment use --tokens-file or the environment variable.
    #[arg(long = "token", env = "GOALPOST_HOST_TOKENS", hide_env_values = true, value_delimiter = ',', value_parser = parse_token)]
    pub tokens: Vec<(String, String)>,

    /// A file of credentials, one TOKEN=TENANT per line (`#` comments and
    /// blank lines skipped), added to --token.
    #[arg(long, env = "GOALPOST_HOST_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,

    /// Most open (active or escalated) goals one tenant may have; a create
    /// beyond it is 429 quota_exceeded.
    #[arg(long, env = "GOALPOST_HOST_MAX_GOALS_PER_TENANT", default_value_t = crate::engine::DEFAULT_MAX_GOALS_PER_TENANT, value_parser = parse_limit)]
    pub max_goals_per_tenant: u64,

    /// Most open goals in `schedule`, `heartbeat` or `commitment` mode (the
    /// ones whose runs start on their own) one tenant may have; a create or
    /// PATCH beyond it is 429 quota_exceeded.
    #[arg(long, env = "GOALPOST_HOST_MAX_ACTIVE_ARMS_PER_TENANT", default_value_t = crate::engine::DEFAULT_MAX_ACTIVE_ARMS_PER_TENANT, value_parser = parse_limit)]
    pub max_active_arms_per_tenant: u64,

    /// Most goals in any state, closed ones included, one tenant may hold;
    /// a create beyond it is 429 quota_exceeded. Retention
    /// (--retain-closed) frees places by forgetting old closed goals.
    #[arg(long, env = "GOALPOST_HOST_MAX_STORED_GOALS_PER_TENANT", default_value_t = crate::engine::DEFAULT_MAX_STORED_GOALS_PER_TENANT, value_parser = parse_limit)]
    pub max_stored_goals_per_tenant: u64,

    /// How long closed goals (with their events, evaluations, runs and
    /// idempotency keys) are kept before the scheduler forgets them, in
    /// batches: 30d, 12h, 90m, 45s; 0 keeps them forever.
    #[arg(long, env = "GOALPOST_HOST_RETAIN_CLOSED", default_value = "30d", value_parser = parse_retention)]
    pub retain_closed: Retention,

    /// Serve the conformance seams (continue, fixtures) and advertise them
    /// (and the events, served either way) in discovery; webhook calls may then also reach 127.0.0.1 and ::1
    /// (where the suite's mock listens).
    #[arg(long, env = "GOALPOST_HOST_CONFORMANCE_SEAMS")]
    pub conformance_seams: bool,

    /// Longest scheduler sleep between ticks, in milliseconds.
    #[arg(long, env = "GOALPOST_HOST_TICK_MS", default_value = "100", value_parser = parse_tick)]
    pub tick_ms: Duration,

    /// Master secret (visible ASCII) each tenant's webhook signing key is
    /// derived from: key = hex(HMAC-SHA256(secret, tenant)). A random one
    /// per start when unset. Prefer the environment variable: arguments
    /// show in `ps`.
    #[arg(long, env = "GOALPOST_HOST_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,

    /// An internal address webhook calls may reach anyway: HOST, IP or CIDR,
    /// optionally :PORT; repeat for more. Loopback, private, link-local
    /// (cloud metadata), unique-local, CGNAT and other non-public addresses
    /// are denied otherwise. The environment variable takes a
    /// comma-separated list.
    #[arg(long = "webhook-allow", env = "GOALPOST_HOST_WEBHOOK_ALLOW", value_delimiter = ',', value_parser = AllowEntry::parse)]
    pub webhook_allow: Vec<AllowEntry>,

    /// A PEM file of certificate authorities that `https` webhooks may
    /// chain to besides the system's trusted roots (for a private CA).
    #[arg(long, env = "GOALPOST_HOST_WEBHOOK_CA", value_name = "FILE")]
    pub webhook_ca: Option<PathBuf>,

    /// Most client connections open at once; more are closed on arrival.
    #[arg(long, env = "GOALPOST_HOST_MAX_CONNECTIONS", default_value_t = crate::serve::DEFAULT_MAX_CONNECTIONS as u64, value_parser = parse_limit)]
    pub max_connections: u64,

    /// Seconds a connection may take to send a request head (also how long
    /// an idle keep-alive connection stays open).
    #[arg(long, env = "GOALPOST_HOST_HEADER_TIMEOUT_SECS", default_value = "10", value_parser = parse_seconds)]
    pub header_timeout_secs: Duration,

    /// Seconds an answer may make no progress (its client reads nothing)
    /// before its connection is closed.
    #[arg(long, env = "GOALPOST_HOST_WRITE_TIMEOUT_SECS", default_value = "10", value_parser = parse_seconds)]
    pub write_timeout_secs: Duration,

    /// Most client connections one source address may hold (trusted
    /// proxies excepted).
    #[arg(long, env = "GOALPOST_HOST_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = crate::serve::DEFAULT_MAX_PER_ADDRESS as u64, value_parser = parse_limit)]
    pub max_connections_per_address: u64,

    /// Most connections one source address may hold that went
    /// --anonymous-grace-secs without carrying a request with a known
    /// token. Connections without a credential hold at most half of
    /// --max-connections; past that a new one closes the oldest.
    #[arg(long, env = "GOALPOST_HOST_MAX_ANONYMOUS_CONNECTIONS_PER_ADDRESS", default_value_t = crate::serve::DEFAULT_MAX_ANONYMOUS_PER_ADDRESS as u64, value_parser = parse_limit)]
    pub max_anonymous_connections_per_address: u64,

    /// Seconds a new connection may go without a known credential before
    /// it counts against --max-anonymous-connections-per-address (a client
    /// opening many connections at once is admitted on each).
    #[arg(long, env = "GOALPOST_HOST_ANONYMOUS_GRACE_SECS", default_value = "5", value_parser = parse_seconds)]
    pub anonymous_grace_secs: Duration,

    /// A proxy (IP or CIDR) whose X-Forwarded-For header names the client
    /// for the credential throttle; its own connections are exempt from
    /// the per-address shares. Repeat for more; the environment variable
    /// takes a comma-separated list. X-Forwarded-For from anyone else is
    /// ignored.
    #[arg(long = "trusted-proxy", env = "GOALPOST_HOST_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_cidr)]
    pub trusted_proxies: Vec<Cidr>,

    /// Seconds requests in flight get to finish after SIGTERM or SIGINT
    /// before every connection is dropped.
    #[arg(long, env = "GOALPOST_HOST_SHUTDOWN_DEADLINE_SECS", default_value = "10", value_parser = parse_seconds)]
    pub shutdown_deadline_secs: Duration,

    /// Seconds between heartbeat comments on an idle event stream
    /// (`GET {base}/events`).
    #[arg(long, env = "GOALPOST_HOST_EVENTS_HEARTBEAT_SECS", default_value = "15", value_parser = parse_seconds)]
    pub events_heartbeat_secs: Duration,

    /// Events one stream subscriber may fall behind before it is dropped
    /// (it gets a final `stream.dropped` message and may resume).
    #[arg(long, env = "GOALPOST_HOST_EVENTS_BUFFER", default_value_t = crate::engine::DEFAULT_SUBSCRIBER_BUFFER as u64, value_parser = parse_limit)]
    pub events_buffer: u64,

    /// Event streams one tenant may hold open at once; one more is 429.
    #[arg(long, env = "GOALPOST_HOST_MAX_STREAMS_PER_TENANT", default_value_t = crate::engine::DEFAULT_MAX_SUBSCRIBERS_PER_TENANT as u64, value_parser = parse_limit)]
    pub max_streams_per_tenant: u64,

    /// Milliseconds an event stream that has one event ready waits for
    /// more before it writes, so a busy tenant's events share a write
    /// (0: write at once; at most 250). Longer waits trade delivery time
    /// for throughput with many subscribers (BENCHMARKS.md, "Live event
    /// stream fan-out").
    #[arg(long, env = "GOALPOST_HOST_EVENTS_COALESCE_MS", default_value_t = crate::engine::DEFAULT_COALESCE.as_millis() as u64, value_parser = parse_coalesce)]
    pub events_coalesce_ms: u64,

    /// JSON file of criteria verifiers to register at start:
    /// {"verifiers": [{"tenant", "name", "criteria"}]}.
    #[arg(long, env = "GOALPOST_HOST_VERIFIERS")]
    pub verifiers: Option<PathBuf>,

    /// Who judges a run: `verifier` (goals name an RFC 0090 verifier,
    /// `completion.check: "verifier"`) or `host` (the host judges with its
    /// own criteria verifiers, `completion.check: "host"`; a goal names
    /// one of its tenant's registered verifiers, or has nothing to judge
    /// by and never satisfies). Discovery advertises the choice.
    #[arg(long, env = "GOALPOST_HOST_JUDGE", default_value = "verifier", value_parser = parse_judge)]
    pub judge: Check,

    /// Send every event of TENANT (`goal.evaluated`, `goal.closed`) to URL
    /// as a signed POST (X-Goalpost-Signature, as arm calls are signed;
    /// Idempotency-Key = the event's cursor), in order, retried with
    /// backoff (1 s doubling to 5 min) until it answers 2xx: at least
    /// once. One URL per tenant; repeat for more tenants. A new or changed
    /// URL starts with the tenant's next event. The tenant must have a
    /// token, and the URL must be one the egress policy allows
    /// (--webhook-allow for internal addresses). The environment variable
    /// takes a comma-separated list.
    #[arg(long = "event-webhook", env = "GOALPOST_HOST_EVENT_WEBHOOKS", value_name = "TENANT=URL", value_delimiter = ',', value_parser = EventWebhook::parse)]
    pub event_webhooks: Vec<EventWebhook>,

    /// Criteria judgements running at once, all tenants together; a free
    /// slot goes to the tenant running the fewest. Defaults to the number
    /// of cores.
    #[arg(long, env = "GOALPOST_HOST_JUDGE_THREADS", value_parser = parse_limit)]
    pub judge_threads: Option<u64>,

    /// Matcher steps of criteria judging one tenant may take per second
    /// (a bucket of one second's worth); a tenant over it waits for its
    /// own budget while the others are judged.
    #[arg(long, env = "GOALPOST_HOST_JUDGE_STEPS_PER_SEC", default_value_t = crate::judge::pool::DEFAULT_JUDGE_STEPS_PER_SEC, value_parser = parse_limit)]
    pub judge_steps_per_sec: u64,

    /// Outbound work one tenant may start per second: scheduled fires,
    /// heartbeat probes, `continue`s and reported runs (429 rate_limited
    /// beyond it for the last two). Default: 100 without
    /// --conformance-seams, no limit with them.
    #[arg(long, env = "GOALPOST_HOST_OUTBOUND_PER_TENANT_PER_SEC", value_parser = parse_rate)]
    pub outbound_per_tenant_per_sec: Option<u32>,

    /// Criteria an evaluation keeps of what its judge returned; the rest
    /// are summed up in one more criterion, `…+N more`, that fails if any
    /// of them failed (the verdict is decided on all of them).
    #[arg(long, env = "GOALPOST_HOST_MAX_CRITERIA_KEPT", default_value_t = crate::domain::KeptCriteria::default().count as u64, value_parser = |text: &str| parse_at_least(text, 2))]
    pub max_criteria_kept: u64,

    /// Longest criterion id an evaluation keeps, in characters; a longer
    /// one is cut and ends in `…`.
    #[arg(long, env = "GOALPOST_HOST_MAX_CRITERION_ID_CHARS", default_value_t = crate::domain::KeptCriteria::default().id_chars as u64, value_parser = |text: &str| parse_at_least(text, 8))]
    pub max_criterion_id_chars: u64,

    /// The runs whose history (run id, evaluation, events) a goal keeps:
    /// the most recent ones, older ones forgotten 64 at a time. 0 keeps
    /// everything.
    #[arg(long, env = "GOALPOST_HOST_MAX_HISTORY_PER_GOAL", default_value_t = crate::engine::DEFAULT_HISTORY_PER_GOAL as u64, value_parser = parse_history)]
    pub max_history_per_goal: u64,

    /// The most recent contributing run ids a goal body lists (at least
    /// 100); `progress.iterations` counts them all.
    #[arg(long, env = "GOALPOST_HOST_RUN_IDS_SHOWN", default_value_t = crate::domain::wire::DEFAULT_RUN_IDS_SHOWN as u64, value_parser = |text: &str| parse_at_least(text, 100))]
    pub run_ids_shown: u64,

    /// How many replicas of the host share the database (a PostgreSQL
    /// URL): each enforces 1/N of every per-tenant rate
    /// (--outbound-per-tenant-per-sec, --judge-steps-per-sec) and of
    /// --max-streams-per-tenant, so together they allow what one host
    /// would. The quotas on goals and verifiers are counted in the
    /// database, exactly, whatever this says.
    #[arg(long, env = "GOALPOST_HOST_REPLICAS", default_value_t = 1, value_parser = parse_rate)]
    pub replicas: u32,
    /// A credential that holds the host's authority for a tenant, as
    /// TOKEN=TENANT (repeatable; the environment variable takes a
    /// comma-separated list): it may confirm goals of a `host-confirmed`
    /// completion policy (the attention extension) and nothing else. Never
    /// one of the --token credentials.
    #[arg(long = "host-authority-token", env = "GOALPOST_HOST_AUTHORITY_TOKENS", hide_env_values = true, value_delimiter = ',', value_parser = parse_token)]
    pub host_authority_tokens: Vec<(String, String)>,

    /// A credential that holds a principal's authority for a tenant, as
    /// TOKEN=TENANT (repeatable; the environment variable takes a
    /// comma-separated list): it may confirm goals of a
    /// `principal-confirmed` completion policy and nothing else.
    #[arg(long = "principal-token", env = "GOALPOST_HOST_PRINCIPAL_TOKENS", hide_env_values = true, value_delimiter = ',', value_parser = parse_token)]
    pub principal_tokens: Vec<(String, String)>,
}

impl Args {
    pub fn into_config(self) -> Config {
        Config {
            listen: self.listen,
            db: DbLocation::parse(&self.db),
            tokens: self.tokens,
            tokens_file: self.tokens_file,
            conformance_seams: self.conformance_seams,
            tick: self.tick_ms,
            webhook_secret: self.webhook_secret,
            webhook_allow: if self.conformance_seams {
                let mut allow = self.webhook_allow;
                allow.extend(conformance_egress());
                allow
            } else {
                self.webhook_allow
            },
            webhook_ca: self.webhook_ca,
            connections: ConnectionLimits {
                max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
                header_read_timeout: self.header_timeout_secs,
                write_timeout: self.write_timeout_secs,
                max_per_address: usize::try_from(self.max_connections_per_address)
                    .unwrap_or(usize::MAX),
                max_anonymous_per_address: usize::try_from(
                    self.max_anonymous_connections_per_address,
                )
                .unwrap_or(usize::MAX),
                anonymous_grace: self.anonymous_grace_secs,
                shutdown_deadline: self.shutdown_deadline_secs,
            },
            trusted_proxies: self.trusted_proxies,
            replicas: self.replicas,
            history: HistoryLimits {
                criteria_kept: usize::try_from(self.max_criteria_kept).unwrap_or(usize::MAX),
                criterion_id_chars: usize::try_from(self.max_criterion_id_chars)
                    .unwrap_or(usize::MAX),
                history_per_goal: (self.max_history_per_goal > 0)
                    .then(|| usize::try_from(self.max_history_per_goal).unwrap_or(usize::MAX)),
                run_ids_shown: usize::try_from(self.run_ids_shown).unwrap_or(usize::MAX),
            },
            verifiers: self.verifiers,
            choices: Choices {
                judge: self.judge,
                ..Choices::default()
            },
            quotas: Quotas {
                goals_per_tenant: self.max_goals_per_tenant,
                active_arms_per_tenant: self.max_active_arms_per_tenant,
                stored_goals_per_tenant: self.max_stored_goals_per_tenant,
            },
            retain_closed: self.retain_closed.0,
            feed: crate::engine::FeedSettings {
                buffer: usize::try_from(self.events_buffer).unwrap_or(usize::MAX),
                max_subscribers_per_tenant: usize::try_from(self.max_streams_per_tenant)
                    .unwrap_or(usize::MAX),
                heartbeat: self.events_heartbeat_secs,
                coalesce: Duration::from_millis(self.events_coalesce_ms),
            },
            event_webhooks: self.event_webhooks,
            work: WorkLimits {
                judge_threads: self
                    .judge_threads
                    .map_or_else(crate::judge::pool::default_slots, |threads| {
                        usize::try_from(threads).unwrap_or(usize::MAX)
                    }),
                judge_steps_per_sec: self.judge_steps_per_sec,
                outbound_per_sec: self.outbound_per_tenant_per_sec,
            },
            host_authority_tokens: self.host_authority_tokens,
            principal_tokens: self.principal_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        let mut argv = vec!["goalpost-host"];
        argv.extend_from_slice(args);
        Args::try_parse_from(argv).map(Args::into_config)
    }

    #[test]
    fn defaults() {
        let config = parse(&[]).expect("valid");
        assert_eq!(config.listen, DEFAULT_LISTEN);
        assert_eq!(config.db, DbLocation::default());
        assert!(!config.conformance_seams);
        assert_eq!(config.tick, DEFAULT_TICK);
        assert_eq!(config.tokens_file, None);
        assert_eq!(config.quotas, Quotas::default());
        assert_eq!(config.quotas.goals_per_tenant, 10_000);
        assert_eq!(config.quotas.active_arms_per_tenant, 1_000);
        assert_eq!(config.quotas.stored_goals_per_tenant, 100_000);
        assert_eq!(config.retain_closed, Some(DEFAULT_RETAIN_CLOSED));
        assert_eq!(config.feed, crate::engine::FeedSettings::default());
    }

    #[test]
    fn the_coalescing_wait_is_bounded() {
        let config = parse(&["--events-coalesce-ms", "0"]).expect("valid");
        assert_eq!(config.feed.coalesce, Duration::ZERO);
        let config = parse(&["--events-coalesce-ms", "250"]).expect("valid");
        assert_eq!(config.feed.coalesce, crate::engine::MAX_COALESCE);
        let error = parse(&["--events-coalesce-ms", "251"]).expect_err("over the bound");
        assert!(error.to_string().contains("from 0 to 250"), "{error}");
        assert!(parse(&["--events-coalesce-ms", "-1"]).is_err());
    }

    #[test]
    fn retention_takes_a_unit_or_zero() {
        let retain = |text: &str| parse(&["--retain-closed", text]).map(|c| c.retain_closed);
        assert_eq!(retain("0").ok(), Some(None));
        assert_eq!(retain("45s").ok(), Some(Some(Duration::from_secs(45))));
        assert_eq!(retain("90m").ok(), Some(Some(Duration::from_secs(5_400))));
        assert_eq!(retain("12h").ok(), Some(Some(Duration::from_secs(43_200))));
        assert_eq!(
            retain("30d").ok(),
            Some(Some(Duration::from_secs(2_592_000)))
        );
        for bad in [
            "",
            "d",
            "30",
            "0d",
            "-1d",
            "1w",
            "1.5h",
            "99999999999999999d",
        ] {
            assert!(retain(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn tokens_file_and_quotas() {
        let config = parse(&[
            "--tokens-file",
            "tokens.txt",
            "--max-goals-per-tenant",
            "5",
            "--max-active-arms-per-tenant",
            "2",
            "--max-stored-goals-per-tenant",
            "7",
        ])
        .expect("valid");
        assert_eq!(config.tokens_file, Some(PathBuf::from("tokens.txt")));
        assert_eq!(
            config.quotas,
            Quotas {
                goals_per_tenant: 5,
                active_arms_per_tenant: 2,
                stored_goals_per_tenant: 7,
            }
        );
        assert!(parse(&["--max-goals-per-tenant", "0"]).is_err());
        assert!(parse(&["--max-active-arms-per-tenant", "-1"]).is_err());
        assert!(parse(&["--max-stored-goals-per-tenant", "0"]).is_err());
    }

    #[test]
    fn tokens_files_skip_comments_and_never_quote_a_line() {
        let text = "# ops tokens\n\n  tok-a=acme  \ndG9r==globex\n";
        assert_eq!(
            parse_tokens_file(text, "t.txt").expect("valid"),
            vec![
                ("tok-a".to_string(), "acme".to_string()),
                ("dG9r=".to_string(), "globex".to_string())
            ]
        );
        let error = parse_tokens_file("ok=a\nsecret-token-without-tenant\n", "t.txt")
            .expect_err("line 2 is bad");
        let message = error.to_string();
        assert!(message.contains("line 2"), "{message}");
        assert!(!message.contains("secret-token"), "{message}");
    }

    #[test]
    fn every_flag() {
        let config = parse(&[
            "--listen",
            "0.0.0.0:9000",
            "--db",
            ":memory:",
            "--token",
            "tok-a=acme",
            "--token",
            "dG9r==globex",
            "--conformance-seams",
            "--tick-ms",
            "25",
        ])
        .expect("valid");
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.db, DbLocation::Memory);
        assert_eq!(
            config.tokens,
            vec![
                ("tok-a".to_string(), "acme".to_string()),
                ("dG9r=".to_string(), "globex".to_string())
            ]
        );
        assert!(config.conformance_seams);
        assert_eq!(config.tick, Duration::from_millis(25));
    }

    #[test]
    fn the_judge_is_the_verifier_unless_the_host_is_asked_to_judge() {
        assert_eq!(parse(&[]).expect("valid").choices.judge, Check::Verifier);
        let host = parse(&["--judge", "host"]).expect("valid");
        assert_eq!(host.choices.judge, Check::Host);
        // Only the judge changes: every other choice stays the reference's.
        assert_eq!(
            host.choices,
            Choices {
                judge: Check::Host,
                ..Choices::default()
            }
        );
        assert!(parse(&["--judge", "oracle"]).is_err());
    }

    #[test]
    fn event_webhooks_are_tenant_url_pairs() {
        assert!(parse(&[]).expect("valid").event_webhooks.is_empty());
        let config = parse(&[
            "--event-webhook",
            "acme=https://hooks.example/goalpost",
            "--event-webhook",
            "globex=http://10.0.0.7:8080/in?x=1",
        ])
        .expect("valid");
        let shown: Vec<String> = config
            .event_webhooks
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "acme=https://hooks.example/goalpost",
                "globex=http://10.0.0.7:8080/in?x=1"
            ]
        );
        for bad in [
            "acme",
            "acme=ftp://x.example/",
            "=http://x.example/",
            "acme=nope",
        ] {
            assert!(parse(&["--event-webhook", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn work_limits() {
        assert_eq!(parse(&[]).expect("valid").work, WorkLimits::default());
        let config = parse(&[
            "--judge-threads",
            "3",
            "--judge-steps-per-sec",
            "1000",
            "--outbound-per-tenant-per-sec",
            "7",
            "--replicas",
            "3",
        ])
        .expect("valid");
        assert_eq!(config.replicas, 3);
        assert_eq!(
            config.work,
            WorkLimits {
                judge_threads: 3,
                judge_steps_per_sec: 1000,
                outbound_per_sec: Some(7),
            }
        );
        for flag in [
            "--judge-threads",
            "--judge-steps-per-sec",
            "--outbound-per-tenant-per-sec",
        ] {
            assert!(parse(&[flag, "0"]).is_err(), "{flag} 0");
        }
    }

    #[test]
    fn history_limits() {
        assert_eq!(parse(&[]).expect("valid").history, HistoryLimits::default());
        let config = parse(&[
            "--max-criteria-kept",
            "10",
            "--max-criterion-id-chars",
            "20",
            "--max-history-per-goal",
            "0",
            "--run-ids-shown",
            "500",
        ])
        .expect("valid");
        assert_eq!(
            config.history,
            HistoryLimits {
                criteria_kept: 10,
                criterion_id_chars: 20,
                history_per_goal: None,
                run_ids_shown: 500,
            }
        );
        for (flag, bad) in [
            ("--max-history-per-goal", "99"),
            ("--run-ids-shown", "99"),
            ("--max-criteria-kept", "1"),
            ("--max-criterion-id-chars", "7"),
        ] {
            assert!(parse(&[flag, bad]).is_err(), "{flag} {bad}");
        }
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse(&["--token", "no-tenant"]).is_err());
        assert!(parse(&["--token", "=acme"]).is_err());
        assert!(parse(&["--tick-ms", "0"]).is_err());
        assert!(parse(&["--listen", "nowhere"]).is_err());
    }

    #[test]
    fn the_conformance_preset() {
        let config = Config::conformance_in_memory(vec![("t".into(), "a".into())]);
        assert_eq!(config.listen.port(), 0);
        assert!(config.listen.ip().is_loopback());
        assert_eq!(config.db, DbLocation::Memory);
        assert!(config.conformance_seams);
        assert_eq!(config.tick, Duration::from_millis(100));
        assert_eq!(config.webhook_secret, None);
        assert_eq!(config.verifiers, None);
    }

    #[test]
    fn egress_allowlist_and_connection_limits() {
        let bare = parse(&[]).expect("valid");
        assert!(bare.webhook_allow.is_empty(), "nothing internal by default");
        assert_eq!(bare.connections, ConnectionLimits::default());
        let config = parse(&[
            "--webhook-allow",
            "10.20.0.0/16",
            "--webhook-allow",
            "hooks.internal:8443",
            "--max-connections",
            "8",
            "--header-timeout-secs",
            "3",
            "--shutdown-deadline-secs",
            "2",
            "--write-timeout-secs",
            "4",
            "--max-connections-per-address",
            "5",
            "--max-anonymous-connections-per-address",
            "3",
            "--anonymous-grace-secs",
            "7",
            "--trusted-proxy",
            "10.1.0.0/16",
            "--trusted-proxy",
            "192.0.2.7",
        ])
        .expect("valid");
        let shown: Vec<String> = config
            .webhook_allow
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["10.20.0.0/16", "hooks.internal port 8443"]);
        assert_eq!(
            config.connections,
            ConnectionLimits {
                max_connections: 8,
                header_read_timeout: Duration::from_secs(3),
                write_timeout: Duration::from_secs(4),
                max_per_address: 5,
                max_anonymous_per_address: 3,
                anonymous_grace: Duration::from_secs(7),
                shutdown_deadline: Duration::from_secs(2),
            }
        );
        let proxies: Vec<String> = config
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(proxies, ["10.1.0.0/16", "192.0.2.7/32"]);
        assert!(parse(&["--trusted-proxy", "proxy.internal"]).is_err());
        let seams = parse(&["--conformance-seams"]).expect("valid");
        assert_eq!(seams.webhook_allow, conformance_egress());
        assert!(parse(&["--webhook-allow", "not a host"]).is_err());
        assert!(parse(&["--header-timeout-secs", "0"]).is_err());
    }

    #[test]
    fn webhook_secret_and_verifiers_file() {
        let config = parse(&[
            "--webhook-secret",
            "s3cret",
            "--verifiers",
            "verifiers.json",
        ])
        .expect("valid");
        assert_eq!(config.webhook_secret.as_deref(), Some("s3cret"));
        assert_eq!(config.verifiers, Some(PathBuf::from("verifiers.json")));
        let bare = parse(&[]).expect("valid");
        assert_eq!(bare.webhook_secret, None);
        assert_eq!(bare.verifiers, None);
    }
}
