//! Every flag of every (sub)command is documented, and the built binary's
//! `--help` names the environment variable of each flag that has one.

use std::collections::BTreeSet;
use std::process::Command;

use clap::CommandFactory;
use goalpost_host::cli::Cli;

/// `(subcommand path, env var)` for every argument with an env var, and
/// checks every argument has help text on the way.
fn walk(command: &clap::Command, path: &[String], found: &mut Vec<(Vec<String>, String)>) {
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        assert!(
            arg.get_help().is_some(),
            "`{}` {id} has no help text",
            path.join(" ")
        );
        if let Some(env) = arg.get_env() {
            found.push((path.to_vec(), env.to_string_lossy().into_owned()));
        }
    }
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let mut deeper = path.to_vec();
        deeper.push(sub.get_name().to_string());
        walk(sub, &deeper, found);
    }
}

fn help(path: &[String]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
        .args(path)
        .arg("--help")
        .output()
        .expect("the binary runs");
    assert!(output.status.success(), "{path:?} --help failed");
    String::from_utf8(output.stdout).expect("UTF-8 help")
}

#[test]
fn every_env_var_is_in_the_help_of_its_command() {
    let mut found = Vec::new();
    walk(&Cli::command(), &[], &mut found);
    let names: BTreeSet<&str> = found.iter().map(|(_, env)| env.as_str()).collect();
    for expected in [
        "GOALPOST_HOST_LISTEN",
        "GOALPOST_HOST_DB",
        "GOALPOST_HOST_TOKENS",
        "GOALPOST_HOST_CONFORMANCE_SEAMS",
        "GOALPOST_HOST_TICK_MS",
        "GOALPOST_HOST_LOG_FORMAT",
        "GOALPOST_HOST",
        "GOALPOST_TOKEN",
        "GOALPOST_JSON",
        "GOALPOST_REQUEST_TIMEOUT_MS",
        "GOALPOST_WATCH_INTERVAL_MS",
    ] {
        assert!(names.contains(expected), "{expected} is not configurable");
    }
    for (path, env) in &found {
        let text = help(path);
        assert!(
            text.contains(&format!("[env: {env}")),
            "`goalpost-host {} --help` does not name {env}:\n{text}",
            path.join(" ")
        );
    }
}

#[test]
fn help_never_shows_configured_secrets() {
    let output = Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
        .args(["serve", "--help"])
        .env("GOALPOST_HOST_TOKENS", "canary-secret-1=acme")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("GOALPOST_HOST_TOKENS"), "{text}");
    assert!(!text.contains("canary-secret-1"), "{text}");

    let output = Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
        .args(["goals", "list", "--help"])
        .env("GOALPOST_TOKEN", "canary-secret-2")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("GOALPOST_TOKEN"), "{text}");
    assert!(!text.contains("canary-secret-2"), "{text}");
}

#[test]
fn the_goals_help_states_the_exit_codes() {
    let text = help(&["goals".to_string()]);
    assert!(
        text.contains("Exit codes: 0 satisfied; 3 escalated or still open"),
        "{text}"
    );
}
