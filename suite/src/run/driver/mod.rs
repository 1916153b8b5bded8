//! Running one scenario against the host: render each step's request, send
//! it (once, polling, or observing), check the answer, capture variables.

use std::sync::Arc;
use std::time::Duration;

use goalpost_schemas::Schemas;
use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use std::collections::{BTreeMap, BTreeSet};

use crate::assertion::{self, Verdict};
use crate::error::{RunError, StepError};
use crate::http::{Exchange, Http, Outgoing, OutgoingBody};
use crate::mock::MockServer;
use crate::model::{
    Action, Assertion, Body, Capture, Principal, RequestStep, Scenario, Step, Target,
};
use crate::run::discovery::Capabilities;
use crate::run::outcome::observation;
use crate::run::outcome::{
    Check, FailedStep, NotTaken, Outcome, Redactor, ScenarioResult, VIOLATIONS_SHOWN,
};
use crate::template::{TemplateError, Vars};
use attribution::{End, FailedCheck};
use step::{Absent, Captured, Repeater, Subject};

pub mod attribution;
mod concurrency;
mod mock;
mod step;

/// The host under test, as the driver needs it.
#[derive(Debug, Clone)]
pub struct HostTarget {
    /// Scheme, host and port, without a trailing slash.
    pub base_url: String,
    pub capabilities: Capabilities,
    pub token_a: Option<String>,
    pub token_b: Option<String>,
    /// Tenant A's credentials that hold an authority (the attention
    /// profile's confirmations).
    pub authority: crate::config::AuthorityTokens,
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
    /// The deployment's endpoints when there are several (the host's base
    /// URL first); empty for one. Requests take them in turn.
    endpoints: Arc<[String]>,
    next_endpoint: Arc<std::sync::atomic::AtomicUsize>,
}

/// Where in the scenario a step runs, for messages.
struct Place<'a> {
    scenario: &'a Scenario,
    step: &'a Step,
    /// When the scenario started: the zero of `clock: "ms"` and the mock log.
    started: Instant,
    /// The scenario run's nonce: its own goals carry `goalpost {nonce}`.
    nonce: &'a str,
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

/// What an assertion checked, as a miss names it: its target, with the
/// filter and mapping it reads through.
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

/// What one request step sent and got last, kept so a step that errors
/// can be reported with its whole exchange.
#[derive(Default)]
struct Trace {
    request: Option<Outgoing>,
    /// `None` when the last attempt got no answer.
    response: Option<Exchange>,
}

/// One check of a step's final look that did not hold.
struct Missed {
    proves: Vec<String>,
    blocking: bool,
    message: String,
    check: Check,
    /// The answer the claim was about (for a parallel step, the copy that
    /// broke it); `None` for the mock log.
    response: Option<Exchange>,
}

impl Missed {
    /// The miss as the ledger and the reports take it: `message` is the
    /// whole story for people, the check its parts for machines.
    fn new(
        place: &Place<'_>,
        miss: Miss,
        message: String,
        context: Option<String>,
        proves: &[String],
        response: Option<Exchange>,
    ) -> Missed {
        Missed {
            proves: proves.to_vec(),
            blocking: place.scenario.blocks(proves),
            message,
            check: Check {
                at: miss.at,
                what: miss.what,
                pointer: miss.pointer,
                expected: miss.expected,
                actual: miss.actual,
                note: miss.note,
                context,
            },
            response,
        }
    }

    fn is_status(&self) -> bool {
        self.check.what == "status" || self.check.what.starts_with("status of every one")
    }
}

/// How one look at a step's answer went: every check is evaluated, none
/// stops the others.
#[derive(Default)]
struct Tally {
    checks: u32,
    missed: Vec<Missed>,
    /// Checks that could not be read at all (the body is not JSON), with
    /// the requirements each proves.
    unreadable: Vec<(RunError, Vec<String>)>,
}

