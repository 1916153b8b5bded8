//! Evaluating one assertion against one exchange.
//!
//! Pure: no I/O, no clock. An assertion either holds, or yields a
//! [`Mismatch`] (the host broke a claim: a failure) or a [`RunError`] (the body
//! could not be read as JSON, or the scenario is broken: an error).

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::RunError;
use crate::http::Exchange;
use crate::mock::round_us;
use crate::model::{Assertion, CompareOp, LengthOp, Predicate, Target};
use crate::template::Vars;

/// Longest rendering of an actual value quoted in a message.
const ACTUAL_CHARS: usize = 500;

/// What was expected and what the host gave instead, both rendered for a
/// person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub expected: String,
    pub actual: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Mismatch(Mismatch),
    Error(RunError),
}

impl From<RunError> for Verdict {
    fn from(error: RunError) -> Self {
        Verdict::Error(error)
    }
}

fn mismatch(expected: impl Into<String>, actual: Option<&Value>) -> Mismatch {
    Mismatch {
        expected: expected.into(),
        actual: render(actual),
    }
}

/// A value as a person reads it in a message, `(absent)` when missing.
pub fn render(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".to_string(),
        Some(value) => {
            let text = value.to_string();
            if text.chars().count() > ACTUAL_CHARS {
                let mut cut: String = text.chars().take(ACTUAL_CHARS).collect();
                cut.push('…');
                cut
            } else {
                text
            }
        }
    }
}

/// Whether the assertion needs the body as JSON.
pub fn needs_json(assertion: &Assertion) -> bool {
    matches!(assertion.target, Target::Pointer(_))
}

pub fn evaluate(assertion: &Assertion, exchange: &Exchange, vars: &Vars) -> Result<(), Verdict> {
    let target = match &assertion.target {
        Target::Pointer(pointer) => exchange.json()?.pointer(pointer).cloned(),
        Target::Header(name) => exchange.header(name).map(Value::String),
    };
    evaluate_target(assertion, target, vars)
}

/// Evaluates an assertion against a JSON document that is not an HTTP
/// answer (the mock's call log): pointers only, there are no headers.
pub fn evaluate_json(assertion: &Assertion, document: &Value, vars: &Vars) -> Result<(), Verdict> {
    match &assertion.target {
        Target::Pointer(pointer) => {
            evaluate_target(assertion, document.pointer(pointer).cloned(), vars)
        }
        Target::Header(name) => Err(Verdict::Error(RunError::Scenario(format!(
            "assertion {}: header {name} asked of a document without headers",
            assertion.pointer
        )))),
    }
}

fn evaluate_target(
    assertion: &Assertion,
    target: Option<Value>,
    vars: &Vars,
) -> Result<(), Verdict> {
    let scenario_error = |error: crate::template::TemplateError| {
        Verdict::Error(RunError::Scenario(format!(
            "assertion {}: {error}",
            assertion.pointer
        )))
    };
    let mut filter = Vec::with_capacity(assertion.filter.len());
    for (pointer, value) in &assertion.filter {
        filter.push((
            pointer.as_str(),
            vars.render_value(value).map_err(scenario_error)?,
        ));
    }
    let selected = select(target, &filter, assertion.map.as_deref()).map_err(Verdict::Mismatch)?;
    let predicate = render_predicate(&assertion.predicate, vars).map_err(scenario_error)?;
    test(&predicate, selected.as_ref(), vars).map_err(Verdict::Mismatch)
}

/// Applies `where` then `map` to an array target.
pub fn select(
    target: Option<Value>,
    filter: &[(&str, Value)],
    map: Option<&str>,
) -> Result<Option<Value>, Mismatch> {
    if filter.is_empty() && map.is_none() {
        return Ok(target);
    }
    let items = match target {
        Some(Value::Array(items)) => items,
        other => {
            return Err(mismatch(
                "an array (the assertion uses `where` or `map`)",
                other.as_ref(),
            ))
        }
    };
    let kept = items.into_iter().filter(|item| {
        filter.iter().all(|(pointer, wanted)| {
            item.pointer(pointer)
                .is_some_and(|found| json_eq(found, wanted))
        })
    });
    // Elements without the projected field are dropped rather than mapped to
    // null, so `length` after `map` counts what is really there.
    let projected: Vec<Value> = match map {
        Some(pointer) => kept
            .filter_map(|item| item.pointer(pointer).cloned())
            .collect(),
        None => kept.collect(),
    };
    Ok(Some(Value::Array(projected)))
}

