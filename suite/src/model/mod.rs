//! The typed model of a scenario file and of the requirement registry.
//!
//! Every scenario carries its file path and every step and assertion the JSON
//! pointer it came from, so a failure can always say exactly which line of
//! which file made the claim that did not hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

pub mod capability;
pub mod mock_script;

pub use capability::Capability;
pub use mock_script::MockScript;

/// One scenario file, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The trial name, `<profile>::<file stem>`.
    pub name: String,
    pub profile: String,
    pub path: PathBuf,
    pub title: String,
    pub requirements: Vec<String>,
    /// The named requirements whose level is SHOULD: a check proving only
    /// these never blocks. Filled from the registry by `loader::load`
    /// ([`Scenario::set_levels`]); empty for a file loaded alone, where
    /// every requirement blocks.
    pub should: BTreeSet<String>,
    pub needs: Needs,
    /// How many checks the scenario makes at least.
    pub checks: u32,
    pub steps: Vec<Step>,
    /// The suite's webhook answers for this scenario (`mock`); `None` when
    /// the scenario does not use the mock.
    pub mock: Option<MockScript>,
    /// What the report shows of the suite's own counts next to the host's.
    pub observations: Vec<ObservationSpec>,
    /// Variables made when the scenario loads (`generate`): large or
    /// repetitive text no scenario file should spell out.
    pub generated: BTreeMap<String, String>,
}

impl Scenario {
    /// Milliseconds the scenario spends in `quietMs` steps: waits nothing can
    /// shorten, reported so a slow run can be explained.
    pub fn quiet_ms(&self) -> u64 {
        self.steps
            .iter()
            .map(|step| match &step.action {
                Action::Quiet { ms, .. } => *ms,
                Action::Request(_) | Action::MockLog(_) => 0,
            })
            .sum()
    }

    /// The requirements the checks of `step` prove (status, schema, and
    /// every assertion without its own `proves`).
    pub fn step_proves<'a>(&'a self, step: &'a Step) -> &'a [String] {
        step.proves.as_deref().unwrap_or(&self.requirements)
    }

    /// Records which of the named requirements are SHOULD.
    pub fn set_levels(&mut self, requirements: &[Requirement]) {
        self.should = requirements
            .iter()
            .filter(|r| r.level == "SHOULD" && self.requirements.contains(&r.id))
            .map(|r| r.id.clone())
            .collect();
    }

    /// Whether a failed check proving `proves` stops the scenario: it does
    /// unless every requirement it proves is SHOULD. A setup check (it
    /// proves nothing) always blocks.
    pub fn blocks(&self, proves: &[String]) -> bool {
        proves.is_empty() || proves.iter().any(|id| !self.should.contains(id))
    }

    /// The requirements the checks of `step` prove between them (status,
    /// schema, captures: the step's; each assertion: its own).
    pub fn step_requirements<'a>(&'a self, step: &'a Step) -> BTreeSet<&'a str> {
        let (expect, captures) = match &step.action {
            Action::Request(request) => (&request.expect, !request.capture.is_empty()),
            Action::MockLog(mock) => (&mock.expect, !mock.capture.is_empty()),
            Action::Quiet { .. } => return BTreeSet::new(),
        };
        let mut ids = BTreeSet::new();
        let own = !expect.status.is_empty()
            || expect.schema.is_some()
            || !expect.schemas.is_empty()
            || captures;
        if own {
            ids.extend(self.step_proves(step).iter().map(String::as_str));
        }
        for assertion in &expect.assertions {
            ids.extend(
                self.assertion_proves(step, assertion)
                    .iter()
                    .map(String::as_str),
            );
        }
        ids
    }