impl Tally {
    fn new(checks: u32) -> Tally {
        Tally {
            checks,
            ..Tally::default()
        }
    }

    /// A blocking check failed: the step (and, on its final look, the
    /// scenario) stops.
    fn blocked(&self) -> bool {
        self.missed.iter().any(|missed| missed.blocking)
    }

    /// An unreadable answer is an error unless a blocking check already
    /// failed on it (a wrong status with a body that is not JSON is a
    /// failure of the status, as it always was).
    fn settle(mut self) -> Result<Tally, StepError> {
        if !self.blocked() && !self.unreadable.is_empty() {
            let (error, _) = self.unreadable.remove(0);
            return Err(StepError::Error(error));
        }
        Ok(self)
    }

    /// Keeps the first miss of each claim across the looks of an `observe`
    /// window.
    fn absorb(&mut self, earlier: Vec<Missed>) {
        let mut missed = earlier;
        for miss in std::mem::take(&mut self.missed) {
            if !missed.iter().any(|kept| kept.check.at == miss.check.at) {
                missed.push(miss);
            }
        }
        self.missed = missed;
    }
}

impl Driver {
    pub fn new(http: Http, host: Arc<HostTarget>, schemas: Arc<Schemas>, poll_scale: f64) -> Self {
        let redactor = Redactor::new(host.token_a.as_deref(), host.token_b.as_deref())
            .with_authority(&host.authority);
        Driver {
            http,
            host,
            schemas,
            poll_scale,
            redactor,
            mock: None,
            wall: OffsetDateTime::now_utc,
            endpoints: Arc::from(Vec::new()),
            next_endpoint: Arc::default(),
        }
    }

    /// Spreads requests over the host and `replicas` (base URLs of the same
    /// deployment), one after the other; each request's URL is in its
    /// recorded exchange.
    pub fn with_replicas(mut self, replicas: &[String]) -> Self {
        if !replicas.is_empty() {
            let mut endpoints = vec![self.host.base_url.clone()];
            endpoints.extend(replicas.iter().cloned());
            self.endpoints = Arc::from(endpoints);
        }
        self
    }

    /// How many endpoints of the deployment requests go to (1 without
    /// replicas): what a scenario's `needs.endpoints` is gated on.
    pub fn endpoint_count(&self) -> usize {
        self.endpoints.len().max(1)
    }

    /// The base URL the next request goes to: `chosen` (1-based) when the
    /// step names one, else the next in turn.
    fn endpoint(&self, chosen: Option<u8>) -> &str {
        if self.endpoints.is_empty() {
            return &self.host.base_url;
        }
        if let Some(chosen) = chosen {
            // The gate ran the scenario only with `needs.endpoints` of
            // them, and the loader keeps `endpoint` within that.
            let index = usize::from(chosen.max(1)) - 1;
            return &self.endpoints[index % self.endpoints.len()];
        }
        let turn = self
            .next_endpoint
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.endpoints[turn % self.endpoints.len()]
    }

    pub fn host(&self) -> &HostTarget {
        &self.host
    }

