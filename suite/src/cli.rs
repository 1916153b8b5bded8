//! The command line: our options, parsed by clap, and everything else handed
//! to the test harness (libtest-mimic) untouched.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Profiles a requirement id may start with.
pub const KNOWN_PROFILES: &[&str] = &[
    "core",
    "behavior",
    "observed",
    "hardening",
    "cluster",
    "strict",
    "attention",
];

/// `goalpost --version`: the suite's version and the profile it certifies.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (certifies goalpost profile ",
    env!("GOALPOST_PROFILE_VERSION"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "goalpost",
    version = VERSION,
    about = "Conformance suite for RFC 0097 standing goals",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the scenarios against a host and write the reports (json, html,
    /// md, junit, badges).
    #[command(after_help = HARNESS_HELP)]
    Run(RunArgs),
    /// Validate JSON payloads against one of goalpost's schemas.
    #[command(after_help = VALIDATE_HELP)]
    Validate(ValidateArgs),
    /// List the schema names `validate` accepts.
    Schemas,
    /// Show a requirement: its SPEC clause, its text and the scenarios that
    /// prove it.
    Explain(ExplainArgs),
    /// Check the scenarios for claims a broken host could pass (vacuity lint).
    #[command(after_help = LINT_HELP)]
    Lint(LintArgs),
    /// List the requirements with their scenarios and the mutants of the
    /// reference host that prove each can fail (mutation-verified or not).
    #[command(after_help = LIST_HELP)]
    List(ListArgs),
    /// Read a host's discovery and probe it (reads only) to predict, per
    /// profile, the verdict and scope of a run, and which PROFILE.md
    /// sections to implement for the rest.
    #[command(after_help = DOCTOR_HELP)]
    Doctor(DoctorArgs),
    /// Compare two report.json files: requirements that regressed,
    /// recovered, appeared or vanished, and scopes that changed.
    #[command(after_help = DIFF_HELP)]
    Diff(DiffArgs),
    /// Build a compatibility matrix (HTML and Markdown) from several hosts'
    /// report.json files.
    #[command(after_help = MATRIX_HELP)]
    Matrix(MatrixArgs),
}

const MATRIX_HELP: &str = "\
Writes DIR/matrix.html (one self-contained page: per-profile verdicts per host,
each with the scope it covers or what it needs, then requirements as rows and hosts as columns, filterable by profile and
disposition, sortable by any column) and DIR/matrix.md. A host is named by its
report's folder; a cell that is not a pass links to that host's report.html
beside its report.json, at the failing exchange.

Exit codes: 0 written; 2 a report cannot be read or DIR cannot be written.";

#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// The hosts' report.json files, one column each, in this order.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,
    /// The folder to write matrix.html and matrix.md into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

const DIFF_HELP: &str = "\
Groups the requirements whose disposition moved: regressed (MUST, then SHOULD),
recovered, changed (e.g. pass to skip: no longer checked), appeared and vanished,
the profiles whose verdict changed, and those whose scope changed. A regression
is a requirement that now fails, errors, is not reached or is advisory and was
not before (a new requirement the host breaks counts too), or a scope that
shrank: the host no longer offers a judge, mode or feature the verdict covered.

Exit codes: 0 no MUST requirement regressed and no scope shrank (a SHOULD
turning advisory never blocks); 1 one did; 2 a report cannot be read.";

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The baseline report.json.
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The report.json of the run to judge.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
}

