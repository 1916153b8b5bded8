//! Running one scenario against the host: render each step's request, send
//! it (once, polling, or observing), check the answer, capture variables.

use std::sync::Arc;
use std::time::Duration;

use goalpost_schemas::Schemas;
use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use std::collections::BTreeSet;

use crate::assertion::{self, Verdict};
use crate::error::RunError;
use crate::http::{Exchange, Http, Outgoing, OutgoingBody};
use crate::mock::{MockServer, MockSession};
use crate::model::{Action, Assertion, Body, Principal, RequestStep, Scenario, Step};
use crate::run::discovery::Capabilities;
use crate::run::outcome::{CheckKind, CheckResult, FailedStep, Redactor, ScenarioResult};
use crate::template::{TemplateError, Vars};
use attribution::{End, FailedCheck};
use check::{exchange_story, Seen};
use step::{Repeater, Subject};

pub mod attribution;
mod check;
mod concurrency;
mod end;
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

/// What one request step sent and got last, kept so a step that errors
/// can be reported with its whole exchange.
#[derive(Default)]
struct Trace {
    request: Option<Outgoing>,
    /// `None` when the last attempt got no answer.
    response: Option<Exchange>,
}

/// How one look at a step's answer went: every check is evaluated, none
/// stops the others.
#[derive(Default)]
struct Tally {
    checks: u32,
    missed: Vec<FailedCheck>,
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
        self.missed.iter().any(FailedCheck::blocking)
    }

    /// An unreadable answer is an error unless a blocking check already
    /// failed on it (a wrong status with a body that is not JSON is a
    /// failure of the status, as it always was).
    fn settle(mut self) -> Result<Tally, RunError> {
        if !self.blocked() && !self.unreadable.is_empty() {
            let (error, _) = self.unreadable.remove(0);
            return Err(error);
        }
        Ok(self)
    }

    /// Keeps the first miss of each claim across the looks of an `observe`
    /// window.
    fn absorb(&mut self, earlier: Vec<FailedCheck>) {
        let mut missed = earlier;
        for miss in std::mem::take(&mut self.missed) {
            if !missed.iter().any(|kept| kept.result.at == miss.result.at) {
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
    /// sends: every way it can go wrong is an
    /// [`crate::run::outcome::Outcome`].
    pub async fn run(&self, scenario: &Scenario, nonce: &str) -> ScenarioResult {
        let mut vars = self.variables(scenario, nonce);
        let started = Instant::now();
        // Held to the end of the run: dropping it closes the namespace.
        let session = match self.open_mock(scenario, nonce, started, &mut vars) {
            Ok(session) => session,
            Err(error) => {
                let message = format!("{}: {error}", scenario.path.display());
                return end::unopened(scenario, message, started.elapsed(), &vars);
            }
        };
        let mut run = end::Collected::new(scenario);
        for step in &scenario.steps {
            if !run.taken(scenario, step) {
                continue;
            }
            let place = Place {
                scenario,
                step,
                started,
                nonce,
            };
            let mut trace = Trace::default();
            let looked = self
                .run_step(&place, &mut vars, session.as_ref(), &mut trace, &mut run)
                .await;
            if let Err(end) = self.collect(&place, &trace, looked, &mut run) {
                run.end = end;
                break;
            }
        }
        run.finish(scenario, started.elapsed(), &vars)
    }

    /// The variables every step of a run starts with.
    fn variables(&self, scenario: &Scenario, nonce: &str) -> Vars {
        let mut vars = Vars::new(&self.host.capabilities.base_path, nonce, &scenario.name);
        for (name, value) in self.host.capabilities.variables() {
            vars.set(name, value);
        }
        for (name, text) in &scenario.generated {
            vars.set(name, Value::from(text.as_str()));
        }
        vars
    }

    /// Runs one step of whatever kind; `trace` keeps what it sent and got
    /// last for a step that errors.
    async fn run_step(
        &self,
        place: &Place<'_>,
        vars: &mut Vars,
        session: Option<&MockSession>,
        trace: &mut Trace,
        run: &mut end::Collected,
    ) -> Result<Tally, RunError> {
        match &place.step.action {
            Action::Quiet { ms, .. } => {
                let wait = Duration::from_millis(*ms);
                tokio::time::sleep(wait).await;
                run.quiet += wait;
                Ok(Tally::default())
            }
            Action::Request(request) => match request.parallel {
                Some(parallel) => {
                    self.run_parallel(place, request, parallel, vars, trace)
                        .await
                }
                None => {
                    let looked = self.run_request(place, request, vars, trace).await;
                    run.answered[place.step.index] =
                        trace.response.as_ref().map(|answer| answer.status);
                    looked
                }
            },
            Action::MockLog(mock) => self.run_mock_step(place, mock, vars, session).await,
        }
    }

    /// Takes a step's look into the run: its checks and failures, and
    /// where the run ends when a blocking check failed or the host could
    /// not be used.
    fn collect(
        &self,
        place: &Place<'_>,
        trace: &Trace,
        looked: Result<Tally, RunError>,
        run: &mut end::Collected,
    ) -> Result<(), End> {
        let step = place.step;
        let tally = match looked {
            Ok(tally) => tally,
            Err(error) => {
                return Err(End::Errored {
                    step: step.index,
                    message: format!("{}: {error}", place.heading()),
                    failed_step: self.failed_step(
                        place,
                        trace.request.as_ref(),
                        trace.response.as_ref(),
                        None,
                        Some(error.to_string()),
                    ),
                })
            }
        };
        run.checks = run.checks.saturating_add(tally.checks);
        let blocked = tally.blocked();
        let mut unchecked: BTreeSet<String> = tally
            .unreadable
            .iter()
            .flat_map(|(_, proves)| proves.iter().cloned())
            .collect();
        // An answer with the wrong status is not the answer the other
        // claims of the step are about: one that held on it (a Location on
        // a redirect) proves nothing.
        let wrong_status = tally
            .missed
            .iter()
            .any(|missed| missed.result.kind == CheckKind::Status);
        if blocked && wrong_status {
            let scenario = place.scenario;
            unchecked.extend(
                scenario
                    .step_requirements(step)
                    .into_iter()
                    .map(str::to_string),
            );
        }
        run.failed.extend(tally.missed);
        if blocked {
            return Err(End::Blocked {
                step: step.index,
                unchecked,
            });
        }
        Ok(())
    }

    /// The report's view of a step that went wrong; `None` when it never
    /// got as far as a request.
    fn failed_step(
        &self,
        place: &Place<'_>,
        request: Option<&Outgoing>,
        response: Option<&Exchange>,
        check: Option<CheckResult>,
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
    ) -> Result<Tally, RunError> {
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
            let seen = self.answer(place, request, &exchange);
            let tally = self
                .check(
                    place,
                    Some(&outgoing),
                    &request.expect,
                    &seen,
                    vars,
                    context,
                )?
                .settle()?;
            if let Some(tally) = repeater.settle(tally).await {
                break (exchange, tally);
            }
        };
        // Captures read what the checks read: a list's own goals only.
        let seen = self.answer(place, request, &exchange);
        self.capture(place, Some(&outgoing), &request.capture, &seen, vars, tally)
    }

    /// A request step's answer as its checks see it: `goal-list` answers
    /// narrowed to the scenario's own goals (see [`narrow`]).
    fn answer<'a>(
        &self,
        place: &Place<'_>,
        request: &'a RequestStep,
        exchange: &'a Exchange,
    ) -> Answer<'a> {
        let narrowed = match request.expect.schema.as_deref() {
            Some(GOAL_LIST) => narrow(exchange, place.nonce),
            _ => None,
        };
        Answer {
            exchange,
            left_out: narrowed
                .as_ref()
                .and_then(|narrowed| narrowed.note(place.nonce)),
            narrowed,
            seam: request
                .request
                .seam
                .as_deref()
                .filter(|seam| self.host.capabilities.seams.contains(*seam)),
        }
    }
}

