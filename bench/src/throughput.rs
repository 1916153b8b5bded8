//! Measurement 3, host request throughput: the load generator against the
//! reference host on a file database (WAL, as the host opens it), for GET
//! goal, create, and `continue` (fixture arm and judge, durable record).
//! The baseline is an axum hello-world handler served on the same runtime,
//! loaded the same way, measured before and after the host.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use axum::routing::get;
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::domain::{RunId, Tenant};
use goalpost_host::storage::{Goals, SqliteStore};
use goalpost_host::{Config, DbLocation, RunningHost};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::load::{self, MakeRequest, Outcome, Spec};
use crate::seed;
use crate::stats::duration;
use crate::table::{thousands, Row};

pub(crate) const GOALS: &str = "/v1/host/sample/goals";
/// Keep-alive connections, one tenant each.
pub const CONCURRENCY: usize = 64;
/// `continue` moves a connection to its next goal after this many runs.
/// A goal's answer listed every contributing run id, so the cost of a
/// `continue` grew with the goal's history, and without a bound the rate
/// measured would depend on the length of the window (goals of one
/// connection each reached 500 runs in a 3 s window, 1,000 in 6 s). It
/// now lists the 100 most recent; the deep-history cost is measured on its
/// own (`continue-deep`) against this one.
const RUNS_PER_GOAL: u64 = 100;
/// Goals per connection for `continue`: 4,800 requests per connection,
/// four windows of at most 12 goals each. A connection
/// that runs out says so as an error rather than deepening the history.
const GOALS_PER_CONNECTION: usize = 48;
/// Goals of its pool a connection's `continue` window may use (a window
/// at 13k requests a second is about 7 goals of 100 runs): the windows
/// after the first start this far apart.
const GOALS_PER_WINDOW: usize = 12;
/// Deep windows, each judged against the fresh windows around it.
const DEEP_ROUNDS: usize = 3;
/// The history of `continue-deep`'s goals when the phase starts.
const DEEP_RUNS: usize = 1000;
const WARMUP: Duration = Duration::from_millis(500);
const WINDOW: Duration = Duration::from_secs(3);
/// Targets.
const GET_RATIO: f64 = 0.5;
const WRITE_RATE: f64 = 10_000.0;
const WRITE_P99: Duration = Duration::from_millis(20);
/// `continue` on goals with a long history against fresh goals: a goal's
/// answer must not grow with its history (the host lists its 100 most
/// recent run ids, `--run-ids-shown`).
const DEEP_RATIO: f64 = 0.9;

pub(crate) fn token(worker: usize) -> String {
    format!("bench-token-{worker}")
}

pub(crate) fn tenant(worker: usize) -> String {
    format!("tenant-{worker}")
}

pub(crate) fn spec(requests: Option<u64>) -> Spec {
    match requests {
        None => Spec {
            concurrency: CONCURRENCY,
            warmup: WARMUP,
            window: WINDOW,
            max_requests: 1_000_000,
        },
        // A count instead of a window: instruction counts per request.
        Some(count) => Spec {
            concurrency: CONCURRENCY,
            warmup: Duration::ZERO,
            window: Duration::from_secs(3600),
            max_requests: count,
        },
    }
}

/// The runtime host and baseline both run on: what the host binary gets
/// on this machine (one worker per core).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")
}

pub(crate) fn goal_body(objective: &str, manual_fixture: bool) -> Value {
    let (verifier, arm) = if manual_fixture {
        (json!("conformance:verifier"), json!("conformance:arm"))
    } else {
        (Value::Null, Value::Null)
    };
    json!({
        "objective": objective,
        "completion": {"check": "verifier", "verifierRef": verifier},
        "continuation": {"mode": "manual", "armRef": arm},
        "bounds": {"maxLoopIterations": 1_000_000_000u64}
    })
}

