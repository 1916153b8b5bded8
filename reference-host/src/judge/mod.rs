//! Judges: what evaluates a run. The engine sees only the [`Verifier`] trait
//! and aggregates criteria itself, so no verifier can outvote a failing
//! criterion.

mod criteria;
mod fixture;
pub mod pool;
mod webhook;

use std::sync::Arc;

use serde_json::Value;

use crate::domain::{GoalId, Judgement, RunId, Tenant, VerifierSpec};
use crate::future::BoxFuture;
use crate::webhook::WebhookClient;

pub use criteria::CriteriaJudge;
pub use fixture::FixtureVerifier;
pub use pool::JudgePool;
pub use webhook::WebhookVerifier;

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

    /// Whether the engine's judge limit (wall time) bounds this verifier.
    /// A webhook's does; the criteria judge is bounded by its step budget
    /// instead, so that waiting behind other tenants costs it nothing.
    fn time_limited(&self) -> bool {
        true
    }
}

/// Chooses the verifier for a goal's `verifierRef`.
#[derive(Debug, Clone)]
pub struct Judges {
    webhooks: Arc<WebhookClient>,
}

impl Judges {
    pub fn new(webhooks: Arc<WebhookClient>) -> Judges {
        Judges { webhooks }
    }

    /// The verifier for a fixture or a URL. `None` for a named verifier:
    /// those live in the tenant's registry, which the engine reads.
    pub fn verifier_for(&self, spec: &VerifierSpec, owner: &Tenant) -> Option<Arc<dyn Verifier>> {
        match spec {
            VerifierSpec::Fixture(script) => Some(Arc::new(FixtureVerifier::new(script.clone()))),
            VerifierSpec::Webhook(webhook) => Some(Arc::new(WebhookVerifier::new(
                Arc::clone(&self.webhooks),
                webhook.url().to_string(),
                owner.clone(),
            ))),
            VerifierSpec::Named(_) => None,
        }
    }
}