    /// Runs every step of the scenario. Never panics on anything the host
    /// sends: every way it can go wrong is an [`Outcome`].
    pub async fn run(&self, scenario: &Scenario, nonce: &str) -> ScenarioResult {
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
                return ScenarioResult {
                    name: scenario.name.clone(),
                    duration: started.elapsed(),
                    outcome: Outcome::Error(format!("{}: {error}", scenario.path.display())),
                    checks: 0,
                    quiet: Duration::ZERO,
                    failed_step: None,
                    observations: observation::fill(&scenario.observations, &vars),
                    requirements: BTreeMap::new(),
                    not_taken: Vec::new(),
                }
            }
        };
        let mut checks = 0u32;
        let mut quiet = Duration::ZERO;
        let mut failed: Vec<FailedCheck> = Vec::new();
        let mut end = End::Completed;
        // The status of each request step's final answer, for the `when`
        // of later steps.
        let mut answered: Vec<Option<u16>> = vec![None; scenario.steps.len()];
        let mut not_taken = Vec::new();
        for step in &scenario.steps {
            if let Some(when) = &step.when {
                // The loader made it an earlier request step that always
                // runs, so it has answered unless it got no answer at all
                // (which ended the run).
                let status = answered.get(when.step).copied().flatten();
                if !status.is_some_and(|status| when.holds(status)) {
                    not_taken.push(NotTaken {
                        step: step.index + 1,
                        name: step.name.clone(),
                        when_step: scenario
                            .steps
                            .get(when.step)
                            .map(|earlier| earlier.name.clone())
                            .unwrap_or_default(),
                        answered: status,
                    });
                    continue;
                }
            }
            let place = Place {
                scenario,
                step,
                started,
                nonce,
            };
            let mut trace = Trace::default();
            let result = match &step.action {
                Action::Quiet { ms, .. } => {
                    let wait = Duration::from_millis(*ms);
                    tokio::time::sleep(wait).await;
                    quiet += wait;
                    Ok(Tally::default())
                }
                Action::Request(request) => match request.parallel {
                    Some(parallel) => {
                        self.run_parallel(&place, request, parallel, &mut vars, &mut trace)
                            .await
                    }
                    None => {
                        let result = self
                            .run_request(&place, request, &mut vars, &mut trace)
                            .await;
                        answered[step.index] = trace.response.as_ref().map(|answer| answer.status);
                        result
                    }
                },
                Action::MockLog(mock) => {
                    self.run_mock_step(&place, mock, &mut vars, session.as_ref())
                        .await
                }
            };
            match result {
                Ok(tally) => {
                    checks = checks.saturating_add(tally.checks);
                    let blocked = tally.blocked();
                    let mut unchecked: BTreeSet<String> = tally
                        .unreadable
                        .iter()
                        .flat_map(|(_, proves)| proves.iter().cloned())
                        .collect();
                    // An answer with the wrong status is not the answer the
                    // other claims of the step are about: one that held on it
                    // (a Location on a redirect) proves nothing.
                    if blocked && tally.missed.iter().any(Missed::is_status) {
                        unchecked.extend(
                            scenario
                                .step_requirements(step)
                                .into_iter()
                                .map(str::to_string),
                        );
                    }
                    for missed in tally.missed {
                        failed.push(FailedCheck {
                            step: step.index,
                            failed_step: self.failed_step(
                                &place,
                                trace.request.as_ref(),
                                missed.response.as_ref(),
                                Some(missed.check),
                                None,
                            ),
                            proves: missed.proves,
                            blocking: missed.blocking,
                            message: missed.message,
                        });
                    }
                    if blocked {
                        end = End::Blocked {
                            step: step.index,
                            unchecked,
                        };
                        break;
                    }
                }
                // The driver reports claims as misses; a bare failure can
                // only be a claim of the whole step.
                Err(StepError::Failure(failure)) => {
                    failed.push(FailedCheck {
                        step: step.index,
                        proves: scenario.step_proves(step).to_vec(),
                        blocking: true,
                        message: failure.message,
                        failed_step: self.failed_step(
                            &place,
                            trace.request.as_ref(),
                            trace.response.as_ref(),
                            None,
                            None,
                        ),
                    });
                    end = End::Blocked {
                        step: step.index,
                        unchecked: BTreeSet::new(),
                    };
                    break;
                }
                Err(StepError::Error(error)) => {
                    end = End::Errored {
                        step: step.index,
                        message: format!("{}: {error}", place.heading()),
                        failed_step: self.failed_step(
                            &place,
                            trace.request.as_ref(),
                            trace.response.as_ref(),
                            None,
                            Some(error.to_string()),
                        ),
                    };
                    break;
                }
            }
        }
        if end == End::Completed && checks < scenario.checks {
            end = End::Short(format!(
                "{}: made {checks} checks but declares at least {}; a scenario that checks less than it claims never passes",
                scenario.path.display(),
                scenario.checks
            ));
        }
        let requirements = attribution::attribute(scenario, &failed, &end);
        let (outcome, failed_step) = match end {
            End::Completed => (Outcome::Pass, None),
            End::Short(message) => (Outcome::Fail(message), None),
            End::Blocked { .. } => {
                let first = failed.into_iter().find(|check| check.blocking);
                match first {
                    Some(check) => (Outcome::Fail(check.message), check.failed_step),
                    None => (Outcome::Fail("a blocking check failed".to_string()), None),
                }
            }
            End::Errored {
                message,
                failed_step,
                ..
            } => (Outcome::Error(message), failed_step),
        };
        ScenarioResult {
            name: scenario.name.clone(),
            duration: started.elapsed(),
            outcome,
            checks,
            quiet,
            failed_step,
            observations: observation::fill(&scenario.observations, &vars),
            requirements,
            not_taken,
        }
    }

    /// The report's view of a step that went wrong; `None` when it never
    /// got as far as a request.
    fn failed_step(
        &self,
        place: &Place<'_>,
        request: Option<&Outgoing>,
        response: Option<&Exchange>,
        check: Option<Check>,
        error: Option<String>,
    ) -> Option<Box<FailedStep>> {
        let request = request?;
        Some(Box::new(FailedStep {
            step: place.step.index + 1,
            name: place.step.name.clone(),
            file: place.scenario.path.display().to_string(),
            pointer: place.step.pointer.clone(),
            check: if error.is_none() { check } else { None },
            error: error.map(|e| self.redactor.text(&e)),
            request: self.redactor.request(request),
            response: response.map(|exchange| self.redactor.response(exchange)),
        }))
    }

    fn render(&self, request: &RequestStep, vars: &Vars) -> Result<Outgoing, RunError> {
        let scenario_error = |error: TemplateError| RunError::Scenario(error.to_string());
        let req = &request.request;
        let path = vars.render_str(&req.path).map_err(scenario_error)?;
        let separator = if path.starts_with('/') { "" } else { "/" };
        let url = format!("{}{separator}{path}", self.endpoint(req.endpoint));
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
            Principal::PrincipalAuthority | Principal::HostAuthority => {
                let (token, option) = match req.principal {
                    Principal::PrincipalAuthority => (
                        self.host.authority.principal.as_deref(),
                        "--principal-token",
                    ),
                    _ => (
                        self.host.authority.host.as_deref(),
                        "--host-authority-token",
                    ),
                };
                if token.is_none() {
                    return Err(RunError::Scenario(format!(
                        "the step runs with an authority credential but no {option} was given"
                    )));
                }
                token
            }
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
    ) -> Result<Tally, StepError> {
        let outgoing = self.render(request, vars)?;
        trace.request = Some(outgoing.clone());
        let mut repeater = Repeater::new(request.repeat, Subject::Host, self.poll_scale);
        let (exchange, tally) = loop {
            trace.response = None;
            let exchange = match request.request.stream_ms {
                Some(ms) => {
                    self.http
                        .read_stream(&outgoing, Duration::from_millis(ms))
                        .await?
                }
                None => self.http.send(&outgoing).await?,
            };
            trace.response = Some(exchange.clone());
            let context = repeater.look();
            let tally = self
                .check(place, request, &exchange, vars, context)?
                .settle()?;
            if let Some(tally) = repeater.settle(tally).await {
                break (exchange, tally);
            }
        };
        // Captures read what the checks read: a list's own goals only.
        let narrowed = match request.expect.schema.as_deref() {
            Some(GOAL_LIST) => narrow(&exchange, place.nonce).map(|narrowed| narrowed.view),
            _ => None,
        };
        let answer = Answer {
            exchange: &exchange,
            seen: narrowed.as_ref().unwrap_or(&exchange),
        };
        self.capture(place, &request.capture, &answer, vars, tally)
    }

    /// Checks one exchange against every expectation of the step, each
    /// attributed to the requirements it proves. `goal-list` answers are
    /// narrowed to the scenario's own goals first (see [`narrow`]).
    fn check(
        &self,
        place: &Place<'_>,
        request: &RequestStep,
        exchange: &Exchange,
        vars: &Vars,
        context: Option<String>,
    ) -> Result<Tally, StepError> {
        let expect = &request.expect;
        let expect_at = format!("{}/expect", place.step.pointer);
        let own = place.scenario.step_proves(place.step);
        let mut tally = Tally::new(expect.checks());
        let narrowed = match expect.schema.as_deref() {
            Some(GOAL_LIST) => narrow(exchange, place.nonce),
            _ => None,
        };
        let (seen, note) = match &narrowed {
            Some(narrowed) => (&narrowed.view, narrowed.note(place.nonce)),
            None => (exchange, None),
        };
        // Pointers into the body as recorded: the full list.
        let full = |pointer: String| match &narrowed {
            Some(narrowed) => narrowed.full_pointer(&pointer),
            None => pointer,
        };
        let noted = |miss: Miss| Miss {
            note: match (miss.note, &note) {
                (Some(own), Some(extra)) => Some(format!("{own}; {extra}")),
                (own, extra) => own.or_else(|| extra.clone()),
            },
            ..miss
        };
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
            tally.missed.push(self.missed(
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
                context.clone(),
                own,
            ));
        }
        if let Some(schema) = &expect.schema {
            match seen.json() {
                Err(error) => tally.unreadable.push((error, own.to_vec())),
                Ok(body) => {
                    if let Err(violations) = self.schemas.validate(schema, body) {
                        let shown: Vec<String> = violations
                            .iter()
                            .take(VIOLATIONS_SHOWN)
                            .map(|violation| {
                                goalpost_schemas::Violation {
                                    pointer: full(violation.pointer.clone()),
                                    message: violation.message.clone(),
                                }
                                .to_string()
                            })
                            .collect();
                        let first = full(
                            violations
                                .first()
                                .map(|v| v.pointer.clone())
                                .unwrap_or_default(),
                        );
                        tally.missed.push(self.missed(
                            place,
                            exchange,
                            noted(Miss {
                                at: format!("{expect_at}/schema"),
                                what: format!(
                                    "schema `{schema}` at body pointer {}",
                                    if first.is_empty() { "(root)" } else { &first }
                                ),
                                expected: format!("a body valid against `{schema}`"),
                                actual: shown.join("; "),
                                note: None,
                                pointer: Some(first),
                            }),
                            context.clone(),
                            own,
                        ));
                    }
                }
            }
        }
        for assertion in &expect.assertions {
            let proves = place.scenario.assertion_proves(place.step, assertion);
            match assertion::evaluate(assertion, seen, vars) {
                Ok(()) => {}
                Err(Verdict::Error(error @ RunError::NotJson { .. })) => {
                    tally.unreadable.push((error, proves.to_vec()))
                }
                Err(Verdict::Error(error)) => return Err(StepError::Error(error)),
                Err(Verdict::Mismatch(mismatch)) => {
                    tally.missed.push(self.missed(
                        place,
                        exchange,
                        noted(Miss {
                            at: assertion.pointer.clone(),
                            what: describe(assertion),
                            expected: mismatch.expected,
                            actual: mismatch.actual,
                            note: None,
                            pointer: match &assertion.target {
                                Target::Pointer(pointer) => Some(full(pointer.clone())),
                                Target::Header(_) => None,
                            },
                        }),
                        context.clone(),
                        proves,
                    ));
                }
            }
        }
        Ok(tally)
    }

    /// A claim that did not hold, with its message and the requirements it
    /// fails.
    fn missed(
        &self,
        place: &Place<'_>,
        exchange: &Exchange,
        miss: Miss,
        context: Option<String>,
        proves: &[String],
    ) -> Missed {
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
        Missed::new(
            place,
            miss,
            message,
            context,
            proves,
            Some(exchange.clone()),
        )
    }
}

