//! What a run produced and what the judge made of it.

use super::ids::RunId;
use super::money::MicroUsd;
use super::timestamp::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    Logical,
    Environmental,
}

impl FailureClass {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Logical => "logical",
            FailureClass::Environmental => "environmental",
        }
    }

    pub fn parse(text: &str) -> Option<FailureClass> {
        match text {
            "logical" => Some(FailureClass::Logical),
            "environmental" => Some(FailureClass::Environmental),
            _ => None,
        }
    }
}

/// One per-criterion verdict from a judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    pub id: String,
    pub pass: bool,
    pub failure_class: Option<FailureClass>,
}

/// A judge's answer before aggregation: its overall flag and criteria.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub satisfied: bool,
    pub confidence: f64,
    pub criteria: Option<Vec<Criterion>>,
}

/// The recorded verdict for one run. Built only through [`Verdict::aggregate`]
/// or [`Verdict::environmental`], so a failing criterion can never be
/// outvoted by the judge's overall flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    satisfied: bool,
    confidence: f64,
    criteria: Option<Vec<Criterion>>,
    failure_class: Option<FailureClass>,
}

impl Verdict {
    /// Satisfied only if the judge says so and every criterion passes.
    pub fn aggregate(judgement: Judgement) -> Verdict {
        let Judgement {
            satisfied,
            confidence,
            criteria,
        } = judgement;
        let first_failure = criteria.iter().flatten().find(|criterion| !criterion.pass);
        let satisfied = satisfied && first_failure.is_none();
        let failure_class = first_failure.and_then(|criterion| criterion.failure_class);
        let confidence = if confidence.is_finite() {
            confidence.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Verdict {
            satisfied,
            confidence,
            criteria,
            failure_class: if satisfied { None } else { failure_class },
        }
    }

    /// The run or the judge failed: the iteration still ends, unsatisfied.
    pub fn environmental() -> Verdict {
        Verdict {
            satisfied: false,
            confidence: 0.0,
            criteria: None,
            failure_class: Some(FailureClass::Environmental),
        }
    }

    pub fn satisfied(&self) -> bool {
        self.satisfied
    }

    pub fn confidence(&self) -> f64 {
        self.confidence
    }

    pub fn criteria(&self) -> Option<&[Criterion]> {
        self.criteria.as_deref()
    }

    pub fn failure_class(&self) -> Option<FailureClass> {
        self.failure_class
    }

    /// No judge gave this verdict: the run or the judge failed (see
    /// [`Verdict::environmental`]). A judged verdict with an environmental
    /// criterion carries that criterion, so it is never mistaken for one.
    pub fn without_judgement(&self) -> bool {
        self.failure_class == Some(FailureClass::Environmental) && self.criteria.is_none()
    }

    /// Rebuilds a stored verdict exactly as it was recorded.
    pub fn restore(
        satisfied: bool,
        confidence: f64,
        criteria: Option<Vec<Criterion>>,
        failure_class: Option<FailureClass>,
    ) -> Verdict {
        Verdict {
            satisfied,
            confidence,
            criteria,
            failure_class,
        }
    }
}

/// How a dispatched run ended, as far as the decision is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// The run raised an escalation: no verdict is recorded for it.
    Escalated,
    Judged(Verdict),
}

/// One recorded evaluation (a verdict and the run it judged).
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub run_id: RunId,
    pub iteration: u64,
    pub verdict: Verdict,
    pub cost: MicroUsd,
    pub at: Timestamp,
}

/// `completion.lastVerdict`.
#[derive(Debug, Clone, PartialEq)]
pub struct LastVerdict {
    pub satisfied: bool,
    pub confidence: f64,
    pub run_id: RunId,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criterion(id: &str, pass: bool, class: Option<FailureClass>) -> Criterion {
        Criterion {
            id: id.to_string(),
            pass,
            failure_class: class,
        }
    }

    #[test]
    fn one_failing_criterion_outvotes_the_flag() {
        let verdict = Verdict::aggregate(Judgement {
            satisfied: true,
            confidence: 0.9,
            criteria: Some(vec![
                criterion("c1", true, None),
                criterion("c2", false, Some(FailureClass::Logical)),
            ]),
        });
        assert!(!verdict.satisfied());
        assert_eq!(verdict.failure_class(), Some(FailureClass::Logical));
    }

    #[test]
    fn all_passing_criteria_keep_the_flag() {
        let passing = Some(vec![
            criterion("c1", true, None),
            criterion("c2", true, None),
        ]);
        let yes = Verdict::aggregate(Judgement {
            satisfied: true,
            confidence: 0.7,
            criteria: passing.clone(),
        });
        assert!(yes.satisfied());
        assert_eq!(yes.failure_class(), None);
        let no = Verdict::aggregate(Judgement {
            satisfied: false,
            confidence: 0.7,
            criteria: passing,
        });
        assert!(!no.satisfied());
    }

    #[test]
    fn confidence_is_kept_in_range() {
        let verdict = Verdict::aggregate(Judgement {
            satisfied: false,
            confidence: f64::NAN,
            criteria: None,
        });
        assert_eq!(verdict.confidence(), 0.0);
        let verdict = Verdict::aggregate(Judgement {
            satisfied: false,
            confidence: 7.0,
            criteria: None,
        });
        assert_eq!(verdict.confidence(), 1.0);
    }

    #[test]
    fn environmental_failures_never_satisfy() {
        let verdict = Verdict::environmental();
        assert!(!verdict.satisfied());
        assert_eq!(verdict.failure_class(), Some(FailureClass::Environmental));
        assert!(verdict.without_judgement());
    }

    #[test]
    fn a_judged_environmental_criterion_is_a_judgement() {
        let verdict = Verdict::aggregate(Judgement {
            satisfied: true,
            confidence: 0.8,
            criteria: Some(vec![criterion(
                "c1",
                false,
                Some(FailureClass::Environmental),
            )]),
        });
        assert_eq!(verdict.failure_class(), Some(FailureClass::Environmental));
        assert!(!verdict.without_judgement());
        let plain = Verdict::aggregate(Judgement {
            satisfied: false,
            confidence: 0.8,
            criteria: None,
        });
        assert!(!plain.without_judgement());
    }
}
