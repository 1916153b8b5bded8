//! The driver's side of the mock: opening a scenario's namespace, running
//! `mockLog` steps (the "response" is the JSON view of the call log, so the
//! ordinary predicates, `poll`, `observe` and `capture` apply), and the
//! `clock` captures both kinds of step use.

use std::sync::Arc;

use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use super::step::{Absent, Captured, Repeater, Subject};
use super::{describe, Driver, Miss, Missed, Place, Tally};
use crate::assertion::{self, Verdict};
use crate::error::{RunError, StepError};
use crate::http::excerpt;
use crate::mock::{MockServer, MockSession, Window};
use crate::model::{Capture, ClockFormat, MockStep, MockWindow, Scenario};
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
        let mut repeater = Repeater::new(step.repeat, Subject::MockLog, self.poll_scale);
        let (view, tally) = loop {
            let view = session.view(&window);
            let context = repeater.look();
            let tally = self.check_view(place, step, session, &view, vars, context)?;
            if let Some(tally) = repeater.settle(tally).await {
                break (view, tally);
            }
        };
        let log = Log {
            session,
            view: &view,
        };
        self.capture(place, &step.capture, &log, vars, tally)
    }

    /// The value of a `clock` capture taken now.
    pub(super) fn clock_value(&self, started: Instant, format: ClockFormat) -> Value {
        self.later_value(started, format, 0)
    }

    /// The value of a `later` capture taken now: `ms` from now.
    pub(super) fn later_value(&self, started: Instant, format: ClockFormat, ms: u64) -> Value {
        match format {
            ClockFormat::Ms => Value::from(crate::mock::round_us(
                crate::mock::elapsed_ms(started) + ms as f64,
            )),
            ClockFormat::Rfc3339 => {
                let later = (self.wall)()
                    + time::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX));
                Value::from(crate::timestamp::timestamp(later))
            }
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
                        note: None,
                        pointer: None,
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
        let miss = Miss {
            what: format!("mock log {}", miss.what),
            ..miss
        };
        Missed::new(place, miss, message, context, proves, None)
    }
}

/// The mock log as a `mockLog` step's captures read it.
struct Log<'a> {
    session: &'a MockSession,
    view: &'a Value,
}

impl Captured for Log<'_> {
    fn pointer(&self, pointer: &str) -> Result<Option<Value>, StepError> {
        Ok(self.view.pointer(pointer).cloned())
    }

    fn header(&self, _: &str) -> Result<Option<Value>, &'static str> {
        Err("the mock log has no headers")
    }

    fn absent(&self, absent: Absent<'_>) -> Result<Missed, StepError> {
        let expected = match absent.source {
            Capture::Pointer(pointer) => format!("a value at {pointer}"),
            Capture::Header(_) | Capture::Clock(_) | Capture::Later(..) => "a value".to_string(),
        };
        Ok(absent.driver.mock_failure(
            absent.place,
            self.session,
            self.view,
            Miss {
                expected,
                ..absent.miss
            },
            None,
            absent.place.scenario.step_proves(absent.place.step),
        ))
    }
}
