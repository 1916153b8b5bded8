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

    /// What a host keeps of this verdict: at most `kept.count` criteria,
    /// each id cut to `kept.id_chars` characters (marked with `…`). The
    /// criteria past the count are summed up in one more, `…+N more`, that
    /// fails, with the first failure class among them, if any of them
    /// failed. Whether the verdict is satisfied, and its failure class,
    /// were decided on every criterion and do not change. (A verifier may
    /// answer 256 criteria with 256-character ids; every evaluation kept
    /// them all.)
    #[must_use]
    pub fn kept(mut self, kept: KeptCriteria) -> Verdict {
        let Some(criteria) = self.criteria.as_mut() else {
            return self;
        };
        let count = kept.count.max(1);
        if criteria.len() > count {
            let rest = criteria.split_off(count - 1);
            let first_failure = rest.iter().find(|criterion| !criterion.pass);
            criteria.push(Criterion {
                id: format!("…+{} more", rest.len()),
                pass: first_failure.is_none(),
                failure_class: first_failure.and_then(|criterion| criterion.failure_class),
            });
        }
        for criterion in criteria.iter_mut() {
            cut(&mut criterion.id, kept.id_chars.max(2));
        }
        self
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

/// Most criteria one criteria verifier may hold, so the most a verdict of
/// it names.
pub const MAX_CRITERIA: usize = 64;
/// Longest criterion id.
pub const MAX_CRITERION_ID: usize = 64;

/// How much of a verdict's criteria a host keeps ([`Verdict::kept`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptCriteria {
    /// Criteria kept per evaluation, the summary of the rest included.
    pub count: usize,
    /// Longest criterion id kept, in characters.
    pub id_chars: usize,
}

impl Default for KeptCriteria {
    /// As many as a registered criteria verifier may hold, ids as long as
    /// theirs may be ([`MAX_CRITERIA`], [`MAX_CRITERION_ID`]).
    fn default() -> KeptCriteria {
        KeptCriteria {
            count: MAX_CRITERIA,
            id_chars: MAX_CRITERION_ID,
        }
    }
}

/// Cuts `text` to at most `most` characters, the last one `…` when cut.
fn cut(text: &mut String, most: usize) {
    if text.chars().count() <= most {
        return;
    }
    let end = text
        .char_indices()
        .nth(most - 1)
        .map_or(text.len(), |(at, _)| at);
    text.truncate(end);
    text.push('…');
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
    fn a_host_keeps_a_bounded_verdict_that_still_fails_where_it_failed() {
        let mut criteria: Vec<Criterion> = (0..256)
            .map(|n| criterion(&format!("{n:0>256}"), true, None))
            .collect();
        criteria[200] = criterion("late", false, Some(FailureClass::Environmental));
        let verdict = Verdict::aggregate(Judgement {
            satisfied: true,
            confidence: 0.9,
            criteria: Some(criteria),
        })
        .kept(KeptCriteria::default());
        assert!(!verdict.satisfied(), "decided on every criterion");
        assert_eq!(verdict.failure_class(), Some(FailureClass::Environmental));
        let kept = verdict.criteria().expect("criteria");
        assert_eq!(kept.len(), 64);
        assert!(kept
            .iter()
            .all(|criterion| criterion.id.chars().count() <= 64));
        assert!(kept[0].id.ends_with('…'));
        let summary = &kept[63];
        assert_eq!(summary.id, "…+193 more");
        assert!(!summary.pass, "a failure among the rest fails the summary");
        assert_eq!(summary.failure_class, Some(FailureClass::Environmental));
        // Few, short criteria are kept as they are.
        let small = Verdict::aggregate(Judgement {
            satisfied: true,
            confidence: 1.0,
            criteria: Some(vec![criterion("é", true, None)]),
        });
        assert_eq!(small.clone().kept(KeptCriteria::default()), small);
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