const DOCTOR_HELP: &str = "\
Prints what discovery advertises, one line per probe (GET the goals list as
each tenant, GET an unknown id expecting the 404 error envelope, GET without a
credential expecting 401), and per profile the verdict a run whose every check
holds would reach, by the run's own rules: `would be certified` and the scope
it would cover, `not attempted` and what the profile's minimum scope needs, or
`cannot be certified` and why (no second token, a seam advertised but absent,
no scenario for the host's choices); below it, how many scenarios can be
attempted (ready, partly or cannot attempt), with each missing seam, mode or
option and the PROFILE.md section that says how to add it. Nothing is created
unless --probe-write (one goal, then abandoned; it also calls the `events` and
`continue` seams discovery advertises).

Exit codes: 0 no seam (nor agents.goals) missing and every probe as the profile
says (a continuation mode not offered is a legal choice: listed, never 1); 1 a
seam is missing or a probe answered wrong; 2 doctor could not start (bad
arguments, nobody listening at --host).";

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Base URL of the host.
    #[arg(long, env = "GOALPOST_HOST", value_name = "URL")]
    pub host: String,
    /// Bearer token of tenant A.
    #[arg(long, env = "GOALPOST_TOKEN", value_name = "T", hide_env_values = true)]
    pub token: String,
    /// Bearer token of a second tenant.
    #[arg(
        long = "token-b",
        env = "GOALPOST_TOKEN_B",
        value_name = "T",
        hide_env_values = true
    )]
    pub token_b: Option<String>,
    /// The goals collection path, over what discovery says.
    #[arg(long, env = "GOALPOST_BASE_PATH", value_name = "PATH", value_parser = parse_base_path)]
    pub base_path: Option<String>,
    /// Also create one goal (and abandon it) to check creates work.
    #[arg(long)]
    pub probe_write: bool,
    /// Multiply the request deadlines by F, for slow hosts.
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_scale)]
    pub timeout_scale: f64,
    /// The scenarios folder [default: scenarios/ found by walking up from the current directory, else the embedded ones].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
}

const LIST_HELP: &str = "\
One line per requirement: id, level, how many scenarios name it, whether it is
mutation-verified and the mutants that prove it (`goalpost-host-builds --mutant
NAME` serves one); then a summary naming any MUST without a
mutant. `cargo test` (tests/it/kill_matrix.rs) proves every listed mutant is killed.

Exit codes: 0 listed; 2 the folder cannot be read.";

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// List the requirements (the only listing there is).
    #[arg(long, required = true)]
    pub requirements: bool,
    /// The scenarios folder [default: scenarios/ found by walking up from the current directory, else the embedded ones].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<std::path::PathBuf>,
}

const LINT_HELP: &str = "\
Prints one `FILE POINTER: [RULE] message` line per finding; docs/DESIGN.md
(\"Vacuity lint\") explains every rule.

Exit codes: 0 no findings; 1 findings; 2 the folder cannot be read (a file that is
not JSON, an unusable requirements.json).";

#[derive(Debug, Clone, Args)]
pub struct LintArgs {
    /// The scenarios folder [default: scenarios/ found by walking up from the current directory].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
    /// Read the JSON Schemas from DIR instead of the embedded copies.
    #[arg(long, value_name = "DIR")]
    pub schemas: Option<PathBuf>,
}

const VALIDATE_HELP: &str = "\
Prints `FILE: valid` or `FILE: invalid, N errors` followed by one `pointer: message`
line per error.

Exit codes: 0 every payload is valid; 1 one is invalid; 2 a file cannot be read or is
not JSON, or the schema is unknown.";

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// The schema to validate against (`goalpost schemas` lists them).
    #[arg(value_name = "SCHEMA")]
    pub schema: String,
    /// JSON files to validate; `-` or none reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read the JSON Schemas from DIR instead of the embedded copies.
    #[arg(long, value_name = "DIR")]
    pub schemas: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A requirement id, e.g. `core.create.bounds-required`.
    #[arg(value_name = "REQ-ID")]
    pub id: String,
    /// The scenarios folder [default: scenarios/ found by walking up from the current directory, else the embedded ones].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
}

const HARNESS_HELP: &str = "\
Any other argument goes to the test harness, like the arguments of `cargo test`:
  --list                 list the trials (profile::scenario) and exit
  FILTER [--exact]       run only trials whose name contains FILTER
  --skip FILTER          leave out trials whose name contains FILTER
  --test-threads N       run N trials at once (default 8)
