//! The result of one check of a step that did not hold, typed: what kind
//! of claim it was, where the scenario makes it, what was expected and seen,
//! and which requirements it counts against.
//!
//! The driver makes one for every claim that fails (status, schema,
//! assertion, or a capture that found nothing) whatever the step looked at;
//! the reports read its parts, never its wording.

use serde::{Deserialize, Serialize};

/// What kind of claim a check makes. Decisions that depend on the kind
/// (an answer with the wrong status proves nothing else) read this, never
/// the check's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CheckKind {
    /// The answer's status is one the step expects.
    Status,
    /// The answer's body is valid against a named schema.
    Schema,
    /// One `assert` entry of the step.
    #[default]
    Assertion,
    /// A `capture` found a value for a later step.
    Capture,
}

/// One claim of the scenario that what the step saw broke. Serialized as
/// the `check` of a report's failed step; the kind and the attribution are
/// the run's own (a report read back has the defaults).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    #[serde(skip)]
    pub kind: CheckKind,
    /// JSON pointer of the claim in the scenario file.
    pub at: String,
    /// What was checked: `status`, `pointer /state`, `schema goal ...`.
    pub what: String,
    /// The JSON pointer into the response body the claim is about, when it
    /// is about the body.
    pub pointer: Option<String>,
    pub expected: String,
    pub actual: String,
    /// A sentence that explains the miss better than expected/actual alone.
    pub note: Option<String>,
    /// Polling and observation: which attempt this was.
    pub context: Option<String>,
    /// The requirements the claim proves; empty for a setup check.
    #[serde(skip)]
    pub proves: Vec<String>,
    /// Whether its failure stops the scenario (see
    /// [`crate::model::Scenario::blocks`]).
    #[serde(skip)]
    pub blocking: bool,
}
