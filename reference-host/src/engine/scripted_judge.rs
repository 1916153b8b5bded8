//! The seam `scriptedJudge` (PROFILE.md "Seam contract"): on a host whose
//! judge is its own evaluator, the suite names the verifier a goal's runs
//! are judged by, beside the goal and not in it, so `completion` keeps
//! reading `{check: host}` and no `verifierRef` appears on the goal. The
//! script is given at create (stored in the goal's own insert, so no run
//! can come before it) or later through `PUT {base}/{id}/judge`.

use std::sync::Arc;

use serde_json::Value;

use super::{Engine, EngineError};
use crate::domain::{
    parse_judge_ref, parse_judge_script, Check, Goal, GoalId, RequestError, Tenant, VerifierRef,
};
use crate::judge::Verifier;

/// Where the seam's body carries the ref, for refusals.
const POINTER: &str = "/verifierRef";

impl Engine {
    /// Whether this host serves the seam: it judges with its own evaluator
    /// and runs with its conformance seams on. Anywhere else a script is
    /// never taken: a production goal is judged by the host alone.
    pub fn serves_scripted_judge(&self) -> bool {
        self.settings.conformance_seams && self.settings.choices.judge == Check::Host
    }

    /// The script a create carries beside its body, checked as the seam's
    /// `PUT` checks one: `None` when none was given or the host does not
    /// serve the seam (then it is ignored, as any header the host does not
    /// know). A script the host cannot use refuses the create
    /// ([`EngineError::CreateScript`]), which then stores nothing.
    pub(super) fn create_script(&self, text: Option<&str>) -> Result<Option<String>, EngineError> {
        let Some(text) = text.filter(|_| self.serves_scripted_judge()) else {
            return Ok(None);
        };
        let verifier_ref = parse_judge_ref(text, self.request_context(), "")
            .and_then(|verifier_ref| {
                self.check_egress(Some(&verifier_ref), None)?;
                Ok(verifier_ref)
            })
            .map_err(EngineError::CreateScript)?;
        Ok(Some(verifier_ref.as_str().to_string()))
    }

    /// `PUT {base}/{id}/judge`: the caller's goal (else 404), a valid
    /// script (else 400/422), a goal still open and judged by the host
    /// (else 409). Replaces an earlier script; touches neither the goal's
    /// record nor its version, so its `ETag` and `updatedAt` stay.
    pub async fn script_judge(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        body: &Value,
    ) -> Result<(), EngineError> {
        let goal = self.load_owned(tenant, id).await?;
        let verifier_ref = parse_judge_script(body, self.request_context())?;
        self.check_egress(Some(&verifier_ref), None)
            .map_err(|error| match error {
                RequestError::EgressDenied { reason, .. } => RequestError::EgressDenied {
                    pointer: POINTER.to_string(),
                    reason,
                },
                other => other,
            })?;
        if goal.state.is_terminal() {
            return Err(EngineError::Terminal);
        }
        if goal.completion.check != Check::Host {
            return Err(EngineError::NotHostJudged);
        }
        if self
            .store
            .put_judge_script(id, verifier_ref.as_str())
            .await?
        {
            Ok(())
        } else {
            // Forgotten (retention) between the read and the write.
            Err(EngineError::NotFound)
        }
    }

    /// The verifier the seam scripted for a goal the host judges, when the
    /// host runs with its seams on and one was set: it comes before
    /// anything the goal names. `None` otherwise, and when the stored
    /// script cannot be read (logged; the goal then judges as if unscripted).
    pub(super) fn scripted_verifier(&self, goal: &Goal) -> Option<Arc<dyn Verifier>> {
        if goal.completion.check != Check::Host || !self.settings.conformance_seams {
            return None;
        }
        let text = match self.lookup(|store| store.judge_script(&goal.id)) {
            Ok(text) => text?,
            Err(error) => {
                tracing::warn!(goal = %goal.id, %error, "cannot read the goal's scripted judge");
                return None;
            }
        };
        match VerifierRef::parse(&text, true) {
            Ok(verifier_ref) => self.judges.verifier_for(verifier_ref.spec(), &goal.owner),
            Err(error) => {
                tracing::warn!(goal = %goal.id, %error, "the goal's scripted judge is unreadable");
                None
            }
        }
    }
}