Put them after `--` to be sure they are not read as goalpost options. What a
filter or --skip leaves out is reported as skipped, reason `filtered`, and
certifies nothing.

The harness's `test result` line counts trials (scenarios); the summary table
after it counts requirements. A profile is certified when its minimum scope
ran and every MUST requirement in it that applies to the host passed (one about
a feature the host does not advertise is `not-applicable`: never blocking, never
a pass); a SHOULD requirement not met is an `advisory`, counted apart, and
never blocks. Each verdict says the scope it covers, or what a profile the run
could not attempt needs (`cluster` against one endpoint: not attempted, exit
code unaffected).

Exit codes: 0 nothing failed or errored (advisories never count); 1 something
did; 2 the run could not start.";

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Base URL of the host under test; without it the bundled reference
    /// host is started in-process (builds with the `bundled-host`
    /// feature, the default). An https URL is checked against the
    /// system's roots (`SSL_CERT_FILE` names another bundle). Given again (or comma-separated in the
    /// environment), the endpoints of one deployment: discovery is read
    /// from the first, and each request goes to the next in turn.
    #[arg(long, env = "GOALPOST_HOST", value_name = "URL", value_delimiter = ',')]
    pub host: Vec<String>,
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
    /// A credential that holds a principal's authority for tenant A (the
    /// `attention` profile's `principal-confirmed` confirmations); the host
    /// configures it apart from tenant tokens.
    #[arg(
        long = "principal-token",
        env = "GOALPOST_PRINCIPAL_TOKEN",
        value_name = "T",
        hide_env_values = true
    )]
    pub principal_token: Option<String>,
    /// A credential that holds the host's authority for tenant A (the
    /// `attention` profile's `host-confirmed` confirmations).
    #[arg(
        long = "host-authority-token",
        env = "GOALPOST_HOST_AUTHORITY_TOKEN",
        value_name = "T",
        hide_env_values = true
    )]
    pub host_authority_token: Option<String>,
    /// Profile to certify (repeatable); default: every profile in the scenarios folder but `strict` (`attention` is not attempted against a host that does not advertise it).
    #[arg(long = "profile", value_name = "P", value_parser = clap::builder::PossibleValuesParser::new(KNOWN_PROFILES))]
    pub profiles: Vec<String>,
    /// Add the `strict` profile (the stricter readings of the spec).
    #[arg(long)]
    pub strict: bool,
    /// Where report.json and junit.xml go [default: reports/latest/ under the workspace root].
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// The scenarios folder [default: scenarios/ found by walking up from the current directory, else the embedded ones].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
    /// Read the JSON Schemas from DIR instead of the embedded copies.
    #[arg(long, value_name = "DIR")]
    pub schemas: Option<PathBuf>,
    /// Multiply the connect and request deadlines (body included) and poll deadlines by F, for slow hosts.
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_scale)]
    pub timeout_scale: f64,
    /// The goals collection path when the host serves it somewhere else than
    /// `conformanceSeams.goals.basePath` or, without seams, the profile's
    /// default /v1/host/sample/goals (e.g. /v1/host/openwop-app/goals).
    #[arg(long, env = "GOALPOST_BASE_PATH", value_name = "PATH", value_parser = parse_base_path)]
    pub base_path: Option<String>,
    /// Run the trials in a shuffled order (the seed is printed and recorded in report.json).
    #[arg(long)]
    pub shuffle: bool,
    /// Seed for --shuffle, to replay an order (implies --shuffle) [default: random].
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Print only the summary; the harness's progress lines go to harness.log in the report folder.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The observed profile's webhook mock (boxed: rarely given, and it
    /// keeps `Command` small).
    #[command(flatten)]
    pub callback: Box<CallbackArgs>,
}

