//! One run, start to end: load and check the scenarios, start or reach the
//! host, read its discovery document, build one trial per scenario, let the
//! harness run them, then dispose every requirement and write the reports.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use goalpost_schemas::Schemas;
use libtest_mimic::{Completion, Conclusion, Failed, Trial};
use time::OffsetDateTime;

use crate::bundled::BundledHost;
use crate::config::{HostChoice, RunConfig};
use crate::discovery::{self, Capabilities, Discovery, DISCOVERY_PATH};
use crate::driver::{Driver, HostTarget};
use crate::error::{RunError, StartError};
use crate::gate::{self, gate};
use crate::http::{Http, DEFAULT_BODY_CAP};
use crate::ledger::{self, Ledger, Outcome, ScenarioResult, SkipReason};
use crate::loader::{self, Catalog, LoadError};
use crate::mock::MockServer;
use crate::model::Scenario;
use crate::report::{self, HostInfo, ReportInput, RunOrder, RunReport};
use crate::shuffle;

pub const REPORT_JSON: &str = "report.json";
pub const REPORT_JUNIT: &str = "junit.xml";
pub const REPORT_HTML: &str = "report.html";
pub const REPORT_MARKDOWN: &str = "report.md";

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    /// `None` when the harness only listed the trials.
    pub report: Option<RunReport>,
    pub conclusion: Conclusion,
    /// The files written.
    pub written: Vec<PathBuf>,
    /// Whether a filter or `--skip` left trials out (then the selection is
    /// partial and cannot certify).
    pub filtered: bool,
}

impl RunOutcome {
    /// 0 when nothing failed or errored, else 1.
    pub fn exit_code(&self) -> u8 {
        let failed = self.conclusion.has_failed()
            || self
                .report
                .as_ref()
                .is_some_and(RunReport::any_failed_or_errored);
        u8::from(failed)
    }
}

/// The loaded catalog and the selection it is run with.
pub struct Plan {
    pub catalog: Catalog,
    pub selected: BTreeSet<String>,
    pub schemas: Arc<Schemas>,
}

/// Loads the schemas and scenarios and resolves the selection; everything
/// that can stop a run before it touches a host.
pub fn plan(config: &RunConfig) -> Result<Plan, StartError> {
    let schemas = match &config.schemas_dir {
        Some(dir) => Schemas::from_dir(dir)?,
        None => Schemas::embedded()?,
    };
    let catalog = loader::load(&config.scenarios_dir, &schemas)?;
    let selected = config.selected_profiles(&catalog.profiles());
    if !catalog
        .scenarios
        .iter()
        .any(|scenario| selected.contains(&scenario.profile))
    {
        return Err(LoadError::NoScenarios {
            dir: config.scenarios_dir.clone(),
            profiles: selected.into_iter().collect::<Vec<_>>().join(", "),
        }
        .into());
    }
    Ok(Plan {
        catalog,
        selected,
        schemas: Arc::new(schemas),
    })
}

fn lock(ledger: &Mutex<Ledger>) -> MutexGuard<'_, Ledger> {
    // A trial that panicked while holding the lock leaves a ledger that is
    // still consistent (records are single inserts), so keep using it.
    ledger
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn timestamp(at: OffsetDateTime) -> String {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.to_offset(time::UtcOffset::UTC)
        .format(FORMAT)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}

fn nonce() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..16].to_string()
}