pub(crate) async fn create_goal(
    client: &reqwest::Client,
    base: &str,
    worker: usize,
    body: &Value,
) -> Result<String> {
    let response = client
        .post(format!("{base}{GOALS}"))
        .bearer_auth(token(worker))
        .json(body)
        .send()
        .await?;
    let status = response.status();
    let answer: Value = response.json().await?;
    if status.as_u16() != 201 {
        bail!("create answered {status}: {answer}");
    }
    answer
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .context("create answered without an id")
}

/// One goal per connection (owned by its tenant) with `DEEP_RUNS`
/// contributing runs, written through the host's own store before the
/// host opens the database; their ids in connection order.
fn seed_deep(db: &Path) -> Result<Vec<String>> {
    let store = SqliteStore::open(&DbLocation::File(db.to_path_buf()))?;
    let now = SystemClock.now();
    let body = goal_body("bench continue deep", true);
    let mut goals = Vec::with_capacity(CONCURRENCY);
    for worker in 0..CONCURRENCY {
        let owner = Tenant::parse(&tenant(worker)).context("tenant name")?;
        let mut goal = seed::new_goal(&body, owner, now)?;
        goal.progress.contributing_run_ids = (0..DEEP_RUNS).map(|_| RunId::generate()).collect();
        goal.progress.iterations = DEEP_RUNS as u64;
        goals.push(goal);
    }
    store.insert_goals(&goals)?;
    Ok(goals
        .iter()
        .map(|goal| goal.id.as_str().to_string())
        .collect())
}

