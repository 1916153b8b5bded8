//! The waits written into the scenario files: how long a run must take
//! however fast the host and the suite are. Computed from the files alone,
//! so the ratio "wall time / unavoidable wait" says how much time the
//! machinery adds.
//!
//! Per scenario (all lower bounds):
//! - **suite waits** `A`: every `quietMs`, plus every `observe.forMs` (an
//!   observe window lasts its full length by definition);
//! - **host waits** `B`: the longest wait the host's own clock imposes on
//!   one goal the scenario creates (a create expecting 201):
//!   - `schedule`: `(R − 1) × intervalMs + R × runMs`, where `R` is the run
//!     that ends the goal (the first of `maxLoopIterations`, `satisfyOn`,
//!     `escalateOn`, `⌈maxCostUsd / costUsd⌉`, from the fixture refs or the
//!     scenario's `mock` block). An `R` above 20 is not waited for (the
//!     scenario ends such a goal itself), so it counts as the first run,
//!     which fires at once;
//!   - `heartbeat`: `(P − 1) × heartbeatMs`, `P` the last probe the
//!     scenario scripts (`fireOn`, `replies[].call`);
//!   - a deadline (`runTimeoutMs` ≤ 10 s; longer ones are never reached)
//!     ends the goal at `runTimeoutMs` if that comes first;
//!   - a mock reply delayed past the host's webhook timeout makes the host
//!     sit through that timeout (shorter delays only hold a call in flight
//!     and are cut short by the scenario);
//! - the scenario's wait `W = A + B`, or `max(A, B)` when it has a quiet
//!   step (a quiet step exists to let the host's clock run: what it covers
//!   is not waited twice).
//!
//! The run's unavoidable wait with `T` trials at a time is
//! `max(max W, ΣW / T)`: no schedule of the trials can beat either.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

/// Runs of a goal beyond this are never waited for by a scenario.
const MAX_WAITED_RUNS: u64 = 20;
/// Deadlines beyond this are never reached by a scenario.
const MAX_WAITED_DEADLINE_MS: u64 = 10_000;
/// The host's interval when an arm ref names none (DESIGN "Goal life").
const DEFAULT_INTERVAL_MS: u64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioWait {
    pub name: String,
    /// Quiet steps and observe windows.
    pub suite_ms: u64,
    /// The longest wait the host's clock imposes on one goal.
    pub host_ms: u64,
    pub has_quiet: bool,
}

impl ScenarioWait {
    pub fn total_ms(&self) -> u64 {
        if self.has_quiet {
            self.suite_ms.max(self.host_ms)
        } else {
            self.suite_ms + self.host_ms
        }
    }
}

/// The run as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct RunWait {
    pub scenarios: Vec<ScenarioWait>,
    pub threads: usize,
}

impl RunWait {
    pub fn sum_ms(&self) -> u64 {
        self.scenarios.iter().map(ScenarioWait::total_ms).sum()
    }

    pub fn longest(&self) -> Option<&ScenarioWait> {
        self.scenarios.iter().max_by_key(|wait| wait.total_ms())
    }

    /// `max(max W, ΣW / T)`.
    pub fn unavoidable(&self) -> Duration {
        let longest = self.longest().map_or(0, ScenarioWait::total_ms);
        let spread = self.sum_ms() / self.threads.max(1) as u64;
        Duration::from_millis(longest.max(spread))
    }
}

/// Every scenario under `dir/<profile>/*.json`.
pub fn load(dir: &Path, webhook_timeout: Duration, threads: usize) -> Result<RunWait> {
    let mut scenarios = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let profile = folder
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default()
            .to_string();
        let mut files: Vec<_> = std::fs::read_dir(&folder)?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let stem = file
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or_default();
            scenarios.push(scenario_wait(
                &format!("{profile}::{stem}"),
                &value,
                webhook_timeout,
            ));
        }
    }
    Ok(RunWait { scenarios, threads })
}

