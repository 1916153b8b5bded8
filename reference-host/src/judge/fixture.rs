//! The `conformance:verifier` fixture: a scripted judge (SPEC §4 `fixtures`).

use super::{JudgeError, Verifier, VerifyRequest};
use crate::domain::refs::VerifierFixture;
use crate::domain::{Criterion, CriterionScript, Judgement};
use crate::future::BoxFuture;

#[derive(Debug, Clone)]
pub struct FixtureVerifier {
    script: VerifierFixture,
}

impl FixtureVerifier {
    pub fn new(script: VerifierFixture) -> FixtureVerifier {
        FixtureVerifier { script }
    }

    fn judge(&self, iteration: u64) -> Judgement {
        let criteria = (!self.script.criteria.is_empty()).then(|| {
            self.script
                .criteria
                .iter()
                .enumerate()
                .map(|(index, script)| Criterion {
                    id: format!("c{}", index + 1),
                    pass: matches!(script, CriterionScript::Pass),
                    failure_class: match script {
                        CriterionScript::Pass => None,
                        CriterionScript::Fail(class) => *class,
                    },
                })
                .collect()
        });
        Judgement {
            satisfied: self.script.satisfy_on.is_some_and(|k| iteration >= k),
            confidence: self.script.confidence,
            criteria,
        }
    }
}

impl Verifier for FixtureVerifier {
    fn verify(&self, request: VerifyRequest) -> BoxFuture<'_, Result<Judgement, JudgeError>> {
        let judgement = self.judge(request.iteration);
        Box::pin(async move { Ok(judgement) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{FailureClass, VerifierRef, VerifierSpec};

    fn verifier(text: &str) -> FixtureVerifier {
        match VerifierRef::parse(text, true).expect("valid").spec() {
            VerifierSpec::Fixture(script) => FixtureVerifier::new(script.clone()),
            other => panic!("not a fixture: {other:?}"),
        }
    }

    #[test]
    fn satisfied_from_iteration_k_on() {
        let judge = verifier("conformance:verifier?satisfyOn=3");
        assert!(!judge.judge(2).satisfied);
        assert!(judge.judge(3).satisfied);
        assert!(judge.judge(4).satisfied);
        assert!(!verifier("conformance:verifier").judge(1000).satisfied);
    }

    #[test]
    fn criteria_are_numbered_in_order() {
        let judgement =
            verifier("conformance:verifier?satisfyOn=1&criteria=pass,fail:logical").judge(1);
        let criteria = judgement.criteria.expect("criteria");
        assert_eq!(criteria[0].id, "c1");
        assert!(criteria[0].pass);
        assert_eq!(criteria[1].id, "c2");
        assert_eq!(criteria[1].failure_class, Some(FailureClass::Logical));
        // The fixture reports its flag as scripted; aggregation is the
        // engine's job.
        assert!(judgement.satisfied);
    }
}
