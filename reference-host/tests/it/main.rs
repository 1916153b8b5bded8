//! The reference host's integration tests: the service through its router,
//! its binary, its stores (SQLite, and PostgreSQL when
//! `GOALPOST_TEST_POSTGRES` is set) and its webhooks.
//!
//! Every integration test of this crate is a module of this one binary
//! (`cargo test -p goalpost-host --test it`): each separate test binary would link
//! the whole dependency tree again, which cost CI minutes and target/
//! gigabytes. Tests still run in parallel, so a module must not change
//! process-wide state (environment variables, the current directory, a
//! global tracing subscriber) or bind a fixed port; give a child process its
//! environment through `Command::env` instead.
//!
//! To add tests: write `tests/it/NAME.rs` (its `//!` doc says what it
//! proves), declare it below with `mod NAME;`, and reach the shared helpers
//! with `use crate::support;`. `NAME::` is then the filter that runs just
//! those tests (`cargo test -p goalpost-host --test it -- NAME::`).
//! `layout::every_test_file_is_a_module` fails on a file that is not declared
//! here, or on a new `tests/*.rs` (which cargo would build as one more
//! binary).

// Shared helpers.
mod pg;
mod support;

// The tests, one module per concern.
mod attention;
mod choices;
mod cli_goals;
mod cli_help;
mod commitment;
mod connection_limits;
mod crash_safety;
mod criteria_verifiers;
mod escalation_feedback;
mod event_stream;
mod event_webhooks;
mod heartbeat;
mod hostile_input;
mod hostile_logs;
mod hostile_network;
mod hostile_work;
mod http_behavior;
mod http_core;
mod idempotency;
mod limits;
mod list_paging;
mod logging;
mod model;
mod openapi;
mod postgres_cluster;
mod postgres_faults;
mod postgres_store;
mod postgres_tenant_limits;
mod preconditions;
mod quota_races;
mod races;
mod readme_attention;
mod readme_example;
mod reported_runs;
mod restart;
mod retention;
mod running_host;
mod scale;
mod scheduler_wake;
mod tenancy;
mod tenant_bytes;
mod tenant_fairness;
mod webhook_tls;
mod webhooks;

mod layout {
    use std::path::Path;

    /// Files cargo would build as binaries of their own; each says why.
    const OWN_BINARIES: &[&str] = &[];

    #[test]
    fn every_test_file_is_a_module() {
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let main = std::fs::read_to_string(tests.join("it/main.rs")).expect("main.rs");
        let declared = |name: &str| main.lines().any(|line| line == format!("mod {name};"));
        let mut missing = Vec::new();
        for entry in std::fs::read_dir(tests.join("it")).expect("tests/it") {
            let path = entry.expect("an entry").path();
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
            if module && name != "main" && !declared(name) {
                missing.push(format!(
                    "tests/it/{name} (add `mod {name};` to tests/it/main.rs)"
                ));
            }
        }
        for entry in std::fs::read_dir(&tests).expect("tests") {
            let path = entry.expect("an entry").path();
            let name = path
                .file_name()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            if name.ends_with(".rs") && !OWN_BINARIES.contains(&name) {
                missing.push(format!("tests/{name} (move it to tests/it/ as a module)"));
            }
        }
        assert!(
            missing.is_empty(),
            "test files outside the one test binary: {missing:?}"
        );
    }
}
