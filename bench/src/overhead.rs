//! Measurement 2, the suite's overhead per request: the suite's driver
//! (templating, HTTP with its caps and deadlines, schema validation,
//! assertions, captures, the ledger) running a scenario of one create and
//! [`READS`] schema-checked reads against the bundled host, against a bare
//! reqwest loop sending the same requests, in turns, on the same runtime.
//!
//! The reads are the host's cheapest answer, so the suite's share of each
//! exchange is as large as it gets: real scenarios spend more of their time
//! in the host.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use goalpost::http::{Http, DEFAULT_BODY_CAP};
use goalpost::model::Scenario;
use goalpost::run::discovery;
use goalpost::run::driver::{Driver, HostTarget};
use goalpost::run::ledger::Ledger;
use goalpost::run::outcome::Outcome;
use goalpost_host::{Config, RunningHost};
use goalpost_schemas::Schemas;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::table::{thousands, Row};

/// Reads after the create in each scenario run.
const READS: usize = 9;
/// Scenario runs at once, as the harness runs trials.
const WORKERS: usize = goalpost::config::DEFAULT_TEST_THREADS;
const TOKEN: &str = "bench-overhead";
const GOALS: &str = "/v1/host/sample/goals";
/// Each side runs this long per turn, [`TURNS`] turns each.
const TURN: Duration = Duration::from_millis(1500);
const TURNS: usize = 4;
const TARGET: f64 = 0.7;

fn create_body(objective: &str) -> Value {
    json!({
        "objective": objective,
        "completion": {"check": "verifier"},
        "continuation": {"mode": "manual"},
        "bounds": {"maxLoopIterations": 3}
    })
}

fn scenario_file() -> Value {
    let mut steps = vec![json!({
        "name": "create a goal",
        "request": {"method": "POST", "path": "{base}", "body": create_body("goalpost {nonce} overhead")},
        "expect": {
            "status": 201,
            "schema": "goal",
            "assert": [
                {"pointer": "/state", "equals": "active"},
                {"header": "Location", "exists": true}
            ]
        },
        "capture": {"goalId": {"pointer": "/id"}, "etag": {"header": "ETag"}}
    })];
    for read in 1..=READS {
        steps.push(json!({
            "name": format!("read {read}"),
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {
                "status": 200,
                "schema": "goal",
                "assert": [
                    {"pointer": "/id", "equals": "{goalId}"},
                    {"pointer": "/state", "equals": "active"},
                    {"pointer": "/progress/iterations", "equals": 0},
                    {"header": "ETag", "equals": "{etag}"}
                ]
            }
        }));
    }
    json!({
        "title": "bench: one create, then schema-checked reads",
        "profile": "core",
        "requirements": ["core.bench.overhead"],
        "checks": 4 + 6 * READS,
        "steps": steps
    })
}

fn load_scenario(dir: &Path, schemas: &Schemas) -> Result<Scenario> {
    let folder = dir.join("core");
    std::fs::create_dir_all(&folder)?;
    let path = folder.join("overhead.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&scenario_file())?)?;
    goalpost::run::loader::load_scenario(&path, "core", schemas)
        .map_err(|error| anyhow::anyhow!("the bench scenario does not load: {error}"))
}

/// Requests per second over one turn of `WORKERS` loops of `one`.
async fn turn<F, Fut>(one: F) -> Result<f64>
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let started = Instant::now();
    let close = started + TURN;
    let mut tasks = Vec::new();
    for worker in 0..WORKERS {
        let one = one.clone();
        tasks.push(tokio::spawn(async move {
            let mut runs = 0u64;
            let mut n = worker as u64 * 1_000_000;
            while Instant::now() < close {
                one(n).await?;
                runs += 1;
                n += 1;
            }
            Ok::<_, anyhow::Error>((runs, Instant::now()))
        }));
    }
    let mut runs = 0;
    let mut last = started;
    for task in tasks {
        let (done, at) = task.await??;
        runs += done;
        last = last.max(at);
    }
    let requests = runs * (1 + READS as u64);
    Ok(requests as f64 / (last - started).as_secs_f64())
}

