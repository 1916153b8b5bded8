//! Refs are checked against the egress policy when they are written, so a
//! tenant learns at once that a URL is one the host will not call (the
//! webhook client checks again on every call: names are judged by what they
//! resolve to then).

use super::{Engine, Faults};
use crate::domain::{ArmRef, ArmSpec, RequestError, VerifierRef, VerifierSpec, Webhook};

const VERIFIER_REF: &str = "/completion/verifierRef";
const ARM_REF: &str = "/continuation/armRef";

impl Engine {
    pub(super) fn check_egress(
        &self,
        verifier_ref: Option<&VerifierRef>,
        arm_ref: Option<&ArmRef>,
    ) -> Result<(), RequestError> {
        let verifier = verifier_ref.and_then(|r| match r.spec() {
            VerifierSpec::Webhook(webhook) => Some((webhook, VERIFIER_REF)),
            _ => None,
        });
        let arm = arm_ref.and_then(|r| match r.spec() {
            ArmSpec::Webhook(webhook) => Some((webhook, ARM_REF)),
            _ => None,
        });
        let policy = self.egress.policy();
        for (webhook, pointer) in verifier.into_iter().chain(arm) {
            check(self.faults.as_ref(), &policy, webhook, pointer)?;
        }
        Ok(())
    }
}

/// Checks one webhook ref's URL at `pointer` against the policy, through
/// the engine's fault seam (a mutant may let it through).
pub(super) fn check(
    faults: &dyn Faults,
    policy: &crate::domain::egress::EgressPolicy,
    webhook: &Webhook,
    pointer: &str,
) -> Result<(), RequestError> {
    let Ok(url) = url::Url::parse(webhook.url()) else {
        return Ok(());
    };
    faults
        .egress_allows(policy, &url)
        .map_err(|denied| RequestError::EgressDenied {
            pointer: pointer.to_string(),
            reason: denied.to_string(),
        })
}
