//! Attention events: content-free, as RFC 0097's are. A payload carries
//! ids, modes, flags, counts and instants; never the objective, an
//! evidence label or summary, or a run's output.

use serde_json::{Map, Value};

use super::binding::{AttentionMode, BindingStatus};
use super::policy::{Authority, Policy};
use crate::domain::ids::{BindingId, EvidenceId, GoalId, RunId};
use crate::domain::timestamp::Timestamp;

macro_rules! kinds {
    ($($variant:ident $name:literal),* $(,)?) => {
        /// Every attention event type.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum EventKind {
            $($variant,)*
        }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }
        }
    };
}

kinds! {
    PolicySet "attention.policy.set",
    BindingCreated "attention.binding.created",
    BindingPaused "attention.binding.paused",
    BindingResumed "attention.binding.resumed",
    BindingSuperseded "attention.binding.superseded",
    BindingStopped "attention.binding.stopped",
    BindingRan "attention.binding.ran",
    EvidenceAdded "attention.evidence.added",
    EvidenceResolved "attention.evidence.resolved",
    VerdictRecorded "attention.verdict.recorded",
    ConfirmationRecorded "attention.confirmation.recorded",
    ClosureRequested "attention.closure.requested",
    ClosureHeld "attention.closure.held",
}

impl EventKind {
    pub fn parse(text: &str) -> Option<EventKind> {
        EventKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == text)
    }
}

/// One attention event: its type, its goal and the rest of its
/// (content-free) payload.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionEvent {
    pub kind: EventKind,
    pub goal_id: GoalId,
    /// Every member but `goalId`.
    pub fields: Map<String, Value>,
}

/// Builds a payload from ids and flags only.
struct Payload(GoalId, Map<String, Value>);

impl Payload {
    fn of(goal: &GoalId) -> Payload {
        Payload(goal.clone(), Map::new())
    }

    fn with(mut self, key: &str, value: impl Into<Value>) -> Payload {
        self.1.insert(key.into(), value.into());
        self
    }

    fn binding(self, binding: &BindingId) -> Payload {
        self.with("bindingId", binding.as_str())
    }

    fn done(self, kind: EventKind) -> AttentionEvent {
        AttentionEvent {
            kind,
            goal_id: self.0,
            fields: self.1,
        }
    }
}

impl AttentionEvent {
    /// The payload as the wire shows it: `goalId` and the other members.
    pub fn payload(&self) -> Value {
        let mut payload = Map::new();
        payload.insert("goalId".into(), Value::from(self.goal_id.as_str()));
        payload.extend(self.fields.clone());
        Value::Object(payload)
    }

    pub fn policy_set(goal: &GoalId, policy: &Policy) -> AttentionEvent {
        let payload = Payload::of(goal).with("kind", policy.kind());
        match policy {
            Policy::Quorum { threshold } => payload.with("threshold", *threshold),
            _ => payload,
        }
        .done(EventKind::PolicySet)
    }

    pub fn created(goal: &GoalId, binding: &BindingId, mode: AttentionMode) -> AttentionEvent {
        Payload::of(goal)
            .binding(binding)
            .with("mode", mode.as_str())
            .done(EventKind::BindingCreated)
    }

    pub fn status(goal: &GoalId, binding: &BindingId, status: &BindingStatus) -> AttentionEvent {
        let payload = Payload::of(goal).binding(binding);
        match status {
            BindingStatus::Active => payload.done(EventKind::BindingResumed),
            BindingStatus::Paused { until } => payload
                .with("until", until.map(Timestamp::to_wire))
                .done(EventKind::BindingPaused),
            BindingStatus::Superseded { by } => payload
                .with("supersededBy", by.as_str())
                .done(EventKind::BindingSuperseded),
            BindingStatus::Stopped => payload.done(EventKind::BindingStopped),
        }
    }

    /// A timed pause woken by the host's clock.
    pub fn woken(goal: &GoalId, binding: &BindingId) -> AttentionEvent {
        Payload::of(goal)
            .binding(binding)
            .with("woken", true)
            .done(EventKind::BindingResumed)
    }

    /// A binding's run was recorded; `refused` counts what its answer
    /// claimed beyond its mode's authority, `failed` says it had no usable
    /// answer.
    pub fn ran(
        goal: &GoalId,
        binding: &BindingId,
        mode: AttentionMode,
        run: &RunId,
        iteration: u64,
        refused: usize,
        failed: bool,
    ) -> AttentionEvent {
        Payload::of(goal)
            .binding(binding)
            .with("mode", mode.as_str())
            .with("runId", run.as_str())
            .with("iteration", iteration)
            .with("refused", refused)
            .with("failed", failed)
            .done(EventKind::BindingRan)
    }

    pub fn evidence_added(
        goal: &GoalId,
        binding: &BindingId,
        evidence: &EvidenceId,
        blocking: bool,
    ) -> AttentionEvent {
        Payload::of(goal)
            .binding(binding)
            .with("evidenceId", evidence.as_str())
            .with("blocking", blocking)
            .done(EventKind::EvidenceAdded)
    }

    pub fn evidence_resolved(goal: &GoalId, evidence: &EvidenceId) -> AttentionEvent {
        Payload::of(goal)
            .with("evidenceId", evidence.as_str())
            .done(EventKind::EvidenceResolved)
    }

    pub fn verdict(
        goal: &GoalId,
        binding: &BindingId,
        approve: bool,
        revision: u64,
    ) -> AttentionEvent {
        Payload::of(goal)
            .binding(binding)
            .with("approve", approve)
            .with("revision", revision)
            .done(EventKind::VerdictRecorded)
    }

    pub fn confirmation(goal: &GoalId, authority: Authority, revision: u64) -> AttentionEvent {
        Payload::of(goal)
            .with("authority", authority.as_str())
            .with("revision", revision)
            .done(EventKind::ConfirmationRecorded)
    }

    /// A request to close, by a binding's answer or a client (`binding`
    /// `None`), and the policy's answer.
    pub fn closure_requested(
        goal: &GoalId,
        binding: Option<&BindingId>,
        granted: bool,
    ) -> AttentionEvent {
        Payload::of(goal)
            .with("bindingId", binding.map(BindingId::as_str))
            .with("granted", granted)
            .done(EventKind::ClosureRequested)
    }

    /// A satisfied verdict whose closure the policy (or blocking evidence)
    /// holds: the goal stays active.
    pub fn closure_held(goal: &GoalId, run: &RunId) -> AttentionEvent {
        Payload::of(goal)
            .with("runId", run.as_str())
            .done(EventKind::ClosureHeld)
    }
}