    /// The requirements `assertion`, one of `step`'s, proves.
    pub fn assertion_proves<'a>(
        &'a self,
        step: &'a Step,
        assertion: &'a Assertion,
    ) -> &'a [String] {
        assertion
            .proves
            .as_deref()
            .unwrap_or_else(|| self.step_proves(step))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Seams from `conformanceSeams.goals` (`continue`, `events`, ...).
    pub seams: Vec<String>,
    /// Continuation modes that must be in `agents.goals.continuation`.
    pub continuation: Vec<String>,
    /// 2 needs a second tenant's token.
    pub tenants: u8,
    /// Runs only when `agents.goals.requiresBounds` (true when absent) has
    /// this value.
    pub requires_bounds: Option<bool>,
    /// Runs only when `agents.goals.judge` is this judge (`verifier` or
    /// `host`).
    pub judge: Option<String>,
    /// Suite options the run must have been given (`webhook-secret`).
    pub options: Vec<String>,
    /// Runs only when discovery advertises an egress policy that denies
    /// internal webhook targets (`webhookEgress.internal: "denied"`).
    pub egress_policy: bool,
    /// Runs only when discovery advertises reported runs for `manual`
    /// goals (`host.reportedRuns.continuation`; PROFILE.md "Reported
    /// runs").
    pub reported_runs: bool,
    /// Runs only when discovery advertises the attention extension
    /// (`extensions.goalpost.attention`; PROFILE.md "Profile `attention`").
    pub attention: bool,
    /// Runs only when discovery advertises the goal's events as host API
    /// (`host.events`: `goalList` for `{base}/{id}/events` and
    /// `/evaluations`, `stream` for the tenant's event stream; PROFILE.md
    /// "Host events").
    pub host_events: Option<String>,
    /// Endpoints of one deployment the run must name (`--host` once per
    /// replica): the cluster profile's scenarios need 2 or more.
    pub endpoints: u8,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: String,
    /// Index in the scenario's `steps` (0-based).
    pub index: usize,
    /// JSON pointer of the step in its file, e.g. `/steps/2`.
    pub pointer: String,
    /// The requirements this step's checks prove, as written: `None` means
    /// every requirement the scenario names, an empty list a setup step.
    /// Read it through [`Scenario::step_proves`].
    pub proves: Option<Vec<String>>,
    /// Run this step only when an earlier step's answer had one of these
    /// statuses; `None`: always run it.
    pub when: Option<When>,
    pub action: Action,
}

/// `when` on a step: the step runs only when the final answer of an
/// earlier request step had a matching status; otherwise it sends nothing
/// and makes no check. So a scenario can check what a host's choice
/// implies ("accepted: every member applied"; "refused: nothing changed")
/// without prescribing the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct When {
    /// JSON pointer of the `when` in its file, e.g. `/steps/4/when`.
    pub pointer: String,
    /// Index of the step whose answer it reads (an earlier, unconditional
    /// request step sent once: the loader checks it).
    pub step: usize,
    /// The step's name as written, for messages.
    pub step_name: String,
    /// Matches when any entry does.
    pub status: Vec<StatusMatch>,
}

impl When {
    /// Whether `status` (the read step's answer) lets the step run.
    pub fn holds(&self, status: u16) -> bool {
        self.status.iter().any(|wanted| wanted.matches(status))
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let statuses: Vec<String> = self.status.iter().map(ToString::to_string).collect();
        write!(
            f,
            "step {} \"{}\" answered {}",
            self.step + 1,
            self.step_name,
            statuses.join(" or ")
        )
    }
}

/// One status a `when` accepts: a class (`"2xx"`) or one code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMatch {
    /// Every status of the class whose hundreds digit this is (1..=5).
    Class(u16),
    Code(u16),
}

impl StatusMatch {
    pub fn matches(self, status: u16) -> bool {
        match self {
            StatusMatch::Class(hundreds) => status / 100 == hundreds,
            StatusMatch::Code(code) => status == code,
        }
    }
}

