//! Bindings: who attends a goal, in which mode, and whether that attention
//! is live. A binding is attention, never commitment: pausing or stopping
//! one changes nothing about its goal.

use crate::domain::ids::BindingId;
use crate::domain::refs::ArmRef;
use crate::domain::timestamp::Timestamp;

/// The stance an agent takes toward the goal it attends. Two live bindings
/// of one goal never share a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttentionMode {
    Pursue,
    Coordinate,
    Review,
    Falsify,
    Judge,
    Observe,
}

impl AttentionMode {
    /// Every mode, in the order discovery lists them.
    pub const ALL: [AttentionMode; 6] = [
        AttentionMode::Pursue,
        AttentionMode::Coordinate,
        AttentionMode::Review,
        AttentionMode::Falsify,
        AttentionMode::Judge,
        AttentionMode::Observe,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AttentionMode::Pursue => "pursue",
            AttentionMode::Coordinate => "coordinate",
            AttentionMode::Review => "review",
            AttentionMode::Falsify => "falsify",
            AttentionMode::Judge => "judge",
            AttentionMode::Observe => "observe",
        }
    }

    pub fn parse(text: &str) -> Option<AttentionMode> {
        AttentionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }

    /// What an answer of a binding in this mode may change. Adversarial
    /// and reviewing stances contribute evidence; only pursuit and judgement
    /// may ask for closure, and even they only ask: the policy decides.
    pub fn powers(self) -> Powers {
        let none = Powers::default();
        match self {
            AttentionMode::Pursue => Powers {
                evidence: true,
                request_close: true,
                judged_output: true,
                ..none
            },
            AttentionMode::Coordinate => Powers {
                evidence: true,
                ..none
            },
            AttentionMode::Review => Powers {
                evidence: true,
                blocking: true,
                verdict: true,
                ..none
            },
            AttentionMode::Falsify => Powers {
                evidence: true,
                blocking: true,
                ..none
            },
            AttentionMode::Judge => Powers {
                evidence: true,
                verdict: true,
                request_close: true,
                ..none
            },
            AttentionMode::Observe => none,
        }
    }

    /// How the host frames the goal for this stance, in its own words. It
    /// never contains the objective: the objective travels beside it, as
    /// the claim under attention (data, not instruction).
    pub fn stance(self) -> &'static str {
        match self {
            AttentionMode::Pursue => {
                "Advance the claim below as work you own. You may add evidence and ask for closure; the completion policy decides."
            }
            AttentionMode::Coordinate => {
                "Organise the work on the claim below: decompose it, route it and collect evidence. You may add non-blocking evidence; you cannot close it."
            }
            AttentionMode::Review => {
                "Inspect whether the claim below is met. Give a verdict and add evidence, blocking or not; you cannot close it."
            }
            AttentionMode::Falsify => {
                "Treat the claim below as a claim to test, not a goal to reach: look for reasons it is not yet met. Add evidence, blocking where it must hold closure; you cannot close it."
            }
            AttentionMode::Judge => {
                "Evaluate the evidence on the claim below under the completion policy. Give a verdict; you may ask for closure, which the policy answers."
            }
            AttentionMode::Observe => {
                "Context only: read the claim below and its evidence. Your answer changes nothing."
            }
        }
    }
}

/// What a binding's answer may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Powers {
    /// Add evidence refs to the goal.
    pub evidence: bool,
    /// Mark evidence blocking: it holds closure until it is resolved.
    pub blocking: bool,
    /// Give a verdict on the claim (counted by `quorum` and `supervisor`).
    pub verdict: bool,
    /// Ask for closure; the completion policy answers.
    pub request_close: bool,
    /// Its `output` goes to the goal's RFC 0097 judge under the `verifier`
    /// policy.
    pub judged_output: bool,
}

impl Powers {
    /// The authority the projection names, in a fixed order.
    pub fn names(self) -> Vec<&'static str> {
        [
            (self.evidence, "add-evidence"),
            (self.blocking, "add-blocking-evidence"),
            (self.verdict, "give-verdict"),
            (self.request_close, "request-closure"),
        ]
        .into_iter()
        .filter_map(|(held, name)| held.then_some(name))
        .collect()
    }
}

/// Whether a binding should keep being projected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingStatus {
    Active,
    /// Until a person resumes it, or, with `until`, until the clock passes
    /// that instant.
    Paused {
        until: Option<Timestamp>,
    },
    /// Replaced by another binding; final.
    Superseded {
        by: BindingId,
    },
    /// Ended by a person; final.
    Stopped,
}

impl BindingStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            BindingStatus::Active => "active",
            BindingStatus::Paused { .. } => "paused",
            BindingStatus::Superseded { .. } => "superseded",
            BindingStatus::Stopped => "stopped",
        }
    }

    /// Active or paused: the binding still holds its mode on the goal.
    pub fn is_live(&self) -> bool {
        matches!(self, BindingStatus::Active | BindingStatus::Paused { .. })
    }

    pub fn is_final(&self) -> bool {
        !self.is_live()
    }
}

/// How a timed pause becomes eligible again once its `until` passed. Both
/// are correct; the profile leaves it to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseWake {
    /// The scheduler's tick writes the binding active again (with a
    /// `attention.binding.resumed` event).
    Tick,
    /// Nothing is written: the status is read against the clock wherever
    /// it is read or checked, so the binding is active from `until` on.
    Clock,
}

/// One agent's attention on one goal.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub id: BindingId,
    pub mode: AttentionMode,
    /// Where its runs go: an `http(s)` URL, with `#intervalMs=N` when the
    /// host should run it on its own every N ms.
    pub arm: ArmRef,
    pub status: BindingStatus,
    /// The binding this one replaced, if any.
    pub supersedes: Option<BindingId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Runs recorded for it.
    pub runs: u64,
    pub last_run_at: Option<Timestamp>,
}

impl Binding {
    /// The status as of `now`: under [`PauseWake::Clock`] a timed pause
    /// whose instant has come reads active.
    pub fn status_at(&self, now: Timestamp, wake: PauseWake) -> BindingStatus {
        match (&self.status, wake) {
            (BindingStatus::Paused { until: Some(until) }, PauseWake::Clock) if *until <= now => {
                BindingStatus::Active
            }
            (status, _) => status.clone(),
        }
    }

    /// A timed pause whose instant has come, which the tick wakes.
    pub fn wake_due(&self, now: Timestamp) -> bool {
        matches!(self.status, BindingStatus::Paused { until: Some(until) } if until <= now)
    }

    /// When the host runs this binding on its own next, if it does: an
    /// interval arm runs at once, then an interval after each run.
    pub fn next_fire(&self) -> Option<Timestamp> {
        let interval = self.arm.interval_ms()?;
        Some(match self.last_run_at {
            None => self.created_at,
            Some(last) => last.saturating_add_ms(interval),
        })
    }
}
