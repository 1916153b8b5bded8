//! The driver's side of the mock: opening a scenario's namespace, running
//! `mockLog` steps (the "response" is the JSON view of the call log, so the
//! ordinary predicates, `poll`, `observe` and `capture` apply), and the
//! `clock` captures both kinds of step use.

use std::sync::Arc;

use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use super::check::Seen;
use super::step::{Repeater, Subject};
use super::{Driver, Place, Tally};
use crate::error::RunError;
use crate::http::{excerpt, Exchange};
use crate::mock::{MockServer, MockSession, Window};
use crate::model::{ClockFormat, MockStep, MockWindow, Scenario};
use crate::run::outcome::{CheckKind, CheckResult};
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
    ) -> Result<Tally, RunError> {
        let Some(session) = session else {
            return Err(RunError::Scenario(
                "a mockLog step ran without the scenario's mock session".to_string(),
            ));
        };
        let window = self.render_window(&step.window, vars)?;
        let mut repeater = Repeater::new(step.repeat, Subject::MockLog, self.poll_scale);
        let (log, tally) = loop {
            let log = Log {
                session,
                view: session.view(&window),
                webhooks: self.host.capabilities.seams.contains(WEBHOOKS),
            };
            let context = repeater.look();
            let tally = self.check(place, None, &step.expect, &log, vars, context)?;
            if let Some(tally) = repeater.settle(tally).await {
                break (log, tally);
            }
        };
        self.capture(place, None, &step.capture, &log, vars, tally)
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
}

/// The mock log as a `mockLog` step's checks and captures read it: the
/// JSON view of the calls in its window.
struct Log<'a> {
    session: &'a MockSession,
    view: Value,
    /// The host advertises the seam that promises calls to the mock.
    webhooks: bool,
}

impl Seen for Log<'_> {
    fn answers(&self) -> &[Exchange] {
        &[]
    }

    fn document(&self) -> Option<&Value> {
        Some(&self.view)
    }

    fn header(&self, _: &str) -> Result<Option<Value>, &'static str> {
        Err("the mock log has no headers")
    }

    fn prefix(&self, _: CheckKind) -> &'static str {
        "mock log "
    }

    /// The log is no answer's body: nothing of it is recorded.
    fn recorded_pointer(&self, _: &str) -> Option<String> {
        None
    }

    fn note(&self, _: CheckKind) -> Option<String> {
        (self.webhooks && self.session.total() == 0).then(|| {
            format!(
                "host advertises conformanceSeams.goals.webhooks but never called the suite's mock: no call reached {} since the scenario started",
                self.session.base_url()
            )
        })
    }

    fn recorded(&self, _: usize) -> Option<&Exchange> {
        None
    }

    fn story(&self, _: usize, result: &CheckResult) -> String {
        let mut summary = self.view.clone();
        if let Some(object) = summary.as_object_mut() {
            object.remove("calls");
        }
        format!(
            "\n  mock log: {} calls in all at {}\n  at:       {}\n  expected: {}\n  actual:   {}\n  summary:  {}",
            self.session.total(),
            self.session.base_url(),
            result.at,
            result.expected,
            result.actual,
            excerpt(summary.to_string().as_bytes())
        )
    }
}