async fn hello_server() -> Result<(String, oneshot::Sender<()>, tokio::task::JoinHandle<()>)> {
    let router = axum::Router::new().route("/hello", get(|| async { "hello" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    Ok((format!("http://{addr}"), stop, server))
}

pub(crate) async fn hello(client: &reqwest::Client, requests: Option<u64>) -> Result<Outcome> {
    let (base, stop, server) = hello_server().await?;
    let url = format!("{base}/hello");
    let make: MakeRequest = Arc::new(move |client, _, _| client.get(&url));
    let outcome = load::run(client, spec(requests), 200, make).await;
    let _ = stop.send(());
    let _ = server.await;
    Ok(outcome)
}

pub(crate) fn describe(outcome: &mut Outcome) -> String {
    let p50 = outcome.latencies.percentile(50.0).unwrap_or_default();
    let p99 = outcome.latencies.percentile(99.0).unwrap_or_default();
    let mut text = format!(
        "{} req/s (p50 {}, p99 {})",
        thousands(outcome.rate()),
        duration(p50),
        duration(p99)
    );
    if outcome.errors > 0 {
        text.push_str(&format!(
            ", {} errors: {}",
            outcome.errors,
            outcome.first_error.as_deref().unwrap_or("?")
        ));
    }
    text
}

/// The phases, in the order they run; `hello` runs first and last.
const PHASES: [&str; 5] = ["hello", "get", "create", "continue", "continue-deep"];

pub fn measure(only: &[String], requests: Option<u64>) -> Result<Vec<Row>> {
    let wanted = |phase: &str| only.is_empty() || only.iter().any(|p| p == phase);
    if let Some(unknown) = only.iter().find(|p| !PHASES.contains(&p.as_str())) {
        bail!("unknown phase {unknown:?}; phases: {}", PHASES.join(", "));
    }
    let dir = tempfile::tempdir()?;
    let runtime = runtime()?;
    runtime.block_on(async {
        let client = load::client(CONCURRENCY)?;
        let mut hellos = Vec::new();
        if wanted("hello") {
            hellos.push(hello(&client, requests).await?);
        }

        let db = dir.path().join("host.db");
        let deep = if wanted("continue-deep") {
            seed_deep(&db)?
        } else {
            Vec::new()
        };
        let mut config = Config::conformance_in_memory(
            (0..CONCURRENCY)
                .map(|w| (token(w), tenant(w)))
                .collect(),
        );
        config.db = DbLocation::File(db);
        let host = RunningHost::start(config).await?;
        let base = host.base_url();

        let mut readable = Vec::with_capacity(CONCURRENCY);
        let mut runnable = Vec::with_capacity(CONCURRENCY);
        for worker in 0..CONCURRENCY {
            readable.push(create_goal(&client, &base, worker, &goal_body("bench read", false)).await?);
            let mut pool = Vec::new();
            if wanted("continue") {
                for _ in 0..GOALS_PER_CONNECTION {
                    pool.push(create_goal(&client, &base, worker, &goal_body("bench continue", true)).await?);
                }
            }
            runnable.push(pool);
        }

        let mut measured: Vec<(&str, Outcome)> = Vec::new();
        if wanted("get") {
            let (get_base, ids) = (base.clone(), Arc::new(readable));
            let make: MakeRequest = Arc::new(move |client, w, _| {
                client
                    .get(format!("{get_base}{GOALS}/{}", ids[w]))
                    .bearer_auth(token(w))
            });
            measured.push(("get", load::run(&client, spec(requests), 200, make).await));
        }
        if wanted("create") {
            let (create_base, body) = (base.clone(), Arc::new(goal_body("bench create", false)));
            let make: MakeRequest = Arc::new(move |client, w, _| {
                client
                    .post(format!("{create_base}{GOALS}"))
                    .bearer_auth(token(w))
                    .json(body.as_ref())
            });
            measured.push(("create", load::run(&client, spec(requests), 201, make).await));
        }
        let pools = Arc::new(runnable);
        // `continue` on fresh goals, from the goal `first` of each
        // connection's pool on.
        let continues = |first: usize| {
            let (continue_base, pools) = (base.clone(), Arc::clone(&pools));
            let exhausted = Arc::new(AtomicBool::new(false));
            let ran_out = Arc::clone(&exhausted);
            let make: MakeRequest = Arc::new(move |client, w, n| {
                let pool = &pools[w];
                let next = first + usize::try_from(n / RUNS_PER_GOAL).unwrap_or(usize::MAX);
                if next >= (first + GOALS_PER_WINDOW).min(pool.len()) {
                    ran_out.store(true, Ordering::Relaxed);
                }
                client
                    .post(format!("{continue_base}{GOALS}/{}/continue", pool[next % pool.len()]))
                    .bearer_auth(token(w))
            });
            let client = client.clone();
            async move {
                let mut outcome = load::run(&client, spec(requests), 200, make).await;
                if exhausted.load(Ordering::Relaxed) {
                    outcome.errors += 1;
                    outcome.first_error.get_or_insert_with(|| {
                        format!(
                            "a connection sent more than {} requests in one window: its goals went past {RUNS_PER_GOAL} runs",
                            GOALS_PER_WINDOW as u64 * RUNS_PER_GOAL
                        )
                    });
                }
                outcome
            }
        };
        // The deep windows, each between two fresh ones on goals no window
        // touched before (a machine whose load drifts favours neither):
        // their ratios, one per deep window.
        let mut deep_ratios = Vec::new();
        if wanted("continue") {
            measured.push(("continue", continues(0).await));
        }
        if wanted("continue-deep") {
            let (deep_base, ids) = (base.clone(), Arc::new(deep));
            let make: MakeRequest = Arc::new(move |client, w, _| {
                client
                    .post(format!("{deep_base}{GOALS}/{}/continue", ids[w]))
                    .bearer_auth(token(w))
            });
            let mut before = measured
                .iter()
                .find(|(phase, _)| *phase == "continue")
                .map(|(_, outcome)| outcome.rate());
            for round in 0..DEEP_ROUNDS {
                let mut deep = load::run(&client, spec(requests), 200, make.clone()).await;
                if let Some(fresh_before) = before {
                    let after = continues((round + 1) * GOALS_PER_WINDOW).await;
                    let fresh = (fresh_before + after.rate()) / 2.0;
                    deep_ratios.push(deep.rate() / fresh.max(f64::EPSILON));
                    before = Some(after.rate());
                    deep.errors += after.errors;
                    if deep.first_error.is_none() {
                        deep.first_error = after.first_error.clone();
                    }
                }
                if round == 0 {
                    measured.push(("continue-deep", deep));
                }
            }
        }
        host.shutdown().await;
        if wanted("hello") {
            hellos.push(hello(&client, requests).await?);
        }

        let mut rows = Vec::new();
        let baseline_rate = hellos.iter().map(Outcome::rate).sum::<f64>() / hellos.len().max(1) as f64;
        let baseline = format!(
            "hello {} req/s (before / after)",
            hellos.iter().map(|h| thousands(h.rate())).collect::<Vec<_>>().join(" / ")
        );
        if !hellos.is_empty() {
            rows.push(Row::info(
                format!("baseline: axum hello-world, same runtime, {CONCURRENCY} connections (before; after)"),
                hellos.iter_mut().map(describe).collect::<Vec<_>>().join("; "),
            ));
        }
        deep_ratios.sort_by(f64::total_cmp);
        let deep_ratio = deep_ratios.get(deep_ratios.len() / 2).copied();
        let spread = match (deep_ratios.first(), deep_ratios.last()) {
            (Some(low), Some(high)) => format!("{low:.2}–{high:.2}"),
            _ => String::new(),
        };
        for (phase, mut outcome) in measured {
            let ratio = outcome.rate() / baseline_rate.max(f64::EPSILON);
            if phase == "continue-deep" {
                let metric = format!(
                    "host continue on goals with {} runs already ({} to {} in the window), {CONCURRENCY} connections ÷ continue on goals of at most 100 runs: median of {DEEP_ROUNDS} windows each between two fresh ones (ratios {spread})",
                    thousands(DEEP_RUNS as f64),
                    thousands(DEEP_RUNS as f64),
                    thousands(DEEP_RUNS as f64 + outcome.rate() * WINDOW.as_secs_f64() / CONCURRENCY as f64),
                );
                let row = match deep_ratio {
                    Some(deep_ratio) => Row::target(
                        metric,
                        describe(&mut outcome),
                        format!("≥ {DEEP_RATIO} × fresh"),
                        outcome.errors == 0 && deep_ratio >= DEEP_RATIO,
                    )
                    .with_baseline("fresh goals, the windows around each", deep_ratio),
                    // `--phase continue-deep` alone has no fresh rate.
                    None => Row::info(metric, describe(&mut outcome)),
                };
                rows.push(row);
                continue;
            }
            let row = if phase == "get" {
                let mut row = Row::target(
                    format!("host GET goal, {CONCURRENCY} connections"),
                    describe(&mut outcome),
                    format!("≥ {GET_RATIO} × baseline"),
                    outcome.errors == 0 && ratio >= GET_RATIO,
                );
                if hellos.is_empty() {
                    // `--phase get` alone measures no baseline to judge by.
                    row.met = crate::table::Met::Info;
                }
                row
            } else {
                let name = if phase == "create" {
                    "create goal"
                } else {
                    "continue (fixture arm + judge, durable record; goals of at most 100 runs)"
                };
                let p99 = outcome.latencies.percentile(99.0).unwrap_or(Duration::MAX);
                let met = outcome.errors == 0 && outcome.rate() >= WRITE_RATE && p99 < WRITE_P99;
                Row::target(
                    format!("host {name}, {CONCURRENCY} connections"),
                    describe(&mut outcome),
                    format!("≥ {} req/s, p99 < {}", thousands(WRITE_RATE), duration(WRITE_P99)),
                    met,
                )
            };
            rows.push(if hellos.is_empty() { row } else { row.with_baseline(baseline.clone(), ratio) });
        }
        Ok(rows)
    })
}
