//! The suite against several in-process replicas of the reference host on
//! the PostgreSQL in `GOALPOST_TEST_POSTGRES` (each replica its own store,
//! pool, engine and scheduler: only the database is shared), every request
//! sent to the next replica in turn, as `goalpost run --host A --host B
//! --host C` does. The server and the fresh schema per run come from
//! `goalpost-test-postgres`, which the host's own PostgreSQL tests use too.

use goalpost::report::RunReport;
use goalpost::RunConfig;
use goalpost_host::storage::DbLocation;
use goalpost_test_postgres::Schema;

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
    configure: impl Fn(goalpost_host::Config) -> super::Hosted,
    choose: impl FnOnce(&mut RunConfig),
) -> Result<RunReport, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let schema = runtime.block_on(Schema::fresh(server, label))?;
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
    let name = schema.name().to_string();
    if let Err(error) = runtime.block_on(schema.drop()) {
        eprintln!("schema {name} left behind: {error}");
    }
    report
}
