//! How a scenario ended, typed: the vocabulary the driver writes, the
//! ledger turns into dispositions and the report writers read.
//!
//! It sits below all three so none of them imports another to name a
//! result (the report used to own the failed step, which made the ledger
//! and the report import each other).

pub mod check;
pub mod exchange;
pub mod observation;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use check::{CheckKind, CheckResult};
pub use exchange::{FailedStep, Redactor};

/// Schema violations quoted in one message, by the loader and the driver
/// alike: enough to act on, few enough to read; the rest are counted or cut.
pub const VIOLATIONS_SHOWN: usize = 5;
use observation::Observation;

/// Why a scenario or a requirement was not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// The host does not advertise `agents.goals`, or a needed mode.
    NotAdvertised,
    /// A needed seam is not in `conformanceSeams.goals`.
    SeamAbsent,
    /// The scenario needs `--token-b`.
    NeedsSecondTenant,
    /// Its profile was not selected.
    OptedOut,
    /// A harness name filter or `--skip` left it out of this run.
    Filtered,
    /// A suite option it needs (e.g. `--webhook-secret`) was not given.
    NotConfigured,
    /// It needs more endpoints of one deployment (`--host` once per
    /// replica) than the run named.
    NeedsEndpoints,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NotAdvertised => "not-advertised",
            SkipReason::SeamAbsent => "seam-absent",
            SkipReason::NeedsSecondTenant => "needs-second-tenant",
            SkipReason::OptedOut => "opted-out",
            SkipReason::Filtered => "filtered",
            SkipReason::NotConfigured => "not-configured",
            SkipReason::NeedsEndpoints => "needs-endpoints",
        }
    }

    /// Every reason, in the order the reports' legends list them.
    pub const ALL: [SkipReason; 7] = [
        SkipReason::NotAdvertised,
        SkipReason::SeamAbsent,
        SkipReason::NeedsSecondTenant,
        SkipReason::NeedsEndpoints,
        SkipReason::NotConfigured,
        SkipReason::OptedOut,
        SkipReason::Filtered,
    ];

    /// The reason a keyword names (`as_str`'s inverse).
    pub fn parse(keyword: &str) -> Option<SkipReason> {
        SkipReason::ALL.into_iter().find(|r| r.as_str() == keyword)
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// How one scenario ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The host broke a claim; the message says which.
    Fail(String),
    Skip(SkipReason),
    /// The host could not be used (transport, timeout, garbage body).
    Error(String),
}

impl Outcome {
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Pass => OutcomeKind::Pass,
            Outcome::Fail(_) => OutcomeKind::Fail,
            Outcome::Skip(_) => OutcomeKind::Skip,
            Outcome::Error(_) => OutcomeKind::Error,
        }
    }

    pub fn keyword(&self) -> &'static str {
        self.kind().as_str()
    }

    pub fn message(&self) -> Option<String> {
        match self {
            Outcome::Pass => None,
            Outcome::Fail(message) | Outcome::Error(message) => Some(message.clone()),
            Outcome::Skip(reason) => Some(reason.to_string()),
        }
    }
}

/// What one scenario run says about one requirement it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequirementOutcome {
    /// Every check proving it ran and held.
    Pass,
    /// A check proving it failed. What that means at the requirement's
    /// level (a SHOULD requirement's failure is an advisory) is the
    /// ledger's to say.
    Fail(Attributed),
    /// Its checks never ran: an earlier blocking check of another
    /// requirement, or a setup check, failed. The reason names the step and
    /// what failed there.
    NotReached(String),
    /// The host could not be used while its checks were pending.
    Error(Attributed),
}

impl RequirementOutcome {
    pub fn kind(&self) -> DispositionKind {
        match self {
            RequirementOutcome::Pass => DispositionKind::Pass,
            RequirementOutcome::Fail(_) => DispositionKind::Fail,
            RequirementOutcome::NotReached(_) => DispositionKind::NotReached,
            RequirementOutcome::Error(_) => DispositionKind::Error,
        }
    }