/// A request step's answer as its captures read it: headers from the
/// answer itself, pointers from the body its checks saw.
struct Answer<'a> {
    exchange: &'a Exchange,
    seen: &'a Exchange,
}

impl Captured for Answer<'_> {
    fn pointer(&self, pointer: &str) -> Result<Option<Value>, StepError> {
        Ok(self.seen.json()?.pointer(pointer).cloned())
    }

    fn header(&self, header: &str) -> Result<Option<Value>, &'static str> {
        Ok(self.exchange.header(header).map(Value::String))
    }

    fn absent(&self, absent: Absent<'_>) -> Result<Missed, StepError> {
        let (expected, pointer) = match absent.source {
            Capture::Pointer(pointer) => (format!("a value at {pointer}"), Some(pointer.clone())),
            Capture::Header(header) => (format!("header {header}"), None),
            Capture::Clock(_) | Capture::Later(..) => ("the time".to_string(), None),
        };
        let miss = Miss {
            expected,
            pointer,
            ..absent.miss
        };
        Ok(absent.driver.missed(
            absent.place,
            self.exchange,
            miss,
            None,
            absent.place.scenario.step_proves(absent.place.step),
        ))
    }
}

/// The schema of a list answer, whose goals are narrowed to the scenario's.
const GOAL_LIST: &str = "goal-list";

