//! Running one scenario against the host: render each step's request, send
//! it (once, polling, or observing), check the answer, capture variables.

use std::sync::Arc;
use std::time::Duration;

use goalpost_schemas::Schemas;
use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use crate::assertion::{self, Verdict};
use crate::discovery::Capabilities;
use crate::error::{Failure, RunError, StepError};
use crate::http::{Exchange, Http, Outgoing, OutgoingBody};
use crate::ledger::Outcome;
use crate::mock::MockServer;
use crate::model::{Action, Body, Capture, Principal, Repeat, RequestStep, Scenario, Step, Target};
use crate::observation::{self, Observation};
use crate::report::exchange::{Check, FailedStep, Redactor};
use crate::template::{TemplateError, Vars};

#[path = "driver_mock.rs"]
mod mock_step;
#[path = "driver_parallel.rs"]
mod parallel_step;

/// The host under test, as the driver needs it.
#[derive(Debug, Clone)]
pub struct HostTarget {
    /// Scheme, host and port, without a trailing slash.
    pub base_url: String,
    pub capabilities: Capabilities,
    pub token_a: Option<String>,
    pub token_b: Option<String>,
}

/// How a scenario run ended, with what it measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioRun {
    pub outcome: Outcome,
    pub checks: u32,
    pub quiet: Duration,
    /// The step that failed or errored, with its last exchange (redacted),
    /// for the reports.
    pub failed_step: Option<Box<FailedStep>>,
    /// The scenario's observations, filled from its variables at the end.
    pub observations: Vec<Observation>,
}

#[derive(Debug, Clone)]
pub struct Driver {
    http: Http,
    host: Arc<HostTarget>,
    schemas: Arc<Schemas>,
    /// Stretches `poll` deadlines for slow hosts (`--timeout-scale`).
    poll_scale: f64,
    /// Keeps the run's tokens out of recorded exchanges.
    redactor: Redactor,
    /// Serves the scenarios' `mock` blocks; `None` when no scenario of the
    /// run needs it.
    mock: Option<Arc<MockServer>>,
    /// Wall clock for `clock: "rfc3339"` captures.
    wall: fn() -> OffsetDateTime,
}

/// Where in the scenario a step runs, for messages.
struct Place<'a> {
    scenario: &'a Scenario,
    step: &'a Step,
    /// When the scenario started: the zero of `clock: "ms"` and the mock log.
    started: Instant,
}

impl Place<'_> {
    fn heading(&self) -> String {
        format!(
            "{} step {} \"{}\" ({})",
            self.scenario.path.display(),
            self.step.index + 1,
            self.step.name,
            self.step.pointer
        )
    }
}

/// One claim about one exchange that did not hold.
struct Miss {
    /// JSON pointer of the claim in the scenario file.
    at: String,
    /// What was checked (`status`, `pointer /state`, `schema goal`, ...).
    what: String,
    expected: String,
    actual: String,
    /// A sentence that explains the miss better than expected/actual alone.
    note: Option<String>,
    /// The pointer into the response body the claim is about, if any.
    pointer: Option<String>,
}

/// What one request step sent and got last, kept so a failing step can be
/// reported with its whole exchange.
#[derive(Default)]
struct Trace {
    request: Option<Outgoing>,
    /// `None` when the last attempt got no answer.
    response: Option<Exchange>,
    /// The claim that failed on the last attempt.
    check: Option<Check>,
}

impl Driver {
    pub fn new(http: Http, host: Arc<HostTarget>, schemas: Arc<Schemas>, poll_scale: f64) -> Self {
        let redactor = Redactor::new(host.token_a.as_deref(), host.token_b.as_deref());
        Driver {
            http,
            host,
            schemas,
            poll_scale,
            redactor,
            mock: None,
            wall: OffsetDateTime::now_utc,
        }
    }

    pub fn host(&self) -> &HostTarget {
        &self.host
    }

