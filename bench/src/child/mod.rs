//! Measurements of memory run in a child process (this binary again, with
//! the hidden `child` command), so what one measurement allocated is never
//! counted in the next. A child prints one JSON object on its last stdout
//! line. This side starts a child; `command` is what a child runs.

use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::Value;

pub mod command;

/// Runs `goalpost-bench child ARGS…` and returns what it printed.
pub fn spawn(args: &[String]) -> Result<Value> {
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let output = Command::new(exe)
        .arg("child")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot start a child")?;
    if !output.status.success() {
        bail!("child {args:?} failed: {}", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().context("the child printed nothing")?;
    serde_json::from_str(last).with_context(|| format!("the child printed {last:?}"))
}