impl fmt::Display for StatusMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusMatch::Class(hundreds) => write!(f, "{hundreds}xx"),
            StatusMatch::Code(code) => write!(f, "{code}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Request(Box<RequestStep>),
    /// Assertions on the mock's call log instead of a host response.
    MockLog(Box<MockStep>),
    /// A silent period with no requests at all.
    Quiet {
        ms: u64,
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RequestStep {
    pub request: Request,
    pub expect: Expect,
    pub capture: BTreeMap<String, Capture>,
    pub repeat: Repeat,
    /// Send the request this many times at once; `expect` and `capture`
    /// then apply to the aggregate of the answers.
    pub parallel: Option<Parallel>,
}

/// A `parallel` request step: `count` copies of one request released
/// together, each rendered with `{parallel.index}` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallel {
    pub count: u32,
}

/// A `mockLog` step: its "response" is the JSON view of the mock's call
/// log, narrowed by `window`.
#[derive(Debug, Clone, PartialEq)]
pub struct MockStep {
    pub window: MockWindow,
    /// Only `assert` (no status, no schema: nothing was sent).
    pub expect: Expect,
    pub capture: BTreeMap<String, Capture>,
    pub repeat: Repeat,
}

/// Which calls a `mockLog` step sees; values are templated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MockWindow {
    /// Only this goal's calls (`"{goalId}"`).
    pub goal_id: Option<String>,
    /// Only calls arriving after this many ms since the scenario started (to
    /// the microsecond): a number or `"{var}"` captured with `clock: "ms"`.
    pub since_ms: Option<Value>,
    /// Calls in the first `grace_ms` after `since_ms` were in flight: left
    /// out of the view, counted in its `window` block.
    pub grace_ms: u64,
}

