//! Measurement 4, scheduler scale: N `schedule` goals (fixture arm every
//! 10 s, fixture judge) on a file database, their first fires spread evenly
//! over one interval (goals created at different times), run by the
//! engine's real scheduler loop (system clock, the host's 100 ms tick) in
//! a child process for one and a half intervals.
//!
//! Fire lag is read afterwards from the host's own `runs` table: a run's
//! `started_ms` (the moment its iteration was durably reserved, just before
//! dispatch) minus when it was due (the seeded time for a first run; the
//! previous run's record time plus the interval for the next ones, which is
//! how the engine computes it). A goal that came due before the scheduler
//! started counts from the scheduler's start.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::config::DEFAULT_TICK;
use goalpost_host::scheduler::Scheduler;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::child::spawn;
use crate::stats::{cpu_time, duration, mib, peak_rss_bytes, rss_bytes, rss_file_bytes, Samples};
use crate::table::{thousands, Row};

const INTERVAL_MS: u64 = 10_000;
/// The scheduler runs this many intervals past the first due time.
const INTERVALS: f64 = 1.5;
/// Time to seed one goal, generously (for when to make the first one due).
const SEED_US_PER_GOAL: u64 = 120;
const TARGET_P99: Duration = Duration::from_millis(100);
const TARGET_RSS_MIB: f64 = 300.0;

fn now_ms() -> i64 {
    SystemClock.now().unix_ms()
}

/// In the child: the scheduler loop until `until_ms`, sampling memory.
pub fn child(db: &Path, until_ms: i64, tick_ms: Option<u64>) -> Result<Value> {
    let tick = tick_ms.map_or(DEFAULT_TICK, Duration::from_millis);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let engine = crate::seed::engine_on_file(db).await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let scheduler = Arc::new(Scheduler::new(engine));
        let (stop, stopped) = watch::channel(false);
        let cpu_before = cpu_time().unwrap_or_default();
        let started_ms = now_ms();
        let task = tokio::spawn(scheduler.run(clock, tick, Duration::from_secs(5), stopped));
        let (mut rss_max, mut rss_file) = (0, 0);
        while now_ms() < until_ms {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let rss = rss_bytes().unwrap_or(0);
            if rss > rss_max {
                rss_max = rss;
                rss_file = rss_file_bytes().unwrap_or(0);
            }
        }
        let _ = stop.send(true);
        task.await.context("the scheduler task failed")?;
        let stopped_ms = now_ms();
        let cpu = cpu_time().unwrap_or_default().saturating_sub(cpu_before);
        Ok(json!({
            "startedMs": started_ms,
            "stoppedMs": stopped_ms,
            "rssMax": rss_max,
            "rssFileAtMax": rss_file,
            "rssPeak": peak_rss_bytes(),
            "cpuSecs": cpu.as_secs_f64(),
        }))
    })
}

struct Point {
    goals: usize,
    lag: Samples,
    overdue: usize,
    fires: usize,
    rate: f64,
    required: f64,
    rss_max: u64,
    /// Of `rss_max`, mapped file pages.
    rss_file: u64,
    cpu_share: f64,
}

fn point(goals: usize, tick_ms: Option<u64>) -> Result<Point> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("scale.db");
    let dues_file = dir.path().join("dues.txt");
    let lead_ms = 2000 + (goals as u64 * SEED_US_PER_GOAL) / 1000;
    let first_due = now_ms() + i64::try_from(lead_ms)?;
    let seeded = spawn(&[
        "seed-schedule".into(),
        "--db".into(),
        db.display().to_string(),
        "--goals".into(),
        goals.to_string(),
        "--interval-ms".into(),
        INTERVAL_MS.to_string(),
        "--first-due-ms".into(),
        first_due.to_string(),
        "--dues".into(),
        dues_file.display().to_string(),
    ])?;
    eprintln!(
        "  seeded {goals} goals in {:.1} s",
        seeded["secs"].as_f64().unwrap_or(0.0)
    );
    let until = first_due + (INTERVAL_MS as f64 * INTERVALS) as i64;
    let mut args = vec![
        "scheduler".to_string(),
        "--db".into(),
        db.display().to_string(),
        "--until-ms".into(),
        until.to_string(),
    ];
    if let Some(tick) = tick_ms {
        args.extend(["--tick-ms".to_string(), tick.to_string()]);
    }
    let ran = spawn(&args)?;
    let started = ran["startedMs"].as_i64().context("startedMs")?;
    let stopped = ran["stoppedMs"].as_i64().context("stoppedMs")?;

    let dues = crate::seed::read_dues(&dues_file)?;
    let connection =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut statement = connection
        .prepare("SELECT goal_id, started_ms, ended_ms FROM runs ORDER BY goal_id, started_ms")?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, Option<i64>>(2)?,
        ))
    })?;
    let mut lag = Samples::default();
    let (mut overdue, mut fires, mut recorded_in_window) = (0, 0, 0usize);
    let mut previous: Option<(String, Option<i64>)> = None;
    let window_start = first_due.max(started);
    for row in rows {
        let (goal, started_ms, ended_ms) = row?;
        let due = match &previous {
            Some((last, ended)) if *last == goal => ended.map(|ended| ended + INTERVAL_MS as i64),
            _ => dues.get(&goal).copied(),
        };
        if let Some(due) = due {
            if due < started {
                overdue += 1;
            }
            lag.push_ms(started_ms - due.max(started));
            fires += 1;
        }
        if ended_ms.is_some_and(|ended| ended >= window_start && ended <= until) {
            recorded_in_window += 1;
        }
        previous = Some((goal, ended_ms));
    }
    let window_s = (until.min(stopped) - window_start) as f64 / 1000.0;
    let cpu = ran["cpuSecs"].as_f64().unwrap_or(0.0);
    Ok(Point {
        goals,
        lag,
        overdue,
        fires,
        rate: recorded_in_window as f64 / window_s.max(f64::EPSILON),
        required: goals as f64 / (INTERVAL_MS as f64 / 1000.0),
        rss_max: ran["rssMax"].as_u64().unwrap_or(0),
        rss_file: ran["rssFileAtMax"].as_u64().unwrap_or(0),
        cpu_share: cpu / ((stopped - started) as f64 / 1000.0).max(f64::EPSILON),
    })
}

