//! Scheduler fairness: tenant B's fire lag while tenant A
//! saturates the scheduler, as a ratio to B's lag alone.
//!
//! B has 20 `schedule` goals on a 200 ms interval (fixture arm and judge,
//! instant runs). A has 600 goals due every 20 ms whose runs hang for a
//! minute: enough to hold every fire slot one tenant may take, with
//! hundreds more due behind them, for the whole measurement. Each phase
//! runs the engine's real scheduler loop (system clock, the host's 100 ms
//! tick) for a few seconds on a file database, in this process; B's lag is
//! read afterwards from the `runs` table the way `scheduler` reads it: a
//! run's `started_ms` minus when it was due (creation plus the interval
//! for a first run, the previous run's end plus the interval after).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::config::DEFAULT_TICK;
use goalpost_host::domain::Tenant;
use goalpost_host::scheduler::Scheduler;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::stats::{duration, Samples};
use crate::table::Row;

const B_GOALS: usize = 20;
const B_INTERVAL_MS: i64 = 200;
const A_GOALS: usize = 600;
const PHASE: Duration = Duration::from_secs(4);
const TARGET_RATIO: f64 = 1.5;

fn goal(arm: &str) -> Value {
    json!({
        "objective": "fairness",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "schedule", "armRef": arm },
        "bounds": { "maxLoopIterations": 1_000_000 },
    })
}

/// B's fire lag with (or without) A's hanging goals, and B's fire count.
fn phase(with_a: bool) -> Result<(Samples, usize)> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("fairness.db");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let engine = crate::seed::engine_on_file(&db).await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let a = Tenant::parse("tenant-a").context("tenant")?;
        let b = Tenant::parse("tenant-b").context("tenant")?;
        if with_a {
            let hanging = goal("conformance:arm?intervalMs=20&runMs=60000");
            for _ in 0..A_GOALS {
                engine.create(&a, &hanging).await?;
            }
        }
        let quick = goal(&format!("conformance:arm?intervalMs={B_INTERVAL_MS}"));
        for _ in 0..B_GOALS {
            engine.create(&b, &quick).await?;
        }
        let scheduler = Arc::new(Scheduler::new(engine));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(scheduler.run(clock, DEFAULT_TICK, Duration::ZERO, stopped));
        tokio::time::sleep(PHASE).await;
        let _ = stop.send(true);
        task.await.context("the scheduler task failed")?;
        anyhow::Ok(())
    })?;
    drop(runtime);
    let connection =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = connection.prepare(
        "SELECT r.goal_id, g.created_ms, r.started_ms, r.ended_ms FROM runs r
         JOIN goals g ON g.id = r.goal_id WHERE g.tenant = 'tenant-b'
         ORDER BY r.goal_id, r.started_ms",
    )?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, Option<i64>>(3)?,
        ))
    })?;
    let mut lag = Samples::default();
    let mut fires = 0;
    let mut previous: Option<(String, Option<i64>)> = None;
    for row in rows {
        let (goal, created, started, ended) = row?;
        let due = match &previous {
            Some((last, ended)) if *last == goal => ended.map(|ended| ended + B_INTERVAL_MS),
            _ => Some(created + B_INTERVAL_MS),
        };
        if let Some(due) = due {
            lag.push_ms(started - due);
            fires += 1;
        }
        previous = Some((goal, ended));
    }
    Ok((lag, fires))
}

/// Phases of each kind, alternated, so a load spike on a shared machine
/// hits both kinds alike; the row compares their medians.
const ROUNDS: usize = 3;

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

pub fn measure() -> Result<Vec<Row>> {
    let (mut alone_p99s, mut beside_p99s) = (Vec::new(), Vec::new());
    let (mut alone_fires, mut beside_fires) = (0, 0);
    for round in 1..=ROUNDS {
        eprintln!("fairness {round}/{ROUNDS}: tenant B alone");
        let (mut alone, fires) = phase(false)?;
        alone_fires += fires;
        alone_p99s.push(alone.percentile(99.0).context("no fires of B alone")?);
        eprintln!("fairness {round}/{ROUNDS}: tenant B beside tenant A's {A_GOALS} hanging goals");
        let (mut beside, fires) = phase(true)?;
        beside_fires += fires;
        // No fire of B at all is starvation: an hour stands for it.
        beside_p99s.push(beside.percentile(99.0).unwrap_or(Duration::from_secs(3600)));
    }
    let (alone_p99, beside_p99) = (median(alone_p99s), median(beside_p99s));
    let ratio = beside_p99.as_secs_f64() / alone_p99.as_secs_f64().max(0.001);
    Ok(vec![Row::target(
        format!(
            "fairness: tenant B's fire lag p99 with tenant A's {A_GOALS} hanging goals \
             saturating the scheduler (median of {ROUNDS}; {beside_fires} fires of B; \
             {alone_fires} alone)"
        ),
        duration(beside_p99),
        format!("ratio ≤ {TARGET_RATIO}"),
        ratio <= TARGET_RATIO,
    )
    .with_baseline(
        format!("B alone: {}", duration(alone_p99)),
        ratio,
    )])
}
