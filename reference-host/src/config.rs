//! Host configuration: the embedding [`Config`] and the command line that
//! builds one.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use clap::Parser;

use crate::storage::DbLocation;

/// Everything a host needs to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub listen: SocketAddr,
    pub db: DbLocation,
    /// `(token, tenant)` pairs.
    pub tokens: Vec<(String, String)>,
    pub conformance_seams: bool,
    /// How often the scheduler ticks.
    pub tick: Duration,
}

pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);
pub const DEFAULT_TICK: Duration = Duration::from_millis(100);

impl Config {
    /// What the suite starts in-process: an ephemeral port on 127.0.0.1, an
    /// in-memory database, the seams on, a 100 ms tick.
    pub fn conformance_in_memory(tokens: Vec<(String, String)>) -> Config {
        Config {
            listen: SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            db: DbLocation::Memory,
            tokens,
            conformance_seams: true,
            tick: DEFAULT_TICK,
        }
    }
}

/// Parses `TOKEN=TENANT`. The tenant follows the last `=`, so tokens may end
/// in base64 padding.
pub fn parse_token(text: &str) -> Result<(String, String), String> {
    match text.rsplit_once('=') {
        Some((token, tenant)) if !token.is_empty() && !tenant.is_empty() => {
            Ok((token.to_string(), tenant.to_string()))
        }
        _ => Err(format!("expected TOKEN=TENANT, got {text:?}")),
    }
}

fn parse_tick(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(ms) if ms >= 1 => Ok(Duration::from_millis(ms)),
        _ => Err(format!(
            "expected a whole number of milliseconds >= 1, got {text:?}"
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

    /// SQLite database file, or `:memory:`.
    #[arg(long, env = "GOALPOST_HOST_DB", default_value = "goalpost-host.db")]
    pub db: String,

    /// A credential as TOKEN=TENANT; repeat for more. The environment
    /// variable takes a comma-separated list.
    #[arg(long = "token", env = "GOALPOST_HOST_TOKENS", value_delimiter = ',', value_parser = parse_token)]
    pub tokens: Vec<(String, String)>,

    /// Serve the conformance seams (continue, events, fixtures) and advertise
    /// them in discovery.
    #[arg(long, env = "GOALPOST_HOST_CONFORMANCE_SEAMS")]
    pub conformance_seams: bool,

    /// Scheduler tick in milliseconds.
    #[arg(long, env = "GOALPOST_HOST_TICK_MS", default_value = "100", value_parser = parse_tick)]
    pub tick_ms: Duration,
}

impl Args {
    pub fn into_config(self) -> Config {
        Config {
            listen: self.listen,
            db: DbLocation::parse(&self.db),
            tokens: self.tokens,
            conformance_seams: self.conformance_seams,
            tick: self.tick_ms,
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
    }
}
