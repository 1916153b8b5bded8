//! The built-in criteria verifier behind the [`Verifier`] trait.
//!
//! Judging is CPU work over whatever the arm answered, so it runs on
//! blocking threads, a few at a time, and within a step budget: on the
//! async runtime one pathological verifier stalled every request the host
//! served, and a time limit around a future that never yields cannot stop
//! it. The engine's judge limit still applies to the wait (for a thread
//! and for the answer); the budget is what stops the work itself.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::{JudgeError, Verifier, VerifyRequest};
use crate::domain::{CriteriaVerifier, Judgement, Steps, JUDGE_STEPS};
use crate::future::BoxFuture;

/// Most criteria judgements running at once, host-wide: with two, a
/// flood of expensive verifiers keeps at most two blocking threads busy
/// and never the runtime's workers.
pub const MAX_JUDGES_IN_FLIGHT: usize = 2;

/// One host's [`MAX_JUDGES_IN_FLIGHT`] slots, shared by every criteria
/// judge it makes. Per host, not per process: hosts that share a process
/// (an embedding program, the suite's matrices, the tests) each keep their
/// own limit.
#[derive(Debug, Clone)]
pub struct JudgeSlots(Arc<Semaphore>);

impl Default for JudgeSlots {
    fn default() -> JudgeSlots {
        JudgeSlots(Arc::new(Semaphore::new(MAX_JUDGES_IN_FLIGHT)))
    }
}

#[derive(Debug, Clone)]
pub struct CriteriaJudge {
    verifier: Arc<CriteriaVerifier>,
    steps: u64,
    slots: JudgeSlots,
}

impl CriteriaJudge {
    pub fn new(verifier: CriteriaVerifier, slots: JudgeSlots) -> CriteriaJudge {
        CriteriaJudge::with_steps(verifier, JUDGE_STEPS, slots)
    }

    /// With a step budget other than [`JUDGE_STEPS`].
    pub fn with_steps(verifier: CriteriaVerifier, steps: u64, slots: JudgeSlots) -> CriteriaJudge {
        CriteriaJudge {
            verifier: Arc::new(verifier),
            steps,
            slots,
        }
    }
}

impl Verifier for CriteriaJudge {
    fn verify(&self, request: VerifyRequest) -> BoxFuture<'_, Result<Judgement, JudgeError>> {
        let verifier = Arc::clone(&self.verifier);
        let steps = self.steps;
        let slots = Arc::clone(&self.slots.0);
        Box::pin(async move {
            let slot = slots
                .acquire_owned()
                .await
                .map_err(|_| JudgeError("the judge pool is closed".into()))?;
            let judged = tokio::task::spawn_blocking(move || {
                let judged = verifier.judge_within(&request.output, &mut Steps::new(steps));
                drop(slot);
                judged
            })
            .await
            .map_err(|error| JudgeError(format!("the judge stopped: {error}")))?;
            judged.map_err(|_| {
                JudgeError(format!(
                    "the criteria need more than the judge's budget of {steps} steps"
                ))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::criteria::{Predicate, Rule};
    use crate::domain::{FailureClass, GoalId, RunId, Timestamp, VerifierName};

    fn verifier(pattern: &str) -> CriteriaVerifier {
        CriteriaVerifier {
            name: VerifierName::parse("v").expect("name"),
            rules: vec![Rule {
                id: "tag".into(),
                pointer: "/tag".into(),
                predicate: Predicate::Matches(pattern.into()),
                failure_class: FailureClass::Logical,
            }],
            created_at: Timestamp::from_unix_ms(0).expect("epoch"),
        }
    }

    fn request(tag: &str) -> VerifyRequest {
        VerifyRequest {
            goal_id: GoalId::generate(),
            run_id: RunId::generate(),
            iteration: 1,
            output: json!({ "tag": tag }),
        }
    }

    #[tokio::test]
    async fn judges_within_the_budget_and_fails_beyond_it() {
        let judge = CriteriaJudge::new(verifier("v1.*"), JudgeSlots::default());
        let judgement = judge.verify(request("v1.2")).await.expect("judged");
        assert!(judgement.satisfied);
        let tight = CriteriaJudge::with_steps(verifier("*x"), 10, JudgeSlots::default());
        assert!(tight.verify(request(&"a".repeat(100))).await.is_err());
    }
}
