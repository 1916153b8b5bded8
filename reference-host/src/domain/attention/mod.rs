//! The attention extension (PROFILE.md "Profile `attention`"): several
//! agents attend one goal, each through a binding with its own mode, arm
//! and status, and the goal closes only as its completion policy allows.
//!
//! It maps onto RFC 0097 without changing it (docs/DESIGN.md
//! "Attention"): the goal object, its states, bounds and events stay the
//! RFC's; a binding's run is one more iteration of the goal, counted
//! against its one set of bounds; attention itself is host state kept
//! with the goal and shown through resources of its own. Pure rules only.

mod answer;
mod binding;
mod closure;
mod event;
mod policy;
mod state;
mod transition;
pub mod wire;

#[cfg(test)]
mod tests;

pub use answer::{Admitted, BindingAnswer, NewEvidence};
pub use binding::{AttentionMode, Binding, BindingStatus, PauseWake, Powers};
pub use closure::{approvals, closure, Missing};
pub use event::{AttentionEvent, EventKind};
pub use policy::{Authority, Policy, MAX_QUORUM, REQUIRED_POLICIES};
pub use state::{
    claim_of, AttentionState, Confirmation, Evidence, Vote, MAX_BINDINGS, MAX_EVIDENCE,
    MAX_EVIDENCE_PER_ANSWER,
};
pub use transition::{
    change_status, confirm, count_run, create_binding, hold, hold_own_run, record_binding_run,
    request_close, resolve_evidence, set_policy, supersede, wake, AttentionError, BindingRun,
    NewBinding, StatusChange,
};
