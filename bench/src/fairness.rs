//! Scheduler fairness: tenant B's fire lag while tenant A
//! saturates the scheduler, as a ratio to B's lag alone; and a victim
//! tenant's judge latency and fire lag while two attacking tenants are at
//! their caps (below, [`attackers`]).
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
    let lag = lag_of(&db, "tenant-b", B_INTERVAL_MS)?;
    let fires = lag.len();
    Ok((lag, fires))
}

/// The fire lags of `tenant`'s `schedule` goals on `interval_ms`, from the
/// `runs` table: a run's `started_ms` minus when it was due (creation plus
/// the interval for a first run, the previous run's end plus the interval
/// after).
fn lag_of(db: &std::path::Path, tenant: &str, interval_ms: i64) -> Result<Samples> {
    let connection =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = connection.prepare(
        "SELECT r.goal_id, g.created_ms, r.started_ms, r.ended_ms FROM runs r
         JOIN goals g ON g.id = r.goal_id WHERE g.tenant = ?1 AND g.mode = 'schedule'
         ORDER BY r.goal_id, r.started_ms",
    )?;
    let rows = statement.query_map([tenant], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, Option<i64>>(3)?,
        ))
    })?;
    let mut lag = Samples::default();
    let mut previous: Option<(String, Option<i64>)> = None;
    for row in rows {
        let (goal, created, started, ended) = row?;
        let due = match &previous {
            Some((last, ended)) if *last == goal => ended.map(|ended| ended + interval_ms),
            _ => Some(created + interval_ms),
        };
        if let Some(due) = due {
            lag.push_ms(started - due);
        }
        previous = Some((goal, ended));
    }
    Ok(lag)
}

/// Phases of each kind, alternated, so a load spike on a shared machine
/// hits both kinds alike; the row compares their medians.
const ROUNDS: usize = 3;

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

pub fn measure() -> Result<Vec<Row>> {
    let mut rows = one_attacker()?;
    rows.extend(attackers::measure()?);
    Ok(rows)
}