/// A report line: the suite's own count next to the host's claim, both
/// templates rendered with the scenario's variables when it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationSpec {
    pub what: String,
    /// The requirement it speaks to; every requirement of the scenario when
    /// absent.
    pub requirement: Option<String>,
    pub suite: Value,
    pub host: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    Once,
    /// Repeat until `expect` holds or the deadline passes.
    Poll {
        timeout_ms: u64,
        interval_ms: u64,
    },
    /// Repeat for the whole window; every response must satisfy `expect`.
    Observe {
        for_ms: u64,
        interval_ms: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Principal {
    A,
    B,
    Anonymous,
    /// Tenant A's credential that holds a principal's authority
    /// (`--principal-token`).
    PrincipalAuthority,
    /// Tenant A's credential that holds the host's authority
    /// (`--host-authority-token`).
    HostAuthority,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// Templated.
    pub path: String,
    pub principal: Principal,
    /// Values templated; names sent as written.
    pub headers: BTreeMap<String, String>,
    pub body: Body,
    pub content_type: Option<String>,
    /// The seam this request exercises, so a 404 from an advertised seam is
    /// reported as the seam missing rather than as a plain status mismatch.
    pub seam: Option<String>,
    /// The endpoint of the deployment to send to (1-based, as `--host` was
    /// given) instead of the next in turn: a scenario that must reach a
    /// second replica names it.
    pub endpoint: Option<u8>,
    /// Read the answer as a Server-Sent Events stream for this long (ms),
    /// then close it: the step's JSON is the messages read
    /// (`{messages: [{id, event, data}], ended}`).
    pub stream_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    None,
    /// Templated JSON.
    Json(Value),
    /// Sent as is after templating.
    Raw(String),
    /// Sent byte for byte, never templated (`rawBodyBase64`): bodies that
    /// are not UTF-8.
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// Empty: any status.
    pub status: Vec<u16>,
    pub schema: Option<String>,
    pub assertions: Vec<Assertion>,
    /// Parallel steps only: the schema each answer of that status must
    /// match. An entry counts as a check only when some answer had that
    /// status (see [`Expect::checks`]).
    pub schemas: BTreeMap<u16, String>,
}

impl Expect {
    /// Checks one evaluation of this expectation makes, not counting
    /// `schemas` (the parallel driver adds the entries it applied).
    pub fn checks(&self) -> u32 {
        let status = u32::from(!self.status.is_empty());
        let schema = u32::from(self.schema.is_some());
        let assertions = u32::try_from(self.assertions.len()).unwrap_or(u32::MAX);
        status.saturating_add(schema).saturating_add(assertions)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// RFC 6901 pointer into the JSON body.
    Pointer(String),
    /// Header name, case-insensitive.
    Header(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pointer(pointer) if pointer.is_empty() => write!(f, "body"),
            Target::Pointer(pointer) => write!(f, "pointer {pointer}"),
            Target::Header(name) => write!(f, "header {name}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// JSON pointer of the assertion in its file.
    pub pointer: String,
    pub target: Target,
    /// Keeps array elements whose sub-pointers equal every value (templated).
    pub filter: Vec<(String, Value)>,
    /// Projects each kept element through this sub-pointer.
    pub map: Option<String>,
    pub predicate: Predicate,
    /// The requirements this assertion proves, overriding its step's; `None`
    /// takes the step's.
    pub proves: Option<Vec<String>>,
}

/// How an assertion reads an array, as messages name it: ` where
/// <pointer>=<value>, …` for its filter, then ` mapped through <pointer>`
/// for its mapping; empty when it has neither.
pub fn array_reading<P, V>(filter: impl IntoIterator<Item = (P, V)>, map: Option<&str>) -> String
where
    P: fmt::Display,
    V: fmt::Display,
{
    let filter: Vec<String> = filter
        .into_iter()
        .map(|(pointer, value)| format!("{pointer}={value}"))
        .collect();
    let mut text = String::new();
    if !filter.is_empty() {
        text.push_str(&format!(" where {}", filter.join(", ")));
    }
    if let Some(map) = map {
        text.push_str(&format!(" mapped through {map}"));
    }
    text
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Gt,
    Gte,
    Lt,
    Lte,
}

impl CompareOp {
    pub fn keyword(self) -> &'static str {
        match self {
            CompareOp::Gt => "gt",
            CompareOp::Gte => "gte",
            CompareOp::Lt => "lt",
            CompareOp::Lte => "lte",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthOp {
    Exactly,
    AtLeast,
    AtMost,
}

impl LengthOp {
    pub fn keyword(self) -> &'static str {
        match self {
            LengthOp::Exactly => "length",
            LengthOp::AtLeast => "minLength",
            LengthOp::AtMost => "maxLength",
        }
    }
}

/// Operands are JSON values that may hold templates; they are rendered
/// against the scenario's variables when the assertion is evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    Equals(Value),
    NotEquals(Value),
    OneOf(Vec<Value>),
    Exists(bool),
    Absent,
    Compare(CompareOp, Value),
    Length(LengthOp, Value),
    Contains(Value),
    NotContains(Value),
    Increasing,
    /// `min`/`max` are whole milliseconds or a `{variable}` holding one.
    WithinMs {
        of: String,
        min: Option<Value>,
        max: Option<Value>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capture {
    Pointer(String),
    Header(String),
    /// When the step's final answer arrived (for a `mockLog` step: when its
    /// view was taken).
    Clock(ClockFormat),
    /// That instant plus this many milliseconds (a time to name in a
    /// request, such as a pause's `until`, and to check against later).
    Later(ClockFormat, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockFormat {
    /// Whole milliseconds since the scenario started, the mock log's clock.
    Ms,
    /// RFC 3339 wall-clock time.
    Rfc3339,
}

/// One entry of `scenarios/requirements.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    pub id: String,
    pub profile: String,
    pub level: String,
    pub clause: String,
    pub text: String,
    /// What it applies to (PROFILE.md "Capabilities"): every feature must
    /// be advertised for it to apply, every run need met to judge it.
    /// Empty: every host that advertises `agents.goals`.
    pub capability: Vec<Capability>,
}

impl Requirement {
    /// Its features (the host's choices), in registry order.
    pub fn features(&self) -> impl Iterator<Item = Capability> + '_ {
        self.capability.iter().copied().filter(|c| c.is_feature())
    }
}

/// The strings of a JSON array, in order, for documents read leniently (a
/// host's discovery, a scenario file under lint): an item that is not a
/// string is passed over, and anything but an array reads as none.
pub fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
