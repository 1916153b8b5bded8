//! Resolving the command line into the one configuration a run uses: every
//! default decided, every path found, before anything starts.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use goalpost_schemas::{SchemaError, Schemas};
use time::OffsetDateTime;

use crate::bundled::{
    DEFAULT_HOST_AUTHORITY_TOKEN, DEFAULT_PRINCIPAL_TOKEN, DEFAULT_TOKEN_A, DEFAULT_TOKEN_B,
};
use crate::cli::RunArgs;
use crate::run::gate::{HOST_AUTHORITY_TOKEN, PRINCIPAL_TOKEN, WEBHOOK_SECRET};
use crate::run::loader::{self, Catalog, LoadError, REQUIREMENTS_FILE};
use crate::shuffle::TrialOrder;
use crate::start::StartError;

/// Trials run at once unless `--test-threads` says otherwise. Scenarios
/// spend their time waiting on the host, not computing, so this is more
/// than the cores of a small machine.
pub const DEFAULT_TEST_THREADS: usize = 8;

/// The profile of the stricter readings: never selected by default.
pub const STRICT: &str = "strict";

#[derive(Debug, Clone, PartialEq)]
pub enum HostChoice {
    /// Start the reference host in-process.
    Bundled,
    /// A host already running at this base URL.
    Remote(String),
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub host: HostChoice,
    pub token_a: String,
    pub token_b: Option<String>,
    /// Credentials that hold an authority for tenant A (`--principal-token`,
    /// `--host-authority-token`): the attention profile's confirmations.
    pub authority: AuthorityTokens,
    /// `--profile` values; `None`: every profile that has scenarios or
    /// requirements, except `strict`.
    pub profiles: Option<BTreeSet<String>>,
    /// `--strict`: add the `strict` profile to the selection.
    pub strict: bool,
    /// Where the scenarios and schemas come from.
    pub source: ProfileSource,
    pub report_dir: PathBuf,
    pub timeout_scale: f64,
    /// `--base-path`: the goals collection path, over what discovery says.
    pub base_path: Option<String>,
    /// More endpoints of the same deployment (`--host` given again): each
    /// request goes to the next of the host and these in turn, so a goal
    /// made on one replica is read, run and closed on the others.
    pub replicas: Vec<String>,
    pub harness: libtest_mimic::Arguments,
    /// Wall clock for the report's timestamps.
    pub now: fn() -> OffsetDateTime,
    /// Where the webhook mock listens and how the host reaches it.
    pub callback: Callback,
    /// `--shuffle` / `--seed`: the order trials run in.
    pub order: TrialOrder,
}

/// Tenant A's credentials that hold an authority, apart from its token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorityTokens {
    pub principal: Option<String>,
    pub host: Option<String>,
}

impl AuthorityTokens {
    /// What the bundled host is configured with.
    pub fn bundled() -> AuthorityTokens {
        AuthorityTokens {
            principal: Some(DEFAULT_PRINCIPAL_TOKEN.to_string()),
            host: Some(DEFAULT_HOST_AUTHORITY_TOKEN.to_string()),
        }
    }
}

/// The observed profile's side of the configuration: the suite's webhook
/// mock and the secret the host signs its calls with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Callback {
    /// `--callback-listen`; 127.0.0.1 on a free port when absent.
    pub listen: Option<SocketAddr>,
    /// `--callback-url`: the base URL the host calls.
    pub url: Option<String>,
    /// The host's webhook secret when the suite knows it. Against the
    /// bundled host the suite makes one up and configures the host with it.
    pub secret: Option<String>,
}

impl Callback {
    pub fn mock_config(&self) -> crate::mock::MockConfig {
        let mut config = crate::mock::MockConfig::local(self.secret.clone());
        if let Some(listen) = self.listen {
            config.listen = listen;
        }
        config.public_url = self.url.clone();
        config
    }
}

/// A secret for the bundled host's webhook calls, new every run.
fn made_up_secret() -> String {
    format!("goalpost-{}", uuid::Uuid::new_v4().simple())
}

