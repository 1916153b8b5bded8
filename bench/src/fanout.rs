//! The live event stream's cost: `continue` throughput while 1,000
//! Server-Sent-Events subscribers follow their tenants, as a ratio to the
//! same load without them (measured before and after), and how long an
//! event takes from its commit to a subscriber.
//!
//! Each of the `CONNECTIONS` load connections is its own tenant; the
//! subscribers are spread evenly over those tenants, so every event goes
//! to `SUBSCRIBERS / CONNECTIONS` streams. An event's `at` is taken when
//! its write is prepared, just before the commit, so "after commit" below
//! is, if anything, a little long.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use goalpost_host::domain::{Tenant, Timestamp};
use goalpost_host::engine::FeedSettings;
use goalpost_host::{Config, DbLocation, RunningHost};
use serde_json::{json, Value};

use crate::load::{self, MakeRequest, Outcome, Spec};
use crate::stats::{duration, Samples};
use crate::table::{thousands, Row};
use crate::throughput::runtime;

const GOALS: &str = "/v1/host/sample/goals";
const STREAM: &str = "/v1/host/sample/goals/events";
const CONNECTIONS: usize = 16;
pub const SUBSCRIBERS: usize = 1_000;
/// A connection moves to its next goal after this many runs, so every
/// phase runs goals of the same history (see `throughput.rs`).
const RUNS_PER_GOAL: u64 = 100;
const GOALS_PER_PHASE: usize = 40;
const WARMUP: Duration = Duration::from_millis(500);
const WINDOW: Duration = Duration::from_secs(3);
const RATIO_TARGET: f64 = 0.9;
const DELIVERY_P99: Duration = Duration::from_millis(50);

fn token(worker: usize) -> String {
    format!("fanout-token-{worker}")
}

