//! The one checker: a step's `expect` held against what the step saw, be
//! it one answer of the host, the answers of a `parallel` step, or the
//! mock's call log.
//!
//! Every kind of step shows what it saw through [`Seen`]; [`Driver::check`]
//! makes the status, schema and assertion checks over it, each failure a
//! typed [`CheckResult`], and [`Driver::record`] tells its story. What
//! differs between the kinds of step (how a claim about several answers
//! is named, what a message shows of the log) is in their `Seen`, never a
//! second checker.

use goalpost_schemas::Violation;
use serde_json::Value;

use super::{Driver, Place, Tally};
use crate::assertion::{self, Verdict};
use crate::error::RunError;
use crate::http::{Exchange, Outgoing};
use crate::model::{array_reading, Assertion, Expect, Target};
use crate::run::driver::attribution::FailedCheck;
use crate::run::outcome::{CheckKind, CheckResult, VIOLATIONS_SHOWN};
use crate::template::Vars;

/// What one look of a step saw, as its checks and captures read it.
pub(super) trait Seen {
    /// The answers the status and schema checks read, in send order (as
    /// the checks see them: a list narrowed to the scenario's own goals);
    /// none for the mock log.
    fn answers(&self) -> &[Exchange];

    /// The number of answers when the step sent several at once: a claim
    /// about one of them names which.
    fn several(&self) -> Option<usize> {
        None
    }

    /// The seam the request went to, when the host advertises it: a 404
    /// from it is worth a sentence.
    fn advertised_seam(&self) -> Option<&str> {
        None
    }

    /// The JSON document the assertions and captures read, when it is not
    /// an answer of the host (an aggregate, the log).
    fn document(&self) -> Option<&Value> {
        None
    }

    /// Evaluates one assertion.
    fn evaluate(&self, assertion: &Assertion, vars: &Vars) -> Result<(), Verdict> {
        assertion::evaluate_json(assertion, self.document().unwrap_or(&Value::Null), vars)
    }

    /// The value at a JSON pointer, for a capture.
    fn value(&self, pointer: &str) -> Result<Option<Value>, RunError> {
        Ok(self
            .document()
            .and_then(|document| document.pointer(pointer))
            .cloned())
    }

    /// A header of the answer for a capture; `Err` says why this kind of
    /// step has none.
    fn header(&self, header: &str) -> Result<Option<Value>, &'static str>;

    /// What a capture at `pointer` that found nothing expected.
    fn absent(&self, pointer: &str) -> String {
        format!("a value at {pointer}")
    }

    /// How a claim of this kind is named: the name it has on one answer
    /// with what this view adds in front.
    fn prefix(&self, _kind: CheckKind) -> &'static str {
        ""
    }

    /// A pointer into what the checks read as a pointer into what the
    /// report records; `None` when nothing of it is recorded.
    fn recorded_pointer(&self, pointer: &str) -> Option<String> {
        Some(pointer.to_string())
    }

    /// What every claim of this kind about this view should say besides
    /// its own note.
    fn note(&self, kind: CheckKind) -> Option<String>;

    /// The answer (by index) a claim is recorded with; `None` for the log.
    fn recorded(&self, answer: usize) -> Option<&Exchange>;

    /// The lines of a failure message after its note and context: what was
    /// asked and seen, with the claim's place, expected and actual.
    fn story(&self, answer: usize, result: &CheckResult) -> String;
}

/// The lines every message about one answer of the host ends with.
pub(super) fn exchange_story(exchange: &Exchange, result: &CheckResult) -> String {
    format!(
        "\n  request:  {} {}\n  at:       {}\n  expected: {}\n  actual:   {}\n  response: {} {}",
        exchange.method,
        exchange.url,
        result.at,
        result.expected,
        result.actual,
        exchange.status,
        exchange.excerpt()
    )
}

/// What an assertion checked, as a result names it: its target, with the
/// filter and mapping it reads through.
fn describe(assertion: &Assertion) -> String {
    let filter = assertion
        .filter
        .iter()
        .map(|(pointer, value)| (pointer, value));
    format!(
        "{}{}",
        assertion.target,
        array_reading(filter, assertion.map.as_deref())
    )
}

