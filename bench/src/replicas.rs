//! The scheduler on PostgreSQL with 1, 2 and 3 replicas: N `schedule`
//! goals (a webhook arm this process serves, every 10 s; the fixture
//! judge) on one PostgreSQL, first fires spread evenly over one interval,
//! fired by 1, 2 or 3 replicas — each a child process running the whole
//! host (`RunningHost`: its own store, pool and scheduler loop, the
//! default 100 ms tick) — for one and a half intervals. A fresh schema per
//! point; the same seed for every replica count.
//!
//! Read at the arm, where a double dispatch would show:
//! - fires/s: arm calls received in the window, over the window;
//! - fire lag: when the arm call arrived minus when the iteration was due
//!   (the seeded time for a first run; the previous run's record time plus
//!   the interval for the next ones, which is how the engine computes it;
//!   a goal due before the replicas started counts from their start);
//! - double dispatches: `(goal, iteration)` pairs the arm got more than
//!   once (must be 0).
//!
//! The goals are seeded through the host's own `Store::insert_goals` (the
//! rows a create writes), a thousand per transaction on four connections,
//! each transaction one tenant's (so no two wait on one tenant row).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::extract::State;
use axum::Json;
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::config::Config;
use goalpost_host::domain::Timestamp;
use goalpost_host::storage::{Goals, PostgresStore};
use goalpost_host::{DbLocation, RunningHost};
use serde_json::{json, Value};

use crate::seed::{due_slot, new_goal};
use crate::stats::{cpu_time, duration, Samples};
use crate::table::{thousands, Row};

const INTERVAL_MS: u64 = 10_000;
/// The replicas run this many intervals past the first due time.
const INTERVALS: f64 = 1.5;
const SIZES: [usize; 2] = [10_000, 100_000];
const REPLICAS: [usize; 3] = [1, 2, 3];
/// Goals per seeding transaction, all of one tenant.
const BATCH: usize = 1_000;
/// Connections seeding at once.
const SEEDERS: usize = 4;
/// Tenants the goals are spread over (one per seeding batch, cycling).
const TENANTS: usize = 100;
/// Time to seed one goal before any was measured (for when to make the
/// first one due); later points use 1.5 × the last measured time.
const SEED_US_PER_GOAL: f64 = 250.0;
/// Time for the replicas to start (connect, migrate, listen).
const START_MS: u64 = 3_000;
/// The schema every point makes afresh.
const SCHEMA: &str = "faultbench_scheduler";

fn now_ms() -> i64 {
    SystemClock.now().unix_ms()
}

/// In a child: `goals` schedule goals whose arm is `arm`, first fires
/// `interval_ms / goals` apart from `first_due_ms` in an order unrelated to
/// creation; writes `goal-id due-ms` lines to `dues`.
pub fn seed(
    db: &str,
    goals: usize,
    arm: &str,
    interval_ms: u64,
    first_due_ms: i64,
    dues: &Path,
) -> Result<Value> {
    let store = PostgresStore::open(db)?;
    let body = json!({
        "objective": "bench: keep the replicas' schedulers busy",
        "completion": {"check": "verifier", "verifierRef": "conformance:verifier"},
        "continuation": {"mode": "schedule", "armRef": format!("{arm}#intervalMs={interval_ms}")},
        "bounds": {"maxLoopIterations": 1_000_000u64}
    });
    let started = Instant::now();
    let now = SystemClock.now();
    let spacing = interval_ms as f64 / goals.max(1) as f64;
    let batches = goals.div_ceil(BATCH);
    let lines: Vec<String> = std::thread::scope(|scope| -> Result<Vec<String>> {
        let workers: Vec<_> = (0..SEEDERS)
            .map(|worker| {
                let (store, body) = (&store, &body);
                scope.spawn(move || -> Result<Vec<String>> {
                    let mut lines = Vec::new();
                    for batch in (worker..batches).step_by(SEEDERS) {
                        let owner = crate::seed::tenant(batch % TENANTS)?;
                        let mut rows = Vec::with_capacity(BATCH);
                        for index in batch * BATCH..((batch + 1) * BATCH).min(goals) {
                            let mut goal = new_goal(body, owner.clone(), now)?;
                            let due =
                                first_due_ms + (due_slot(index, goals) as f64 * spacing) as i64;
                            goal.next_fire_at =
                                Some(Timestamp::from_unix_ms(due).context("due time")?);
                            lines.push(format!("{} {due}", goal.id));
                            rows.push(goal);
                        }
                        store.insert_goals(&rows)?;
                    }
                    Ok(lines)
                })
            })
            .collect();
        let mut lines = Vec::new();
        for worker in workers {
            lines.extend(
                worker
                    .join()
                    .map_err(|_| anyhow::anyhow!("a seeder panicked"))??,
            );
        }
        Ok(lines)
    })?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dues)?);
    for line in &lines {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(json!({"inserted": lines.len(), "secs": started.elapsed().as_secs_f64()}))
}