impl RunConfig {
    /// The suite options (as `needs.options` names them) this run was given.
    pub fn options_given(&self) -> BTreeSet<String> {
        let mut given = BTreeSet::new();
        // The bundled host always gets a made-up secret, so this is only ever
        // missing against a remote host started without `--webhook-secret`.
        if self.callback.secret.is_some() {
            given.insert(WEBHOOK_SECRET.to_string());
        }
        if self.authority.principal.is_some() {
            given.insert(PRINCIPAL_TOKEN.to_string());
        }
        if self.authority.host.is_some() {
            given.insert(HOST_AUTHORITY_TOKEN.to_string());
        }
        given
    }

    /// The configuration for a run against the bundled host with every
    /// default, as the reference-host test and `goalpost run` without
    /// options use it.
    pub fn bundled(
        scenarios_dir: PathBuf,
        report_dir: PathBuf,
        harness: libtest_mimic::Arguments,
    ) -> RunConfig {
        RunConfig {
            host: HostChoice::Bundled,
            token_a: DEFAULT_TOKEN_A.to_string(),
            token_b: Some(DEFAULT_TOKEN_B.to_string()),
            authority: AuthorityTokens::bundled(),
            profiles: None,
            strict: false,
            source: ProfileSource {
                scenarios_dir: Some(scenarios_dir),
                schemas_dir: None,
            },
            report_dir,
            timeout_scale: 1.0,
            base_path: None,
            replicas: Vec::new(),
            harness: with_default_threads(harness),
            now: OffsetDateTime::now_utc,
            callback: Callback {
                secret: Some(made_up_secret()),
                ..Callback::default()
            },
            order: TrialOrder::Catalog,
        }
    }

    /// The profiles this run certifies, given those the catalog has.
    pub fn selected_profiles(&self, available: &BTreeSet<String>) -> BTreeSet<String> {
        let mut selected = match &self.profiles {
            Some(explicit) => explicit.clone(),
            // `attention` is dropped again once discovery shows the host
            // does not advertise it (`runner`).
            None => available
                .iter()
                .filter(|profile| *profile != STRICT)
                .cloned()
                .collect(),
        };
        if self.strict {
            selected.insert(STRICT.to_string());
        }
        selected
    }

