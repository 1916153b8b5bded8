//! The PostgreSQL store against SQLite, in one run: create and `continue`
//! (fixture arm and judge, durable record) on one host on a SQLite file
//! (the default store) and on one host on PostgreSQL (one replica, a
//! schema of its own), loaded the same way; the PostgreSQL rates as
//! ratios of SQLite's. Needs `GOALPOST_TEST_POSTGRES`
//! (`scripts/start-postgres.sh` prints it); without it the row says so.

use std::sync::Arc;

use anyhow::{Context, Result};
use goalpost_host::{Config, DbLocation, RunningHost};

use crate::load::{self, MakeRequest, Outcome};
use crate::table::Row;
use crate::throughput::{
    create_goal, describe, goal_body, runtime, spec, tenant, token, CONCURRENCY, GOALS,
};

/// Goals per connection for `continue`, each run this many times at most
/// in the window: a goal's answer grows with its history (`throughput`).
const GOALS_PER_CONNECTION: usize = 8;
const RUNS_PER_GOAL: u64 = 100;

/// Create and continue on a host over `db`.
async fn create_and_continue(
    client: &reqwest::Client,
    db: DbLocation,
) -> Result<(Outcome, Outcome)> {
    let mut config =
        Config::conformance_in_memory((0..CONCURRENCY).map(|w| (token(w), tenant(w))).collect());
    config.db = db;
    let host = RunningHost::start(config).await?;
    let base = host.base_url();
    let mut runnable = Vec::with_capacity(CONCURRENCY);
    for worker in 0..CONCURRENCY {
        let mut goals = Vec::new();
        for _ in 0..GOALS_PER_CONNECTION {
            goals.push(
                create_goal(client, &base, worker, &goal_body("bench continue", true)).await?,
            );
        }
        runnable.push(goals);
    }
    let (create_base, body) = (base.clone(), Arc::new(goal_body("bench create", false)));
    let make: MakeRequest = Arc::new(move |client, w, _| {
        client
            .post(format!("{create_base}{GOALS}"))
            .bearer_auth(token(w))
            .json(body.as_ref())
    });
    let created = load::run(client, spec(None), 201, make).await;
    let (continue_base, pools) = (base.clone(), Arc::new(runnable));
    let make: MakeRequest = Arc::new(move |client, w, n| {
        let pool = &pools[w];
        let next = usize::try_from(n / RUNS_PER_GOAL).unwrap_or(usize::MAX) % pool.len();
        client
            .post(format!("{continue_base}{GOALS}/{}/continue", pool[next]))
            .bearer_auth(token(w))
    });
    let continued = load::run(client, spec(None), 200, make).await;
    host.shutdown().await;
    Ok((created, continued))
}

/// A fresh schema on the server; the URL that selects it.
pub(crate) async fn fresh_schema(server: &str, schema: &str) -> Result<String> {
    let (client, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .context("GOALPOST_TEST_POSTGRES accepts connections")?;
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await?;
    let separator = if server.contains('?') { '&' } else { '?' };
    Ok(format!(
        "{server}{separator}options=-c%20search_path%3D{schema}"
    ))
}

pub fn measure() -> Result<Vec<Row>> {
    let Some(server) = std::env::var("GOALPOST_TEST_POSTGRES")
        .ok()
        .filter(|url| !url.trim().is_empty())
    else {
        return Ok(vec![Row::info(
            "PostgreSQL store against SQLite",
            "not measured: GOALPOST_TEST_POSTGRES is not set (export GOALPOST_TEST_POSTGRES=$(scripts/start-postgres.sh))",
        )]);
    };
    let dir = tempfile::tempdir()?;
    runtime()?.block_on(async {
        let client = load::client(CONCURRENCY)?;
        let (mut sqlite_create, mut sqlite_continue) =
            create_and_continue(&client, DbLocation::File(dir.path().join("host.db"))).await?;
        let url = fresh_schema(server.trim(), "bench").await?;
        let (mut pg_create, mut pg_continue) =
            create_and_continue(&client, DbLocation::Postgres(url)).await?;
        let ratio = |pg: &Outcome, sqlite: &Outcome| pg.rate() / sqlite.rate().max(f64::EPSILON);
        let create_ratio = ratio(&pg_create, &sqlite_create);
        let continue_ratio = ratio(&pg_continue, &sqlite_continue);
        Ok(vec![
            Row::info(
                format!("create on PostgreSQL / on SQLite, one host, {CONCURRENCY} connections"),
                format!(
                    "{create_ratio:.2} × ({} against {})",
                    describe(&mut pg_create),
                    describe(&mut sqlite_create)
                ),
            ),
            Row::info(
                format!("continue on PostgreSQL / on SQLite, one host, {CONCURRENCY} connections"),
                format!(
                    "{continue_ratio:.2} × ({} against {})",
                    describe(&mut pg_continue),
                    describe(&mut sqlite_continue)
                ),
            ),
        ])
    })
}
