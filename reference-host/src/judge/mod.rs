//! Judges: what evaluates a run. The engine sees only the [`Verifier`] trait
//! and aggregates criteria itself, so no verifier can outvote a failing
//! criterion.

mod fixture;

use std::sync::Arc;

use serde_json::Value;

use crate::domain::{GoalId, Judgement, RunId, VerifierRef, VerifierSpec};
use crate::future::BoxFuture;

pub use fixture::FixtureVerifier;

/// What the verifier sees of a run (SPEC §4 webhooks): never the objective.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyRequest {
    pub goal_id: GoalId,
    pub run_id: RunId,
    pub iteration: u64,
    pub output: Value,
}

/// The judge failed (error, timeout, malformed answer): an environmental
/// failure for the iteration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("judge failed: {0}")]
pub struct JudgeError(pub String);

pub trait Verifier: Send + Sync {
    fn verify(&self, request: VerifyRequest) -> BoxFuture<'_, Result<Judgement, JudgeError>>;
}

/// Chooses the verifier for a goal's `verifierRef`; `None` when the goal has
/// none attached (the iteration then fails environmentally).
#[derive(Debug, Clone, Default)]
pub struct Judges {}

impl Judges {
    pub fn new() -> Judges {
        Judges {}
    }

    pub fn verifier_for(&self, verifier: Option<&VerifierRef>) -> Option<Arc<dyn Verifier>> {
        match verifier.map(VerifierRef::spec)? {
            VerifierSpec::Fixture(script) => Some(Arc::new(FixtureVerifier::new(script.clone()))),
        }
    }
}