    /// Resolves parsed arguments; `cwd` anchors the search for `scenarios/`.
    pub fn resolve(
        args: RunArgs,
        harness: libtest_mimic::Arguments,
        cwd: &Path,
    ) -> Result<RunConfig, StartError> {
        let host = match args.host.first() {
            Some(url) => HostChoice::Remote(check_url(url, "--host")?),
            None if cfg!(feature = "bundled-host") => HostChoice::Bundled,
            None => return Err(StartError::Config(crate::bundled::NOT_BUILT.to_string())),
        };
        let replicas = args
            .host
            .iter()
            .skip(1)
            .map(|url| check_url(url, "--host"))
            .collect::<Result<Vec<_>, _>>()?;
        let (token_a, token_b) = match (&host, args.token) {
            (HostChoice::Remote(_), None) => {
                return Err(StartError::Config(
                    "--token is required with --host (tenant A's bearer token)".to_string(),
                ))
            }
            (HostChoice::Remote(_), Some(token)) => (token, args.token_b),
            // The bundled host is told whatever tokens were given.
            (HostChoice::Bundled, token) => (
                token.unwrap_or_else(|| DEFAULT_TOKEN_A.to_string()),
                Some(args.token_b.unwrap_or_else(|| DEFAULT_TOKEN_B.to_string())),
            ),
        };
        if token_b.as_deref() == Some(token_a.as_str()) {
            return Err(StartError::Config(
                "--token and --token-b must be different tenants' tokens".to_string(),
            ));
        }
        let authority = match &host {
            // The bundled host is configured with whatever was given.
            HostChoice::Bundled => AuthorityTokens {
                principal: Some(
                    args.principal_token
                        .unwrap_or_else(|| DEFAULT_PRINCIPAL_TOKEN.to_string()),
                ),
                host: Some(
                    args.host_authority_token
                        .unwrap_or_else(|| DEFAULT_HOST_AUTHORITY_TOKEN.to_string()),
                ),
            },
            HostChoice::Remote(_) => AuthorityTokens {
                principal: args.principal_token,
                host: args.host_authority_token,
            },
        };
        let mut credentials: Vec<&str> = [Some(token_a.as_str()), token_b.as_deref()]
            .into_iter()
            .chain([authority.principal.as_deref(), authority.host.as_deref()])
            .flatten()
            .collect();
        let given = credentials.len();
        credentials.sort_unstable();
        credentials.dedup();
        if credentials.len() != given {
            return Err(StartError::Config(
                "--token, --token-b, --principal-token and --host-authority-token must all differ: an authority credential is never a tenant's token".to_string(),
            ));
        }
        let root = workspace_root(cwd);
        let source =
            ProfileSource::resolve(args.scenarios.as_deref(), args.schemas.as_deref(), cwd);
        let report_dir = match args.report_dir {
            Some(dir) => cwd.join(dir),
            None => root
                .unwrap_or_else(|| cwd.to_path_buf())
                .join("reports")
                .join("latest"),
        };
        let profiles: BTreeSet<String> = args.profiles.into_iter().collect();
        let profiles = (!profiles.is_empty()).then_some(profiles);
        let callback_args = *args.callback;
        if callback_args.callback_url.is_some() && callback_args.callback_listen.is_none() {
            return Err(StartError::Config(
                "--callback-url needs --callback-listen (the address the mock binds to reach that URL)"
                    .to_string(),
            ));
        }
        let callback = Callback {
            listen: callback_args.callback_listen,
            url: callback_args
                .callback_url
                .as_deref()
                .map(|url| check_url(url, "--callback-url"))
                .transpose()?,
            secret: match (&host, callback_args.webhook_secret) {
                (HostChoice::Bundled, None) => Some(made_up_secret()),
                (_, given) => given,
            },
        };
        Ok(RunConfig {
            host,
            token_a,
            token_b,
            authority,
            profiles,
            strict: args.strict,
            source,
            report_dir,
            timeout_scale: args.timeout_scale,
            base_path: args.base_path,
            replicas,
            harness: with_default_threads(harness),
            now: OffsetDateTime::now_utc,
            callback,
            order: match (args.shuffle, args.seed) {
                (_, Some(seed)) => TrialOrder::Shuffled { seed },
                (true, None) => TrialOrder::Shuffled {
                    seed: crate::shuffle::random_seed(),
                },
                (false, None) => TrialOrder::Catalog,
            },
        })
    }
}

fn with_default_threads(mut harness: libtest_mimic::Arguments) -> libtest_mimic::Arguments {
    harness.test_threads = harness.test_threads.or(Some(DEFAULT_TEST_THREADS));
    harness
}

pub fn check_url(url: &str, option: &str) -> Result<String, StartError> {
    let trimmed = url.trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"));
    match rest {
        Some(authority) if !authority.is_empty() => Ok(trimmed.to_string()),
        _ => Err(StartError::Config(format!(
            "{option} must be an http:// or https:// base URL, got `{url}`"
        ))),
    }
}

/// The nearest ancestor of `cwd` holding `scenarios/requirements.json` (a
/// checkout of goalpost, whose scenarios win over the embedded ones so that
/// editing a scenario takes effect without a rebuild); `None` elsewhere,
/// where the binary uses the scenarios embedded in it.
/// Where a command reads the profile from, resolved once from its command
/// line so that every command finds the same folder the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSource {
    /// The scenarios folder; `None`: the scenarios embedded in this binary.
    pub scenarios_dir: Option<PathBuf>,
    /// The schemas folder; `None`: the embedded schemas.
    pub schemas_dir: Option<PathBuf>,
}

impl ProfileSource {
    /// `--scenarios` (relative to `cwd`), else the `scenarios/` of the
    /// checkout around `cwd`, else the embedded ones; `--schemas` likewise,
    /// else the embedded schemas.
    pub fn resolve(scenarios: Option<&Path>, schemas: Option<&Path>, cwd: &Path) -> ProfileSource {
        ProfileSource {
            scenarios_dir: match scenarios {
                Some(dir) => Some(cwd.join(dir)),
                None => workspace_root(cwd).map(|root| root.join("scenarios")),
            },
            schemas_dir: schemas.map(|dir| cwd.join(dir)),
        }
    }

