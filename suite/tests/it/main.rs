//! The suite's integration tests: its driver and reports against fake
//! hosts, the kill and variant matrices against the reference host's broken
//! and conforming builds, its command line and its scripts.
//!
//! Every integration test of this crate is a module of this one binary
//! (`cargo test -p goalpost --test it`): each separate test binary would link
//! the whole dependency tree again, which cost CI minutes and target/
//! gigabytes. Tests still run in parallel, so a module must not change
//! process-wide state (environment variables, the current directory, a
//! global tracing subscriber) or bind a fixed port; give a child process its
//! environment through `Command::env` instead.
//!
//! To add tests: write `tests/it/NAME.rs` (its `//!` doc says what it
//! proves), declare it below with `mod NAME;`, and reach the shared helpers
//! with `use crate::support;`. `NAME::` is then the filter that runs just
//! those tests (`cargo test -p goalpost --test it -- NAME::`).
//! `layout::every_test_file_is_a_module` fails on a file that is not declared
//! here, or on a new `tests/*.rs` (which cargo would build as one more
//! binary).

// The matrices run a hundred suites against in-process hosts, many
// threads allocating at once: the host's own allocator serves them with
// less contention than the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// Shared helpers.
mod common;
mod sample_report;
mod support;

// The tests, one module per concern.
mod attribution;
mod browser;
mod ci_example;
mod cli;
mod cluster_matrix;
mod diff;
mod doctor;
mod driver;
mod failed_step;
mod golden;
mod hostile;
mod https;
mod isolation;
mod judge_host;
mod kill_matrix;
mod lint;
mod matrix_browser;
mod observed;
mod order;
mod parallel;
mod published;
mod published_matrix;
mod reports;
mod run;
mod scope;
mod self_contained;
mod tools;
mod variant_matrix;

mod layout {
    use std::path::Path;

    /// Files cargo builds as binaries of their own. `reference_host.rs` is
    /// the suite's own runner (`harness = false`): one libtest-mimic trial
    /// per scenario, listed when the run starts, which libtest's `#[test]`
    /// cannot express, and it takes the process's harness arguments.
    const OWN_BINARIES: &[&str] = &["reference_host.rs"];

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