    pub fn keyword(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Why it did not pass.
    pub fn message(&self) -> Option<&str> {
        match self {
            RequirementOutcome::Pass => None,
            RequirementOutcome::Fail(why) | RequirementOutcome::Error(why) => Some(&why.message),
            RequirementOutcome::NotReached(reason) => Some(reason),
        }
    }

    /// The step whose check failed (or errored on) this requirement, with
    /// that check's exchange.
    pub fn failed_step(&self) -> Option<&FailedStep> {
        match self {
            RequirementOutcome::Fail(why) | RequirementOutcome::Error(why) => {
                why.failed_step.as_deref()
            }
            RequirementOutcome::Pass | RequirementOutcome::NotReached(_) => None,
        }
    }

    /// What a whole-scenario outcome says about each requirement, for
    /// scenarios that recorded nothing finer (skipped, never run, errored
    /// before their first step).
    pub fn from_outcome(outcome: &Outcome, failed_step: Option<&FailedStep>) -> Option<Self> {
        let why = |message: &String| Attributed {
            message: message.clone(),
            failed_step: failed_step.cloned().map(Box::new),
        };
        match outcome {
            Outcome::Pass => Some(RequirementOutcome::Pass),
            Outcome::Fail(message) => Some(RequirementOutcome::Fail(why(message))),
            Outcome::Error(message) => Some(RequirementOutcome::Error(why(message))),
            Outcome::Skip(_) => None,
        }
    }
}

/// A failure or error pinned on a requirement: the message of the check
/// that failed it and that check's step and exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributed {
    pub message: String,
    pub failed_step: Option<Box<FailedStep>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioResult {
    pub name: String,
    pub outcome: Outcome,
    /// Checks made (0 when not run).
    pub checks: u32,
    pub duration: Duration,
    /// Time spent in `quietMs` steps.
    pub quiet: Duration,
    /// The step that failed or errored, with its exchange.
    pub failed_step: Option<Box<FailedStep>>,
    /// The suite's own counts next to the host's claims.
    pub observations: Vec<Observation>,
    /// Per requirement the scenario names, what this run says about it.
    /// Empty when the scenario did not run (skipped, or errored before it
    /// could): then `outcome` speaks for every requirement it names.
    pub requirements: BTreeMap<String, RequirementOutcome>,
    /// Conditional steps (`when`) that did not run, in step order: what
    /// the host answered decided which branch was checked, and a reader
    /// of the report sees which.
    pub not_taken: Vec<NotTaken>,
}

/// A `when` step that did not run: the step it depends on answered a
/// status its `when` does not name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotTaken {
    /// 1-based position of the step in its scenario.
    pub step: usize,
    pub name: String,
    /// The earlier step its `when` names, and that step's final status.
    pub when_step: String,
    pub answered: Option<u16>,
}

impl ScenarioResult {
    /// What this run says about requirement `id`; `None` for a skip.
    pub fn requirement(&self, id: &str) -> Option<RequirementOutcome> {
        match self.requirements.get(id) {
            Some(outcome) => Some(outcome.clone()),
            None => RequirementOutcome::from_outcome(&self.outcome, self.failed_step.as_deref()),
        }
    }

    pub fn skipped(name: &str, reason: SkipReason) -> ScenarioResult {
        ScenarioResult {
            name: name.to_string(),
            outcome: Outcome::Skip(reason),
            checks: 0,
            duration: Duration::ZERO,
            quiet: Duration::ZERO,
            failed_step: None,
            observations: Vec::new(),
            requirements: BTreeMap::new(),
            not_taken: Vec::new(),
        }
    }
}

/// How a scenario ended, as a report names it (`outcome` in report.json).
/// A report that names none reads as an error, never as a pass.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeKind {
    Pass,
    Fail,
    Skip,
    #[default]
    Error,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 4] = [
        OutcomeKind::Pass,
        OutcomeKind::Fail,
        OutcomeKind::Skip,
        OutcomeKind::Error,
    ];

    /// The outcome a report keyword names (`as_str`'s inverse).
    pub fn parse(keyword: &str) -> Option<OutcomeKind> {
        OutcomeKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == keyword)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Pass => "pass",
            OutcomeKind::Fail => "fail",
            OutcomeKind::Skip => "skip",
            OutcomeKind::Error => "error",
        }
    }

    /// Failed or errored: what makes a run exit 1.
    pub fn is_failure(self) -> bool {
        matches!(self, OutcomeKind::Fail | OutcomeKind::Error)
    }
}

impl fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A requirement's disposition as a report names it (`disposition` in
/// report.json). A report that names none reads as an error, never as a
/// pass.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum DispositionKind {
    Pass,
    Fail,
    Advisory,
    NotReached,
    Skip,
    /// The requirement names a feature the host does not advertise: it does
    /// not apply to this host. Never blocks, never a pass.
    NotApplicable,
    #[default]
    Error,
}

impl DispositionKind {
    /// Every disposition, in the order the reports' legends list them.
    pub const ALL: [DispositionKind; 7] = [
        DispositionKind::Pass,
        DispositionKind::Fail,
        DispositionKind::Advisory,
        DispositionKind::NotReached,
        DispositionKind::Skip,
        DispositionKind::NotApplicable,
        DispositionKind::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DispositionKind::Pass => "pass",
            DispositionKind::Fail => "fail",
            DispositionKind::Advisory => "advisory",
            DispositionKind::NotReached => "not-reached",
            DispositionKind::Skip => "skip",
            DispositionKind::NotApplicable => "not-applicable",
            DispositionKind::Error => "error",
        }
    }

    /// The disposition a report keyword names (`as_str`'s inverse).
    pub fn parse(keyword: &str) -> Option<DispositionKind> {
        DispositionKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == keyword)
    }

    /// Fail, error or not-reached: something blocking went wrong (an
    /// advisory never blocks).
    pub fn is_blocking_failure(self) -> bool {
        matches!(
            self,
            DispositionKind::Fail | DispositionKind::Error | DispositionKind::NotReached
        )
    }
}

/// What a whole-scenario outcome says of each requirement it names.
impl From<OutcomeKind> for DispositionKind {
    fn from(kind: OutcomeKind) -> Self {
        match kind {
            OutcomeKind::Pass => DispositionKind::Pass,
            OutcomeKind::Fail => DispositionKind::Fail,
            OutcomeKind::Skip => DispositionKind::Skip,
            OutcomeKind::Error => DispositionKind::Error,
        }
    }
}

impl fmt::Display for DispositionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests;
