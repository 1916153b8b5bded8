//! Arms: what performs a run. The engine sees only the [`Worker`] trait.

mod attention;
mod fixture;
mod noop;
mod webhook;

use std::sync::Arc;

use serde_json::Value;

use crate::domain::{
    ArmRef, ArmSpec, Feedback, GoalId, MicroUsd, Objective, Resolution, RunId, Tenant,
};
use crate::future::BoxFuture;
use crate::webhook::WebhookClient;

pub use attention::BindingArm;
pub use fixture::FixtureArm;
pub use noop::NoopWorker;
pub use webhook::{WebhookArm, MAX_ARM_REQUEST_BYTES};

/// What the worker is told about the run: the attention projection (SPEC §4
/// webhooks), never more.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub goal_id: GoalId,
    pub run_id: RunId,
    pub iteration: u64,
    pub objective: Objective,
    pub remaining: Remaining,
    /// How the previous verdict went (none before the first).
    pub previous: Option<Feedback>,
    /// How a person resolved the escalation this run follows, if it does.
    pub resolution: Option<Resolution>,
    /// Members a host adds of its own: the goal's revision and mode
    /// (`None`: the reference host sends none).
    pub extras: Option<RunExtras>,
}

/// What a host may add to an arm request beside the projection.
#[derive(Debug, Clone, PartialEq)]
pub struct RunExtras {
    /// The goal's version when the run was reserved.
    pub revision: u64,
    pub mode: crate::domain::Mode,
}

/// What is left of the goal's bounds when the run starts.
pub use crate::domain::Remaining;

/// A heartbeat probe: should a run be dispatched now?
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeRequest {
    pub goal_id: GoalId,
    /// The iteration number the next run would get.
    pub iteration: u64,
    pub remaining: Remaining,
    /// This probe's number for the goal, from 1 (counted by the scheduler).
    pub number: u64,
}

/// An RFC 0044 interrupt raised by a run, its kind and reason checked.
pub use crate::domain::Escalation;

/// How a run finished when it finished at all.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub output: Value,
    pub cost: MicroUsd,
    pub escalation: Option<Escalation>,
    /// `commitment.afterMs`: when the agent commits to check in next (a
    /// `commitment` goal's next fire), in range.
    pub commitment_ms: Option<u64>,
}

/// The run failed (error, timeout, malformed answer): an environmental
/// failure for the iteration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("run failed: {0}")]
pub struct RunError(pub String);

pub trait Worker: Send + Sync {
    fn run(&self, request: RunRequest) -> BoxFuture<'_, Result<RunReport, RunError>>;

    /// The heartbeat predicate. A worker without one fires on every probe;
    /// an error fires nothing.
    fn probe(&self, _request: ProbeRequest) -> BoxFuture<'_, Result<bool, RunError>> {
        Box::pin(async { Ok(true) })
    }
}

/// Chooses the worker for a goal's `armRef`.
#[derive(Debug, Clone)]
pub struct Arms {
    webhooks: Arc<WebhookClient>,
}

impl Arms {
    pub fn new(webhooks: Arc<WebhookClient>) -> Arms {
        Arms { webhooks }
    }

    /// The worker for `arm`, calling on behalf of `owner` (webhook calls
    /// are signed for the goal's tenant).
    pub fn worker_for(&self, arm: Option<&ArmRef>, owner: &Tenant) -> Arc<dyn Worker> {
        match arm.map(ArmRef::spec) {
            None => Arc::new(NoopWorker),
            Some(ArmSpec::Fixture(script)) => Arc::new(FixtureArm::new(script.clone())),
            Some(ArmSpec::Webhook(webhook)) => Arc::new(WebhookArm::new(
                Arc::clone(&self.webhooks),
                webhook.url().to_string(),
                owner.clone(),
            )),
        }
    }
}
