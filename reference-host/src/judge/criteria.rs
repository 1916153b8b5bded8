//! The built-in criteria verifier behind the [`Verifier`] trait.

use super::{JudgeError, Verifier, VerifyRequest};
use crate::domain::{CriteriaVerifier, Judgement};
use crate::future::BoxFuture;

#[derive(Debug, Clone)]
pub struct CriteriaJudge {
    verifier: CriteriaVerifier,
}

impl CriteriaJudge {
    pub fn new(verifier: CriteriaVerifier) -> CriteriaJudge {
        CriteriaJudge { verifier }
    }
}

impl Verifier for CriteriaJudge {
    fn verify(&self, request: VerifyRequest) -> BoxFuture<'_, Result<Judgement, JudgeError>> {
        let judgement = self.verifier.judge(&request.output);
        Box::pin(async move { Ok(judgement) })
    }
}
