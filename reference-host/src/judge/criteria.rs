//! The built-in criteria verifier behind the [`Verifier`] trait. Its
//! judgements run in the engine's [`JudgePool`], as the work of the goal's
//! tenant, a slice of steps at a time (see `pool.rs` for why).

use std::sync::Arc;

use super::pool::{JudgePool, PoolError};
use super::{JudgeError, Verifier, VerifyRequest};
use crate::domain::criteria::Judging;
use crate::domain::{CriteriaVerifier, Judgement, Tenant, JUDGE_STEPS};
use crate::future::BoxFuture;

#[derive(Debug, Clone)]
pub struct CriteriaJudge {
    verifier: Arc<CriteriaVerifier>,
    steps: u64,
    pool: JudgePool,
    tenant: Tenant,
}

impl CriteriaJudge {
    /// Judges for `tenant` in `pool`, within [`JUDGE_STEPS`] a judgement.
    pub fn new(verifier: CriteriaVerifier, pool: JudgePool, tenant: Tenant) -> CriteriaJudge {
        CriteriaJudge::with_steps(verifier, JUDGE_STEPS, pool, tenant)
    }

    /// With a step budget other than [`JUDGE_STEPS`].
    pub fn with_steps(
        verifier: CriteriaVerifier,
        steps: u64,
        pool: JudgePool,
        tenant: Tenant,
    ) -> CriteriaJudge {
        CriteriaJudge {
            verifier: Arc::new(verifier),
            steps,
            pool,
            tenant,
        }
    }
}

impl Verifier for CriteriaJudge {
    fn verify(&self, request: VerifyRequest) -> BoxFuture<'_, Result<Judgement, JudgeError>> {
        let judging = Judging::new(Arc::clone(&self.verifier), request.output, self.steps);
        Box::pin(async move {
            self.pool
                .judge(&self.tenant, judging)
                .await
                .map_err(|error| match error {
                    PoolError::OutOfSteps => JudgeError(format!(
                        "the criteria need more than the judge's budget of {} steps",
                        self.steps
                    )),
                    other => JudgeError(other.to_string()),
                })
        })
    }

    /// The step budget bounds a judgement, not wall time: the time it
    /// waits for a slot behind other tenants must not count against it.
    fn time_limited(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;
    use crate::domain::fixture::tag_verifier;
    use crate::domain::{GoalId, RunId};

    fn request(tag: &str) -> VerifyRequest {
        VerifyRequest {
            goal_id: GoalId::generate(),
            run_id: RunId::generate(),
            iteration: 1,
            output: json!({ "tag": tag }),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn judges_within_the_budget_and_fails_beyond_it() {
        let pool = JudgePool::new(2, None, Arc::new(ManualClock::fixed()));
        let tenant = Tenant::parse("a").expect("tenant");
        let judge = CriteriaJudge::new(tag_verifier("v1.*"), pool.clone(), tenant.clone());
        let judgement = judge.verify(request("v1.2")).await.expect("judged");
        assert!(judgement.satisfied);
        let tight = CriteriaJudge::with_steps(tag_verifier("*x"), 10, pool, tenant);
        assert!(tight.verify(request(&"a".repeat(100))).await.is_err());
    }
}
