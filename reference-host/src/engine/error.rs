//! Why a use case did not happen. `http` maps these to statuses and codes.

use crate::domain::RequestError;
use crate::storage::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No such goal for this caller (another tenant's goal included).
    #[error("goal not found")]
    NotFound,
    #[error("the goal is in a terminal state")]
    Terminal,
    #[error("the goal is escalated and waits for a person")]
    Escalated,
    #[error("the goal is paused")]
    Paused,
    /// The seam `scriptedJudge` was asked to script a goal whose judge is
    /// a verifier it names, not the host.
    #[error("the goal is judged by its verifierRef, not by the host")]
    NotHostJudged,
    /// The scripted judge a create carried (the seam `scriptedJudge`) is
    /// one the host cannot use; the create stored nothing.
    #[error("the scripted judge: {0}")]
    CreateScript(RequestError),
    /// A criteria verifier of that name already exists in the tenant.
    #[error("a verifier of that name already exists")]
    VerifierExists,
    /// `If-Match` did not match the goal's current `ETag`.
    #[error("the goal has changed since the given ETag")]
    PreconditionFailed,
    /// The `Idempotency-Key` was used with a different body.
    #[error("the idempotency key was used with a different body")]
    IdempotencyConflict,
    /// A run was reported to a goal whose continuation mode does not take
    /// reported runs (only `manual` goals do).
    #[error("goals in {mode} mode do not take reported runs")]
    RunsNotAccepted { mode: &'static str },
    /// A run was reported again under the same `runId` with another body.
    #[error("the run was reported before with a different body")]
    RunConflict,
    /// A per-tenant quota is used up.
    #[error("quota {} ({limit}) reached", quota.as_str())]
    QuotaExceeded { quota: super::Quota, limit: u64 },
    /// The run reported is being recorded elsewhere (another replica took
    /// the same report first). Never answered: the report waits for it.
    #[error("the run was reported on another replica at the same time")]
    ReportedElsewhere,
    /// The tenant started as much outbound work as it may this second.
    #[error("the tenant's outbound rate is used up; try again in {wait:?}")]
    RateLimited { wait: std::time::Duration },
    /// The tenant holds as many live event streams as it may.
    #[error("the tenant already holds {0} event streams")]
    TooManyStreams(usize),
    /// The attention extension is not served here (not offered, or the
    /// store cannot serve it): its routes are unknown.
    #[error("the attention extension is not served")]
    AttentionNotServed,
    /// An attention rule refused the change (`domain::attention`).
    #[error(transparent)]
    Attention(#[from] crate::domain::attention::AttentionError),
    /// The caller's credential holds no authority to confirm; a tenant's
    /// own token never does, whatever its body says.
    #[error("a credential that holds the host's or a principal's authority is required")]
    AuthorityRequired,
    /// A completion policy this host does not offer.
    #[error("completion policy {0:?} is not offered by this host")]
    PolicyUnsupported(String),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error: {0}")]
    Internal(String),
}