fn u64_at(value: &Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(Value::as_u64)
}

/// `key=value` pairs after `?` or `#` in a ref.
fn ref_param(reference: &str, key: &str) -> Option<f64> {
    let start = reference.find(['?', '#'])?;
    reference[start + 1..].split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}

pub fn scenario_wait(name: &str, scenario: &Value, webhook_timeout: Duration) -> ScenarioWait {
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut suite_ms = 0;
    let mut has_quiet = false;
    let mut host_ms = 0;
    for step in steps {
        if let Some(ms) = u64_at(step, "/quietMs") {
            suite_ms += ms;
            has_quiet = true;
        }
        if let Some(ms) = u64_at(step, "/observe/forMs") {
            suite_ms += ms;
        }
        if let Some(body) = created_goal(step) {
            host_ms = host_ms.max(goal_wait(body, scenario.get("mock")));
        }
    }
    host_ms = host_ms.max(mock_delay_wait(scenario.get("mock"), webhook_timeout));
    ScenarioWait {
        name: name.to_string(),
        suite_ms,
        host_ms,
        has_quiet,
    }
}

/// The body of a step that creates a goal the scenario expects to exist.
fn created_goal(step: &Value) -> Option<&Value> {
    let request = step.get("request")?;
    let is_create = request.get("method").and_then(Value::as_str) == Some("POST")
        && request.get("path").and_then(Value::as_str) == Some("{base}");
    let expects_201 = match step.pointer("/expect/status") {
        Some(Value::Number(n)) => n.as_u64() == Some(201),
        Some(Value::Array(list)) => list.iter().any(|s| s.as_u64() == Some(201)),
        _ => false,
    };
    (is_create && expects_201)
        .then(|| request.get("body"))
        .flatten()
}

/// A number from the fixture ref, or from the mock block when the ref is
/// the suite's mock.
fn script_number(
    reference: &str,
    mock: Option<&Value>,
    mock_pointer: &str,
    key: &str,
) -> Option<f64> {
    if reference.starts_with("conformance:") {
        ref_param(reference, key)
    } else if reference.starts_with("{mock.") {
        mock.and_then(|mock| mock.pointer(mock_pointer))
            .and_then(Value::as_f64)
    } else {
        None
    }
}

fn goal_wait(body: &Value, mock: Option<&Value>) -> u64 {
    let arm = body
        .pointer("/continuation/armRef")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let verifier = body
        .pointer("/completion/verifierRef")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mode = body
        .pointer("/continuation/mode")
        .and_then(Value::as_str)
        .unwrap_or("manual");
    let deadline = u64_at(body, "/bounds/runTimeoutMs").filter(|&ms| ms <= MAX_WAITED_DEADLINE_MS);
    let own = match mode {
        "schedule" => {
            let interval = ref_param(arm, "intervalMs").map_or(DEFAULT_INTERVAL_MS, |ms| ms as u64);
            let run_ms = ref_param(arm, "runMs").map_or(0, |ms| ms as u64);
            let mut ends = Vec::new();
            ends.extend(u64_at(body, "/bounds/maxLoopIterations"));
            ends.extend(
                script_number(verifier, mock, "/verifier/satisfyOn", "satisfyOn").map(|k| k as u64),
            );
            ends.extend(
                script_number(arm, mock, "/arm/escalateOn", "escalateOn").map(|k| k as u64),
            );
            let cost = script_number(arm, mock, "/arm/costUsd", "costUsd").unwrap_or(0.0);
            let cap = body.pointer("/bounds/maxCostUsd").and_then(Value::as_f64);
            if let Some(cap) = cap.filter(|_| cost > 0.0) {
                ends.push((cap / cost).ceil().max(1.0) as u64);
            }
            let runs = ends.into_iter().min().unwrap_or(u64::MAX);
            if runs > MAX_WAITED_RUNS {
                // Ended by the scenario or its deadline: only the first run,
                // which fires at once, is waited for.
                deadline.map_or(run_ms, |_| u64::MAX)
            } else {
                runs.saturating_sub(1) * interval + runs * run_ms
            }
        }
        "heartbeat" => {
            let every = ref_param(arm, "heartbeatMs").map_or(DEFAULT_INTERVAL_MS, |ms| ms as u64);
            let mut probes: Vec<u64> = Vec::new();
            if let Some(fire_on) = ref_param(arm, "fireOn") {
                probes.push(fire_on as u64);
            }
            if let Some(heartbeat) = mock.and_then(|mock| mock.get("heartbeat")) {
                if let Some(list) = heartbeat.get("fireOn").and_then(Value::as_array) {
                    probes.extend(list.iter().filter_map(Value::as_u64));
                }
                if let Some(list) = heartbeat.get("replies").and_then(Value::as_array) {
                    probes.extend(list.iter().filter_map(|reply| u64_at(reply, "/call")));
                }
            }
            probes.into_iter().max().unwrap_or(1).saturating_sub(1) * every
        }
        _ => u64::MAX,
    };
    match (own, deadline) {
        (u64::MAX, Some(deadline)) => deadline,
        (u64::MAX, None) => 0,
        (own, Some(deadline)) => own.min(deadline),
        (own, None) => own,
    }
}