/// The scheduler's memory with nothing to schedule: the baseline of the
/// memory curve.
fn idle_rss() -> Result<u64> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("empty.db");
    spawn(&[
        "seed-mixed".into(),
        "--db".into(),
        db.display().to_string(),
        "--goals".into(),
        "0".into(),
    ])?;
    let ran = spawn(&[
        "scheduler".into(),
        "--db".into(),
        db.display().to_string(),
        "--until-ms".into(),
        (now_ms() + 1500).to_string(),
    ])?;
    Ok(ran["rssMax"].as_u64().unwrap_or(0))
}

/// A faster tick than the host's default (`--tick-ms`), to show how much
/// of the lag is the tick itself.
const FAST_TICK_MS: u64 = 25;

pub fn measure(full: bool) -> Result<Vec<Row>> {
    let mut points: Vec<(usize, Option<u64>)> =
        vec![(1_000, None), (10_000, None), (10_000, Some(FAST_TICK_MS))];
    if full {
        points.push((100_000, None));
    }
    let idle = idle_rss()?;
    let mut rows = Vec::new();
    for (goals, tick_ms) in points {
        let tick = tick_ms.map_or(DEFAULT_TICK, Duration::from_millis);
        eprintln!("scheduler: {goals} goals, tick {}", duration(tick));
        let mut point = point(goals, tick_ms)?;
        let p50 = point.lag.percentile(50.0).unwrap_or_default();
        let p99 = point.lag.percentile(99.0).unwrap_or(Duration::MAX);
        let n = format!(
            "{} goals, tick {}",
            thousands(point.goals as f64),
            duration(tick)
        );
        rows.push(Row::target(
            format!(
                "scheduler {n}: fire lag p50 / p99 ({} fires, {} due before the scheduler started)",
                point.fires, point.overdue
            ),
            format!("{} / {}", duration(p50), duration(p99)),
            format!("p99 < {}", duration(TARGET_P99)),
            p99 < TARGET_P99,
        ));
        let ratio = point.rate / point.required.max(f64::EPSILON);
        rows.push(
            Row::target(
                format!(
                    "scheduler {n}: evaluations/s sustained (CPU {:.0}% of one core)",
                    point.cpu_share * 100.0
                ),
                format!("{} /s", thousands(point.rate)),
                "≥ 0.95 × required",
                ratio >= 0.95,
            )
            .with_baseline(format!("required {} /s", thousands(point.required)), ratio),
        );
        let rss = mib(point.rss_max);
        let row = Row {
            metric: format!("scheduler {n}: resident memory (max)"),
            value: format!(
                "{rss:.1} MiB (of which {:.1} MiB mapped database pages)",
                mib(point.rss_file)
            ),
            ..Row::info("", "")
        }
        .with_baseline(
            format!("no goals {:.1} MiB", mib(idle)),
            point.rss_max as f64 / idle.max(1) as f64,
        );
        rows.push(if goals >= 100_000 {
            Row {
                target: format!("< {TARGET_RSS_MIB:.0} MiB"),
                met: crate::table::Met::from_bool(rss < TARGET_RSS_MIB),
                ..row
            }
        } else {
            row
        });
    }
    Ok(rows)
}
