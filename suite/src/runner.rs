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

use crate::bundled::{BundledHost, Credentials};
use crate::config::{HostChoice, RunConfig};
use crate::error::RunError;
use crate::http::{Http, DEFAULT_BODY_CAP};
use crate::mock::MockServer;
use crate::model::Scenario;
use crate::report::{self, HostInfo, ReportInput, RunOrder, RunReport};
use crate::run::discovery::{self, Discovery, DISCOVERY_PATH};
use crate::run::driver::{Driver, HostTarget};
use crate::run::gate::gate;
use crate::run::ledger::{self, Ledger};
use crate::run::loader::{self, Catalog, LoadError};
use crate::run::outcome::{Outcome, ScenarioResult, SkipReason};
use crate::run::scope::{self, Offer};
use crate::run::scripted_judge;
use crate::shuffle;
use crate::start::StartError;
use crate::timestamp::timestamp;

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
    let schemas = config.source.schemas()?;
    let catalog = config.source.load(&schemas)?;
    let selected = config.selected_profiles(&catalog.profiles());
    if !catalog
        .scenarios
        .iter()
        .any(|scenario| selected.contains(&scenario.profile))
    {
        return Err(LoadError::NoScenarios {
            dir: config
                .source
                .scenarios_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(crate::embedded::ROOT)),
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
                    Credentials {
                        token_a: &config.token_a,
                        token_b: config.token_b.as_deref().unwrap_or_default(),
                        principal: config.authority.principal.as_deref(),
                        host_authority: config.authority.host.as_deref(),
                    },
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
        Err(error) => (Discovery::unusable(), Some(error.to_string())),
    };
    let capabilities = discovery
        .capabilities
        .clone()
        .with_base_path(config.base_path.as_ref());
    let target = Arc::new(HostTarget {
        base_url: base_url.clone(),
        capabilities,
        token_a: Some(config.token_a.clone()),
        token_b: config.token_b.clone(),
        authority: config.authority.clone(),
    });
    let mut driver = Driver::new(http, target, plan.schemas.clone(), config.timeout_scale)
        .with_replicas(&config.replicas);
    let offer = Offer {
        capabilities: driver.host().capabilities.clone(),
        attention: scope::attention_advertised(discovery.document.as_ref()),
        second_tenant: config.token_b.is_some(),
        endpoints: driver.endpoint_count(),
    };
    let options = config.options_given();
    let mock = if !config.harness.list
        && needs_mock(
            &plan,
            &discovery,
            config.token_b.is_some(),
            &options,
            driver.endpoint_count(),
        ) {
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
        if let Some(host) = &bundled {
            if let Err(error) = host.allow_callback(mock.base_url()) {
                return Err(StartError::BundledHost(format!(
                    "cannot let the host call the suite's callback: {error}"
                )));
            }
        }
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
    let left_out = filtered_out(&config.harness, &trials);
    let filtered = !left_out.is_empty();
    if !config.harness.list {
        let mut records = lock(&ledger);
        for name in &left_out {
            // A scenario the gate already skipped keeps that reason: it says
            // more about the host (and `opted-out` stays for unselected
            // profiles) than the filter does.
            if records.get(name).is_none() {
                records.record(ScenarioResult::skipped(name, SkipReason::Filtered));
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
        &offer,
        loader::profile_version(config.source.scenarios_dir.as_deref()),
        HostInfo {
            url: base_url,
            discovery_sha256: discovery.sha256.clone(),
            bundled: config.host == HostChoice::Bundled,
        },
        (started_at, finished_at),
    );
    report.order = RunOrder::of(config.order);
    let mut written = Vec::new();
    report.profile_href = match &config.source.scenarios_dir {
        Some(dir) => profile_href(dir, &config.report_dir),
        None => {
            // No checkout to link into: the report folder gets the profile
            // the run was judged by, so its section links open from disk.
            written.push(write_embedded_profile(&config.report_dir)?);
            Some(report::legend::PROFILE_DOCUMENT.to_string())
        }
    };
    written.extend(write_reports(&report, &config.report_dir)?);
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
    offer: &Offer,
    profile_version: Option<String>,
    host: HostInfo,
    (started_at, finished_at): (OffsetDateTime, OffsetDateTime),
) -> RunReport {
    let requirements = ledger::dispose(
        &plan.catalog.requirements,
        &plan.catalog.scenarios,
        ledger,
        offer,
    );
    let mut profiles = plan.catalog.profiles();
    profiles.extend(plan.selected.iter().cloned());
    let summaries = ledger::summarize(&requirements, &profiles, &plan.selected, offer);
    RunReport::build(ReportInput {
        host,
        started_at: timestamp(started_at),
        finished_at: timestamp(finished_at),
        duration_ms: u64::try_from((finished_at - started_at).whole_milliseconds()).unwrap_or(0),
        scenarios: &plan.catalog.scenarios,
        ledger,
        requirements: &requirements,
        profiles: &summaries,
        profile_version,
    })
}

/// The trials the harness will leave out, by name: exactly the ones
/// libtest-mimic drops before running (a name filter, `--exact`, every
/// `--skip`, and with `--ignored` every trial not marked ignored), asked of
/// libtest-mimic itself so the two can never disagree.
pub fn filtered_out(harness: &libtest_mimic::Arguments, trials: &[Trial]) -> BTreeSet<String> {
    trials
        .iter()
        .filter(|trial| harness.is_filtered_out(trial))
        .map(|trial| trial.name().to_string())
        .collect()
}

/// Where PROFILE.md (beside the scenarios folder) is, relative to the
/// report folder, so the HTML and Markdown reports' section links open from
/// disk; `None` when there is no PROFILE.md there.
pub fn profile_href(scenarios_dir: &Path, report_dir: &Path) -> Option<String> {
    let scenarios = std::fs::canonicalize(scenarios_dir).ok()?;
    let profile = scenarios.parent()?.join(report::legend::PROFILE_DOCUMENT);
    if !profile.is_file() {
        return None;
    }
    let reports = std::fs::canonicalize(report_dir).ok()?;
    Some(relative_path(&reports, &profile))
}

/// Writes the embedded PROFILE.md into the report folder.
fn write_embedded_profile(report_dir: &Path) -> Result<PathBuf, StartError> {
    let path = report_dir.join(report::legend::PROFILE_DOCUMENT);
    std::fs::create_dir_all(report_dir)
        .and_then(|()| std::fs::write(&path, crate::embedded::PROFILE))
        .map_err(|source| StartError::Report {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// `to` as a relative URL path from the folder `from` (both absolute).
pub fn relative_path(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
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
    endpoints: usize,
) -> bool {
    plan.catalog.scenarios.iter().any(|scenario| {
        scenario.mock.is_some()
            && gate(
                scenario,
                &discovery.capabilities,
                &plan.selected,
                second_tenant,
                options,
                endpoints,
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
                driver.endpoint_count(),
            );
            match (gated, unusable) {
                (gated, Some(problem)) if gated != Some(SkipReason::OptedOut) => errored_trial(
                    &scenario.name,
                    &format!("the discovery document is unusable: {problem}"),
                    ledger.clone(),
                ),
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
                (None, _) => {
                    let judge = discovery.capabilities.judge.as_deref();
                    if !scripted_judge::applies(scenario, judge) {
                        return scenario_trial(
                            scenario.clone(),
                            driver.clone(),
                            ledger.clone(),
                            handle.clone(),
                        );
                    }
                    // The loader refuses a scripted scenario the seam
                    // cannot run; should one get here, it errors, named.
                    match scripted_judge::through_seam(scenario) {
                        Ok(scripted) => {
                            scenario_trial(scripted, driver.clone(), ledger.clone(), handle.clone())
                        }
                        Err(refused) => errored_trial(
                            &scenario.name,
                            &format!(
                                "cannot script its judge through the seam: {} at {}",
                                refused.message, refused.pointer
                            ),
                            ledger.clone(),
                        ),
                    }
                }
            }
        })
        .collect()
}

/// A trial that errors at once with `message`: the host's discovery
/// document is unusable, so nothing the scenario needs to know about the
/// host can be read, or the scenario cannot be made to fit the host.
fn errored_trial(name: &str, message: &str, ledger: Arc<Mutex<Ledger>>) -> Trial {
    let message = message.to_string();
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
        // On the runtime's workers, where its I/O driver is: polled from
        // this thread instead, every response would wake it across threads.
        let run = async move { driver.run(&scenario, &nonce()).await };
        let mut result = match handle.block_on(handle.spawn(run)) {
            Ok(result) => result,
            // The harness reports a panicking trial as failed, as it would
            // had the scenario run on this thread.
            Err(stopped) => match stopped.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(stopped) => panic!("the scenario's task was stopped: {stopped}"),
            },
        };
        // The trial's whole time, as the harness reports it too.
        result.duration = started.elapsed();
        let outcome = result.outcome.clone();
        lock(&ledger).record(result);
        match outcome {
            Outcome::Pass | Outcome::Skip(_) => Ok(()),
            Outcome::Fail(message) => Err(Failed::from(message)),
            Outcome::Error(message) => Err(Failed::from(format!("error: {message}"))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn harness(args: &[&str]) -> libtest_mimic::Arguments {
        let mut all = vec!["goalpost"];
        all.extend_from_slice(args);
        libtest_mimic::Arguments::try_parse_from(all).expect("harness arguments")
    }

    fn trials() -> Vec<Trial> {
        vec![
            Trial::test("core::create", || Ok(())),
            Trial::test("core::create-bounds", || Ok(())),
            Trial::test("behavior::pause", || Ok(())),
            // A trial the gate skipped: listed as ignored with its reason as kind.
            Trial::test("observed::deadline", || Ok(()))
                .with_ignored_flag(true)
                .with_kind("seam-absent"),
        ]
    }

    fn left_out(args: &[&str]) -> Vec<String> {
        filtered_out(&harness(args), &trials())
            .into_iter()
            .collect()
    }

    #[test]
    fn without_filters_nothing_is_left_out() {
        assert!(left_out(&[]).is_empty());
        assert!(left_out(&["--test-threads", "1"]).is_empty());
    }

    #[test]
    fn a_name_filter_leaves_out_every_other_trial() {
        assert_eq!(
            left_out(&["core::"]),
            ["behavior::pause", "observed::deadline"]
        );
        assert_eq!(
            left_out(&["core::create", "--exact"]),
            [
                "behavior::pause",
                "core::create-bounds",
                "observed::deadline"
            ]
        );
    }

    #[test]
    fn skip_leaves_out_what_it_matches() {
        assert_eq!(
            left_out(&["--skip", "create", "--skip", "pause"]),
            ["behavior::pause", "core::create", "core::create-bounds"]
        );
        assert_eq!(
            left_out(&["--skip", "core::create", "--exact"]),
            ["core::create"]
        );
    }

    #[test]
    fn only_ignored_leaves_out_every_trial_that_runs() {
        assert_eq!(
            left_out(&["--ignored"]),
            ["behavior::pause", "core::create", "core::create-bounds"]
        );
    }

    #[test]
    fn filtered_trials_are_recorded_as_filtered_and_gated_ones_keep_their_reason() {
        let mut ledger = Ledger::default();
        ledger.record(ScenarioResult::skipped(
            "observed::deadline",
            SkipReason::SeamAbsent,
        ));
        for name in filtered_out(&harness(&["core::"]), &trials()) {
            if ledger.get(&name).is_none() {
                ledger.record(ScenarioResult::skipped(&name, SkipReason::Filtered));
            }
        }
        let outcome = |name: &str| ledger.get(name).map(|r| r.outcome.clone());
        assert_eq!(
            outcome("behavior::pause"),
            Some(Outcome::Skip(SkipReason::Filtered))
        );
        assert_eq!(
            outcome("observed::deadline"),
            Some(Outcome::Skip(SkipReason::SeamAbsent))
        );
        assert_eq!(outcome("core::create"), None);
    }

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        assert_eq!(
            relative_path(Path::new("/w/reports/latest"), Path::new("/w/PROFILE.md")),
            "../../PROFILE.md"
        );
        assert_eq!(
            relative_path(Path::new("/w"), Path::new("/w/PROFILE.md")),
            "PROFILE.md"
        );
        assert_eq!(
            relative_path(Path::new("/tmp/r"), Path::new("/w/PROFILE.md")),
            "../../w/PROFILE.md"
        );
    }

    #[test]
    fn the_profile_link_is_relative_to_the_report_folder() {
        let root = tempfile::tempdir().expect("temp dir");
        let scenarios = root.path().join("scenarios");
        let reports = root.path().join("reports/latest");
        std::fs::create_dir_all(&scenarios).expect("scenarios");
        std::fs::create_dir_all(&reports).expect("reports");
        assert_eq!(profile_href(&scenarios, &reports), None);
        std::fs::write(root.path().join("PROFILE.md"), "# Profile\n").expect("write");
        assert_eq!(
            profile_href(&scenarios, &reports).as_deref(),
            Some("../../PROFILE.md")
        );
    }
}
