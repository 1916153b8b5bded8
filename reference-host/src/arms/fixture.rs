//! The `conformance:arm` fixture: a scripted worker (SPEC §4 `fixtures`).

use std::time::Duration;

use serde_json::json;

use super::{Escalation, ProbeRequest, RunError, RunReport, RunRequest, Worker};
use crate::domain::refs::ArmFixture;
use crate::future::BoxFuture;

#[derive(Debug, Clone)]
pub struct FixtureArm {
    script: ArmFixture,
}

impl FixtureArm {
    pub fn new(script: ArmFixture) -> FixtureArm {
        FixtureArm { script }
    }
}

impl Worker for FixtureArm {
    fn run(&self, request: RunRequest) -> BoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(async move {
            if self.script.run_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.script.run_ms)).await;
            }
            if self.script.fail_on == Some(request.iteration) {
                return Err(RunError(format!(
                    "scripted failure on run {}",
                    request.iteration
                )));
            }
            let escalation =
                (self.script.escalate_on == Some(request.iteration)).then(|| Escalation {
                    kind: crate::domain::EscalationKind::parse("clarification")
                        .expect("a known kind"),
                    reason: format!("scripted escalation on run {}", request.iteration),
                });
            Ok(RunReport {
                output: json!({ "run": request.run_id.as_str(), "iteration": request.iteration }),
                cost: self.script.cost,
                escalation,
                commitment_ms: self.script.commit_after_ms,
            })
        })
    }

    /// `fireOn=K`: fires on the K-th probe and every probe after it.
    fn probe(&self, request: ProbeRequest) -> BoxFuture<'_, Result<bool, RunError>> {
        let fire = self.script.fire_on.is_none_or(|k| request.number >= k);
        Box::pin(async move { Ok(fire) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::Remaining;
    use crate::domain::{ArmRef, ArmSpec, GoalId, MicroUsd, Objective, RunId};

    fn arm(text: &str) -> FixtureArm {
        match ArmRef::parse(text, true).expect("valid").spec() {
            ArmSpec::Fixture(script) => FixtureArm::new(script.clone()),
            other => panic!("not a fixture: {other:?}"),
        }
    }

    fn request(iteration: u64) -> RunRequest {
        RunRequest {
            goal_id: GoalId::generate(),
            run_id: RunId::generate(),
            iteration,
            objective: Objective::new("o".into()),
            remaining: Remaining {
                iterations: None,
                cost: None,
                deadline: None,
            },
            previous: None,
            resolution: None,
            extras: None,
        }
    }

    #[tokio::test]
    async fn runs_cost_escalate_and_fail_as_scripted() {
        let arm = arm("conformance:arm?costUsd=0.4&escalateOn=2&failOn=3");
        let first = arm.run(request(1)).await.expect("runs");
        assert_eq!(first.cost, MicroUsd::from_micros(400_000));
        assert_eq!(first.escalation, None);
        let second = arm.run(request(2)).await.expect("runs");
        assert_eq!(
            second.escalation.map(|e| e.kind.as_str().to_string()),
            Some("clarification".to_string())
        );
        assert!(arm.run(request(3)).await.is_err());
    }

    fn probe(number: u64) -> ProbeRequest {
        ProbeRequest {
            goal_id: GoalId::generate(),
            iteration: 1,
            remaining: request(1).remaining,
            number,
        }
    }

    #[tokio::test]
    async fn probes_fire_from_the_kth_on() {
        let arm = arm("conformance:arm?heartbeatMs=10&fireOn=3");
        for (number, fires) in [(1, false), (2, false), (3, true), (4, true)] {
            assert_eq!(arm.probe(probe(number)).await, Ok(fires), "probe {number}");
        }
        let always = arm_always();
        assert_eq!(always.probe(probe(1)).await, Ok(true));
    }

    fn arm_always() -> FixtureArm {
        arm("conformance:arm?heartbeatMs=10")
    }
}
