//! Measurement 6, costs that do not grow with what a tenant holds: the
//! host binary as a child process (so its resident memory is its own) on
//! a file database seeded with N goals in ONE tenant, then creates and
//! continues from 64 connections of that tenant; lists (whole, and the
//! first page of `?limit=100`) at 1k/10k/100k stored goals with the
//! host's RSS after them; and the RSS 30 s after a burst of 64 concurrent
//! lists of 1,000 goals against the RSS before it. Sizes:
//! `GOALPOST_BENCH_GROWTH_SIZES` (default `0,10000,100000`).
//!
//! The create-growth figure (creates at 100k stored goals ÷ creates on an
//! empty tenant) is measured apart, in alternated rounds on fresh copies
//! of both databases, and reported as the median of the rounds' ratios:
//! one 2 s window per size, taken minutes apart on a shared machine,
//! measured 1.13 in one run and 0.53 in the next.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::domain::Tenant;
use goalpost_host::storage::{Goals, SqliteStore};
use goalpost_host::DbLocation;
use serde_json::{json, Value};

use crate::load::{self, MakeRequest, Spec};
use crate::seed::new_goal;
use crate::stats::{duration, mib};
use crate::table::{thousands, Row};

const GOALS: &str = "/v1/host/sample/goals";
const TOKEN: &str = "growth-token";
const TENANT: &str = "growth-tenant";
const CONCURRENCY: usize = 64;
const WINDOW: Duration = Duration::from_secs(2);
const WARMUP: Duration = Duration::from_millis(300);
/// Goals per seed transaction.
const BATCH: usize = 1000;