/// In a child: one replica (the whole host on `db`) until the wall clock
/// reads `until_ms`.
pub fn replica(db: &str, until_ms: i64) -> Result<Value> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut config = Config::conformance_in_memory(Vec::new());
        config.db = DbLocation::Postgres(db.to_string());
        let cpu_before = cpu_time().unwrap_or_default();
        let host = RunningHost::start(config).await?;
        let started_ms = now_ms();
        while now_ms() < until_ms {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let stopped_ms = now_ms();
        let cpu = cpu_time().unwrap_or_default().saturating_sub(cpu_before);
        // Fires still out are cut off: the schema is dropped next.
        drop(host);
        Ok(json!({
            "startedMs": started_ms,
            "stoppedMs": stopped_ms,
            "cpuSecs": cpu.as_secs_f64(),
        }))
    })
}

/// One arm call as the receiver saw it.
type Calls = Arc<Mutex<Vec<(String, u64, i64)>>>;

async fn arm(State(calls): State<Calls>, Json(body): Json<Value>) -> Json<Value> {
    let at = now_ms();
    let goal = body["goalId"].as_str().unwrap_or_default().to_string();
    let iteration = body["iteration"].as_u64().unwrap_or(0);
    calls
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((goal, iteration, at));
    Json(json!({ "output": iteration }))
}

/// CPU time all `postgres` processes on this machine have used so far
/// (other users of the server included).
fn postgres_cpu() -> Duration {
    let mut ticks = 0u64;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if &stat[open + 1..close] != "postgres" {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let field = |n: usize| fields.get(n).and_then(|text| text.parse::<u64>().ok());
        ticks += field(11).unwrap_or(0) + field(12).unwrap_or(0);
    }
    // USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis(ticks * 10)
}

async fn drop_schema(server: &str) -> Result<()> {
    let (client, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        .await?;
    Ok(())
}

/// (goal, iteration) -> when that run was recorded.
async fn recorded(url: &str) -> Result<HashMap<(String, u64), i64>> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let rows = client
        .query(
            "SELECT goal_id, iteration, ended_ms FROM runs WHERE ended_ms IS NOT NULL",
            &[],
        )
        .await?;
    rows.iter()
        .map(|row| {
            let iteration: i64 = row.try_get(1)?;
            Ok((
                (row.try_get::<_, String>(0)?, u64::try_from(iteration)?),
                row.try_get::<_, i64>(2)?,
            ))
        })
        .collect()
}

struct Point {
    fires: usize,
    rate: f64,
    required: f64,
    lag: Samples,
    overdue: usize,
    doubles: usize,
    seed_secs: f64,
    replica_cpu: f64,
    /// PostgreSQL's CPU seconds over `sampled_s` seconds of the run.
    postgres_cpu: f64,
    sampled_s: f64,
    window_s: f64,
}

/// Runs `goalpost-bench child ARGS…` without waiting.
fn spawn_child(args: &[String]) -> Result<std::process::Child> {
    let exe = std::env::current_exe().context("cannot find this executable")?;
    Command::new(exe)
        .arg("child")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start a child")
}

