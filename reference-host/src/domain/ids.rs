//! Identifiers and names, each parsed once at the boundary.

use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

/// A name a client chooses for what it may send again (an
/// `Idempotency-Key`, a reported run's `runId`): 1 to `MAX` visible ASCII
/// characters, kept as written. It is the client's, not a host id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientKey<const MAX: usize>(String);

impl<const MAX: usize> ClientKey<MAX> {
    pub fn parse(text: &str) -> Option<ClientKey<MAX>> {
        let valid = !text.is_empty()
            && text.len() <= MAX
            && text.bytes().all(|byte| byte.is_ascii_graphic());
        valid.then(|| ClientKey(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! prefixed_id {
    ($name:ident, $prefix:literal) => {
        /// Shared text: a goal carries every contributing run id, and
        /// copies of a goal (the store's cache, answers) share them.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// Time-ordered (UUID version 7: milliseconds, then 74 random
            /// bits), so a new id lands at the end of the indexes keyed by
            /// it rather than on a random page of each: fewer pages per
            /// commit. Who may read a goal is
            /// decided by its owner, never by knowing its id.
            pub fn generate() -> $name {
                $name(format!("{}{}", $prefix, Uuid::now_v7()).into())
            }

            /// Only ids this host could have minted: the prefix and a UUID.
            /// Anything else cannot name a stored record.
            pub fn parse(text: &str) -> Option<$name> {
                let rest = text.strip_prefix($prefix)?;
                let uuid = Uuid::try_parse(rest).ok()?;
                // Canonical form only, so one id has one spelling.
                let mut canonical = [0u8; uuid::fmt::Hyphenated::LENGTH];
                (uuid.hyphenated().encode_lower(&mut canonical).as_bytes() == rest.as_bytes())
                    .then(|| $name(text.into()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

prefixed_id!(GoalId, "goal-");
prefixed_id!(RunId, "run-");
// The attention extension (domain::attention): a goal's bindings and the
// evidence their answers add.
prefixed_id!(BindingId, "binding-");
prefixed_id!(EvidenceId, "evidence-");

impl RunId {
    /// The host's id for a run a reporter named `key` on `goal` (a
    /// reported run, PROFILE.md "Reported runs"): the same key on the same
    /// goal is always the same run, so a report sent twice reserves one run;
    /// the same key on another goal is another run. A version 8 UUID from
    /// SHA-256, so it never collides with a minted (version 7) id.
    pub fn for_reported(goal: &GoalId, key: &str) -> RunId {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(b"goalpost reported run\n")
            .chain_update(goal.as_str().as_bytes())
            .chain_update(b"\n")
            .chain_update(key.as_bytes())
            .finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        let uuid = uuid::Builder::from_custom_bytes(bytes).into_uuid();
        RunId(format!("{}{}", Self::PREFIX, uuid.hyphenated()).into())
    }
}

/// The tenant a credential maps to; owns goals.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tenant(String);

impl Tenant {
    /// A tenant name is configured by the operator: non-empty, printable, no
    /// surrounding space.
    pub fn parse(text: &str) -> Option<Tenant> {
        let ok = !text.is_empty()
            && text.trim() == text
            && text.len() <= 200
            && !text.chars().any(char::is_control);
        ok.then(|| Tenant(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The goal's objective text. It is content: it goes to the worker and back
/// to the owner, and never into events or evaluations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Objective(String);

impl Objective {
    pub fn new(text: String) -> Objective {
        Objective(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_back() {
        let id = GoalId::generate();
        assert_eq!(GoalId::parse(id.as_str()), Some(id.clone()));
        assert!(id.as_str().starts_with("goal-"));
        let run = RunId::generate();
        assert_eq!(RunId::parse(run.as_str()), Some(run));
    }

    #[test]
    fn foreign_ids_do_not_parse() {
        for text in [
            "",
            "goal-",
            "goal-1",
            "run-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d",
            "goal-6F1C1A52-4A8E-4D5C-9A41-8F9C7B1F2E3D",
            "goal-6f1c1a524a8e4d5c9a418f9c7b1f2e3d",
            "goal-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d/",
        ] {
            assert_eq!(GoalId::parse(text), None, "{text:?}");
        }
        assert!(GoalId::parse("goal-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d").is_some());
    }

    #[test]
    fn a_reported_run_id_depends_on_goal_and_key_only() {
        let goal = GoalId::generate();
        let other = GoalId::generate();
        let run = RunId::for_reported(&goal, "ci-1");
        assert_eq!(run, RunId::for_reported(&goal, "ci-1"));
        assert_ne!(run, RunId::for_reported(&goal, "ci-2"));
        assert_ne!(run, RunId::for_reported(&other, "ci-1"));
        assert_eq!(RunId::parse(run.as_str()), Some(run));
    }

    #[test]
    fn tenants_are_plain_names() {
        assert!(Tenant::parse("acme").is_some());
        assert!(Tenant::parse("").is_none());
        assert!(Tenant::parse(" acme").is_none());
        assert!(Tenant::parse("ac\nme").is_none());
    }
}