fn sizes() -> Vec<usize> {
    std::env::var("GOALPOST_BENCH_GROWTH_SIZES")
        .ok()
        .map(|text| {
            text.split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![0, 10_000, 100_000])
}

fn body(fixture: bool) -> Value {
    let (verifier, arm) = if fixture {
        (json!("conformance:verifier"), json!("conformance:arm"))
    } else {
        (Value::Null, Value::Null)
    };
    json!({
        "objective": "bench: a goal among many in one tenant, with an objective of ordinary length",
        "completion": {"check": "verifier", "verifierRef": verifier},
        "continuation": {"mode": "manual", "armRef": arm},
        "bounds": {"maxLoopIterations": 1_000_000_000u64}
    })
}

/// `n` open manual goals of the one tenant, written as creates write them.
fn seed(db: &Path, n: usize) -> Result<()> {
    let store = SqliteStore::open(&DbLocation::File(db.to_path_buf()))?;
    let owner = Tenant::parse(TENANT).context("tenant")?;
    let now = SystemClock.now();
    let template = body(false);
    let mut batch = Vec::with_capacity(BATCH);
    for index in 0..n {
        batch.push(new_goal(&template, owner.clone(), now)?);
        if batch.len() == BATCH || index + 1 == n {
            store.insert_goals(&batch)?;
            batch.clear();
        }
    }
    Ok(())
}

/// The host binary, serving `db`, killed when dropped.
struct Host {
    child: Child,
    base: String,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host {
    fn start(db: &Path) -> Result<Host> {
        let exe = std::env::current_exe().context("cannot find this executable")?;
        let host = exe.with_file_name("goalpost-host");
        if !host.exists() {
            bail!(
                "{} is missing: build goalpost-host in the same profile",
                host.display()
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new(host)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--db")
            .arg(db)
            .args(["--token", &format!("{TOKEN}={TENANT}")])
            .args(["--max-goals-per-tenant", "100000000"])
            .args(["--max-stored-goals-per-tenant", "100000000"])
            .arg("--conformance-seams")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the host")?;
        let host = Host {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("the host did not listen within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(host)
    }

    /// The host's resident set, from /proc.
    fn rss(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS")?;
        Ok(kib * 1024)
    }
}

fn spec(concurrency: usize) -> Spec {
    Spec {
        concurrency,
        warmup: WARMUP,
        window: WINDOW,
        max_requests: 10_000_000,
    }
}

/// (rate, p99) of creates in the one tenant.
async fn creates(client: &reqwest::Client, base: &str) -> Result<(f64, Duration)> {
    let url = format!("{base}{GOALS}");
    let template = body(false);
    let make: MakeRequest =
        Arc::new(move |client, _, _| client.post(&url).bearer_auth(TOKEN).json(&template));
    let mut outcome = load::run(client, spec(CONCURRENCY), 201, make).await;
    if outcome.errors > 0 {
        bail!("creates failed: {:?}", outcome.first_error);
    }
    Ok((
        outcome.rate(),
        outcome.latencies.percentile(99.0).unwrap_or_default(),
    ))
}

/// (rate, p99) of `continue` on one fresh goal per connection.
async fn continues(client: &reqwest::Client, base: &str) -> Result<(f64, Duration)> {
    let mut ids = Vec::with_capacity(CONCURRENCY);
    for _ in 0..CONCURRENCY {
        let answer: Value = client
            .post(format!("{base}{GOALS}"))
            .bearer_auth(TOKEN)
            .json(&body(true))
            .send()
            .await?
            .json()
            .await?;
        ids.push(answer["id"].as_str().context("an id")?.to_string());
    }
    let urls: Vec<String> = ids
        .iter()
        .map(|id| format!("{base}{GOALS}/{id}/continue"))
        .collect();
    let make: MakeRequest =
        Arc::new(move |client, worker, _| client.post(&urls[worker]).bearer_auth(TOKEN));
    let mut outcome = load::run(client, spec(CONCURRENCY), 200, make).await;
    if outcome.errors > 0 {
        bail!("continues failed: {:?}", outcome.first_error);
    }
    Ok((
        outcome.rate(),
        outcome.latencies.percentile(99.0).unwrap_or_default(),
    ))
}

/// p99 of a list (`query` appended to the collection) from `concurrency`
/// connections.
async fn lists(
    client: &reqwest::Client,
    base: &str,
    query: &str,
    concurrency: usize,
) -> Result<Duration> {
    let url = format!("{base}{GOALS}{query}");
    let make: MakeRequest = Arc::new(move |client, _, _| client.get(&url).bearer_auth(TOKEN));
    let mut outcome = load::run(client, spec(concurrency), 200, make).await;
    if outcome.errors > 0 {
        bail!("lists failed: {:?}", outcome.first_error);
    }
    Ok(outcome.latencies.percentile(99.0).unwrap_or_default())
}

pub fn measure() -> Result<Vec<Row>> {
    let runtime = crate::throughput::runtime()?;
    let client = load::client(CONCURRENCY)?;
    let mut rows = Vec::new();
    let mut first: Option<(f64, f64)> = None;
    for n in sizes() {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("growth.db");
        seed(&db, n)?;
        let host = Host::start(&db)?;
        let idle = host.rss()?;
        let (create_rate, create_p99) = runtime.block_on(creates(&client, &host.base))?;
        let (continue_rate, continue_p99) = runtime.block_on(continues(&client, &host.base))?;
        let (create_base, continue_base) = *first.get_or_insert((create_rate, continue_rate));
        let ratio = |rate: f64, base: f64| rate / base.max(f64::EPSILON);
        // One window per size: the alternated rounds below decide.
        rows.push(
            Row::info(
                format!(
                    "create, {} goals stored in one tenant (64 conns), one window",
                    thousands(n as f64)
                ),
                format!(
                    "{}/s (p99 {})",
                    thousands(create_rate),
                    duration(create_p99)
                ),
            )
            .with_baseline(
                format!("{}/s", thousands(create_base)),
                ratio(create_rate, create_base),
            ),
        );
        rows.push(
            Row::target(
                format!(
                    "continue, {} goals stored in one tenant",
                    thousands(n as f64)
                ),
                format!(
                    "{}/s (p99 {})",
                    thousands(continue_rate),
                    duration(continue_p99)
                ),
                "≥ 0.9× the first size",
                ratio(continue_rate, continue_base) >= 0.9,
            )
            .with_baseline(
                format!("{}/s", thousands(continue_base)),
                ratio(continue_rate, continue_base),
            ),
        );
        if n >= 1000 {
            // The whole list from 4 connections (a 100k list is ~60 MB),
            // then the first page of 100 from 64.
            let whole = runtime.block_on(lists(&client, &host.base, "", 4))?;
            let after_whole = host.rss()?;
            let paged = runtime.block_on(lists(&client, &host.base, "?limit=100", CONCURRENCY))?;
            rows.push(Row::info(
                format!(
                    "list, {} goals in the tenant: whole (4 conns) / ?limit=100 (64 conns)",
                    thousands(n as f64)
                ),
                format!(
                    "p99 {} / {}; host RSS idle {:.0} MiB, after whole lists {:.0} MiB",
                    duration(whole),
                    duration(paged),
                    mib(idle),
                    mib(after_whole)
                ),
            ));
        }
        drop(host);
    }
    rows.extend(create_growth(&runtime, &client)?);
    rows.push(runtime.block_on(burst_returns())?);
    Ok(rows)
}

/// Rounds of the create-growth comparison.
const ROUNDS: usize = 5;
/// Goals stored in the tenant on the loaded side.
const STORED: usize = 100_000;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// Creates on a tenant holding [`STORED`] goals against creates on an
/// empty one, in [`ROUNDS`] rounds. Each round starts both hosts afresh
/// (an empty database, and a copy of one seeded once), so every round
/// measures the same thing: a window's creates would otherwise be the
/// next round's stored goals. The order alternates (empty first, then
/// loaded first), so a drift in the machine's load favours neither side.
/// The figure is the median of the rounds' ratios, beside the absolute
/// rates and a hello-world baseline of the same run.
fn create_growth(runtime: &tokio::runtime::Runtime, client: &reqwest::Client) -> Result<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let seeded = dir.path().join("seeded.db");
    seed(&seeded, STORED)?;
    let mut ratios = Vec::with_capacity(ROUNDS);
    let (mut empty_rates, mut loaded_rates) = (Vec::new(), Vec::new());
    let mut hello_rates = Vec::new();
    for round in 0..ROUNDS {
        let empty_db = dir.path().join(format!("empty-{round}.db"));
        seed(&empty_db, 0)?;
        let loaded_db = dir.path().join(format!("loaded-{round}.db"));
        // The seeded file is checkpointed (its store closed); copy its WAL
        // too, in case a checkpoint left one.
        std::fs::copy(&seeded, &loaded_db)?;
        let wal = seeded.with_extension("db-wal");
        if wal.exists() {
            std::fs::copy(&wal, loaded_db.with_extension("db-wal"))?;
        }
        let (mut empty, mut loaded) = (0.0, 0.0);
        for side in [round % 2 == 0, round % 2 == 1] {
            let host = Host::start(if side { &empty_db } else { &loaded_db })?;
            let (rate, _) = runtime.block_on(creates(client, &host.base))?;
            drop(host);
            if side {
                empty = rate;
            } else {
                loaded = rate;
            }
        }
        let hello = runtime.block_on(crate::throughput::hello(client, None))?;
        hello_rates.push(hello.rate());
        eprintln!(
            "growth: round {}: create empty {:.0}/s, at {STORED} {:.0}/s, hello {:.0}/s",
            round + 1,
            empty,
            loaded,
            hello.rate()
        );
        empty_rates.push(empty);
        loaded_rates.push(loaded);
        ratios.push(loaded / empty.max(f64::EPSILON));
    }
    let spread = {
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        format!(
            "{:.2}–{:.2}",
            sorted.first().copied().unwrap_or_default(),
            sorted.last().copied().unwrap_or_default()
        )
    };
    let ratio = median(&mut ratios);
    let (empty, loaded, hello) = (
        median(&mut empty_rates),
        median(&mut loaded_rates),
        median(&mut hello_rates),
    );
    Ok(vec![
        Row::info(
            format!("baseline: axum hello-world, 64 connections, median of {ROUNDS} rounds beside the creates"),
            format!("{}/s", thousands(hello)),
        ),
        Row::target(
            format!(
                "create, {} goals stored in one tenant ÷ empty tenant: median of {ROUNDS} alternated rounds (ratios {spread})",
                thousands(STORED as f64)
            ),
            format!(
                "{}/s vs {}/s ({:.2} of hello)",
                thousands(loaded),
                thousands(empty),
                loaded / hello.max(f64::EPSILON)
            ),
            "≥ 0.9",
            ratio >= 0.9,
        )
        .with_baseline(format!("empty {}/s", thousands(empty)), ratio),
    ])
}

/// RSS 30 s after 64 concurrent whole lists of 1,000 goals, against the
/// RSS before the burst.
async fn burst_returns() -> Result<Row> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("burst.db");
    seed(&db, 1000)?;
    let host = Host::start(&db)?;
    let client = load::client(CONCURRENCY)?;
    // One list first, so what a first answer sets up (pages, caches,
    // connection) counts as idle.
    client
        .get(format!("{}{GOALS}", host.base))
        .bearer_auth(TOKEN)
        .send()
        .await?
        .bytes()
        .await?;
    let idle = host.rss()?;
    let url = format!("{}{GOALS}", host.base);
    let burst: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                for _ in 0..4 {
                    client
                        .get(&url)
                        .bearer_auth(TOKEN)
                        .send()
                        .await?
                        .bytes()
                        .await?;
                }
                Ok::<_, reqwest::Error>(())
            })
        })
        .collect();
    for call in burst {
        call.await??;
    }
    let peak = host.rss()?;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let after = host.rss()?;
    let ratio = after as f64 / idle.max(1) as f64;
    Ok(Row::target(
        "host RSS 30 s after 64 concurrent lists of 1,000 goals (×4 each)",
        format!("{:.0} MiB (right after: {:.0} MiB)", mib(after), mib(peak)),
        "≤ 2× idle",
        ratio <= 2.0,
    )
    .with_baseline(format!("{:.0} MiB idle", mib(idle)), ratio))
}
