//! The typed model of a scenario file and of the requirement registry.
//!
//! Every scenario carries its file path and every step and assertion the JSON
//! pointer it came from, so a failure can always say exactly which line of
//! which file made the claim that did not hold.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

/// One scenario file, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The trial name, `<profile>::<file stem>`.
    pub name: String,
    pub profile: String,
    pub path: PathBuf,
    pub title: String,
    pub requirements: Vec<String>,
    pub needs: Needs,
    /// How many checks the scenario makes at least.
    pub checks: u32,
    pub steps: Vec<Step>,
}

impl Scenario {
    /// Milliseconds the scenario spends in `quietMs` steps: waits nothing can
    /// shorten, reported so a slow run can be explained.
    pub fn quiet_ms(&self) -> u64 {
        self.steps
            .iter()
            .map(|step| match &step.action {
                Action::Quiet { ms, .. } => *ms,
                Action::Request(_) => 0,
            })
            .sum()
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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: String,
    /// Index in the scenario's `steps` (0-based).
    pub index: usize,
    /// JSON pointer of the step in its file, e.g. `/steps/2`.
    pub pointer: String,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Request(Box<RequestStep>),
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
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    None,
    /// Templated JSON.
    Json(Value),
    /// Sent as is after templating.
    Raw(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// Empty: any status.
    pub status: Vec<u16>,
    pub schema: Option<String>,
    pub assertions: Vec<Assertion>,
}

impl Expect {
    /// Checks one evaluation of this expectation makes.
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
}
