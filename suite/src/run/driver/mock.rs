//! The driver's side of the mock: opening a scenario's namespace, running
//! `mockLog` steps (the "response" is the JSON view of the call log, so the
//! ordinary predicates, `poll`, `observe` and `capture` apply), and the
//! `clock` captures both kinds of step use.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use super::{Driver, Missed, Place, Tally};
use crate::assertion::{self, Verdict};
use crate::error::{RunError, StepError};
use crate::http::excerpt;
use crate::mock::{MockServer, MockSession, Window};
use crate::model::{Assertion, Capture, ClockFormat, MockStep, MockWindow, Repeat, Scenario};
use crate::run::outcome::Check;
use crate::template::Vars;

/// The seam whose advertisement promises calls to the mock.
const WEBHOOKS: &str = "webhooks";

impl Driver {
    /// Serves `mock` blocks from this server.
    pub fn with_mock(mut self, mock: Arc<MockServer>) -> Driver {
        self.mock = Some(mock);
        self
    }

    /// Stamps `clock: "rfc3339"` captures with this clock instead of the
    /// system's.
    pub fn with_wall_clock(mut self, wall: fn() -> OffsetDateTime) -> Driver {
        self.wall = wall;
        self
    }

    /// Opens the scenario's namespace when it has a `mock` block, and sets
    /// `{mock.base}`, `{mock.verifier}`, `{mock.arm}`.
    pub(super) fn open_mock(
        &self,
        scenario: &Scenario,
        nonce: &str,
        started: Instant,
        vars: &mut Vars,
    ) -> Result<Option<MockSession>, RunError> {
        let Some(script) = &scenario.mock else {
            return Ok(None);
        };
        let Some(server) = &self.mock else {
            return Err(RunError::Scenario(
                "the scenario has a `mock` block but the run started no mock server".to_string(),
            ));
        };
        let script = script
            .render(vars)
            .map_err(|error| RunError::Scenario(format!("mock: {error}")))?;
        let session = server
            .open(nonce, script, started)
            .map_err(|error| RunError::Scenario(error.to_string()))?;
        for (name, url) in session.variables() {
            vars.set(name, Value::from(url));
        }
        Ok(Some(session))
    }

    fn render_window(&self, window: &MockWindow, vars: &Vars) -> Result<Window, RunError> {
        let scenario_error = |message: String| RunError::Scenario(format!("mockLog: {message}"));
        let goal_id = window
            .goal_id
            .as_ref()
            .map(|goal| vars.render_str(goal))
            .transpose()
            .map_err(|e| scenario_error(e.to_string()))?;
        let since_ms = match &window.since_ms {
            None => None,
            Some(since) => {
                let rendered = vars
                    .render_value(since)
                    .map_err(|e| scenario_error(e.to_string()))?;
                Some(rendered.as_f64().filter(|ms| *ms >= 0.0).ok_or_else(|| {
                    scenario_error(format!(
                        "sinceMs must be milliseconds since the scenario started, got {rendered}"
                    ))
                })?)
            }
        };
        Ok(Window {
            goal_id,
            since_ms,
            grace_ms: window.grace_ms as f64,
        })
    }

    pub(super) async fn run_mock_step(
        &self,
        place: &Place<'_>,
        step: &MockStep,
        vars: &mut Vars,
        session: Option<&MockSession>,
    ) -> Result<Tally, StepError> {
        let Some(session) = session else {
            return Err(RunError::Scenario(
                "a mockLog step ran without the scenario's mock session".to_string(),
            )
            .into());
        };
        let window = self.render_window(&step.window, vars)?;
        let (view, mut tally) = match step.repeat {
            Repeat::Once => {
                let view = session.view(&window);
                let tally = self.check_view(place, step, session, &view, vars, None)?;
                (view, tally)
            }
            Repeat::Poll {
                timeout_ms,
                interval_ms,
            } => {
                let timeout = Duration::from_millis(timeout_ms).mul_f64(self.poll_scale);
                let interval = Duration::from_millis(interval_ms);
                let started = Instant::now();
                let deadline = started + timeout;
                let mut attempt = 0u32;
                loop {
                    attempt += 1;
                    let view = session.view(&window);
                    let now = Instant::now();
                    let last = now >= deadline;
                    let context = last.then(|| {
                        format!(
                            "still failing after polling the mock log for {} ms ({attempt} looks)",
                            (now - started).as_millis()
                        )
                    });
                    let tally = self.check_view(place, step, session, &view, vars, context)?;
                    if !tally.blocked() || last {
                        break (view, tally);
                    }
                    tokio::time::sleep(interval.min(deadline - now)).await
                }
            }
            Repeat::Observe {
                for_ms,
                interval_ms,
            } => {
                let interval = Duration::from_millis(interval_ms);
                let end = Instant::now() + Duration::from_millis(for_ms);
                let mut attempt = 0u32;
                let mut advisories: Vec<Missed> = Vec::new();
                loop {
                    attempt += 1;
                    let view = session.view(&window);
                    let context = format!(
                        "during the {for_ms} ms observation of the mock log, look {attempt}"
                    );
                    let mut tally =
                        self.check_view(place, step, session, &view, vars, Some(context))?;
                    tally.absorb(std::mem::take(&mut advisories));
                    let now = Instant::now();
                    if tally.blocked() || now >= end {
                        break (view, tally);
                    }
                    advisories = tally.missed;
                    tokio::time::sleep(interval.min(end - now)).await;
                }
            }
        };
        if tally.blocked() {
            // Captures feed later steps, which will not run.
            return Ok(tally);
        }
        for (name, source) in &step.capture {
            let value = match source {
                Capture::Pointer(pointer) => view.pointer(pointer).cloned(),
                Capture::Clock(format) => Some(self.clock_value(place.started, *format)),
                Capture::Header(_) => {
                    return Err(RunError::Scenario(format!(
                        "capture `{name}`: the mock log has no headers"
                    ))
                    .into())
                }
            };
            let Some(value) = value else {
                let miss = Miss {
                    at: format!("{}/capture/{name}", place.step.pointer),
                    what: format!("capture `{name}`"),
                    expected: match source {
                        Capture::Pointer(pointer) => format!("a value at {pointer}"),
                        _ => "a value".to_string(),
                    },
                    actual: "(absent)".to_string(),
                };
                // A later step needs the value: a missing capture always
                // stops the scenario.
                let mut missed = self.mock_failure(
                    place,
                    session,
                    &view,
                    miss,
                    None,
                    place.scenario.step_proves(place.step),
                );
                missed.blocking = true;
                tally.missed.push(missed);
                return Ok(tally);
            };
            vars.set(name, value);
        }
        Ok(tally)
    }

