//! The PostgreSQL the cluster runs share: the server in
//! `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh` prints it), a
//! fresh schema per run so runs never see one another's tables, and the
//! suite against several in-process replicas of the reference host on it
//! (each replica its own store, pool, engine and scheduler: only the
//! database is shared), every request sent to the next replica in turn, as
//! `goalpost run --host A --host B --host C` does.

use goalpost::report::RunReport;
use goalpost::RunConfig;
use goalpost_host::storage::DbLocation;

/// The server's URL, or `None` after printing that `what` did not run and
/// how to make it run (straight to stderr: the harness swallows a passing
/// test's `eprintln!`, and a skip must show in a plain `cargo test`).
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

/// A schema made for one run, on the server of `GOALPOST_TEST_POSTGRES`.
pub struct Schema {
    /// The server's URL with this schema first on the search path: every
    /// store opened with it (every replica) shares these tables.
    pub url: String,
    name: String,
    server: String,
}

async fn execute(url: &str, sql: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|error| format!("cannot reach GOALPOST_TEST_POSTGRES: {error}"))?;
    let connection = tokio::spawn(connection);
    let result = client
        .batch_execute(sql)
        .await
        .map_err(|error| format!("{sql}: {error}"));
    drop(client);
    let _ = connection.await;
    result
}

impl Schema {
    /// A new schema named `{label}_{random}` (`-` read as `_`).
    pub fn fresh(
        runtime: &tokio::runtime::Runtime,
        server: &str,
        label: &str,
    ) -> Result<Schema, String> {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{}_{}", label.replace('-', "_"), &random[..12]);
        runtime.block_on(execute(server, &format!("CREATE SCHEMA {name}")))?;
        let separator = if server.contains('?') { '&' } else { '?' };
        Ok(Schema {
            url: format!("{server}{separator}options=-c%20search_path%3D{name}"),
            name,
            server: server.to_string(),
        })
    }

    /// Drops the schema and its tables; one that cannot be dropped is named.
    pub fn drop(self, runtime: &tokio::runtime::Runtime) {
        let dropped = runtime.block_on(execute(
            &self.server,
            &format!("DROP SCHEMA {} CASCADE", self.name),
        ));
        if let Err(error) = dropped {
            eprintln!("schema {} left behind: {error}", self.name);
        }
    }
}

/// The suite (`choose` applied to its configuration) against `replicas`
/// in-process replicas on a fresh schema of `server` (named after `label`,
/// dropped afterwards). Each replica is [`super::host_config`] with the
/// schema as its database, then `configure`d (a mutant, a variant).
pub fn run_on_replicas(
    server: &str,
    label: &str,
    replicas: usize,
    secret: &str,
    thread: &str,
    configure: impl Fn(goalpost_host::Config) -> goalpost_host::Config,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let schema = Schema::fresh(&runtime, server, label)?;
    let callback = super::callback_listen()?;
    let configs = (0..replicas)
        .map(|_| {
            let mut config = super::host_config(secret, callback)?;
            config.db = DbLocation::Postgres(schema.url.clone());
            Ok(configure(config))
        })
        .collect::<Result<Vec<_>, String>>();
    let report =
        configs.and_then(|configs| super::run_suite_on(configs, secret, callback, thread, choose));
    schema.drop(&runtime);
    report
}
