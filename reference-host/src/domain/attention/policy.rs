//! Completion policies and the authorities a confirmation can carry: who
//! must agree before a goal with attention closes.

use serde_json::{json, Value};

use crate::domain::ids::BindingId;

/// Who must agree before a goal closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// RFC 0097 as it is: the goal's judge decides on the pursuer's runs
    /// (and the goal's own); a request to close is never enough.
    Verifier,
    /// A credential holding the host's authority confirmed this revision.
    HostConfirmed,
    /// A credential holding a principal's authority confirmed this
    /// revision.
    PrincipalConfirmed,
    /// At least `threshold` review or judge bindings approved this
    /// revision.
    Quorum { threshold: u8 },
    /// The named coordinate binding approved this revision (optional: only
    /// hosts that advertise it).
    Supervisor { binding: BindingId },
}

impl Policy {
    pub fn kind(&self) -> &'static str {
        match self {
            Policy::Verifier => "verifier",
            Policy::HostConfirmed => "host-confirmed",
            Policy::PrincipalConfirmed => "principal-confirmed",
            Policy::Quorum { .. } => "quorum",
            Policy::Supervisor { .. } => "supervisor",
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Policy::Quorum { threshold } => json!({ "kind": self.kind(), "threshold": threshold }),
            Policy::Supervisor { binding } => {
                json!({ "kind": self.kind(), "binding": binding.as_str() })
            }
            _ => json!({ "kind": self.kind() }),
        }
    }
}

/// The policies every host that advertises `attention` offers.
pub const REQUIRED_POLICIES: [&str; 4] = [
    "verifier",
    "host-confirmed",
    "principal-confirmed",
    "quorum",
];

/// The most review and judge bindings one goal can hold at once (one per
/// mode), so the highest quorum that can ever be met.
pub const MAX_QUORUM: u8 = 2;

/// Whose authority a confirmation carries: the credential's, never the
/// request body's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Authority {
    Host,
    Principal,
}

impl Authority {
    pub fn as_str(self) -> &'static str {
        match self {
            Authority::Host => "host",
            Authority::Principal => "principal",
        }
    }

    pub fn parse(text: &str) -> Option<Authority> {
        match text {
            "host" => Some(Authority::Host),
            "principal" => Some(Authority::Principal),
            _ => None,
        }
    }
}