    /// Runs every step of the scenario. Never panics on anything the host
    /// sends: every way it can go wrong is an [`Outcome`].
    pub async fn run(&self, scenario: &Scenario, nonce: &str) -> ScenarioRun {
        let mut vars = Vars::new(&self.host.capabilities.base_path, nonce, &scenario.name);
        for (name, value) in self.host.capabilities.variables() {
            vars.set(name, value);
        }
        for (name, text) in &scenario.generated {
            vars.set(name, Value::from(text.as_str()));
        }
        let started = Instant::now();
        // Held to the end of the run: dropping it closes the namespace.
        let session = match self.open_mock(scenario, nonce, started, &mut vars) {
            Ok(session) => session,
            Err(error) => {
                return ScenarioRun {
                    outcome: Outcome::Error(format!("{}: {error}", scenario.path.display())),
                    checks: 0,
                    quiet: Duration::ZERO,
                    failed_step: None,
                    observations: observation::fill(&scenario.observations, &vars),
                }
            }
        };
        let mut checks = 0u32;
        let mut quiet = Duration::ZERO;
        for step in &scenario.steps {
            let place = Place {
                scenario,
                step,
                started,
            };
            let mut trace = Trace::default();
            let result = match &step.action {
                Action::Quiet { ms, .. } => {
                    let wait = Duration::from_millis(*ms);
                    tokio::time::sleep(wait).await;
                    quiet += wait;
                    Ok(0)
                }
                Action::Request(request) => match request.parallel {
                    Some(parallel) => {
                        self.run_parallel(&place, request, parallel, &mut vars, &mut trace)
                            .await
                    }
                    None => {
                        self.run_request(&place, request, &mut vars, &mut trace)
                            .await
                    }
                },
                Action::MockLog(mock) => {
                    self.run_mock_step(&place, mock, &mut vars, session.as_ref())
                        .await
                }
            };
            match result {
                Ok(made) => checks = checks.saturating_add(made),
                Err(StepError::Failure(failure)) => {
                    return ScenarioRun {
                        outcome: Outcome::Fail(failure.message),
                        checks,
                        quiet,
                        failed_step: self.failed_step(&place, trace, None),
                        observations: observation::fill(&scenario.observations, &vars),
                    }
                }
                Err(StepError::Error(error)) => {
                    return ScenarioRun {
                        outcome: Outcome::Error(format!("{}: {error}", place.heading())),
                        checks,
                        quiet,
                        failed_step: self.failed_step(&place, trace, Some(error.to_string())),
                        observations: observation::fill(&scenario.observations, &vars),
                    }
                }
            }
        }
        let outcome = if checks < scenario.checks {
            Outcome::Fail(format!(
                "{}: made {checks} checks but declares at least {}; a scenario that checks less than it claims never passes",
                scenario.path.display(),
                scenario.checks
            ))
        } else {
            Outcome::Pass
        };
        ScenarioRun {
            outcome,
            checks,
            quiet,
            failed_step: None,
            observations: observation::fill(&scenario.observations, &vars),
        }
    }

    /// The report's view of a step that went wrong; `None` when it never
    /// got as far as a request.
    fn failed_step(
        &self,
        place: &Place<'_>,
        trace: Trace,
        error: Option<String>,
    ) -> Option<Box<FailedStep>> {
        let request = trace.request?;
        Some(Box::new(FailedStep {
            step: place.step.index + 1,
            name: place.step.name.clone(),
            file: place.scenario.path.display().to_string(),
            pointer: place.step.pointer.clone(),
            check: if error.is_none() { trace.check } else { None },
            error: error.map(|e| self.redactor.text(&e)),
            request: self.redactor.request(&request),
            response: trace
                .response
                .as_ref()
                .map(|exchange| self.redactor.response(exchange)),
        }))
    }