fn render_predicate(
    predicate: &Predicate,
    vars: &Vars,
) -> Result<Predicate, crate::template::TemplateError> {
    Ok(match predicate {
        Predicate::Equals(value) => Predicate::Equals(vars.render_value(value)?),
        Predicate::NotEquals(value) => Predicate::NotEquals(vars.render_value(value)?),
        Predicate::OneOf(values) => Predicate::OneOf(
            values
                .iter()
                .map(|value| vars.render_value(value))
                .collect::<Result<_, _>>()?,
        ),
        Predicate::Compare(op, value) => Predicate::Compare(*op, vars.render_value(value)?),
        Predicate::Length(op, value) => Predicate::Length(*op, vars.render_value(value)?),
        Predicate::Contains(value) => Predicate::Contains(vars.render_value(value)?),
        Predicate::NotContains(value) => Predicate::NotContains(vars.render_value(value)?),
        Predicate::WithinMs { of, min, max } => Predicate::WithinMs {
            of: vars.render_str(of)?,
            min: min.as_ref().map(|v| vars.render_value(v)).transpose()?,
            max: max.as_ref().map(|v| vars.render_value(v)).transpose()?,
        },
        other => other.clone(),
    })
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub fn json_eq(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
                a == b
            } else if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
                a == b
            } else {
                a.as_f64() == b.as_f64()
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| json_eq(x, y)))
        }
        _ => left == right,
    }
}

/// Tests a predicate whose operands are already rendered.
pub fn test(predicate: &Predicate, actual: Option<&Value>, vars: &Vars) -> Result<(), Mismatch> {
    let holds = |ok: bool, expected: String| {
        if ok {
            Ok(())
        } else {
            Err(mismatch(expected, actual))
        }
    };
    match predicate {
        Predicate::Exists(true) => holds(actual.is_some(), "present".to_string()),
        Predicate::Exists(false) | Predicate::Absent => {
            holds(actual.is_none(), "absent".to_string())
        }
        Predicate::Equals(wanted) => holds(
            actual.is_some_and(|value| json_eq(value, wanted)),
            format!("equals {wanted}"),
        ),
        Predicate::NotEquals(unwanted) => holds(
            actual.is_some_and(|value| !json_eq(value, unwanted)),
            format!("present and not equal to {unwanted}"),
        ),
        Predicate::OneOf(options) => holds(
            actual.is_some_and(|value| options.iter().any(|option| json_eq(value, option))),
            format!("one of {}", Value::Array(options.clone())),
        ),
        Predicate::Compare(op, bound) => {
            let Some(bound) = bound.as_f64() else {
                return Err(mismatch(
                    format!(
                        "{} with a numeric operand (scenario gave {bound})",
                        op.keyword()
                    ),
                    actual,
                ));
            };
            let symbol = match op {
                CompareOp::Gt => ">",
                CompareOp::Gte => ">=",
                CompareOp::Lt => "<",
                CompareOp::Lte => "<=",
            };
            let ok = actual
                .and_then(Value::as_f64)
                .is_some_and(|value| match op {
                    CompareOp::Gt => value > bound,
                    CompareOp::Gte => value >= bound,
                    CompareOp::Lt => value < bound,
                    CompareOp::Lte => value <= bound,
                });
            holds(ok, format!("a number {symbol} {bound}"))
        }
        Predicate::Length(op, wanted) => {
            let Some(wanted) = wanted.as_u64() else {
                return Err(mismatch(
                    format!(
                        "{} with a whole-number operand (scenario gave {wanted})",
                        op.keyword()
                    ),
                    actual,
                ));
            };
            let length = match actual {
                Some(Value::Array(items)) => Some(items.len() as u64),
                Some(Value::String(text)) => Some(text.chars().count() as u64),
                _ => None,
            };
            let (ok, words) = match op {
                LengthOp::Exactly => (length == Some(wanted), "exactly"),
                LengthOp::AtLeast => (length.is_some_and(|n| n >= wanted), "at least"),
                LengthOp::AtMost => (length.is_some_and(|n| n <= wanted), "at most"),
            };
            let shown = match length {
                Some(length) => format!(" (length {length})"),
                None => String::new(),
            };
            holds(ok, format!("an array or string of length {words} {wanted}")).map_err(
                |mut error| {
                    error.actual.push_str(&shown);
                    error
                },
            )
        }
        Predicate::Contains(needle) => holds(
            actual.is_some_and(|value| contains(value, needle)),
            format!("contains {needle}"),
        ),
        Predicate::NotContains(needle) => holds(
            actual.is_some_and(|value| !contains(value, needle)),
            format!("present and does not contain {needle}"),
        ),
        Predicate::Increasing => {
            let ok = match actual {
                Some(Value::Array(items)) => {
                    let numbers: Option<Vec<f64>> = items.iter().map(Value::as_f64).collect();
                    numbers.is_some_and(|numbers| numbers.windows(2).all(|pair| pair[0] < pair[1]))
                }
                _ => false,
            };
            holds(ok, "an array of strictly increasing numbers".to_string())
        }
        Predicate::WithinMs { of, min, max } => {
            let bound = |value: &Option<Value>| match value {
                None => Ok(None),
                Some(value) => value.as_i64().map(Some).ok_or_else(|| {
                    mismatch(
                        format!("withinMs with whole-millisecond bounds (scenario gave {value})"),
                        actual,
                    )
                }),
            };
            within_ms(actual, of, bound(min)?, bound(max)?, vars)
        }
    }
}

