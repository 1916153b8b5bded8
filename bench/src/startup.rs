//! Measurement 5, memory and start-up: the host started on a file database
//! holding N goals (four in five closed, one in five active and idle), in a
//! child process: time until it listens and until it answers, then its
//! resident memory and CPU use while idle (only the scheduler's ticks run).
//! The baseline is the same on an empty database, in the same run.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use goalpost_host::{Config, DbLocation, RunningHost};
use serde_json::{json, Value};

use crate::child::spawn;
use crate::stats::{cpu_time, duration, mib, rss_bytes};
use crate::table::{thousands, Row};

const IDLE_MS: u64 = 3000;

/// In the child.
pub fn child(db: &Path, idle_ms: u64) -> Result<Value> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut config =
            Config::conformance_in_memory(vec![("bench".into(), "bench-tenant-0".into())]);
        config.db = DbLocation::File(db.to_path_buf());
        let clock = Instant::now();
        let host = RunningHost::start(config).await?;
        let listening = clock.elapsed();
        let client = goalpost::http::client_builder().no_proxy().build()?;
        let answer = client
            .get(format!("{}/.well-known/openwop", host.base_url()))
            .send()
            .await?;
        answer.error_for_status()?.bytes().await?;
        let answered = clock.elapsed();
        let cpu_before = cpu_time().unwrap_or_default();
        let idle_from = Instant::now();
        tokio::time::sleep(Duration::from_millis(idle_ms)).await;
        let cpu = cpu_time()
            .unwrap_or_default()
            .saturating_sub(cpu_before)
            .as_secs_f64()
            / idle_from.elapsed().as_secs_f64();
        let rss = rss_bytes();
        host.shutdown().await;
        Ok(json!({
            "listeningSecs": listening.as_secs_f64(),
            "answeredSecs": answered.as_secs_f64(),
            "idleCpuShare": cpu,
            "rss": rss,
        }))
    })
}

struct Start {
    answered: Duration,
    idle_cpu: f64,
    rss: u64,
}

fn start(goals: usize) -> Result<Start> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("host.db");
    let seeded = spawn(&[
        "seed-mixed".into(),
        "--db".into(),
        db.display().to_string(),
        "--goals".into(),
        goals.to_string(),
    ])?;
    eprintln!(
        "  seeded {goals} goals in {:.1} s",
        seeded["secs"].as_f64().unwrap_or(0.0)
    );
    let ran = spawn(&[
        "startup".into(),
        "--db".into(),
        db.display().to_string(),
        "--idle-ms".into(),
        IDLE_MS.to_string(),
    ])?;
    Ok(Start {
        answered: Duration::from_secs_f64(ran["answeredSecs"].as_f64().context("answeredSecs")?),
        idle_cpu: ran["idleCpuShare"].as_f64().unwrap_or(0.0),
        rss: ran["rss"].as_u64().unwrap_or(0),
    })
}

pub fn measure(full: bool) -> Result<Vec<Row>> {
    let goals = if full { 1_000_000 } else { 100_000 };
    eprintln!("startup: empty database");
    let empty = start(0)?;
    eprintln!("startup: {goals} goals");
    let loaded = start(goals)?;
    let n = thousands(goals as f64);
    Ok(vec![
        Row::info(
            format!("host with {n} stored goals (80% closed): start-up until the first answer"),
            duration(loaded.answered),
        )
        .with_baseline(
            format!("empty {}", duration(empty.answered)),
            loaded.answered.as_secs_f64() / empty.answered.as_secs_f64().max(f64::EPSILON),
        ),
        Row::info(
            format!("host with {n} stored goals: resident memory, idle"),
            format!("{:.1} MiB", mib(loaded.rss)),
        )
        .with_baseline(
            format!("empty {:.1} MiB", mib(empty.rss)),
            loaded.rss as f64 / empty.rss.max(1) as f64,
        ),
        Row::info(
            format!("host with {n} stored goals: CPU while idle (scheduler ticks)"),
            format!("{:.1}% of one core", loaded.idle_cpu * 100.0),
        )
        .with_baseline(
            format!("empty {:.1}%", empty.idle_cpu * 100.0),
            loaded.idle_cpu / empty.idle_cpu.max(0.001),
        ),
    ])
}