/// Where the suite's webhook mock listens and what the host signs with.
#[derive(Debug, Clone, Default, Args)]
pub struct CallbackArgs {
    /// Where the suite's webhook mock listens (observed profile) [default: 127.0.0.1:0].
    #[arg(long, env = "GOALPOST_CALLBACK_LISTEN", value_name = "ADDR")]
    pub callback_listen: Option<std::net::SocketAddr>,
    /// The base URL a remote host calls to reach the mock [default: http://ADDR as bound].
    #[arg(long, env = "GOALPOST_CALLBACK_URL", value_name = "URL")]
    pub callback_url: Option<String>,
    /// The host's webhook secret (a tenant's signing key, or the master it is
    /// derived from), so the mock can check every call's X-Goalpost-Signature.
    #[arg(
        long,
        env = "GOALPOST_WEBHOOK_SECRET",
        value_name = "S",
        hide_env_values = true
    )]
    pub webhook_secret: Option<String>,
}

/// A path of the host's own: it starts at the root and names no host, query
/// or fragment, so every scenario path can be built by appending to it.
fn parse_base_path(text: &str) -> Result<String, String> {
    let trimmed = text.trim_end_matches('/');
    if !trimmed.starts_with('/') || trimmed.contains(['?', '#', ' ']) || trimmed.starts_with("//") {
        return Err(format!(
            "`{text}` is not a path on the host: write it from the root, e.g. /v1/host/sample/goals"
        ));
    }
    Ok(trimmed.to_string())
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(scale) if scale.is_finite() && scale > 0.0 && scale <= 100.0 => Ok(scale),
        _ => Err(format!("`{text}` is not a number in (0, 100]")),
    }
}

fn parse_seed(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(seed) if seed <= crate::shuffle::MAX_SEED => Ok(seed),
        _ => Err(format!(
            "`{text}` is not a whole number in 0..={}",
            crate::shuffle::MAX_SEED
        )),
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
    "--base-path",
    "--seed",
    "--callback-listen",
    "--callback-url",
    "--webhook-secret",
    "--principal-token",
    "--host-authority-token",
];
const FLAG_OPTIONS: &[&str] = &["--strict", "--quiet", "-q", "--shuffle", "--help", "-h"];