fn child_answer(child: std::process::Child) -> Result<Value> {
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!("a replica failed: {}", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().context("the child printed nothing")?;
    serde_json::from_str(last).with_context(|| format!("the child printed {last:?}"))
}

async fn point(
    server: &str,
    goals: usize,
    replicas: usize,
    arm_url: &str,
    calls: &Calls,
    seed_us_per_goal: &mut f64,
) -> Result<Point> {
    let url = crate::postgres::fresh_schema(server, SCHEMA).await?;
    calls.lock().unwrap_or_else(PoisonError::into_inner).clear();
    let dir = tempfile::tempdir()?;
    let dues_file = dir.path().join("dues.txt");
    let lead_ms = START_MS + (goals as f64 * *seed_us_per_goal / 1000.0) as u64;
    let first_due = now_ms() + i64::try_from(lead_ms)?;
    let seed_args = vec![
        "seed-postgres".to_string(),
        "--db".into(),
        url.clone(),
        "--goals".into(),
        goals.to_string(),
        "--arm".into(),
        arm_url.to_string(),
        "--interval-ms".into(),
        INTERVAL_MS.to_string(),
        "--first-due-ms".into(),
        first_due.to_string(),
        "--dues".into(),
        dues_file.display().to_string(),
    ];
    let seeded = tokio::task::spawn_blocking(move || crate::child::spawn(&seed_args)).await??;
    let seed_secs = seeded["secs"].as_f64().unwrap_or(0.0);
    eprintln!("  seeded {goals} goals in {seed_secs:.1} s");
    *seed_us_per_goal = 1.5 * seed_secs * 1e6 / goals.max(1) as f64;
    // A seed slower than planned leaves goals overdue when the replicas
    // start (counted as such); the window is the same length anyway.
    let until = first_due.max(now_ms() + i64::try_from(START_MS)?)
        + (INTERVAL_MS as f64 * INTERVALS) as i64;
    let postgres_before = postgres_cpu();
    let sampled_from = now_ms();
    let children = (0..replicas)
        .map(|_| {
            spawn_child(&[
                "postgres-replica".into(),
                "--db".into(),
                url.clone(),
                "--until-ms".into(),
                until.to_string(),
            ])
        })
        .collect::<Result<Vec<_>>>()?;
    // The server's CPU is read while the replicas still run: a backend's
    // time leaves /proc with it when its replica disconnects.
    let sample_at = until - 300;
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(sample_at - now_ms()).unwrap_or(0),
    ))
    .await;
    let postgres_cpu = postgres_cpu().saturating_sub(postgres_before).as_secs_f64();
    let sampled_s = (now_ms() - sampled_from) as f64 / 1000.0;
    let answers = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(child_answer)
            .collect::<Result<Vec<_>>>()
    })
    .await??;
    let started = answers
        .iter()
        .filter_map(|answer| answer["startedMs"].as_i64())
        .max()
        .context("startedMs")?;
    let stopped = answers
        .iter()
        .filter_map(|answer| answer["stoppedMs"].as_i64())
        .min()
        .context("stoppedMs")?;
    let replica_cpu: f64 = answers
        .iter()
        .filter_map(|answer| answer["cpuSecs"].as_f64())
        .sum();

    let dues = crate::seed::read_dues(&dues_file)?;
    let recorded = recorded(&url).await?;
    let calls = std::mem::take(&mut *calls.lock().unwrap_or_else(PoisonError::into_inner));
    let mut seen: HashMap<(String, u64), usize> = HashMap::new();
    let mut lag = Samples::default();
    let (mut fires, mut overdue, mut in_window) = (0, 0, 0usize);
    let window_start = first_due.max(started);
    let window_end = until.min(stopped);
    for (goal, iteration, at) in &calls {
        *seen.entry((goal.clone(), *iteration)).or_default() += 1;
        let due = if *iteration <= 1 {
            dues.get(goal).copied()
        } else {
            recorded
                .get(&(goal.clone(), iteration - 1))
                .map(|ended| ended + INTERVAL_MS as i64)
        };
        if let Some(due) = due {
            if due < started {
                overdue += 1;
            }
            lag.push_ms(at - due.max(started));
            fires += 1;
        }
        if (window_start..=window_end).contains(at) {
            in_window += 1;
        }
    }
    let doubles = seen.values().filter(|count| **count > 1).count();
    let window_s = (window_end - window_start) as f64 / 1000.0;
    drop_schema(server).await?;
    Ok(Point {
        fires,
        rate: in_window as f64 / window_s.max(f64::EPSILON),
        required: goals as f64 / (INTERVAL_MS as f64 / 1000.0),
        lag,
        overdue,
        doubles,
        seed_secs,
        replica_cpu,
        postgres_cpu,
        sampled_s,
        window_s: (stopped - started) as f64 / 1000.0,
    })
}