/// A claim's result as what was seen names it: the view's prefix in front
/// of its name, the view's note ahead of its own, its pointer as recorded.
pub(super) fn named(seen: &impl Seen, mut result: CheckResult) -> CheckResult {
    let note: Vec<String> = [seen.note(result.kind), result.note.take()]
        .into_iter()
        .flatten()
        .collect();
    CheckResult {
        what: format!("{}{}", seen.prefix(result.kind), result.what),
        pointer: result
            .pointer
            .take()
            .and_then(|pointer| seen.recorded_pointer(&pointer)),
        note: (!note.is_empty()).then(|| note.join("; ")),
        ..result
    }
}

impl Driver {
    /// Checks what one look saw against every expectation of the step,
    /// each result attributed to the requirements it proves: `status`
    /// holds for every answer; `schema` for every answer and each
    /// `schemas` entry for every answer of its status (one offending
    /// answer is the verdict); the assertions for the view. The checks
    /// made: [`Expect::checks`] plus the `schemas` entries some answer had
    /// the status of (an entry no answer reached checked nothing).
    pub(super) fn check(
        &self,
        place: &Place<'_>,
        request: Option<&Outgoing>,
        expect: &Expect,
        seen: &impl Seen,
        vars: &Vars,
        context: Option<String>,
    ) -> Result<Tally, RunError> {
        let expect_at = format!("{}/expect", place.step.pointer);
        let own = place.scenario.step_proves(place.step);
        let blocks = place.scenario.blocks(own);
        let answers = seen.answers();
        let mut claims: Vec<(usize, CheckResult, &[String], bool)> = Vec::new();
        let mut tally = Tally::new(expect.checks());
        if !expect.status.is_empty() {
            if let Some((index, answer)) = answers
                .iter()
                .enumerate()
                .find(|(_, answer)| !expect.status.contains(&answer.status))
            {
                claims.push((
                    index,
                    status_claim(seen, expect, &expect_at, index, answer),
                    own,
                    blocks,
                ));
            }
        }
        let mut schemas: Vec<(Option<u16>, &str, String)> = Vec::new();
        if let Some(schema) = &expect.schema {
            schemas.push((None, schema, format!("{expect_at}/schema")));
        }
        for (status, schema) in &expect.schemas {
            schemas.push((
                Some(*status),
                schema,
                format!("{expect_at}/schemas/{status}"),
            ));
        }
        for (status, schema, at) in schemas {
            let mut reached = false;
            for (index, answer) in answers.iter().enumerate() {
                if status.is_some_and(|status| status != answer.status) {
                    continue;
                }
                reached = true;
                let body = match answer.json() {
                    Ok(body) => body,
                    Err(error) => {
                        tally.unreadable.push((error, own.to_vec()));
                        break;
                    }
                };
                if let Err(violations) = self.schemas.validate(schema, body) {
                    let claim = schema_claim(seen, schema, at.clone(), index, answer, &violations);
                    claims.push((index, claim, own, blocks));
                    // One offending answer per schema is the verdict.
                    break;
                }
            }
            if reached && status.is_some() {
                tally.checks = tally.checks.saturating_add(1);
            }
        }
        for assertion in &expect.assertions {
            let proves = place.scenario.assertion_proves(place.step, assertion);
            match seen.evaluate(assertion, vars) {
                Ok(()) => {}
                Err(Verdict::Error(error @ RunError::NotJson { .. })) => {
                    tally.unreadable.push((error, proves.to_vec()))
                }
                Err(Verdict::Error(error)) => return Err(error),
                Err(Verdict::Mismatch(mismatch)) => {
                    let claim = CheckResult {
                        kind: CheckKind::Assertion,
                        at: assertion.pointer.clone(),
                        what: describe(assertion),
                        expected: mismatch.expected,
                        actual: mismatch.actual,
                        pointer: match &assertion.target {
                            Target::Pointer(pointer) => Some(pointer.clone()),
                            Target::Header(_) => None,
                        },
                        ..CheckResult::default()
                    };
                    claims.push((0, claim, proves, place.scenario.blocks(proves)));
                }
            }
        }
        for (answer, claim, proves, blocking) in claims {
            let result = CheckResult {
                context: context.clone(),
                proves: proves.to_vec(),
                blocking,
                ..named(seen, claim)
            };
            tally
                .missed
                .push(self.record(place, request, seen, answer, result));
        }
        Ok(tally)
    }

