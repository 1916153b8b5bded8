//! The goal aggregate and its enumerations.

use super::bounds::Bounds;
use super::ids::{GoalId, Objective, Tenant};
use super::money::MicroUsd;
use super::refs::{ArmRef, VerifierRef};
use super::run_ids::RunIds;
use super::timestamp::Timestamp;
use super::verdict::LastVerdict;

/// How long a `schedule` arm waits between runs when its ref names no
/// interval.
pub const DEFAULT_INTERVAL_MS: u64 = 60_000;
/// How long a `heartbeat` arm waits between probes when its ref names no
/// interval.
pub const DEFAULT_HEARTBEAT_MS: u64 = 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GoalState {
    Active,
    Satisfied,
    Escalated,
    Abandoned,
    BoundExceeded,
}

impl GoalState {
    pub const ALL: [GoalState; 5] = [
        GoalState::Active,
        GoalState::Satisfied,
        GoalState::Escalated,
        GoalState::Abandoned,
        GoalState::BoundExceeded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GoalState::Active => "active",
            GoalState::Satisfied => "satisfied",
            GoalState::Escalated => "escalated",
            GoalState::Abandoned => "abandoned",
            GoalState::BoundExceeded => "bound-exceeded",
        }
    }

    pub fn parse(text: &str) -> Option<GoalState> {
        GoalState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
    }

    /// Open: not closed. Open goals count toward a tenant's quotas.
    pub fn is_open(self) -> bool {
        !self.is_terminal()
    }

    /// Terminal states accept no transition and no edit, ever.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            GoalState::Satisfied | GoalState::Abandoned | GoalState::BoundExceeded
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Verifier,
    Host,
}

impl Check {
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Verifier => "verifier",
            Check::Host => "host",
        }
    }

    pub fn parse(text: &str) -> Option<Check> {
        match text {
            "verifier" => Some(Check::Verifier),
            "host" => Some(Check::Host),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Schedule,
    Commitment,
    Heartbeat,
    Manual,
}

impl Mode {
    /// The modes this host runs, in the order discovery lists them.
    pub const SUPPORTED: [Mode; 4] = [
        Mode::Manual,
        Mode::Schedule,
        Mode::Heartbeat,
        Mode::Commitment,
    ];

    /// Whether goals in this mode run on their own (the scheduler starts
    /// their runs), so count against the armed quota: `schedule`,
    /// `heartbeat`, and `commitment` (its runs start whenever the last one
    /// committed to a check-in).
    pub fn is_armed(self) -> bool {
        matches!(self, Mode::Schedule | Mode::Heartbeat | Mode::Commitment)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Schedule => "schedule",
            Mode::Commitment => "commitment",
            Mode::Heartbeat => "heartbeat",
            Mode::Manual => "manual",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        [
            Mode::Schedule,
            Mode::Commitment,
            Mode::Heartbeat,
            Mode::Manual,
        ]
        .into_iter()
        .find(|mode| mode.as_str() == text)
    }

    pub fn is_supported(self) -> bool {
        Mode::SUPPORTED.contains(&self)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub check: Check,
    pub verifier_ref: Option<VerifierRef>,
    pub last_verdict: Option<LastVerdict>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Continuation {
    pub mode: Mode,
    pub arm_ref: Option<ArmRef>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Progress {
    pub iterations: u64,
    pub contributing_run_ids: RunIds,
}

/// `GET {base}/{id}/attention`: pause is attention, not state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    Active,
    Paused,
    Stopped,
}

impl Attention {
    pub fn as_str(self) -> &'static str {
        match self {
            Attention::Active => "active",
            Attention::Paused => "paused",
            Attention::Stopped => "stopped",
        }
    }
}

/// A standing goal. The wire fields are public for reading; the host-private
/// ones (`paused`, `spent`, `next_fire_at`, `version`) never leave the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    pub id: GoalId,
    pub objective: Objective,
    pub state: GoalState,
    pub completion: Completion,
    pub continuation: Continuation,
    pub bounds: Bounds,
    pub owner: Tenant,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub progress: Progress,
    /// Continuation disarmed by a person (`pause`); `state` stays `active`.
    pub paused: bool,
    /// Accumulated cost of every finished run, escalated ones included.
    pub spent: MicroUsd,
    /// When a `schedule` arm fires next; `None` means as soon as it can.
    pub next_fire_at: Option<Timestamp>,
    /// Grows by one on every stored change; the `ETag`.
    pub version: u64,
    /// Escalation, resolution and last outcome: never on the wire goal.
    pub notes: super::notes::Notes,
}

/// What is left of a goal's bounds; `None` = unbounded.
#[derive(Debug, Clone, PartialEq)]
pub struct Remaining {
    pub iterations: Option<u64>,
    pub cost: Option<MicroUsd>,
    pub deadline: Option<Timestamp>,
}

impl Goal {
    /// Whether the scheduler's fire applies to a commitment goal now: one
    /// is armed and its instant has come (PROFILE.md "Commitment
    /// continuation", `domain::commitment`).
    pub fn commitment_due(&self, now: Timestamp) -> bool {
        self.continuation.mode == Mode::Commitment
            && !self.paused
            && self.next_fire_at.is_some_and(|at| at <= now)
    }

    pub fn deadline(&self) -> Option<Timestamp> {
        self.bounds.deadline(self.created_at)
    }

    /// The number the goal's next run gets: iterations count from 1.
    pub fn next_iteration(&self) -> u64 {
        self.progress.iterations.saturating_add(1)
    }

    /// What is left of the bounds now: iterations not yet used, budget not
    /// yet spent, and the deadline (fixed at creation, so it never moves).
    pub fn remaining(&self) -> Remaining {
        Remaining {
            iterations: self
                .bounds
                .max_loop_iterations()
                .map(|max| max.saturating_sub(self.progress.iterations)),
            cost: self
                .bounds
                .max_cost()
                .map(|cap| cap.micros().saturating_sub(self.spent)),
            deadline: self.deadline(),
        }
    }

    pub fn attention(&self) -> Attention {
        match (self.state, self.paused) {
            (GoalState::Active, false) => Attention::Active,
            (GoalState::Active, true) => Attention::Paused,
            _ => Attention::Stopped,
        }
    }

    pub fn interval_ms(&self) -> u64 {
        self.continuation
            .arm_ref
            .as_ref()
            .and_then(ArmRef::interval_ms)
            .unwrap_or(DEFAULT_INTERVAL_MS)
    }

    pub fn heartbeat_ms(&self) -> u64 {
        self.continuation
            .arm_ref
            .as_ref()
            .and_then(ArmRef::heartbeat_ms)
            .unwrap_or(DEFAULT_HEARTBEAT_MS)
    }

    pub fn etag(&self) -> String {
        format!("\"{}\"", self.version)
    }
}