fn contains(haystack: &Value, needle: &Value) -> bool {
    let needle_text = match needle {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match haystack {
        Value::Array(items) => items.iter().any(|item| json_eq(item, needle)),
        Value::String(text) => text.contains(&needle_text),
        Value::Object(_) => haystack.to_string().contains(&needle_text),
        _ => false,
    }
}

fn parse_time(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

fn within_ms(
    actual: Option<&Value>,
    of: &str,
    min: Option<i64>,
    max: Option<i64>,
    vars: &Vars,
) -> Result<(), Mismatch> {
    let range = match (min, max) {
        (Some(min), Some(max)) => format!("between {min} and {max} ms after"),
        (Some(min), None) => format!("at least {min} ms after"),
        (None, Some(max)) => format!("at most {max} ms after"),
        (None, None) => "any time relative to".to_string(),
    };
    // Or both are numbers on the mock log's clock (ms since the scenario
    // started): a call's `atMs` against a captured `answeredMs`.
    if let Some(reference) = vars.get(of).and_then(Value::as_f64) {
        let expected = format!("a time on the mock log's clock {range} {of} ({reference} ms)");
        let Some(at) = actual.and_then(Value::as_f64) else {
            return Err(mismatch(expected, actual));
        };
        let delta = round_us(at - reference);
        let ok =
            min.is_none_or(|min| delta >= min as f64) && max.is_none_or(|max| delta <= max as f64);
        return if ok {
            Ok(())
        } else {
            Err(Mismatch {
                expected,
                actual: format!("{} ({delta} ms after)", render(actual)),
            })
        };
    }
    // `of` is a timestamp, or the bare name of a variable holding one.
    let reference =
        parse_time(of).or_else(|| vars.get(of).and_then(Value::as_str).and_then(parse_time));
    let Some(reference) = reference else {
        return Err(mismatch(
            format!("a timestamp {range} `{of}` (which is not an RFC 3339 timestamp)"),
            actual,
        ));
    };
    let expected = format!("an RFC 3339 timestamp {range} {of}");
    let Some(at) = actual.and_then(Value::as_str).and_then(parse_time) else {
        return Err(mismatch(expected, actual));
    };
    let delta = (at - reference).whole_milliseconds();
    let ok = min.is_none_or(|min| delta >= i128::from(min))
        && max.is_none_or(|max| delta <= i128::from(max));
    if ok {
        Ok(())
    } else {
        Err(Mismatch {
            expected,
            actual: format!("{} ({delta} ms after)", render(actual)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};
    use serde_json::json;

    fn vars() -> Vars {
        let mut vars = Vars::new("/b", "n", "core::x");
        vars.set("goalId", json!("goal-1"));
        vars.set("three", json!(3));
        vars.set("created", json!("2026-06-13T00:00:00.000Z"));
        vars.set("answeredMs", json!(100.5));
        vars
    }

    fn pass(predicate: Predicate, actual: Value) {
        assert_eq!(
            test(&predicate, Some(&actual), &vars()),
            Ok(()),
            "{predicate:?} on {actual}"
        );
    }

    fn fail(predicate: Predicate, actual: Option<Value>) -> Mismatch {
        test(&predicate, actual.as_ref(), &vars())
            .expect_err(&format!("{predicate:?} should fail on {actual:?}"))
    }

    #[test]
    fn equals_compares_numbers_by_value() {
        pass(Predicate::Equals(json!(1)), json!(1.0));
        pass(
            Predicate::Equals(json!({"a": [1, "x"]})),
            json!({"a": [1.0, "x"]}),
        );
        let miss = fail(Predicate::Equals(json!("active")), Some(json!("satisfied")));
        assert_eq!(miss.expected, "equals \"active\"");
        assert_eq!(miss.actual, "\"satisfied\"");
        fail(Predicate::Equals(json!(null)), None);
        pass(Predicate::Equals(json!(null)), json!(null));
    }

    #[test]
    fn not_equals_needs_a_present_different_value() {
        pass(Predicate::NotEquals(json!("a")), json!("b"));
        fail(Predicate::NotEquals(json!("a")), Some(json!("a")));
        fail(Predicate::NotEquals(json!("a")), None);
    }

    #[test]
    fn one_of() {
        pass(Predicate::OneOf(vec![json!(200), json!(201)]), json!(201));
        let miss = fail(
            Predicate::OneOf(vec![json!(200), json!(201)]),
            Some(json!(204)),
        );
        assert_eq!(miss.expected, "one of [200,201]");
    }

    #[test]
    fn exists_and_absent() {
        pass(Predicate::Exists(true), json!(null));
        assert_eq!(test(&Predicate::Exists(false), None, &vars()), Ok(()));
        assert_eq!(test(&Predicate::Absent, None, &vars()), Ok(()));
        assert_eq!(fail(Predicate::Exists(true), None).actual, "(absent)");
        fail(Predicate::Exists(false), Some(json!(1)));
        fail(Predicate::Absent, Some(json!(null)));
    }

    #[test]
    fn numeric_comparisons() {
        pass(Predicate::Compare(CompareOp::Gt, json!(2)), json!(3));
        fail(Predicate::Compare(CompareOp::Gt, json!(3)), Some(json!(3)));
        pass(Predicate::Compare(CompareOp::Gte, json!(3)), json!(3));
        fail(
            Predicate::Compare(CompareOp::Gte, json!(3)),
            Some(json!(2.9)),
        );
        pass(Predicate::Compare(CompareOp::Lt, json!(1.0)), json!(0.4));
        fail(Predicate::Compare(CompareOp::Lt, json!(1)), Some(json!(1)));
        pass(Predicate::Compare(CompareOp::Lte, json!(1)), json!(1));
        fail(
            Predicate::Compare(CompareOp::Lte, json!(1)),
            Some(json!(1.01)),
        );
        fail(
            Predicate::Compare(CompareOp::Gt, json!(1)),
            Some(json!("5")),
        );
        fail(Predicate::Compare(CompareOp::Gt, json!(1)), None);
        let bad = fail(
            Predicate::Compare(CompareOp::Gt, json!("x")),
            Some(json!(5)),
        );
        assert!(bad.expected.contains("numeric operand"), "{bad:?}");
    }

    #[test]
    fn lengths_of_arrays_and_strings() {
        pass(
            Predicate::Length(LengthOp::Exactly, json!(2)),
            json!([1, 2]),
        );
        pass(Predicate::Length(LengthOp::Exactly, json!(3)), json!("héé"));
        let miss = fail(
            Predicate::Length(LengthOp::Exactly, json!(2)),
            Some(json!([1])),
        );
        assert_eq!(miss.actual, "[1] (length 1)");
        pass(Predicate::Length(LengthOp::AtLeast, json!(1)), json!([1]));
        fail(
            Predicate::Length(LengthOp::AtLeast, json!(2)),
            Some(json!([1])),
        );
        pass(Predicate::Length(LengthOp::AtMost, json!(1)), json!([]));
        fail(
            Predicate::Length(LengthOp::AtMost, json!(0)),
            Some(json!("a")),
        );
        fail(
            Predicate::Length(LengthOp::Exactly, json!(0)),
            Some(json!({})),
        );
        fail(Predicate::Length(LengthOp::Exactly, json!(0)), None);
    }

    #[test]
    fn contains_on_arrays_strings_and_objects() {
        pass(
            Predicate::Contains(json!("run-1")),
            json!(["run-0", "run-1"]),
        );
        fail(Predicate::Contains(json!("run-2")), Some(json!(["run-0"])));
        pass(Predicate::Contains(json!(1)), json!([1.0]));
        pass(Predicate::Contains(json!("ship")), json!("ship it"));
        fail(Predicate::Contains(json!("nope")), Some(json!("ship it")));
        pass(
            Predicate::Contains(json!("canary")),
            json!({"a": {"b": "xcanaryx"}}),
        );
        fail(Predicate::Contains(json!("x")), None);
        fail(Predicate::Contains(json!("1")), Some(json!(1)));
    }

    #[test]
    fn not_contains_is_the_canary_check() {
        pass(
            Predicate::NotContains(json!("canary-123")),
            json!({"events": [{"payload": {"goalId": "g"}}]}),
        );
        let miss = fail(
            Predicate::NotContains(json!("canary-123")),
            Some(json!({"events": [{"payload": {"objective": "canary-123"}}]})),
        );
        assert!(miss.expected.contains("does not contain"), "{miss:?}");
        fail(Predicate::NotContains(json!("a")), Some(json!(["a"])));
        pass(Predicate::NotContains(json!("a")), json!("bcd"));
        fail(Predicate::NotContains(json!("a")), None);
    }

    #[test]
    fn increasing_is_strict() {
        pass(Predicate::Increasing, json!([1, 2, 5]));
        pass(Predicate::Increasing, json!([]));
        fail(Predicate::Increasing, Some(json!([1, 1])));
        fail(Predicate::Increasing, Some(json!([2, 1])));
        fail(Predicate::Increasing, Some(json!([1, "2"])));
        fail(Predicate::Increasing, Some(json!(1)));
    }

    #[test]
    fn within_ms_measures_from_a_timestamp_or_variable() {
        let within = |of: &str, min: Option<i64>, max: Option<i64>| Predicate::WithinMs {
            of: of.to_string(),
            min: min.map(Value::from),
            max: max.map(Value::from),
        };
        pass(
            within("2026-06-13T00:00:00Z", Some(0), Some(1000)),
            json!("2026-06-13T00:00:00.500Z"),
        );
        pass(
            within("created", Some(400), None),
            json!("2026-06-13T00:00:00.500Z"),
        );
        let late = fail(
            within("created", Some(0), Some(1000)),
            Some(json!("2026-06-13T00:00:01.500Z")),
        );
        assert!(late.actual.contains("1500 ms after"), "{late:?}");
        fail(
            within("created", Some(0), None),
            Some(json!("2026-06-12T23:59:59Z")),
        );
        fail(within("created", None, Some(10)), Some(json!("not a time")));
        let bad = fail(
            within("nowhere", None, None),
            Some(json!("2026-06-13T00:00:00Z")),
        );
        assert!(bad.expected.contains("not an RFC 3339"), "{bad:?}");
    }

    #[test]
    fn within_ms_measures_on_the_mock_clock_when_both_are_numbers() {
        let within = |min: Option<i64>, max: Option<i64>| Predicate::WithinMs {
            of: "answeredMs".to_string(),
            min: min.map(Value::from),
            max: max.map(Value::from),
        };
        // answeredMs is 100.5: 1100.5 is exactly 1000 ms after it.
        pass(within(Some(1000), Some(1250)), json!(1100.5));
        pass(within(None, Some(1250)), json!(50));
        let early = fail(within(Some(1000), None), Some(json!(1100.25)));
        assert!(early.actual.contains("999.75 ms after"), "{early:?}");
        assert!(early.expected.contains("mock log's clock"), "{early:?}");
        fail(within(None, Some(1250)), Some(json!(1350.75)));
        // A timestamp is no time on that clock.
        fail(within(None, None), Some(json!("2026-06-13T00:00:00Z")));
        fail(within(None, None), None);
    }

    #[test]
    fn where_and_map_select_from_arrays() {
        let events = json!([
            {"type": "goal.evaluated", "payload": {"runId": "r1"}},
            {"type": "goal.closed", "payload": {"finalState": "satisfied"}},
            {"type": "goal.evaluated", "payload": {"runId": "r2"}},
        ]);
        let selected = select(
            Some(events.clone()),
            &[("/type", json!("goal.evaluated"))],
            Some("/payload/runId"),
        )
        .unwrap();
        assert_eq!(selected, Some(json!(["r1", "r2"])));
        let unmatched = select(Some(events.clone()), &[], Some("/payload/runId")).unwrap();
        assert_eq!(unmatched, Some(json!(["r1", "r2"])));
        let none = select(Some(events), &[("/type", json!("nope"))], None).unwrap();
        assert_eq!(none, Some(json!([])));
        let error = select(Some(json!({"a": 1})), &[], Some("/a")).unwrap_err();
        assert!(error.expected.contains("an array"), "{error:?}");
        assert!(select(None, &[], Some("/a")).is_err());
        assert_eq!(select(Some(json!(1)), &[], None).unwrap(), Some(json!(1)));
    }

    fn exchange(body: &str) -> Exchange {
        let mut headers = HeaderMap::new();
        headers.insert("etag", HeaderValue::from_static("\"3\""));
        Exchange::new(
            "GET",
            "http://h/b/goal-1",
            200,
            headers,
            body.as_bytes().to_vec(),
        )
    }

    fn assertion(target: Target, predicate: Predicate) -> Assertion {
        Assertion {
            pointer: "/steps/0/expect/assert/0".to_string(),
            target,
            filter: Vec::new(),
            map: None,
            predicate,
            proves: None,
        }
    }

    #[test]
    fn evaluate_renders_templates_and_reads_headers() {
        let exchange = exchange(r#"{"id": "goal-1", "progress": {"iterations": 3}}"#);
        let vars = vars();
        let ok = [
            assertion(
                Target::Pointer("/id".into()),
                Predicate::Equals(json!("{goalId}")),
            ),
            assertion(
                Target::Pointer("/progress/iterations".into()),
                Predicate::Equals(json!("{three}")),
            ),
            assertion(
                Target::Header("ETag".into()),
                Predicate::Equals(json!("\"3\"")),
            ),
            assertion(Target::Header("Location".into()), Predicate::Absent),
            assertion(
                Target::Pointer("".into()),
                Predicate::NotContains(json!("canary")),
            ),
        ];
        for assertion in &ok {
            assert_eq!(
                evaluate(assertion, &exchange, &vars),
                Ok(()),
                "{assertion:?}"
            );
        }
        let wrong = assertion(
            Target::Pointer("/id".into()),
            Predicate::Equals(json!("goal-2")),
        );
        assert!(matches!(
            evaluate(&wrong, &exchange, &vars),
            Err(Verdict::Mismatch(_))
        ));
    }

    #[test]
    fn evaluate_json_reads_a_plain_document() {
        let vars = vars();
        let log = json!({"arm": {"count": 3, "runIds": ["r1", "r2", "r3"]},
                         "calls": [{"endpoint": "arm", "atMs": 5}, {"endpoint": "verifier", "atMs": 9}]});
        let count = assertion(
            Target::Pointer("/arm/count".into()),
            Predicate::Equals(json!("{three}")),
        );
        assert_eq!(evaluate_json(&count, &log, &vars), Ok(()));
        let mut times = assertion(Target::Pointer("/calls".into()), Predicate::Increasing);
        times.map = Some("/atMs".to_string());
        assert_eq!(evaluate_json(&times, &log, &vars), Ok(()));
        let wrong = assertion(
            Target::Pointer("/arm/count".into()),
            Predicate::Equals(json!(4)),
        );
        assert!(matches!(
            evaluate_json(&wrong, &log, &vars),
            Err(Verdict::Mismatch(_))
        ));
        let header = assertion(Target::Header("ETag".into()), Predicate::Exists(true));
        assert!(matches!(
            evaluate_json(&header, &log, &vars),
            Err(Verdict::Error(RunError::Scenario(_)))
        ));
    }

    #[test]
    fn evaluate_separates_errors_from_mismatches() {
        let vars = vars();
        let html = exchange("<html>oops</html>");
        let on_body = assertion(Target::Pointer("/id".into()), Predicate::Exists(true));
        assert!(matches!(
            evaluate(&on_body, &html, &vars),
            Err(Verdict::Error(RunError::NotJson { .. }))
        ));
        // A header assertion does not need the body to be JSON.
        let on_header = assertion(Target::Header("etag".into()), Predicate::Exists(true));
        assert_eq!(evaluate(&on_header, &html, &vars), Ok(()));
        let unknown = assertion(
            Target::Pointer("/id".into()),
            Predicate::Equals(json!("{nope}")),
        );
        let error = evaluate(&unknown, &exchange("{}"), &vars).unwrap_err();
        assert!(
            matches!(&error, Verdict::Error(RunError::Scenario(message)) if message.contains("{nope}")),
            "{error:?}"
        );
    }
}
