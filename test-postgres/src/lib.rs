//! The PostgreSQL the tests share: the server in `GOALPOST_TEST_POSTGRES`
//! (`scripts/start-postgres.sh` prints it) and a fresh schema per test or
//! run, so none sees another's tables. The host's PostgreSQL tests
//! (`reference-host/tests/it/pg/`) and the suite's cluster runs
//! (`suite/tests/it/common/postgres.rs`) both use it; neither crate's test
//! modules can import the other's. A dev-dependency only: nothing here
//! reaches a shipped binary.

use tokio_postgres::{Client, NoTls};

/// The server's URL, or `None` after printing that `what` did not run and
/// how to make it run: a skip is never a silent pass. Printed straight to
/// the process's stderr, since the harness swallows a passing test's
/// `eprintln!` and a skip must show in a plain `cargo test`.
pub fn server(what: &str) -> Option<String> {
    match std::env::var("GOALPOST_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: GOALPOST_TEST_POSTGRES is not set, so {what} did not run; enable it with \
                 `export GOALPOST_TEST_POSTGRES=$(scripts/start-postgres.sh)` (starts PostgreSQL 15 and prints the URL)"
            );
            None
        }
    }
}

/// A connection to `url`, its connection task spawned on the current
/// runtime.
pub async fn connect(url: &str) -> Result<Client, String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|error| format!("cannot reach GOALPOST_TEST_POSTGRES: {error}"))?;
    tokio::spawn(connection);
    Ok(client)
}

/// Runs `sql` (one or more statements) on a connection of its own, closed
/// before this returns: no idle connection outlives it on the server.
pub async fn execute(url: &str, sql: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|error| format!("cannot reach GOALPOST_TEST_POSTGRES: {error}"))?;
    let connection = tokio::spawn(connection);
    let result = client
        .batch_execute(sql)
        .await
        .map_err(|error| format!("{sql}: {error}"));
    // The connection ends once its client is gone.
    drop(client);
    let _ = connection.await;
    result
}

/// A schema made for one test or run; [`Schema::drop`] drops it.
pub struct Schema {
    /// The server's URL with this schema first on the search path: every
    /// store opened with it (every replica) shares these tables.
    pub url: String,
    name: String,
    server: String,
}

impl Schema {
    /// A new schema on `server`, named `{label}_{random}` (`-` read as
    /// `_`).
    pub async fn fresh(server: &str, label: &str) -> Result<Schema, String> {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{}_{}", label.replace('-', "_"), &random[..12]);
        execute(server, &format!("CREATE SCHEMA {name}")).await?;
        let separator = if server.contains('?') { '&' } else { '?' };
        Ok(Schema {
            url: format!("{server}{separator}options=-c%20search_path%3D{name}"),
            name,
            server: server.to_string(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Drops the schema and every table in it.
    pub async fn drop(self) -> Result<(), String> {
        execute(&self.server, &format!("DROP SCHEMA {} CASCADE", self.name)).await
    }
}