    fn render(&self, request: &RequestStep, vars: &Vars) -> Result<Outgoing, RunError> {
        let scenario_error = |error: TemplateError| RunError::Scenario(error.to_string());
        let req = &request.request;
        let path = vars.render_str(&req.path).map_err(scenario_error)?;
        let separator = if path.starts_with('/') { "" } else { "/" };
        let url = format!("{}{separator}{path}", self.host.base_url);
        let mut headers = Vec::new();
        let token = match req.principal {
            Principal::A => self.host.token_a.as_deref(),
            Principal::B => {
                let token = self.host.token_b.as_deref();
                if token.is_none() {
                    return Err(RunError::Scenario(
                        "the step runs as tenant b but no --token-b was given".to_string(),
                    ));
                }
                token
            }
            Principal::Anonymous => None,
        };
        if let Some(token) = token {
            headers.push(("authorization".to_string(), format!("Bearer {token}")));
        }
        for (name, value) in &req.headers {
            let value = vars.render_str(value).map_err(scenario_error)?;
            // A scenario header replaces the credential header (to send a
            // bad token, say).
            headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
            headers.push((name.clone(), value));
        }
        let bytes = match &req.body {
            Body::None => None,
            Body::Json(value) => {
                let rendered = vars.render_value(value).map_err(scenario_error)?;
                Some(serde_json::to_vec(&rendered).map_err(|e| RunError::Scenario(e.to_string()))?)
            }
            Body::Raw(text) => Some(vars.render_str(text).map_err(scenario_error)?.into_bytes()),
            Body::Bytes(bytes) => Some(bytes.clone()),
        };
        let body = bytes.map(|bytes| OutgoingBody {
            bytes,
            content_type: req
                .content_type
                .clone()
                .unwrap_or_else(|| "application/json".to_string()),
        });
        Ok(Outgoing {
            method: req.method.clone(),
            url,
            headers,
            body,
        })
    }