pub fn measure() -> Result<Vec<Row>> {
    let Some(server) = std::env::var("GOALPOST_TEST_POSTGRES")
        .ok()
        .map(|url| url.trim().to_string())
        .filter(|url| !url.is_empty())
    else {
        return Ok(vec![Row::info(
            "scheduler on PostgreSQL with 1, 2, 3 replicas",
            "not measured: GOALPOST_TEST_POSTGRES is not set (export GOALPOST_TEST_POSTGRES=$(scripts/start-postgres.sh))",
        )]);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let calls: Calls = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let arm_url = format!("http://{}/arm", listener.local_addr()?);
        let router = axum::Router::new()
            .fallback(axum::routing::post(arm))
            .with_state(Arc::clone(&calls));
        let server_task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        let mut rows = Vec::new();
        let mut seed_us_per_goal = SEED_US_PER_GOAL;
        for goals in SIZES {
            let mut one_replica = None;
            for replicas in REPLICAS {
                eprintln!("postgres scheduler: {goals} goals, {replicas} replicas");
                let mut point = point(
                    &server,
                    goals,
                    replicas,
                    &arm_url,
                    &calls,
                    &mut seed_us_per_goal,
                )
                .await?;
                let p50 = point.lag.percentile(50.0).unwrap_or_default();
                let p99 = point.lag.percentile(99.0).unwrap_or(Duration::MAX);
                let label = format!(
                    "PostgreSQL scheduler, {} goals, {replicas} replica{}",
                    thousands(goals as f64),
                    if replicas == 1 { "" } else { "s" }
                );
                let baseline = *one_replica.get_or_insert(point.rate);
                let rate_row = Row::info(
                    format!(
                        "{label}: fires/s (required {} /s; CPU: replicas {:.0}% of one core over {:.0} s, PostgreSQL {:.0}% over {:.0} s; seeded in {:.1} s)",
                        thousands(point.required),
                        100.0 * point.replica_cpu / point.window_s.max(f64::EPSILON),
                        point.window_s,
                        100.0 * point.postgres_cpu / point.sampled_s.max(f64::EPSILON),
                        point.sampled_s,
                        point.seed_secs,
                    ),
                    format!("{} /s", thousands(point.rate)),
                );
                rows.push(if replicas == 1 {
                    rate_row
                } else {
                    rate_row.with_baseline(
                        format!("1 replica {} /s", thousands(baseline)),
                        point.rate / baseline.max(f64::EPSILON),
                    )
                });
                rows.push(Row::info(
                    format!(
                        "{label}: fire lag p50 / p99 ({} fires, {} due before the replicas started)",
                        point.fires, point.overdue
                    ),
                    format!("{} / {}", duration(p50), duration(p99)),
                ));
                rows.push(Row::target(
                    format!("{label}: (goal, iteration) pairs dispatched twice"),
                    point.doubles.to_string(),
                    "0",
                    point.doubles == 0,
                ));
            }
        }
        server_task.abort();
        Ok(rows)
    })
}
