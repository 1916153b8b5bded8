//! The PostgreSQL the tests share: the URL in `GOALPOST_TEST_POSTGRES`
//! (`scripts/start-postgres.sh` prints one), and a fresh schema per test so
//! tests never see one another's tables.

#![allow(dead_code)]

use tokio_postgres::NoTls;

/// What the tests print when they cannot run: never a silent pass.
pub const SKIP_REASON: &str = "SKIPPED: GOALPOST_TEST_POSTGRES is not set, so this PostgreSQL \
     test did not run; enable it with `export GOALPOST_TEST_POSTGRES=$(scripts/start-postgres.sh)` \
     (starts PostgreSQL 15 and prints the URL)";

/// The server's URL, or `None` after printing why the test is skipped.
pub fn server() -> Option<String> {
    match std::env::var("GOALPOST_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            // Straight to the process's stderr: the harness captures
            // `eprintln!` of a passing test, and a skip must show in a
            // plain `cargo test`.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{SKIP_REASON}");
            None
        }
    }
}

/// A schema made for one test, dropped by [`Schema::drop`].
pub struct Schema {
    /// The server's URL with this schema first on the search path: every
    /// store opened with it (every replica) shares these tables.
    pub url: String,
    name: String,
    server: String,
}

impl Schema {
    pub async fn fresh(server: &str) -> Schema {
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        execute(server, &format!("CREATE SCHEMA {name}")).await;
        let separator = if server.contains('?') { '&' } else { '?' };
        Schema {
            url: format!("{server}{separator}options=-c%20search_path%3D{name}"),
            name,
            server: server.to_string(),
        }
    }

    pub async fn drop(self) {
        execute(&self.server, &format!("DROP SCHEMA {} CASCADE", self.name)).await;
    }

    /// A connection of its own in this schema, for a test that holds a
    /// lock or a transaction open while the stores work.
    pub async fn client(&self) -> tokio_postgres::Client {
        connect(&self.url).await
    }

    /// The rows `sql` answers, each as text columns, read in this schema.
    pub async fn query(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        let client = connect(&self.url).await;
        let rows = client.simple_query(sql).await.expect("the query runs");
        rows.into_iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|index| row.get(index).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("GOALPOST_TEST_POSTGRES accepts connections");
    tokio::spawn(connection);
    client
}

async fn execute(url: &str, sql: &str) {
    connect(url)
        .await
        .batch_execute(sql)
        .await
        .expect("the statement runs");
}