fn one_attacker() -> Result<Vec<Row>> {
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

/// A victim tenant beside two attackers at their caps. Each attacker keeps
/// 600 `schedule` goals whose runs hang (more than its share of the fire
/// slots) and eight reported runs at a time judged by a criteria verifier
/// that spends the judge's whole step budget on each (more than its budget
/// of judge steps a second). The victim has 10 `schedule` goals on a
/// 200 ms interval and reports runs one after another to a goal judged by
/// a one-criterion verifier. Measured: the victim's judge latency (a
/// report, judged and recorded, p50) and its fire lag (p99), alone and
/// beside the attackers, in alternated phases of one run; the engine runs
/// as a served host would (its judge pool and per-tenant step budget, the
/// scheduler loop on the system clock).
mod attackers {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use anyhow::{Context, Result};
    use goalpost_host::clock::{Clock, SystemClock};
    use goalpost_host::config::DEFAULT_TICK;
    use goalpost_host::domain::{parse_run_report, GoalId, Tenant};
    use goalpost_host::engine::{Engine, EngineSettings};
    use goalpost_host::scheduler::Scheduler;
    use goalpost_host::storage::{SqliteStore, Store};
    use goalpost_host::DbLocation;
    use serde_json::json;
    use tokio::sync::watch;

    use crate::stats::{duration, Samples};
    use crate::table::Row;

    const VICTIM_GOALS: usize = 10;
    const VICTIM_INTERVAL_MS: i64 = 200;
    const HANGING_GOALS: usize = 600;
    const EXPENSIVE_LOOPS: usize = 8;
    const PHASE: Duration = Duration::from_secs(4);
    const ROUNDS: usize = 3;
    const TARGET_RATIO: f64 = 1.5;

    async fn engine(db: &std::path::Path) -> Result<Arc<Engine>> {
        let location = DbLocation::File(db.to_path_buf());
        let store = tokio::task::spawn_blocking(move || SqliteStore::open(&location)).await??;
        let store: Arc<dyn Store> = Arc::new(store);
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let settings = EngineSettings {
            conformance_seams: true,
            // As a served host judges: its per-tenant budget of steps.
            judge_steps_per_sec: Some(goalpost_host::judge::pool::DEFAULT_JUDGE_STEPS_PER_SEC),
            ..EngineSettings::default()
        };
        Ok(Arc::new(Engine::new(store, clock, settings)))
    }

    fn manual(verifier: &str) -> serde_json::Value {
        json!({
            "objective": "fairness",
            "completion": { "check": "verifier", "verifierRef": verifier },
            "continuation": { "mode": "manual" },
            "bounds": { "maxLoopIterations": 1_000_000_000u64 },
        })
    }

    fn scheduled(arm: &str) -> serde_json::Value {
        json!({
            "objective": "fairness",
            "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
            "continuation": { "mode": "schedule", "armRef": arm },
            "bounds": { "maxLoopIterations": 1_000_000 },
        })
    }

    /// The victim's judge latencies and fire lags, beside the attackers
    /// or not.
    fn phase(with_attackers: bool) -> Result<(Samples, Samples)> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("attackers.db");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let judged = runtime.block_on(async {
            let engine = engine(&db).await?;
            let victim = Tenant::parse("victim").context("tenant")?;
            let stop = Arc::new(AtomicBool::new(false));
            let mut loads = Vec::new();
            if with_attackers {
                let pattern = format!("*{}b", "a".repeat(1022));
                for name in ["attacker-a", "attacker-b"] {
                    let tenant = Tenant::parse(name).context("tenant")?;
                    engine
                        .register_verifier(
                            &tenant,
                            &json!({ "name": "expensive", "criteria": [
                                { "id": "tag", "pointer": "/tag", "op": "matches", "value": pattern }
                            ] }),
                        )
                        .await?;
                    let hanging = scheduled("conformance:arm?intervalMs=20&runMs=60000");
                    for _ in 0..HANGING_GOALS {
                        engine.create(&tenant, &hanging).await?;
                    }
                    let body = json!({ "output": { "tag": "a".repeat(60_000) } });
                    for _ in 0..EXPENSIVE_LOOPS {
                        let goal = engine.create(&tenant, &manual("expensive")).await?.id;
                        let (engine, tenant, stop, body) =
                            (Arc::clone(&engine), tenant.clone(), Arc::clone(&stop), body.clone());
                        loads.push(tokio::spawn(async move {
                            while !stop.load(Ordering::Relaxed) {
                                let report = parse_run_report(&body).expect("a report");
                                let _ = engine.report_run(&tenant, &goal, report, &body).await;
                            }
                        }));
                    }
                }
            }
            engine
                .register_verifier(
                    &victim,
                    &json!({ "name": "cheap", "criteria": [
                        { "id": "done", "pointer": "/done", "op": "equals", "value": true }
                    ] }),
                )
                .await?;
            let quick = scheduled(&format!("conformance:arm?intervalMs={VICTIM_INTERVAL_MS}"));
            for _ in 0..VICTIM_GOALS {
                engine.create(&victim, &quick).await?;
            }
            let goal: GoalId = engine.create(&victim, &manual("cheap")).await?.id;
            let scheduler = Arc::new(Scheduler::new(Arc::clone(&engine)));
            let (halt, halted) = watch::channel(false);
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            let task = tokio::spawn(scheduler.run(clock, DEFAULT_TICK, Duration::ZERO, halted));
            let mut judged = Samples::default();
            let body = json!({ "output": { "done": false } });
            let started = Instant::now();
            while started.elapsed() < PHASE {
                let report = parse_run_report(&body).context("a report")?;
                let asked = Instant::now();
                engine.report_run(&victim, &goal, report, &body).await?;
                judged.push(asked.elapsed());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            stop.store(true, Ordering::Relaxed);
            let _ = halt.send(true);
            task.await.context("the scheduler task failed")?;
            for load in loads {
                load.abort();
            }
            anyhow::Ok(judged)
        })?;
        runtime.shutdown_timeout(Duration::from_secs(1));
        let lag = super::lag_of(&db, "victim", VICTIM_INTERVAL_MS)?;
        Ok((judged, lag))
    }

    fn median(mut values: Vec<Duration>) -> Duration {
        values.sort();
        values[values.len() / 2]
    }

    pub fn measure() -> Result<Vec<Row>> {
        let (mut judge_alone, mut judge_beside) = (Vec::new(), Vec::new());
        let (mut lag_alone, mut lag_beside) = (Vec::new(), Vec::new());
        for round in 1..=ROUNDS {
            eprintln!("fairness {round}/{ROUNDS}: the victim alone");
            let (mut judged, mut lag) = phase(false)?;
            judge_alone.push(judged.percentile(50.0).context("no judgement alone")?);
            lag_alone.push(lag.percentile(99.0).context("no fire alone")?);
            eprintln!("fairness {round}/{ROUNDS}: the victim beside two attackers at their caps");
            let (mut judged, mut lag) = phase(true)?;
            // Nothing judged or fired at all is starvation: an hour stands for it.
            judge_beside.push(judged.percentile(50.0).unwrap_or(Duration::from_secs(3600)));
            lag_beside.push(lag.percentile(99.0).unwrap_or(Duration::from_secs(3600)));
        }
        let ratio = |beside: Duration, alone: Duration| {
            beside.as_secs_f64() / alone.as_secs_f64().max(0.000_1)
        };
        let (judge_alone, judge_beside) = (median(judge_alone), median(judge_beside));
        let (lag_alone, lag_beside) = (median(lag_alone), median(lag_beside));
        let judge_ratio = ratio(judge_beside, judge_alone);
        // Fire lags are whole milliseconds: a 1 ms floor keeps a 0 ms
        // baseline from making any lag an infinite ratio.
        let lag_ratio = lag_beside.as_secs_f64().max(0.001) / lag_alone.as_secs_f64().max(0.001);
        Ok(vec![
            Row::target(
                format!(
                    "fairness: a victim's judge latency p50 (a reported run judged by one criterion and recorded) \
                     beside two attackers at their caps ({HANGING_GOALS} hanging goals and {EXPENSIVE_LOOPS} whole-budget judgements in flight each; median of {ROUNDS})"
                ),
                duration(judge_beside),
                format!("ratio ≤ {TARGET_RATIO}"),
                judge_ratio <= TARGET_RATIO,
            )
            .with_baseline(format!("alone: {}", duration(judge_alone)), judge_ratio),
            Row::target(
                format!(
                    "fairness: the same victim's fire lag p99 ({VICTIM_GOALS} goals every {VICTIM_INTERVAL_MS} ms) beside the same attackers"
                ),
                duration(lag_beside),
                format!("ratio ≤ {TARGET_RATIO}"),
                lag_ratio <= TARGET_RATIO,
            )
            .with_baseline(format!("alone: {}", duration(lag_alone)), lag_ratio),
        ])
    }
}
