//! The verifiers aggregate: the [`Verifiers`] trait.

use crate::domain::{CriteriaVerifier, GoalId, Tenant, VerifierName};
use crate::storage::{Pending, StoreError};

/// Whether a verifier registration happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    Done,
    /// The tenant has a verifier of that name (and it was not replaced).
    Taken,
    /// The tenant holds as many verifiers as it may.
    Full,
}

/// A tenant's criteria verifiers, and the scripted judge a goal may carry
/// (both name a verifier).
pub trait Verifiers {
    /// Stores a tenant's criteria verifier. An existing one of that name is
    /// replaced when `replace` is set, and is taken otherwise. With `max`,
    /// a new name is stored only while the tenant holds fewer verifiers,
    /// counted in the write's own transaction with the tenant's
    /// registrations serialised, on every replica.
    fn put_verifier(
        &self,
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
        replace: bool,
        max: Option<u64>,
    ) -> Pending<Registered>;

    fn verifier(
        &self,
        tenant: &Tenant,
        name: &VerifierName,
    ) -> Result<Option<CriteriaVerifier>, StoreError>;

    /// A tenant's verifiers by name.
    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError>;

    /// Makes `verifier_ref` (as written) the scripted judge of `goal`,
    /// replacing any earlier one (the seam `scriptedJudge`). Written beside
    /// the goal: its record and version do not change. `false` when the
    /// goal is not stored.
    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool>;

    /// The scripted judge of `goal`, as written, if one was set.
    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError>;
}