    /// A check that did not hold, with the message that tells it and the
    /// step and exchange it was about.
    pub(super) fn record(
        &self,
        place: &Place<'_>,
        request: Option<&Outgoing>,
        seen: &impl Seen,
        answer: usize,
        result: CheckResult,
    ) -> FailedCheck {
        let mut message = format!("{}: {} did not hold", place.heading(), result.what);
        if let Some(note) = &result.note {
            message.push_str(&format!("\n  {note}"));
        }
        if let Some(context) = &result.context {
            message.push_str(&format!("\n  ({context})"));
        }
        message.push_str(&seen.story(answer, &result));
        FailedCheck {
            step: place.step.index,
            failed_step: self.failed_step(
                place,
                request,
                seen.recorded(answer),
                Some(result.clone()),
                None,
            ),
            result,
            message,
        }
    }
}

/// The claim that answer `index` broke `schema` (at `at` in the scenario):
/// the first violations, their pointers as the report records the body.
fn schema_claim(
    seen: &impl Seen,
    schema: &str,
    at: String,
    index: usize,
    answer: &Exchange,
    violations: &[Violation],
) -> CheckResult {
    let recorded = |pointer: &str| {
        seen.recorded_pointer(pointer)
            .unwrap_or_else(|| pointer.to_string())
    };
    let shown: Vec<String> = violations
        .iter()
        .take(VIOLATIONS_SHOWN)
        .map(|violation| {
            Violation {
                pointer: recorded(&violation.pointer),
                message: violation.message.clone(),
            }
            .to_string()
        })
        .collect();
    let first = violations
        .first()
        .map(|violation| violation.pointer.clone())
        .unwrap_or_default();
    let named_first = recorded(&first);
    let which = match seen.several() {
        Some(total) => format!(
            " of parallel answer {} of {total} ({})",
            index + 1,
            answer.status
        ),
        None => String::new(),
    };
    let place = if named_first.is_empty() {
        "(root)"
    } else {
        &named_first
    };
    CheckResult {
        kind: CheckKind::Schema,
        at,
        what: format!("schema `{schema}`{which} at body pointer {place}"),
        expected: format!("a body valid against `{schema}`"),
        actual: shown.join("; "),
        pointer: Some(first),
        ..CheckResult::default()
    }
}

/// The claim that answer `index` had a status the step does not expect.
fn status_claim(
    seen: &impl Seen,
    expect: &Expect,
    expect_at: &str,
    index: usize,
    answer: &Exchange,
) -> CheckResult {
    let listed: Vec<String> = expect.status.iter().map(u16::to_string).collect();
    let (what, expected, actual) = match (seen.several(), listed.as_slice()) {
        (None, [one]) => ("status".to_string(), one.clone(), answer.status.to_string()),
        (None, _) => (
            "status".to_string(),
            format!("one of {}", listed.join(", ")),
            answer.status.to_string(),
        ),
        (Some(total), _) => (
            format!("status of every one of {total} parallel answers"),
            format!("one of {}", listed.join(", ")),
            format!("answer {} of {total}: {}", index + 1, answer.status),
        ),
    };
    let note = seen
        .advertised_seam()
        .filter(|_| answer.status == 404)
        .map(|seam| {
            format!("host advertises conformanceSeams.goals.{seam} but the seam answered 404")
        });
    CheckResult {
        kind: CheckKind::Status,
        at: format!("{expect_at}/status"),
        what,
        expected,
        actual,
        note,
        ..CheckResult::default()
    }
}
