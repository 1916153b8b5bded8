//! No host can crash or stall the suite. Against a host that answers with
//! invalid JSON, a 50 MB body, a body that never ends, headers then
//! silence, a redirect loop, HTML, random statuses or a closed connection
//! (on every request, or on everything after a discovery document that
//! gates every scenario in), the whole suite finishes within a bounded time,
//! nothing passes, every scenario fails or errors with a reason that names
//! what went wrong, and nothing panics.

use crate::common;

use common::hostile;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

use goalpost::http::{CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT};
use goalpost::report::RunReport;
use goalpost::{HostChoice, RunConfig};
use hostile::{Misbehaviour, Scope};

/// Shrinks every request deadline (10 s → 0.5 s) so a host that never
/// answers costs little; polls shrink with it.
const TIMEOUT_SCALE: f64 = 0.05;
const TEST_THREADS: usize = 16;

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Panics on the suite's own threads: the run's (named `goalpost-…`) and
/// the harness's trial workers (unnamed). The test threads have the test's
/// name and the hostile host's threads `hostile-…`, so neither counts.
static SUITE_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_suite_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().map(str::to_string);
            if name
                .as_deref()
                .is_none_or(|name| name.starts_with("goalpost"))
            {
                SUITE_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

/// The modes and seams any scenario needs, so the hostile discovery
/// document can gate every scenario in.
fn everything_needed() -> (Vec<String>, Vec<String>) {
    let schemas = goalpost_schemas::Schemas::embedded().expect("schemas");
    let catalog = goalpost::run::loader::load(&scenarios(), &schemas).expect("scenarios load");
    let mut modes = BTreeSet::new();
    let mut seams = BTreeSet::new();
    for scenario in &catalog.scenarios {
        modes.extend(scenario.needs.continuation.iter().cloned());
        seams.extend(scenario.needs.seams.iter().cloned());
    }
    (modes.into_iter().collect(), seams.into_iter().collect())
}

/// The longest a run may take before it counts as a hang. Every scenario
/// stops at its first exchange with the host, which takes at most one
/// connect plus one request deadline; trials run `TEST_THREADS` at a time.
/// Eight deadlines per wave (poll retries, scheduling on a busy machine)
/// and four spare waves (discovery, start-up) make it generous: this
/// guards against hangs, it is not a speed target.
fn hang_bound(scenarios: usize) -> Duration {
    let deadline = (CONNECT_TIMEOUT + DEFAULT_REQUEST_TIMEOUT).mul_f64(TIMEOUT_SCALE);
    let waves = scenarios.div_ceil(TEST_THREADS) + 4;
    deadline * 8 * u32::try_from(waves).unwrap_or(u32::MAX)
}

fn harness() -> libtest_mimic::Arguments {
    use clap::Parser;
    let threads = TEST_THREADS.to_string();
    libtest_mimic::Arguments::try_parse_from(["goalpost", "--test-threads", threads.as_str()])
        .expect("harness arguments")
}

/// Runs the whole suite against the hostile host, with a watchdog.
fn run_against(misbehaviour: Misbehaviour, scope: Scope) -> (RunReport, u8, Duration, Duration) {
    count_suite_panics();
    let (modes, seams) = everything_needed();
    let url = hostile::start(
        misbehaviour,
        scope,
        hostile::discovery_document(&modes, &seams),
    );
    let reports = tempfile::tempdir().expect("tempdir");
    let mut config = RunConfig::bundled(scenarios(), reports.path().to_path_buf(), harness());
    config.host = HostChoice::Remote(url);
    config.token_a = "hostile-a".to_string();
    config.token_b = Some("hostile-b".to_string());
    config.callback.secret = None;
    config.timeout_scale = TIMEOUT_SCALE;
    config.harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    let schemas = goalpost_schemas::Schemas::embedded().expect("schemas");
    let count = goalpost::run::loader::load(&scenarios(), &schemas)
        .expect("scenarios load")
        .scenarios
        .len();
    let bound = hang_bound(count);
    let (sender, receiver) = std::sync::mpsc::channel();
    let started = Instant::now();
    std::thread::Builder::new()
        .name("goalpost-run".to_string())
        .spawn(move || {
            let _ = sender.send(goalpost::run(config));
        })
        .expect("spawn the run");
    let result = match receiver.recv_timeout(bound) {
        Ok(result) => result,
        Err(_) => panic!("{misbehaviour:?} / {scope:?}: the run did not finish within {bound:?}"),
    };
    let elapsed = started.elapsed();
    let outcome = result.unwrap_or_else(|error| {
        panic!("{misbehaviour:?} / {scope:?}: the run could not start: {error}")
    });
    let code = outcome.exit_code();
    let report = outcome.report.expect("a report");
    (report, code, elapsed, bound)
}

/// The whole contract for one misbehaviour: bounded, nothing passes, every
/// scenario fails or errors with a message, `evidence` names the cause,
/// no panic.
fn survives(misbehaviour: Misbehaviour, scope: Scope, evidence: &str) {
    let (report, code, elapsed, bound) = run_against(misbehaviour, scope);
    let context = format!("{misbehaviour:?} / {scope:?}");
    eprintln!("{context}: finished in {elapsed:?} (hang bound {bound:?})");
    assert!(
        elapsed < bound,
        "{context}: took {elapsed:?} (bound {bound:?})"
    );
    assert_eq!(code, 1, "{context}: exit code");
    assert!(
        !report.requirements.is_empty(),
        "{context}: no requirements"
    );
    for requirement in &report.requirements {
        // The run gives no webhook secret and one endpoint, so what needs
        // either is honestly skipped, whatever the host does.
        let opted_out = matches!(
            requirement.reason.as_deref(),
            Some("opted-out" | "not-configured" | "needs-endpoints")
        );
        let allowed: &[&str] = match (scope, opted_out) {
            (_, true) => &["skip"],
            // Nothing of the host can be read: nothing is concluded.
            (Scope::Everything, false) => &["error"],
            // Anything but a pass: a SHOULD that failed is an advisory, and
            // what a failed step kept the run from checking is not reached.
            (Scope::AfterDiscovery, false) => &["fail", "error", "advisory", "not-reached"],
        };
        assert!(
            allowed.contains(&requirement.disposition.as_str()),
            "{context}: {} is {} ({:?})",
            requirement.id,
            requirement.disposition,
            requirement.message
        );
    }
    let considered: Vec<_> = report
        .scenarios
        .iter()
        .filter(|scenario| {
            !matches!(
                scenario.reason.as_deref(),
                Some("opted-out" | "not-configured" | "needs-endpoints")
            )
        })
        .collect();
    assert!(!considered.is_empty(), "{context}: no scenario ran");
    let mut with_evidence = 0;
    for scenario in &considered {
        // A scenario that proves only SHOULD requirements passes as a trial
        // when they all end advisory (the requirements checked above say
        // nothing passed); it has no failure message of its own.
        let named: Vec<&str> = report
            .requirements
            .iter()
            .filter(|r| r.scenarios.contains(&scenario.name))
            .map(|r| r.disposition.as_str())
            .collect();
        if scenario.outcome.as_str() == "pass"
            && !named.is_empty()
            && named.iter().all(|d| *d == "advisory")
        {
            continue;
        }
        assert!(
            ["fail", "error"].contains(&scenario.outcome.as_str()),
            "{context}: {} is {}",
            scenario.name,
            scenario.outcome
        );
        let message = scenario.message.as_deref().unwrap_or_default();
        assert!(
            !message.is_empty() && !message.contains("recorded no outcome"),
            "{context}: {} has no reason of its own: {message:?}",
            scenario.name
        );
        if scope == Scope::Everything {
            assert!(
                message.contains("discovery document is unusable"),
                "{context}: {}: {message}",
                scenario.name
            );
        }
        if message.contains(evidence) {
            with_evidence += 1;
        }
    }
    // Without discovery every scenario reports the same cause; after it,
    // the first exchange of each scenario meets the misbehaviour in its own
    // way (a status mismatch, a schema error), but some message names it.
    let needed = match scope {
        Scope::Everything => considered.len(),
        Scope::AfterDiscovery => 1,
    };
    assert!(
        with_evidence >= needed,
        "{context}: {with_evidence} of {} scenario messages mention `{evidence}`",
        considered.len()
    );
    assert_eq!(
        SUITE_PANICS.load(Ordering::SeqCst),
        0,
        "{context}: the suite panicked"
    );
}

#[test]
fn invalid_json_on_discovery() {
    survives(
        Misbehaviour::InvalidJson,
        Scope::Everything,
        "not a JSON object",
    );
}

#[test]
fn invalid_json_after_discovery() {
    survives(Misbehaviour::InvalidJson, Scope::AfterDiscovery, "not JSON");
}

#[test]
fn a_50_mb_body_on_discovery() {
    survives(Misbehaviour::HugeBody, Scope::Everything, "exceeds");
}

#[test]
fn a_50_mb_body_after_discovery() {
    survives(Misbehaviour::HugeBody, Scope::AfterDiscovery, "exceeds");
}

#[test]
fn a_body_that_never_ends_on_discovery() {
    survives(
        Misbehaviour::EndlessBody,
        Scope::Everything,
        "no complete response",
    );
}

#[test]
fn a_body_that_never_ends_after_discovery() {
    survives(
        Misbehaviour::EndlessBody,
        Scope::AfterDiscovery,
        "no complete response",
    );
}

#[test]
fn headers_then_silence_on_discovery() {
    survives(
        Misbehaviour::HeadersThenSilence,
        Scope::Everything,
        "no complete response",
    );
}

#[test]
fn headers_then_silence_after_discovery() {
    survives(
        Misbehaviour::HeadersThenSilence,
        Scope::AfterDiscovery,
        "no complete response",
    );
}

#[test]
fn a_redirect_loop_on_discovery() {
    survives(
        Misbehaviour::RedirectLoop,
        Scope::Everything,
        "answered 302",
    );
}

#[test]
fn a_redirect_loop_after_discovery() {
    survives(Misbehaviour::RedirectLoop, Scope::AfterDiscovery, "302");
}

#[test]
fn html_instead_of_json_on_discovery() {
    survives(
        Misbehaviour::HtmlContentType,
        Scope::Everything,
        "not a JSON object",
    );
}

#[test]
fn html_instead_of_json_after_discovery() {
    survives(
        Misbehaviour::HtmlContentType,
        Scope::AfterDiscovery,
        "<!doctype html>",
    );
}

#[test]
fn random_statuses_on_discovery() {
    survives(
        Misbehaviour::RandomStatus { seed: 0x5eed },
        Scope::Everything,
        "discovery document is unusable",
    );
}

#[test]
fn random_statuses_after_discovery() {
    survives(
        Misbehaviour::RandomStatus { seed: 0x5eed },
        Scope::AfterDiscovery,
        "did not hold",
    );
}

#[test]
fn a_closed_connection_on_discovery() {
    survives(
        Misbehaviour::ClosedConnection,
        Scope::Everything,
        "transport failure",
    );
}

#[test]
fn a_closed_connection_after_discovery() {
    survives(
        Misbehaviour::ClosedConnection,
        Scope::AfterDiscovery,
        "transport failure",
    );
}