/// Runs the whole suite as configured.
pub fn run(config: RunConfig) -> Result<RunOutcome, StartError> {
    let plan = plan(&config)?;
    if !config.harness.list {
        std::fs::create_dir_all(&config.report_dir).map_err(|source| StartError::Report {
            path: config.report_dir.clone(),
            source,
        })?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("goalpost-io")
        .build()
        .map_err(StartError::Runtime)?;
    let started_at = (config.now)();
    let http = Http::new(config.timeout_scale, DEFAULT_BODY_CAP).map_err(StartError::Client)?;
    let bundled = match &config.host {
        HostChoice::Bundled => Some(
            runtime
                .block_on(BundledHost::start(
                    &config.token_a,
                    config.token_b.as_deref().unwrap_or_default(),
                    config.callback.secret.as_deref(),
                ))
                .map_err(StartError::BundledHost)?,
        ),
        HostChoice::Remote(_) => None,
    };
    let base_url = match (&config.host, &bundled) {
        (HostChoice::Remote(url), _) => url.clone(),
        (HostChoice::Bundled, Some(host)) => host.base_url().trim_end_matches('/').to_string(),
        (HostChoice::Bundled, None) => {
            return Err(StartError::BundledHost("no host was started".to_string()))
        }
    };
    let result = runtime.block_on(discovery::fetch(&http, &base_url));
    let (discovery, unusable) = match result {
        Ok(discovery) => {
            let problem = discovery_problem(&discovery, &base_url);
            (discovery, problem)
        }
        // Nobody is there: the run cannot start.
        Err(error @ RunError::Connect { .. }) => {
            if let Some(host) = bundled {
                runtime.block_on(host.shutdown());
            }
            return Err(StartError::Discovery(error));
        }
        // Somebody is there and answered badly: that is the host's result.
        Err(error) => (
            Discovery {
                status: 0,
                sha256: discovery::sha256_hex(b""),
                document: None,
                capabilities: Capabilities::from_document(None),
            },
            Some(error.to_string()),
        ),
    };
    let target = Arc::new(HostTarget {
        base_url: base_url.clone(),
        capabilities: discovery.capabilities.clone(),
        token_a: Some(config.token_a.clone()),
        token_b: config.token_b.clone(),
    });
    let mut driver = Driver::new(http, target, plan.schemas.clone(), config.timeout_scale);
    let options = gate::options_given(&config);
    let mock = if !config.harness.list
        && needs_mock(&plan, &discovery, config.token_b.is_some(), &options)
    {
        let started = runtime.block_on(MockServer::start(
            config.callback.mock_config(),
            plan.schemas.clone(),
            config.now,
        ));
        match started {
            Ok(mock) => Some(Arc::new(mock)),
            Err(error) => {
                if let Some(host) = bundled {
                    runtime.block_on(host.shutdown());
                }
                return Err(StartError::Mock(error));
            }
        }
    } else {
        None
    };
    if let Some(mock) = &mock {
        driver = driver.with_mock(mock.clone());
    }
    let driver = Arc::new(driver);
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut trials = build_trials(
        &plan,
        &discovery,
        &options,
        unusable.as_deref(),
        &driver,
        &ledger,
        runtime.handle(),
    );
    if let Some(seed) = config.order.seed() {
        shuffle::shuffle(&mut trials, seed);
        if !config.harness.list {
            eprintln!(
                "goalpost: trials run shuffled with seed {seed} (--seed {seed} replays this order)"
            );
        }
    }
    let filtered = trials
        .iter()
        .any(|trial| config.harness.is_filtered_out(trial));
    if !config.harness.list {
        let mut records = lock(&ledger);
        for trial in &trials {
            if config.harness.is_filtered_out(trial) && records.get(trial.name()).is_none() {
                records.record(ScenarioResult::skipped(trial.name(), SkipReason::OptedOut));
            }
        }
    }
    let conclusion = libtest_mimic::run(&config.harness, trials);
    if let Some(mock) = mock {
        runtime.block_on(mock.shutdown());
    }
    if let Some(host) = bundled {
        runtime.block_on(host.shutdown());
    }
    if config.harness.list {
        return Ok(RunOutcome {
            report: None,
            conclusion,
            written: Vec::new(),
            filtered,
        });
    }
    let finished_at = (config.now)();
    let ledger = lock(&ledger).clone();
    let mut report = build_report(
        &plan,
        &ledger,
        HostInfo {
            url: base_url,
            discovery_sha256: discovery.sha256.clone(),
            bundled: config.host == HostChoice::Bundled,
        },
        (started_at, finished_at),
    );
    report.order = RunOrder::of(config.order);
    let written = write_reports(&report, &config.report_dir)?;
    Ok(RunOutcome {
        report: Some(report),
        conclusion,
        written,
        filtered,
    })
}

pub fn build_report(
    plan: &Plan,
    ledger: &Ledger,
    host: HostInfo,
    (started_at, finished_at): (OffsetDateTime, OffsetDateTime),
) -> RunReport {
    let requirements = ledger::dispose(&plan.catalog.requirements, &plan.catalog.scenarios, ledger);
    let mut profiles = plan.catalog.profiles();
    profiles.extend(plan.selected.iter().cloned());
    let summaries = ledger::summarize(&requirements, &profiles, &plan.selected);
    RunReport::build(ReportInput {
        host,
        started_at: timestamp(started_at),
        finished_at: timestamp(finished_at),
        duration_ms: u64::try_from((finished_at - started_at).whole_milliseconds()).unwrap_or(0),
        scenarios: &plan.catalog.scenarios,
        ledger,
        requirements: &requirements,
        profiles: &summaries,
    })
}

/// Writes every report format into `dir`.
pub fn write_reports(report: &RunReport, dir: &Path) -> Result<Vec<PathBuf>, StartError> {
    type Writer = Box<dyn Fn(&RunReport, BufWriter<File>) -> std::io::Result<()>>;
    let mut formats: Vec<(String, Writer)> = vec![
        (REPORT_JSON.into(), Box::new(report::json::write)),
        (REPORT_JUNIT.into(), Box::new(report::junit::write)),
        (REPORT_HTML.into(), Box::new(report::html::write)),
        (REPORT_MARKDOWN.into(), Box::new(report::markdown::write)),
    ];
    for profile in report.profiles.keys() {
        let profile = profile.clone();
        formats.push((
            report::badge::file_name(&profile),
            Box::new(move |r, out| report::badge::write_profile(r, &profile, out)),
        ));
    }
    let mut written = Vec::with_capacity(formats.len());
    for (name, writer) in formats {
        let path = dir.join(name);
        let result = File::create(&path).and_then(|file| writer(report, BufWriter::new(file)));
        if let Err(source) = result {
            return Err(StartError::Report { path, source });
        }
        written.push(path);
    }
    Ok(written)
}

/// Whether a scenario that will run has a `mock` block: only then does the
/// run open a port for the webhook mock.
fn needs_mock(
    plan: &Plan,
    discovery: &Discovery,
    second_tenant: bool,
    options: &BTreeSet<String>,
) -> bool {
    plan.catalog.scenarios.iter().any(|scenario| {
        scenario.mock.is_some()
            && gate(
                scenario,
                &discovery.capabilities,
                &plan.selected,
                second_tenant,
                options,
            )
            .is_none()
    })
}

/// Why the discovery document cannot be read, if it cannot: a host must
/// serve it as a 200 JSON object. (A readable document that lacks
/// `agents.goals` is fine: the host advertises nothing.)
fn discovery_problem(discovery: &Discovery, base_url: &str) -> Option<String> {
    let url = format!("GET {base_url}{DISCOVERY_PATH}");
    if discovery.status != 200 {
        Some(format!("{url} answered {}, not 200", discovery.status))
    } else if !discovery
        .document
        .as_ref()
        .is_some_and(|doc| doc.is_object())
    {
        Some(format!(
            "{url} answered 200 with a body that is not a JSON object"
        ))
    } else {
        None
    }
}

fn build_trials(
    plan: &Plan,
    discovery: &Discovery,
    options: &BTreeSet<String>,
    unusable: Option<&str>,
    driver: &Arc<Driver>,
    ledger: &Arc<Mutex<Ledger>>,
    handle: &tokio::runtime::Handle,
) -> Vec<Trial> {
    let second_tenant = driver.host().token_b.is_some();
    plan.catalog
        .scenarios
        .iter()
        .map(|scenario| {
            let gated = gate(
                scenario,
                &discovery.capabilities,
                &plan.selected,
                second_tenant,
                options,
            );
            match (gated, unusable) {
                (gated, Some(problem)) if gated != Some(SkipReason::OptedOut) => {
                    errored_trial(&scenario.name, problem, ledger.clone())
                }
                (Some(reason), _) => {
                    lock(ledger).record(ScenarioResult::skipped(&scenario.name, reason));
                    // Listed as ignored so `--list` and the summary show it;
                    // if the harness runs it anyway (`--include-ignored`) it
                    // still only reports the reason.
                    Trial::ignorable_test(scenario.name.clone(), move || {
                        Ok(Completion::ignored_with(reason))
                    })
                    .with_ignored_flag(true)
                    .with_kind(reason.as_str())
                }
                (None, _) => scenario_trial(
                    scenario.clone(),
                    driver.clone(),
                    ledger.clone(),
                    handle.clone(),
                ),
            }
        })
        .collect()
}

/// A trial that errors at once: the host's discovery document is unusable,
/// so nothing the scenario needs to know about the host can be read.
fn errored_trial(name: &str, problem: &str, ledger: Arc<Mutex<Ledger>>) -> Trial {
    let message = format!("the discovery document is unusable: {problem}");
    let name = name.to_string();
    Trial::test(name.clone(), move || {
        let mut result = ScenarioResult::skipped(&name, SkipReason::OptedOut);
        result.outcome = Outcome::Error(message.clone());
        lock(&ledger).record(result);
        Err(Failed::from(format!("error: {message}")))
    })
}

fn scenario_trial(
    scenario: Scenario,
    driver: Arc<Driver>,
    ledger: Arc<Mutex<Ledger>>,
    handle: tokio::runtime::Handle,
) -> Trial {
    Trial::test(scenario.name.clone(), move || {
        let started = Instant::now();
        let run = handle.block_on(driver.run(&scenario, &nonce()));
        let result = ScenarioResult {
            name: scenario.name.clone(),
            outcome: run.outcome.clone(),
            checks: run.checks,
            duration: started.elapsed(),
            quiet: run.quiet,
            failed_step: run.failed_step,
            observations: run.observations,
            requirements: run.requirements,
        };
        lock(&ledger).record(result);
        match run.outcome {
            Outcome::Pass | Outcome::Skip(_) => Ok(()),
            Outcome::Fail(message) => Err(Failed::from(message)),
            Outcome::Error(message) => Err(Failed::from(format!("error: {message}"))),
        }
    })
}