fn tenant(worker: usize) -> String {
    format!("fanout-tenant-{worker}")
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

async fn create_goal(client: &reqwest::Client, base: &str, worker: usize) -> Result<String> {
    let body = json!({
        "objective": "bench fan-out",
        "completion": {"check": "verifier", "verifierRef": "conformance:verifier"},
        "continuation": {"mode": "manual", "armRef": "conformance:arm"},
        "bounds": {"maxLoopIterations": 1_000_000_000u64}
    });
    let response = client
        .post(format!("{base}{GOALS}"))
        .bearer_auth(token(worker))
        .json(&body)
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

/// What the subscribers saw: delivery latencies of events recorded at or
/// after `since_ms`, and how many they received.
#[derive(Default)]
struct Seen {
    latencies: Mutex<Samples>,
    delivered: AtomicU64,
}

/// One subscriber: reads its tenant's stream until aborted, timing every
/// event recorded at or after `since_ms`.
async fn subscribe(base: String, worker: usize, since_ms: Arc<AtomicU64>, seen: Arc<Seen>) {
    let Ok(client) = reqwest::Client::builder().no_proxy().build() else {
        return;
    };
    let Ok(mut response) = client
        .get(format!("{base}{STREAM}"))
        .bearer_auth(token(worker))
        .send()
        .await
    else {
        return;
    };
    let mut buffer = String::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let received = now_ms();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let Some(at) = block
                .find("\"at\":\"")
                .map(|start| &block[start + 6..])
                .and_then(|rest| rest.split('"').next())
                .and_then(Timestamp::parse)
            else {
                continue;
            };
            let since = i64::try_from(since_ms.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
            if at.unix_ms() < since {
                continue;
            }
            seen.delivered.fetch_add(1, Ordering::Relaxed);
            let waited = u64::try_from(received - at.unix_ms()).unwrap_or(0);
            if let Ok(mut latencies) = seen.latencies.lock() {
                latencies.push(Duration::from_millis(waited));
            }
        }
    }
}

async fn continues(client: &reqwest::Client, base: &str, pools: Arc<Vec<Vec<String>>>) -> Outcome {
    let base = base.to_string();
    let make: MakeRequest = Arc::new(move |client, w, n| {
        let pool = &pools[w];
        let next = usize::try_from(n / RUNS_PER_GOAL).unwrap_or(usize::MAX) % pool.len();
        client
            .post(format!("{base}{GOALS}/{}/continue", pool[next]))
            .bearer_auth(token(w))
    });
    let spec = Spec {
        concurrency: CONNECTIONS,
        warmup: WARMUP,
        window: WINDOW,
        max_requests: 1_000_000,
    };
    load::run(client, spec, 200, make).await
}

fn subscribers(host: &RunningHost) -> Result<usize> {
    let mut total = 0;
    for worker in 0..CONNECTIONS {
        let tenant = Tenant::parse(&tenant(worker)).context("tenant")?;
        total += host.feed().subscribers(&tenant);
    }
    Ok(total)
}

/// Polls until the host counts `want` open streams, failing after 30 s.
async fn until_subscribers(host: &RunningHost, want: usize) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let open = subscribers(host)?;
        if open == want {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{open} streams open, expected {want}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn measure() -> Result<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let runtime = runtime()?;
    runtime.block_on(async {
        let client = load::client(CONNECTIONS)?;
        let mut config =
            Config::conformance_in_memory((0..CONNECTIONS).map(|w| (token(w), tenant(w))).collect());
        config.db = DbLocation::File(dir.path().join("host.db"));
        config.connections.max_connections = SUBSCRIBERS + 4 * CONNECTIONS;
        config.feed = FeedSettings {
            max_subscribers_per_tenant: SUBSCRIBERS.div_ceil(CONNECTIONS),
            ..FeedSettings::default()
        };
        let host = RunningHost::start(config).await?;
        let base = host.base_url();
        // A fresh pool of goals per phase: every phase runs goals of the
        // same history.
        let mut phases = Vec::new();
        for _ in 0..3 {
            let mut pools = Vec::with_capacity(CONNECTIONS);
            for worker in 0..CONNECTIONS {
                let mut pool = Vec::with_capacity(GOALS_PER_PHASE);
                for _ in 0..GOALS_PER_PHASE {
                    pool.push(create_goal(&client, &base, worker).await?);
                }
                pools.push(pool);
            }
            phases.push(Arc::new(pools));
        }

        let mut before = continues(&client, &base, Arc::clone(&phases[0])).await;

        let since = Arc::new(AtomicU64::new(u64::MAX));
        let seen = Arc::new(Seen::default());
        let tasks: Vec<_> = (0..SUBSCRIBERS)
            .map(|index| {
                tokio::spawn(subscribe(
                    base.clone(),
                    index % CONNECTIONS,
                    Arc::clone(&since),
                    Arc::clone(&seen),
                ))
            })
            .collect();
        until_subscribers(&host, SUBSCRIBERS).await?;
        since.store(u64::try_from(now_ms()).unwrap_or(0), Ordering::Relaxed);
        let mut with = continues(&client, &base, Arc::clone(&phases[1])).await;
        // Let the last events reach every subscriber before counting.
        let expected_min = with.ok * (SUBSCRIBERS / CONNECTIONS) as u64;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while seen.delivered.load(Ordering::Relaxed) < expected_min
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for task in &tasks {
            task.abort();
        }
        until_subscribers(&host, 0).await?;
        let mut after = continues(&client, &base, Arc::clone(&phases[2])).await;
        host.shutdown().await;

        let baseline_rate = (before.rate() + after.rate()) / 2.0;
        let ratio = with.rate() / baseline_rate.max(f64::EPSILON);
        let describe = |outcome: &mut Outcome| {
            let p99 = outcome.latencies.percentile(99.0).unwrap_or_default();
            let mut text = format!("{} req/s (p99 {})", thousands(outcome.rate()), duration(p99));
            if outcome.errors > 0 {
                text.push_str(&format!(
                    ", {} errors: {}",
                    outcome.errors,
                    outcome.first_error.as_deref().unwrap_or("?")
                ));
            }
            text
        };
        let baseline = format!(
            "no subscribers: {} / {} (before / after)",
            describe(&mut before),
            describe(&mut after)
        );
        let delivered = seen.delivered.load(Ordering::Relaxed);
        let mut latencies = seen.latencies.lock().map(|l| l.clone()).unwrap_or_default();
        let p50 = latencies.percentile(50.0).unwrap_or(Duration::MAX);
        let p99 = latencies.percentile(99.0).unwrap_or(Duration::MAX);
        let errors = with.errors;
        let rows = vec![
            Row::target(
                format!(
                    "continue with {} SSE subscribers ({} tenants, {} streams each), {CONNECTIONS} connections",
                    thousands(SUBSCRIBERS as f64),
                    CONNECTIONS,
                    SUBSCRIBERS / CONNECTIONS
                ),
                describe(&mut with),
                format!("≥ {RATIO_TARGET} × baseline"),
                errors == 0 && ratio >= RATIO_TARGET,
            )
            .with_baseline(baseline, ratio),
            Row::target(
                "SSE delivery after commit (event `at` to a subscriber's read), 1,000 subscribers",
                format!(
                    "p50 {}, p99 {} over {} deliveries ({} expected)",
                    duration(p50),
                    duration(p99),
                    thousands(delivered as f64),
                    thousands(expected_min as f64)
                ),
                format!("p99 < {}, every event delivered", duration(DELIVERY_P99)),
                p99 < DELIVERY_P99 && delivered >= expected_min,
            ),
        ];
        Ok(rows)
    })
}