/// Splits the process arguments into ours (program name first) and the
/// harness's (program name first). Up to the `run` subcommand everything is
/// ours; after it, our options (and their values) are ours, `--` hands the
/// rest to the harness, and any other argument is the harness's. Only the
/// first word that is not an option names the subcommand, so a `validate`
/// file called `run` stays ours.
pub fn split_args(args: impl IntoIterator<Item = OsString>) -> (Vec<OsString>, Vec<OsString>) {
    let mut args = args.into_iter();
    let program = args.next().unwrap_or_else(|| OsString::from("goalpost"));
    let mut ours = vec![program.clone()];
    let mut harness = vec![program];
    let mut seen_run = false;
    let mut seen_subcommand = false;
    let mut rest = args.peekable();
    while let Some(arg) = rest.next() {
        if !seen_run {
            if !seen_subcommand && !arg.to_string_lossy().starts_with('-') {
                seen_subcommand = true;
                seen_run = arg == OsStr::new("run");
            }
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
        let Command::Run(run) = cli.command else {
            panic!("expected the run subcommand");
        };
        assert_eq!(run.token.as_deref(), Some("t"));
        assert_eq!(run.profiles, ["core", "behavior"]);
        assert_eq!(run.timeout_scale, 2.5);
        assert!(harness.list);
        assert_eq!(harness.filter.as_deref(), Some("behavior::"));
    }

    #[test]
    fn a_base_path_is_a_root_path_without_its_trailing_slash() {
        let run_with = |path: &str| parse(os(&["goalpost", "run", "--base-path", path]));
        let (cli, _) = run_with("/v1/host/openwop-app/goals/").unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected the run subcommand");
        };
        assert_eq!(run.base_path.as_deref(), Some("/v1/host/openwop-app/goals"));
        for bad in [
            "v1/goals",
            "//evil/goals",
            "/goals?x=1",
            "/goals#f",
            "http://h/goals",
            "",
        ] {
            assert!(run_with(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn bad_arguments_are_errors_not_exits() {
        assert!(parse(os(&["goalpost", "run", "--profile", "nope"])).is_err());
        assert!(parse(os(&["goalpost", "run", "--timeout-scale", "0"])).is_err());
        assert!(parse(os(&["goalpost", "run", "--", "--no-such-flag"])).is_err());
        assert!(parse(os(&["goalpost"])).is_err());
    }

    #[test]
    fn other_subcommands_keep_every_argument() {
        let (cli, _) = parse(os(&["goalpost", "validate", "goal", "run", "-"])).unwrap();
        let Command::Validate(args) = cli.command else {
            panic!("expected validate");
        };
        assert_eq!(args.schema, "goal");
        assert_eq!(args.files, [PathBuf::from("run"), PathBuf::from("-")]);
        let (cli, _) = parse(os(&["goalpost", "explain", "core.a.b"])).unwrap();
        assert!(
            matches!(cli.command, Command::Explain(ExplainArgs { ref id, .. }) if id == "core.a.b")
        );
        assert!(matches!(
            parse(os(&["goalpost", "schemas"])).unwrap().0.command,
            Command::Schemas
        ));
        assert!(parse(os(&["goalpost", "validate"])).is_err());
    }

    #[test]
    fn shuffle_and_seed_are_ours_and_seeds_fit_in_a_double() {
        let (cli, harness) = parse(os(&[
            "goalpost",
            "run",
            "--shuffle",
            "--seed",
            "42",
            "--test-threads",
            "2",
        ]))
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        assert!(run.shuffle);
        assert_eq!(run.seed, Some(42));
        assert_eq!(harness.test_threads, Some(2));
        let max = crate::shuffle::MAX_SEED.to_string();
        assert!(parse(os(&["goalpost", "run", "--seed", &max])).is_ok());
        let over = (crate::shuffle::MAX_SEED + 1).to_string();
        assert!(parse(os(&["goalpost", "run", "--seed", &over])).is_err());
        assert!(parse(os(&["goalpost", "run", "--seed", "-1"])).is_err());
    }

    #[test]
    fn lint_takes_a_scenarios_folder() {
        let (cli, _) = parse(os(&["goalpost", "lint", "--scenarios", "dir"])).unwrap();
        let Command::Lint(args) = cli.command else {
            panic!("expected lint");
        };
        assert_eq!(args.scenarios, Some(PathBuf::from("dir")));
    }

    #[test]
    fn quiet_is_ours_and_the_rest_still_reaches_the_harness() {
        let (cli, harness) = parse(os(&["goalpost", "run", "--quiet", "--list"])).unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        assert!(run.quiet);
        assert!(harness.list);
        assert!(!harness.quiet);
    }

    #[test]
    fn callback_options_are_ours() {
        let (cli, harness) = parse(os(&[
            "goalpost",
            "run",
            "--callback-listen",
            "0.0.0.0:9000",
            "--callback-url=http://suite:9000",
            "--webhook-secret",
            "s",
            "observed::",
        ]))
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected run");
        };
        assert_eq!(
            run.callback.callback_listen,
            Some("0.0.0.0:9000".parse().unwrap())
        );
        assert_eq!(
            run.callback.callback_url.as_deref(),
            Some("http://suite:9000")
        );
        assert_eq!(run.callback.webhook_secret.as_deref(), Some("s"));
        assert_eq!(harness.filter.as_deref(), Some("observed::"));
        assert!(parse(os(&["goalpost", "run", "--callback-listen", "nowhere"])).is_err());
    }
}