    /// The value of a `clock` capture taken now.
    pub(super) fn clock_value(&self, started: Instant, format: ClockFormat) -> Value {
        match format {
            ClockFormat::Ms => Value::from(crate::mock::elapsed_ms(started)),
            ClockFormat::Rfc3339 => Value::from(crate::timestamp::timestamp((self.wall)())),
        }
    }

    fn check_view(
        &self,
        place: &Place<'_>,
        step: &MockStep,
        session: &MockSession,
        view: &Value,
        vars: &Vars,
        context: Option<String>,
    ) -> Result<Tally, StepError> {
        let mut tally = Tally::new(step.expect.checks());
        for assertion in &step.expect.assertions {
            match assertion::evaluate_json(assertion, view, vars) {
                Ok(()) => {}
                Err(Verdict::Error(error)) => return Err(StepError::Error(error)),
                Err(Verdict::Mismatch(mismatch)) => {
                    let miss = Miss {
                        at: assertion.pointer.clone(),
                        what: describe(assertion),
                        expected: mismatch.expected,
                        actual: mismatch.actual,
                    };
                    let proves = place.scenario.assertion_proves(place.step, assertion);
                    tally.missed.push(self.mock_failure(
                        place,
                        session,
                        view,
                        miss,
                        context.clone(),
                        proves,
                    ));
                }
            }
        }
        Ok(tally)
    }

    fn mock_failure(
        &self,
        place: &Place<'_>,
        session: &MockSession,
        view: &Value,
        miss: Miss,
        context: Option<String>,
        proves: &[String],
    ) -> Missed {
        let mut message = format!("{}: mock log {} did not hold", place.heading(), miss.what);
        let total = session.total();
        if total == 0 && self.host.capabilities.seams.contains(WEBHOOKS) {
            message.push_str(&format!(
                "\n  host advertises conformanceSeams.goals.webhooks but never called the suite's mock: no call reached {} since the scenario started",
                session.base_url()
            ));
        }
        if let Some(context) = &context {
            message.push_str(&format!("\n  ({context})"));
        }
        let mut summary = view.clone();
        if let Some(object) = summary.as_object_mut() {
            object.remove("calls");
        }
        message.push_str(&format!(
            "\n  mock log: {total} calls in all at {}\n  at:       {}\n  expected: {}\n  actual:   {}\n  summary:  {}",
            session.base_url(),
            miss.at,
            miss.expected,
            miss.actual,
            excerpt(summary.to_string().as_bytes())
        ));
        Missed {
            proves: proves.to_vec(),
            blocking: place.scenario.blocks(proves),
            message,
            check: Check {
                at: miss.at,
                what: format!("mock log {}", miss.what),
                pointer: None,
                expected: miss.expected,
                actual: miss.actual,
                note: None,
                context,
            },
            response: None,
        }
    }
}

/// One claim about the log that did not hold.
struct Miss {
    at: String,
    what: String,
    expected: String,
    actual: String,
}

fn describe(assertion: &Assertion) -> String {
    let mut what = assertion.target.to_string();
    if !assertion.filter.is_empty() {
        let filter: Vec<String> = assertion
            .filter
            .iter()
            .map(|(pointer, value)| format!("{pointer}={value}"))
            .collect();
        what.push_str(&format!(" where {}", filter.join(", ")));
    }
    if let Some(map) = &assertion.map {
        what.push_str(&format!(" mapped through {map}"));
    }
    what
}