/// The same requests, with nothing but reqwest: the create's id is the one
/// thing read from an answer.
async fn bare(client: reqwest::Client, base: Arc<str>, n: u64) -> Result<()> {
    let response = client
        .post(format!("{base}{GOALS}"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&create_body(&format!(
            "goalpost {n:016x} overhead"
        )))?)
        .send()
        .await?;
    if response.status().as_u16() != 201 {
        bail!("create answered {}", response.status());
    }
    let body = response.bytes().await?;
    let answer: Value = serde_json::from_slice(&body)?;
    let id = answer.get("id").and_then(Value::as_str).context("no id")?;
    let url = format!("{base}{GOALS}/{id}");
    for _ in 0..READS {
        let response = client.get(&url).bearer_auth(TOKEN).send().await?;
        if response.status().as_u16() != 200 {
            bail!("read answered {}", response.status());
        }
        response.bytes().await?;
    }
    Ok(())
}

async fn suite(
    driver: Arc<Driver>,
    scenario: Arc<Scenario>,
    ledger: Arc<Mutex<Ledger>>,
    n: u64,
) -> Result<()> {
    let started = Instant::now();
    let mut result = driver.run(&scenario, &format!("{n:016x}")).await;
    if result.outcome != Outcome::Pass {
        bail!("the bench scenario did not pass: {:?}", result.outcome);
    }
    // What the runner records for every trial.
    result.duration = started.elapsed();
    ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .record(result);
    Ok(())
}

pub fn measure() -> Result<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let schemas = Arc::new(Schemas::embedded()?);
    let scenario = Arc::new(load_scenario(dir.path(), &schemas)?);
    // The suite's own runtime settings (`runner::run`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut config =
            Config::conformance_in_memory(vec![(TOKEN.to_string(), "tenant-a".to_string())]);
        // One tenant creates a goal per scenario run, tens of thousands in
        // all: the default quota of open goals would stop the measurement.
        config.quotas.goals_per_tenant = u64::MAX;
        let host = RunningHost::start(config).await?;
        let base: Arc<str> = Arc::from(host.base_url());
        let http = Http::new(1.0, DEFAULT_BODY_CAP).map_err(anyhow::Error::msg)?;
        let found = discovery::fetch(&http, &base).await?;
        let target = Arc::new(HostTarget {
            base_url: base.to_string(),
            capabilities: found.capabilities,
            token_a: Some(TOKEN.to_string()),
            token_b: None,
            authority: Default::default(),
        });
        let driver = Arc::new(Driver::new(http, target, Arc::clone(&schemas), 1.0));
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let client = goalpost::http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()?;

        let (mut bare_rate, mut suite_rate) = (Vec::new(), Vec::new());
        for _ in 0..TURNS {
            let (client, base) = (client.clone(), Arc::clone(&base));
            bare_rate.push(turn(move |n| bare(client.clone(), Arc::clone(&base), n)).await?);
            let (driver, scenario, ledger) = (driver.clone(), scenario.clone(), ledger.clone());
            suite_rate.push(
                turn(move |n| suite(driver.clone(), scenario.clone(), ledger.clone(), n)).await?,
            );
        }
        host.shutdown().await;
        let mean = |rates: &[f64]| rates.iter().sum::<f64>() / rates.len().max(1) as f64;
        let (bare, suite) = (mean(&bare_rate), mean(&suite_rate));
        let ratio = suite / bare;
        Ok(vec![Row::target(
            format!("suite driver req/s (1 create + {READS} schema-checked reads per scenario, {WORKERS} at a time)"),
            format!("{} req/s", thousands(suite)),
            format!("≥ {TARGET} × baseline"),
            ratio >= TARGET,
        )
        .with_baseline(format!("bare reqwest {} req/s", thousands(bare)), ratio)])
    })
}