    async fn run_request(
        &self,
        place: &Place<'_>,
        request: &RequestStep,
        vars: &mut Vars,
        trace: &mut Trace,
    ) -> Result<u32, StepError> {
        let outgoing = self.render(request, vars)?;
        trace.request = Some(outgoing.clone());
        let (exchange, checks) = match request.repeat {
            Repeat::Once => {
                let exchange = &*trace.response.insert(self.http.send(&outgoing).await?);
                let checks = self.check(place, request, exchange, vars, None, &mut trace.check)?;
                (exchange, checks)
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
                    trace.response = None;
                    let exchange = &*trace.response.insert(self.http.send(&outgoing).await?);
                    let now = Instant::now();
                    let context = if now >= deadline {
                        Some(format!(
                            "still failing after polling for {} ms ({attempt} attempts); the last response",
                            (now - started).as_millis()
                        ))
                    } else {
                        None
                    };
                    match self.check(place, request, exchange, vars, context, &mut trace.check) {
                        Ok(checks) => break (exchange, checks),
                        Err(StepError::Failure(failure)) if now >= deadline => {
                            return Err(StepError::Failure(failure))
                        }
                        Err(StepError::Failure(_)) => {
                            tokio::time::sleep(interval.min(deadline - now)).await
                        }
                        Err(error) => return Err(error),
                    }
                }
            }
            Repeat::Observe {
                for_ms,
                interval_ms,
            } => {
                let interval = Duration::from_millis(interval_ms);
                let end = Instant::now() + Duration::from_millis(for_ms);
                let mut attempt = 0u32;
                loop {
                    attempt += 1;
                    trace.response = None;
                    let exchange = &*trace.response.insert(self.http.send(&outgoing).await?);
                    let context =
                        format!("during the {for_ms} ms observation window, attempt {attempt}");
                    let checks = self.check(
                        place,
                        request,
                        exchange,
                        vars,
                        Some(context),
                        &mut trace.check,
                    )?;
                    let now = Instant::now();
                    if now >= end {
                        break (exchange, checks);
                    }
                    tokio::time::sleep(interval.min(end - now)).await;
                }
            }
        };
        for (name, source) in &request.capture {
            let value = match source {
                Capture::Pointer(pointer) => exchange.json()?.pointer(pointer).cloned(),
                Capture::Header(header) => exchange.header(header).map(Value::String),
                Capture::Clock(format) => Some(self.clock_value(place.started, *format)),
            };
            let Some(value) = value else {
                let (what, expected) = match source {
                    Capture::Pointer(pointer) => {
                        (format!("capture `{name}`"), format!("a value at {pointer}"))
                    }
                    Capture::Header(header) => {
                        (format!("capture `{name}`"), format!("header {header}"))
                    }
                    Capture::Clock(_) => (format!("capture `{name}`"), "the time".to_string()),
                };
                let pointer = match source {
                    Capture::Pointer(pointer) => Some(pointer.clone()),
                    Capture::Header(_) | Capture::Clock(_) => None,
                };
                return Err(self.failure(
                    place,
                    exchange,
                    Miss {
                        at: format!("{}/capture/{name}", place.step.pointer),
                        what,
                        expected,
                        actual: "(absent)".to_string(),
                        note: None,
                        pointer,
                    },
                    None,
                    &mut trace.check,
                ));
            };
            vars.set(name, value);
        }
        Ok(checks)
    }

    /// Checks one exchange against the step's expectations; the number of
    /// checks made when all hold.
    fn check(
        &self,
        place: &Place<'_>,
        request: &RequestStep,
        exchange: &Exchange,
        vars: &Vars,
        context: Option<String>,
        sink: &mut Option<Check>,
    ) -> Result<u32, StepError> {
        let expect = &request.expect;
        let expect_at = format!("{}/expect", place.step.pointer);
        if !expect.status.is_empty() && !expect.status.contains(&exchange.status) {
            let expected = match expect.status.as_slice() {
                [one] => one.to_string(),
                many => format!(
                    "one of {}",
                    many.iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let note = match &request.request.seam {
                Some(seam)
                    if exchange.status == 404 && self.host.capabilities.seams.contains(seam) =>
                {
                    Some(format!(
                        "host advertises conformanceSeams.goals.{seam} but the seam answered 404"
                    ))
                }
                _ => None,
            };
            return Err(self.failure(
                place,
                exchange,
                Miss {
                    at: format!("{expect_at}/status"),
                    what: "status".to_string(),
                    expected,
                    actual: exchange.status.to_string(),
                    note,
                    pointer: None,
                },
                context,
                sink,
            ));
        }
        if let Some(schema) = &expect.schema {
            let body = exchange.json()?;
            if let Err(violations) = self.schemas.validate(schema, body) {
                let shown: Vec<String> =
                    violations.iter().take(5).map(ToString::to_string).collect();
                let first = violations
                    .first()
                    .map(|v| v.pointer.clone())
                    .unwrap_or_default();
                return Err(self.failure(
                    place,
                    exchange,
                    Miss {
                        at: format!("{expect_at}/schema"),
                        what: format!(
                            "schema `{schema}` at body pointer {}",
                            if first.is_empty() { "(root)" } else { &first }
                        ),
                        expected: format!("a body valid against `{schema}`"),
                        actual: shown.join("; "),
                        note: None,
                        pointer: Some(first),
                    },
                    context,
                    sink,
                ));
            }
        }
        for assertion in &expect.assertions {
            match assertion::evaluate(assertion, exchange, vars) {
                Ok(()) => {}
                Err(Verdict::Error(error)) => return Err(StepError::Error(error)),
                Err(Verdict::Mismatch(mismatch)) => {
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
                    return Err(self.failure(
                        place,
                        exchange,
                        Miss {
                            at: assertion.pointer.clone(),
                            what,
                            expected: mismatch.expected,
                            actual: mismatch.actual,
                            note: None,
                            pointer: match &assertion.target {
                                Target::Pointer(pointer) => Some(pointer.clone()),
                                Target::Header(_) => None,
                            },
                        },
                        context,
                        sink,
                    ));
                }
            }
        }
        Ok(expect.checks())
    }

    fn failure(
        &self,
        place: &Place<'_>,
        exchange: &Exchange,
        miss: Miss,
        context: Option<String>,
        sink: &mut Option<Check>,
    ) -> StepError {
        let mut message = format!("{}: {} did not hold", place.heading(), miss.what);
        if let Some(note) = &miss.note {
            message.push_str(&format!("\n  {note}"));
        }
        if let Some(context) = &context {
            message.push_str(&format!("\n  ({context})"));
        }
        message.push_str(&format!(
            "\n  request:  {} {}\n  at:       {}\n  expected: {}\n  actual:   {}\n  response: {} {}",
            exchange.method,
            exchange.url,
            miss.at,
            miss.expected,
            miss.actual,
            exchange.status,
            exchange.excerpt()
        ));
        *sink = Some(Check {
            at: miss.at,
            what: miss.what,
            pointer: miss.pointer,
            expected: miss.expected,
            actual: miss.actual,
            note: miss.note,
            context,
        });
        StepError::Failure(Failure { message })
    }
}
