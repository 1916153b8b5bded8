//! The goal domain: values parsed at the boundary, the state machine and
//! SPEC §3's decision order as pure functions. No I/O here.

pub mod attention;
pub mod bounds;
pub mod commitment;
pub mod criteria;
pub mod decide;
pub mod egress;
pub mod event;
pub mod event_webhook;
pub mod goal;
pub mod ids;
pub mod money;
pub mod notes;
pub mod refs;
pub mod request;
pub mod run_ids;
pub mod timestamp;
pub mod transition;
pub mod verdict;
pub mod wire;

#[cfg(test)]
mod decide_tests;
#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod transition_tests;

pub use bounds::{Bounds, CostCap, CostReading};
pub use criteria::{CriteriaVerifier, Steps, VerifierName, JUDGE_STEPS};
pub use decide::{decide, exhausted, may_dispatch, run_outcome, Bound, Decision, Refusal};
pub use event::{Event, EventPayload};
pub use goal::{
    Attention, Check, Completion, Continuation, Goal, GoalState, Mode, Progress, Remaining,
};
pub use ids::{BindingId, ClientKey, EvidenceId, GoalId, Objective, RunId, Tenant};
pub use money::MicroUsd;
pub use notes::{Escalation, EscalationKind, Feedback, Notes, OpenEscalation, Resolution};
pub use refs::{ArmRef, ArmSpec, CriterionScript, VerifierRef, VerifierSpec, Webhook};
pub use request::{
    parse_create, parse_judge_ref, parse_judge_script, parse_patch, parse_run_report,
    parse_verifier, GoalPatch, NewGoal, NewVerifier, ReportedRun, RequestContext, RequestError,
    Unappliable,
};
pub use run_ids::RunIds;
pub use timestamp::Timestamp;
pub use transition::{Change, FinishedRun, TransitionError};
pub use verdict::{
    Criterion, Evaluation, FailureClass, Judgement, KeptCriteria, LastVerdict, RunOutcome, Verdict,
};