/// The host's timeout, when a mock reply is delayed past it.
fn mock_delay_wait(mock: Option<&Value>, webhook_timeout: Duration) -> u64 {
    let timeout_ms = u64::try_from(webhook_timeout.as_millis()).unwrap_or(u64::MAX);
    let Some(mock) = mock.and_then(Value::as_object) else {
        return 0;
    };
    mock.values()
        .filter_map(|endpoint| endpoint.get("replies").and_then(Value::as_array))
        .flatten()
        .filter_map(|reply| u64_at(reply, "/delayMs"))
        .filter(|&delay| delay >= timeout_ms)
        .map(|_| timeout_ms)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TIMEOUT: Duration = Duration::from_secs(5);

    fn create(continuation: Value, bounds: Value, verifier: &str) -> Value {
        json!({
            "request": {"method": "POST", "path": "{base}", "body": {
                "objective": "x", "completion": {"check": "verifier", "verifierRef": verifier},
                "continuation": continuation, "bounds": bounds}},
            "expect": {"status": [201, 200]}
        })
    }

    fn wait(scenario: Value) -> ScenarioWait {
        scenario_wait("p::s", &scenario, TIMEOUT)
    }

    #[test]
    fn quiet_and_observe_windows_add_up() {
        let w = wait(json!({"steps": [
            {"name": "q", "quietMs": 2000, "why": "deadline"},
            {"request": {"method": "GET", "path": "{base}"}, "observe": {"forMs": 300, "intervalMs": 50}}
        ]}));
        assert_eq!((w.suite_ms, w.host_ms, w.has_quiet), (2300, 0, true));
        assert_eq!(w.total_ms(), 2300);
    }

    #[test]
    fn a_schedule_goal_waits_for_the_run_that_ends_it() {
        // Bound 4 at 50 ms: three intervals, then a 300 ms observe window.
        let w = wait(json!({"steps": [
            create(json!({"mode": "schedule", "armRef": "conformance:arm?intervalMs=50"}),
                   json!({"maxLoopIterations": 4}), "conformance:verifier"),
            {"request": {"method": "GET", "path": "{base}/x"}, "observe": {"forMs": 300, "intervalMs": 50}}
        ]}));
        assert_eq!((w.suite_ms, w.host_ms), (300, 150));
        assert_eq!(w.total_ms(), 450);
        // Cost 0.4 under a 1.0 cap: the third run ends it.
        let w = wait(json!({"steps": [create(
            json!({"mode": "schedule", "armRef": "conformance:arm?costUsd=0.4&intervalMs=50"}),
            json!({"maxLoopIterations": 10, "maxCostUsd": 1.0}), "conformance:verifier")]}));
        assert_eq!(w.host_ms, 100);
        // The mock's script ends it: satisfied on run 2 at 20 ms.
        let w = wait(
            json!({"mock": {"verifier": {"satisfyOn": 2}}, "steps": [create(
            json!({"mode": "schedule", "armRef": "{mock.arm}#intervalMs=20"}),
            json!({"maxLoopIterations": 6}), "{mock.verifier}")]}),
        );
        assert_eq!(w.host_ms, 20);
    }

    #[test]
    fn goals_the_scenario_ends_itself_wait_for_nothing_but_their_deadline() {
        let endless = create(
            json!({"mode": "schedule", "armRef": "conformance:arm?intervalMs=50"}),
            json!({"maxLoopIterations": 1000}),
            "conformance:verifier",
        );
        assert_eq!(wait(json!({"steps": [endless]})).host_ms, 0);
        let deadline = create(
            json!({"mode": "schedule", "armRef": "{mock.arm}#intervalMs=20"}),
            json!({"maxLoopIterations": 1000, "runTimeoutMs": 600}),
            "{mock.verifier}",
        );
        assert_eq!(wait(json!({"steps": [deadline]})).host_ms, 600);
        let far = create(
            json!({"mode": "manual"}),
            json!({"maxLoopIterations": 3, "runTimeoutMs": 600000}),
            "conformance:verifier",
        );
        assert_eq!(wait(json!({"steps": [far]})).host_ms, 0);
    }

    #[test]
    fn a_quiet_step_covers_the_host_waits() {
        let w = wait(json!({"steps": [
            create(json!({"mode": "manual"}), json!({"runTimeoutMs": 800}), "conformance:verifier"),
            {"name": "q", "quietMs": 2000, "why": "deadline"}
        ]}));
        assert_eq!((w.suite_ms, w.host_ms), (2000, 800));
        assert_eq!(w.total_ms(), 2000);
    }

    #[test]
    fn heartbeats_wait_for_the_last_scripted_probe() {
        let w = wait(
            json!({"mock": {"heartbeat": {"fireOn": [3, 6]}}, "steps": [create(
            json!({"mode": "heartbeat", "armRef": "{mock.arm}#heartbeatMs=20"}),
            json!({"maxLoopIterations": 10}), "{mock.verifier}")]}),
        );
        assert_eq!(w.host_ms, 100);
    }

    #[test]
    fn only_delays_past_the_host_timeout_are_waited_for() {
        let slow = json!({"mock": {"verifier": {"replies": [{"delayMs": 6000}]}}, "steps": []});
        assert_eq!(wait(slow).host_ms, 5000);
        let held = json!({"mock": {"verifier": {"replies": [{"delayMs": 1000}]}}, "steps": []});
        assert_eq!(wait(held).host_ms, 0);
    }

    #[test]
    fn refused_creates_wait_for_nothing() {
        let mut refused = create(
            json!({"mode": "manual"}),
            json!({"runTimeoutMs": 800}),
            "conformance:verifier",
        );
        refused["expect"]["status"] = json!(422);
        assert_eq!(wait(json!({"steps": [refused]})).host_ms, 0);
    }

    #[test]
    fn the_run_is_bounded_by_its_longest_scenario_or_its_spread() {
        let run = RunWait {
            scenarios: vec![
                ScenarioWait {
                    name: "a".into(),
                    suite_ms: 5000,
                    host_ms: 0,
                    has_quiet: false,
                },
                ScenarioWait {
                    name: "b".into(),
                    suite_ms: 1000,
                    host_ms: 0,
                    has_quiet: false,
                },
            ],
            threads: 8,
        };
        assert_eq!(run.unavoidable(), Duration::from_millis(5000));
        assert_eq!(run.sum_ms(), 6000);
        let spread = RunWait { threads: 1, ..run };
        assert_eq!(spread.unavoidable(), Duration::from_millis(6000));
    }
}
