//! Goal events. Payloads carry ids, flags and counts only: never objective
//! text or run output.

use super::goal::GoalState;
use super::ids::{GoalId, RunId};
use super::timestamp::Timestamp;

#[derive(Debug, Clone, PartialEq)]
pub enum EventPayload {
    Evaluated {
        goal_id: GoalId,
        satisfied: bool,
        confidence: f64,
        run_id: RunId,
        iterations: u64,
    },
    Closed {
        goal_id: GoalId,
        final_state: GoalState,
    },
    /// The attention extension's events (`domain::attention`): stored and
    /// streamed with the goal's, but never in its RFC 0097 event list.
    Attention(super::attention::AttentionEvent),
}

impl EventPayload {
    pub fn kind(&self) -> &'static str {
        match self {
            EventPayload::Evaluated { .. } => "goal.evaluated",
            EventPayload::Closed { .. } => "goal.closed",
            EventPayload::Attention(event) => event.kind.as_str(),
        }
    }

    /// The goal the event is about.
    pub fn goal_id(&self) -> &GoalId {
        match self {
            EventPayload::Evaluated { goal_id, .. } | EventPayload::Closed { goal_id, .. } => {
                goal_id
            }
            EventPayload::Attention(event) => &event.goal_id,
        }
    }

    /// One of RFC 0097's own events (`goal.evaluated`, `goal.closed`): the
    /// only ones a goal's event list shows.
    pub fn is_rfc_0097(&self) -> bool {
        !matches!(self, EventPayload::Attention(_))
    }
}

/// An event as stored: its per-goal sequence and time.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub sequence: u64,
    /// The event's place among all of its tenant's events, increasing in
    /// commit order: the live stream's `id:`, so a reconnect resumes after
    /// it with no gap and no repeat. Never shown in the per-goal list
    /// (its shape is the profile's).
    pub cursor: u64,
    pub at: Timestamp,
    pub payload: EventPayload,
}
