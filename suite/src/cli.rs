//! The command line: our options, parsed by clap, and everything else handed
//! to the test harness (libtest-mimic) untouched.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Profiles a requirement id may start with.
pub const KNOWN_PROFILES: &[&str] = &["core", "behavior", "observed", "hardening", "strict"];

#[derive(Debug, Parser)]
#[command(
    name = "goalpost",
    version,
    about = "Conformance suite for RFC 0097 standing goals",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the scenarios against a host and write report.json and junit.xml.
    #[command(after_help = HARNESS_HELP)]
    Run(RunArgs),
}

const HARNESS_HELP: &str = "\
Any other argument goes to the test harness, like the arguments of `cargo test`:
  --list                 list the trials (profile::scenario) and exit
  FILTER [--exact]       run only trials whose name contains FILTER
  --skip FILTER          leave out trials whose name contains FILTER
  --test-threads N       run N trials at once (default 8)
Put them after `--` to be sure they are not read as goalpost options.

Exit codes: 0 nothing failed or errored; 1 something did; 2 the run could not start.";

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Base URL of the host under test; without it the bundled reference
    /// host is started in-process.
    #[arg(long, env = "GOALPOST_HOST", value_name = "URL")]
    pub host: Option<String>,
    /// Bearer token of tenant A (required with --host).
    #[arg(long, env = "GOALPOST_TOKEN", value_name = "T", hide_env_values = true)]
    pub token: Option<String>,
    /// Bearer token of a second tenant, for the tenancy scenarios.
    #[arg(
        long = "token-b",
        env = "GOALPOST_TOKEN_B",
        value_name = "T",
        hide_env_values = true
    )]
    pub token_b: Option<String>,
    /// Profile to certify (repeatable); default: every profile in the scenarios folder but `strict`.
    #[arg(long = "profile", value_name = "P", value_parser = clap::builder::PossibleValuesParser::new(KNOWN_PROFILES))]
    pub profiles: Vec<String>,
    /// Add the `strict` profile (the stricter readings of the spec).
    #[arg(long)]
    pub strict: bool,
    /// Where report.json and junit.xml go [default: reports/latest/ under the workspace root].
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// The scenarios folder [default: scenarios/ found by walking up from the current directory].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
    /// Read the JSON Schemas from DIR instead of the embedded copies.
    #[arg(long, value_name = "DIR")]
    pub schemas: Option<PathBuf>,
    /// Multiply request timeouts and poll deadlines by F, for slow hosts.
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_scale)]
    pub timeout_scale: f64,
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(scale) if scale.is_finite() && scale > 0.0 && scale <= 100.0 => Ok(scale),
        _ => Err(format!("`{text}` is not a number in (0, 100]")),
    }
}

/// Our options that take a value, and those that do not.
const VALUE_OPTIONS: &[&str] = &[
    "--host",
    "--token",
    "--token-b",
    "--profile",
    "--report-dir",
    "--scenarios",
    "--schemas",
    "--timeout-scale",
];
const FLAG_OPTIONS: &[&str] = &["--strict", "--help", "-h"];

/// Splits the process arguments into ours (program name first) and the
/// harness's (program name first). Up to the `run` subcommand everything is
/// ours; after it, our options (and their values) are ours, `--` hands the
/// rest to the harness, and any other argument is the harness's.
pub fn split_args(args: impl IntoIterator<Item = OsString>) -> (Vec<OsString>, Vec<OsString>) {
    let mut args = args.into_iter();
    let program = args.next().unwrap_or_else(|| OsString::from("goalpost"));
    let mut ours = vec![program.clone()];
    let mut harness = vec![program];
    let mut seen_run = false;
    let mut rest = args.peekable();
    while let Some(arg) = rest.next() {
        if !seen_run {
            seen_run = arg == OsStr::new("run");
            ours.push(arg);
            continue;
        }
        if arg == OsStr::new("--") {
            harness.extend(rest.by_ref());
            break;
        }
        let text = arg.to_string_lossy();
        let name = text.split_once('=').map_or(text.as_ref(), |(name, _)| name);
        if VALUE_OPTIONS.contains(&name) {
            let inline = text.contains('=');
            ours.push(arg);
            if !inline {
                if let Some(value) = rest.next() {
                    ours.push(value);
                }
            }
        } else if FLAG_OPTIONS.contains(&text.as_ref()) {
            ours.push(arg);
        } else {
            harness.push(arg);
        }
    }
    (ours, harness)
}

/// Parses everything; clap's error (or help) comes back for the caller to
/// print and turn into an exit code.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
) -> Result<(Cli, libtest_mimic::Arguments), clap::Error> {
    let (ours, harness) = split_args(args);
    let cli = Cli::try_parse_from(ours)?;
    let harness = libtest_mimic::Arguments::try_parse_from(harness)?;
    Ok((cli, harness))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn our_options_are_stripped_and_the_rest_goes_to_the_harness() {
        let (ours, harness) = split_args(os(&[
            "goalpost",
            "run",
            "--host",
            "http://h",
            "--list",
            "--profile=core",
            "--strict",
            "--test-threads",
            "1",
            "core::",
            "--",
            "--exact",
            "--host",
        ]));
        assert_eq!(
            ours,
            os(&[
                "goalpost",
                "run",
                "--host",
                "http://h",
                "--profile=core",
                "--strict"
            ])
        );
        assert_eq!(
            harness,
            os(&[
                "goalpost",
                "--list",
                "--test-threads",
                "1",
                "core::",
                "--exact",
                "--host"
            ])
        );
    }

    #[test]
    fn parses_both_halves() {
        let (cli, harness) = parse(os(&[
            "goalpost",
            "run",
            "--token",
            "t",
            "--profile",
            "core",
            "--profile",
            "behavior",
            "--timeout-scale",
            "2.5",
            "--list",
            "behavior::",
        ]))
        .unwrap();
        let Command::Run(run) = cli.command;
        assert_eq!(run.token.as_deref(), Some("t"));
        assert_eq!(run.profiles, ["core", "behavior"]);
        assert_eq!(run.timeout_scale, 2.5);
        assert!(harness.list);
        assert_eq!(harness.filter.as_deref(), Some("behavior::"));
    }

    #[test]
    fn bad_arguments_are_errors_not_exits() {
        assert!(parse(os(&["goalpost", "run", "--profile", "nope"])).is_err());
        assert!(parse(os(&["goalpost", "run", "--timeout-scale", "0"])).is_err());
        assert!(parse(os(&["goalpost", "run", "--", "--no-such-flag"])).is_err());
        assert!(parse(os(&["goalpost"])).is_err());
    }
}