    pub fn schemas(&self) -> Result<Schemas, SchemaError> {
        match &self.schemas_dir {
            Some(dir) => Schemas::from_dir(dir),
            None => Schemas::embedded(),
        }
    }

    /// Loads and checks the scenarios and their requirement registry.
    pub fn load(&self, schemas: &Schemas) -> Result<Catalog, LoadError> {
        match &self.scenarios_dir {
            Some(dir) => loader::load(dir, schemas),
            None => loader::load_embedded(schemas),
        }
    }
}

pub fn workspace_root(cwd: &Path) -> Option<PathBuf> {
    let has_scenarios = |dir: &Path| dir.join("scenarios").join(REQUIREMENTS_FILE).is_file();
    cwd.ancestors()
        .find(|dir| has_scenarios(dir))
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CallbackArgs;

    fn resolve(args: RunArgs) -> Result<RunConfig, StartError> {
        let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        RunConfig::resolve(args, libtest_mimic::Arguments::default(), &scenarios)
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn strict_is_opt_in() {
        let available = set(&["behavior", "core", "strict"]);
        let config = resolve(RunArgs::default()).unwrap();
        assert_eq!(
            config.selected_profiles(&available),
            set(&["behavior", "core"])
        );
        let strict = resolve(RunArgs {
            strict: true,
            ..RunArgs::default()
        })
        .unwrap();
        assert_eq!(strict.selected_profiles(&available), available);
        let only = resolve(RunArgs {
            profiles: vec!["core".to_string()],
            strict: true,
            ..RunArgs::default()
        })
        .unwrap();
        assert_eq!(only.selected_profiles(&available), set(&["core", "strict"]));
    }

    #[test]
    fn the_bundled_host_gets_default_or_given_tokens() {
        let config = resolve(RunArgs::default()).unwrap();
        assert_eq!(config.host, HostChoice::Bundled);
        assert_eq!(config.token_a, DEFAULT_TOKEN_A);
        assert_eq!(config.token_b.as_deref(), Some(DEFAULT_TOKEN_B));
        assert_eq!(config.harness.test_threads, Some(DEFAULT_TEST_THREADS));
        let given = resolve(RunArgs {
            token: Some("mine".to_string()),
            ..RunArgs::default()
        })
        .unwrap();
        assert_eq!(given.token_a, "mine");
    }

    #[test]
    fn a_remote_host_needs_a_token_and_an_http_url() {
        let remote = |host: &str, token: Option<&str>| {
            resolve(RunArgs {
                host: vec![host.to_string()],
                token: token.map(str::to_string),
                ..RunArgs::default()
            })
        };
        let config = remote("http://h:8080/", Some("t")).unwrap();
        assert_eq!(config.host, HostChoice::Remote("http://h:8080".to_string()));
        assert_eq!(config.token_b, None);
        assert!(remote("http://h", None).is_err());
        assert!(remote("h:8080", Some("t")).is_err());
        assert!(remote("http://", Some("t")).is_err());
    }

    #[test]
    fn more_hosts_are_endpoints_of_the_same_deployment() {
        let hosts = |hosts: &[&str]| {
            resolve(RunArgs {
                host: hosts.iter().map(|host| host.to_string()).collect(),
                token: Some("t".to_string()),
                ..RunArgs::default()
            })
        };
        let config = hosts(&["http://a:1", "http://b:2/", "http://c:3"]).unwrap();
        assert_eq!(config.host, HostChoice::Remote("http://a:1".to_string()));
        assert_eq!(config.replicas, ["http://b:2", "http://c:3"]);
        assert!(hosts(&["http://a:1"]).unwrap().replicas.is_empty());
        // Every endpoint is checked, not only the first.
        assert!(hosts(&["http://a:1", "b:2"]).is_err());
    }

    #[test]
    fn a_seed_implies_shuffle_and_shuffle_alone_draws_one() {
        assert_eq!(
            resolve(RunArgs::default()).unwrap().order,
            TrialOrder::Catalog
        );
        let seeded = resolve(RunArgs {
            seed: Some(9),
            ..RunArgs::default()
        })
        .unwrap();
        assert_eq!(seeded.order, TrialOrder::Shuffled { seed: 9 });
        let drawn = resolve(RunArgs {
            shuffle: true,
            ..RunArgs::default()
        })
        .unwrap();
        assert!(drawn.order.seed().is_some());
    }

    #[test]
    fn the_callback_defaults_to_a_local_mock_and_a_made_up_secret() {
        let bundled = resolve(RunArgs::default()).unwrap();
        assert_eq!(bundled.callback.listen, None);
        assert!(bundled.callback.secret.is_some());
        let mock = bundled.callback.mock_config();
        assert!(mock.listen.ip().is_loopback());
        assert_eq!(mock.public_url, None);
        let other = resolve(RunArgs::default()).unwrap();
        assert_ne!(bundled.callback.secret, other.callback.secret);
        let remote = resolve(RunArgs {
            host: vec!["http://h".to_string()],
            token: Some("t".to_string()),
            callback: Box::new(CallbackArgs {
                callback_listen: Some("0.0.0.0:9000".parse().unwrap()),
                callback_url: Some("http://suite.example:9000/".to_string()),
                webhook_secret: Some("s".to_string()),
            }),
            ..RunArgs::default()
        })
        .unwrap();
        assert_eq!(
            remote.callback.url.as_deref(),
            Some("http://suite.example:9000")
        );
        assert_eq!(remote.callback.secret.as_deref(), Some("s"));
        assert_eq!(remote.callback.mock_config().listen.port(), 9000);
        let unknown = resolve(RunArgs {
            host: vec!["http://h".to_string()],
            token: Some("t".to_string()),
            ..RunArgs::default()
        })
        .unwrap();
        assert_eq!(unknown.callback.secret, None);
    }

    #[test]
    fn a_callback_url_needs_a_listen_address_and_http() {
        let url_only = resolve(RunArgs {
            callback: Box::new(CallbackArgs {
                callback_url: Some("http://suite:9000".to_string()),
                ..CallbackArgs::default()
            }),
            ..RunArgs::default()
        });
        assert!(url_only.is_err());
        let not_http = resolve(RunArgs {
            callback: Box::new(CallbackArgs {
                callback_listen: Some("127.0.0.1:0".parse().unwrap()),
                callback_url: Some("suite:9000".to_string()),
                ..CallbackArgs::default()
            }),
            ..RunArgs::default()
        });
        assert!(not_http.is_err());
    }

    #[test]
    fn defaults_are_found_from_the_workspace() {
        let config = resolve(RunArgs::default()).unwrap();
        let scenarios = config
            .source
            .scenarios_dir
            .expect("the checkout's scenarios");
        assert!(scenarios.join(REQUIREMENTS_FILE).is_file());
        assert!(config.report_dir.ends_with("reports/latest"));
    }

    #[test]
    fn outside_a_checkout_the_embedded_scenarios_are_used() {
        let outside = std::env::temp_dir();
        let config = RunConfig::resolve(
            RunArgs::default(),
            libtest_mimic::Arguments::default(),
            &outside,
        )
        .unwrap();
        assert_eq!(config.source.scenarios_dir, None);
        assert_eq!(config.report_dir, outside.join("reports").join("latest"));
    }

    #[test]
    fn the_webhook_secret_option_is_given_with_a_secret() {
        let harness = libtest_mimic::Arguments::default();
        let mut config = RunConfig::bundled(PathBuf::from("s"), PathBuf::from("r"), harness);
        assert_eq!(
            config.options_given(),
            BTreeSet::from([
                WEBHOOK_SECRET.to_string(),
                PRINCIPAL_TOKEN.to_string(),
                HOST_AUTHORITY_TOKEN.to_string()
            ]),
            "the bundled host gets a secret and both authority credentials"
        );
        config.callback.secret = None;
        config.authority = AuthorityTokens::default();
        assert!(config.options_given().is_empty());
    }
}