/// A `goal-list` answer narrowed to the scenario's own goals.
struct Narrowed {
    /// The answer as the checks see it.
    view: Exchange,
    /// How many goals were left out.
    left_out: usize,
    /// For each goal of the view, its index in the full list.
    kept: Vec<usize>,
}

impl Narrowed {
    /// A pointer into the view as a pointer into the full list the report
    /// records (`/goals/0/state` may be `/goals/3/state` there).
    fn full_pointer(&self, pointer: &str) -> String {
        let Some(rest) = pointer.strip_prefix("/goals/") else {
            return pointer.to_string();
        };
        let (index, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match index.parse::<usize>().ok().and_then(|i| self.kept.get(i)) {
            Some(original) => format!("/goals/{original}{tail}"),
            None => pointer.to_string(),
        }
    }

    fn note(&self, nonce: &str) -> Option<String> {
        let left_out = self.left_out;
        (left_out > 0).then(|| {
            format!(
                "{left_out} goal(s) of other scenarios left out: list checks see only goals whose objective contains \"goalpost {nonce}\" (the recorded response is the full list)"
            )
        })
    }
}

/// A `goal-list` answer with only the goals whose `objective` carries
/// `goalpost {nonce}`: a list check must never see what another scenario
/// (or anyone else) stored in the tenant. `None` (check the answer as it
/// is) unless the body is an object whose `goals` is an array: a broken
/// envelope still fails its checks.
fn narrow(exchange: &Exchange, nonce: &str) -> Option<Narrowed> {
    let body = exchange.json().ok()?;
    let goals = body.as_object()?.get("goals")?.as_array()?;
    let marker = format!("goalpost {nonce}");
    let kept: Vec<usize> = goals
        .iter()
        .enumerate()
        .filter(|(_, goal)| {
            goal.get("objective")
                .and_then(Value::as_str)
                .is_some_and(|objective| objective.contains(&marker))
        })
        .map(|(index, _)| index)
        .collect();
    let mut narrowed = body.clone();
    narrowed["goals"] = Value::Array(kept.iter().map(|&i| goals[i].clone()).collect());
    let bytes = serde_json::to_vec(&narrowed).ok()?;
    Some(Narrowed {
        view: Exchange::new(
            &exchange.method,
            &exchange.url,
            exchange.status,
            exchange.headers.clone(),
            bytes,
        ),
        left_out: goals.len() - kept.len(),
        kept,
    })
}

#[cfg(test)]
mod tests;