/// One answer of the host as a request step's checks and captures read
/// it: status and headers from the answer itself, the body narrowed when
/// it is a list.
struct Answer<'a> {
    exchange: &'a Exchange,
    narrowed: Option<Narrowed>,
    /// What narrowing left out, for the claims about the body.
    left_out: Option<String>,
    /// The seam the request went to, when the host advertises it.
    seam: Option<&'a str>,
}

impl Answer<'_> {
    /// The answer the checks read.
    fn view(&self) -> &Exchange {
        self.narrowed
            .as_ref()
            .map_or(self.exchange, |narrowed| &narrowed.view)
    }
}

impl Seen for Answer<'_> {
    fn answers(&self) -> &[Exchange] {
        std::slice::from_ref(self.view())
    }

    fn advertised_seam(&self) -> Option<&str> {
        self.seam
    }

    fn evaluate(&self, assertion: &Assertion, vars: &Vars) -> Result<(), Verdict> {
        assertion::evaluate(assertion, self.view(), vars)
    }

    fn value(&self, pointer: &str) -> Result<Option<Value>, RunError> {
        Ok(self.view().json()?.pointer(pointer).cloned())
    }

    fn header(&self, header: &str) -> Result<Option<Value>, &'static str> {
        Ok(self.exchange.header(header).map(Value::String))
    }

    /// Pointers into the body as recorded: the full list.
    fn recorded_pointer(&self, pointer: &str) -> Option<String> {
        Some(match &self.narrowed {
            Some(narrowed) => narrowed.full_pointer(pointer),
            None => pointer.to_string(),
        })
    }

    fn note(&self, kind: CheckKind) -> Option<String> {
        match kind {
            CheckKind::Schema | CheckKind::Assertion => self.left_out.clone(),
            CheckKind::Status | CheckKind::Capture => None,
        }
    }

    fn recorded(&self, _: usize) -> Option<&Exchange> {
        Some(self.exchange)
    }

    fn story(&self, _: usize, result: &CheckResult) -> String {
        exchange_story(self.exchange, result)
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
