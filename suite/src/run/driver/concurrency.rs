//! `parallel` request steps: one request sent `count` times at once, the
//! answers folded into one JSON document that `expect` and `capture` read.
//!
//! The document (docs/DESIGN.md, "Scenario files"):
//! `{count, statuses: [..], counts: {"200": n, ..}, responses: [{index,
//! status, headers: {lower-case name: value}, body, text?}], first: {"200":
//! <the first response with that status>, ..}}`. `responses` is in send
//! order (`index` = `{parallel.index}`, from 1); `body` is the JSON answer
//! or null, `text` an excerpt of an answer that is not JSON.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use super::step::{Absent, Captured, Repeater, Subject};
use super::{describe, Driver, Miss, Missed, Place, Tally, Trace};
use crate::assertion::{self, Verdict};
use crate::error::{RunError, StepError};
use crate::http::{excerpt, Exchange, Outgoing};
use crate::model::{Capture, Parallel, RequestStep, Target};
use crate::run::outcome::VIOLATIONS_SHOWN;
use crate::template::Vars;

/// `{parallel.index}`, the copy's number from 1.
const INDEX_VARIABLE: &str = "parallel.index";

impl Driver {
    pub(super) async fn run_parallel(
        &self,
        place: &Place<'_>,
        request: &RequestStep,
        parallel: Parallel,
        vars: &mut Vars,
        trace: &mut Trace,
    ) -> Result<Tally, StepError> {
        let mut outgoing = Vec::with_capacity(parallel.count as usize);
        for index in 1..=parallel.count {
            let mut copy = vars.clone();
            copy.set(INDEX_VARIABLE, Value::from(index));
            outgoing.push(self.render(request, &copy)?);
        }
        trace.request = outgoing.first().cloned();
        // The schema refuses `poll` and `observe` on a parallel step, so this
        // looks once; it keeps the one repeat loop's rules all the same.
        let mut repeater = Repeater::new(request.repeat, Subject::Host, self.poll_scale);
        let (answers, tally) = loop {
            let exchanges = self.send_together(outgoing.clone()).await?;
            trace.response = exchanges.first().cloned();
            let document = aggregate(&exchanges);
            // Every claim about parallel answers names the answer it is
            // about; a repeat's context line would add nothing.
            let _ = repeater.look();
            let tally = self
                .check_parallel(place, request, &exchanges, &document, vars)?
                .settle()?;
            if let Some(tally) = repeater.settle(tally).await {
                break (
                    Answers {
                        exchanges,
                        document,
                    },
                    tally,
                );
            }
        };
        self.capture(place, &request.capture, &answers, vars, tally)
    }

    /// Sends every copy at the same moment (they wait on one barrier, so
    /// none has a head start) and returns the answers in send order. Any
    /// copy that gets no answer makes the step an error, as a single
    /// request would.
    async fn send_together(&self, outgoing: Vec<Outgoing>) -> Result<Vec<Exchange>, RunError> {
        let count = outgoing.len();
        let barrier = Arc::new(Barrier::new(count));
        let mut tasks = JoinSet::new();
        for (index, request) in outgoing.into_iter().enumerate() {
            let http = self.http.clone();
            let barrier = Arc::clone(&barrier);
            tasks.spawn(async move {
                barrier.wait().await;
                (index, http.send(&request).await)
            });
        }
        let mut answers: Vec<Option<Result<Exchange, RunError>>> =
            (0..count).map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            let (index, answer) = joined.map_err(|error| {
                RunError::Scenario(format!("a parallel request task ended abnormally: {error}"))
            })?;
            if let Some(slot) = answers.get_mut(index) {
                *slot = Some(answer);
            }
        }
        answers
            .into_iter()
            .map(|answer| answer.unwrap_or_else(|| Err(no_answers())))
            .collect()
    }

    /// `status` and `schema` hold for every answer, each `schemas` entry for
    /// every answer of its status, the assertions for the aggregate. The
    /// checks made: `Expect::checks` plus the `schemas` entries some answer
    /// had the status of (an entry no answer reached checked nothing).
    fn check_parallel(
        &self,
        place: &Place<'_>,
        request: &RequestStep,
        exchanges: &[Exchange],
        document: &Value,
        vars: &Vars,
    ) -> Result<Tally, StepError> {
        let expect = &request.expect;
        let expect_at = format!("{}/expect", place.step.pointer);
        let total = exchanges.len();
        let own = place.scenario.step_proves(place.step);
        let mut tally = Tally::new(0);
        if !expect.status.is_empty() {
            if let Some((index, exchange)) = exchanges
                .iter()
                .enumerate()
                .find(|(_, exchange)| !expect.status.contains(&exchange.status))
            {
                let listed: Vec<String> = expect.status.iter().map(u16::to_string).collect();
                let seam_note = match &request.request.seam {
                    Some(seam)
                        if exchange.status == 404
                            && self.host.capabilities.seams.contains(seam) =>
                    {
                        format!(
                            "; host advertises conformanceSeams.goals.{seam} but the seam answered 404"
                        )
                    }
                    _ => String::new(),
                };
                tally.missed.push(self.missed(
                    place,
                    exchange,
                    Miss {
                        at: format!("{expect_at}/status"),
                        what: format!("status of every one of {total} parallel answers"),
                        expected: format!("one of {}", listed.join(", ")),
                        actual: format!("answer {} of {total}: {}", index + 1, exchange.status),
                        note: Some(format!("{}{seam_note}", summary(document))),
                        pointer: None,
                    },
                    None,
                    own,
                ));
            }
        }
        let mut applied = 0u32;
        let mut by_status: Vec<(Option<u16>, &str, String)> = Vec::new();
        if let Some(schema) = &expect.schema {
            by_status.push((None, schema, format!("{expect_at}/schema")));
        }
        for (status, schema) in &expect.schemas {
            by_status.push((
                Some(*status),
                schema,
                format!("{expect_at}/schemas/{status}"),
            ));
        }
        for (status, schema, at) in by_status {
            let mut reached = false;
            for (index, exchange) in exchanges.iter().enumerate() {
                if status.is_some_and(|status| status != exchange.status) {
                    continue;
                }
                reached = true;
                let body = match exchange.json() {
                    Ok(body) => body,
                    Err(error) => {
                        tally.unreadable.push((error, own.to_vec()));
                        break;
                    }
                };
                if let Err(violations) = self.schemas.validate(schema, body) {
                    let shown: Vec<String> = violations
                        .iter()
                        .take(VIOLATIONS_SHOWN)
                        .map(ToString::to_string)
                        .collect();
                    let first = violations
                        .first()
                        .map(|v| v.pointer.clone())
                        .unwrap_or_default();
                    tally.missed.push(self.missed(
                        place,
                        exchange,
                        Miss {
                            at: at.clone(),
                            what: format!(
                                "schema `{schema}` of parallel answer {} of {total} ({}) at body pointer {}",
                                index + 1,
                                exchange.status,
                                if first.is_empty() { "(root)" } else { &first }
                            ),
                            expected: format!("a body valid against `{schema}`"),
                            actual: shown.join("; "),
                            note: Some(summary(document)),
                            pointer: Some(first),
                        },
                        None,
                        own,
                    ));
                    // One offending answer per schema is the verdict.
                    break;
                }
            }
            if reached && status.is_some() {
                applied += 1;
            }
        }
        for assertion in &expect.assertions {
            let proves = place.scenario.assertion_proves(place.step, assertion);
            match assertion::evaluate_json(assertion, document, vars) {
                Ok(()) => {}
                Err(Verdict::Error(error)) => return Err(StepError::Error(error)),
                Err(Verdict::Mismatch(mismatch)) => {
                    let first = exchanges.first().ok_or_else(no_answers)?;
                    let what = format!("aggregate {}", describe(assertion));
                    tally.missed.push(self.missed(
                        place,
                        first,
                        Miss {
                            at: assertion.pointer.clone(),
                            what,
                            expected: mismatch.expected,
                            actual: mismatch.actual,
                            note: Some(summary(document)),
                            pointer: match &assertion.target {
                                Target::Pointer(pointer) => Some(pointer.clone()),
                                Target::Header(_) => None,
                            },
                        },
                        None,
                        proves,
                    ));
                }
            }
        }
        tally.checks = expect.checks().saturating_add(applied);
        Ok(tally)
    }
}

/// A parallel step's answers in send order, with their aggregate document.
struct Answers {
    exchanges: Vec<Exchange>,
    document: Value,
}

impl Captured for Answers {
    fn pointer(&self, pointer: &str) -> Result<Option<Value>, StepError> {
        Ok(self.document.pointer(pointer).cloned())
    }

    fn header(&self, _: &str) -> Result<Option<Value>, &'static str> {
        Err("a parallel step has no single header to take")
    }

    fn absent(&self, absent: Absent<'_>) -> Result<Missed, StepError> {
        let pointer = match absent.source {
            Capture::Pointer(pointer) => pointer.clone(),
            Capture::Clock(_) | Capture::Later(..) | Capture::Header(_) => String::new(),
        };
        let first = self.exchanges.first().ok_or_else(no_answers)?;
        Ok(absent.driver.missed(
            absent.place,
            first,
            Miss {
                expected: format!("a value at {pointer} of the aggregate"),
                note: Some(summary(&self.document)),
                pointer: Some(pointer),
                ..absent.miss
            },
            None,
            absent.place.scenario.step_proves(absent.place.step),
        ))
    }
}

fn no_answers() -> RunError {
    RunError::Scenario("a parallel step ended without its answers".to_string())
}

/// One line for messages: how many answers of each status.
fn summary(document: &Value) -> String {
    let count = document.get("count").cloned().unwrap_or(Value::Null);
    let counts = document.get("counts").cloned().unwrap_or(Value::Null);
    format!("{count} requests sent at once; answers by status: {counts}")
}

/// The aggregate document of a parallel step's answers, in send order.
pub fn aggregate(exchanges: &[Exchange]) -> Value {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut first = Map::new();
    let mut responses = Vec::with_capacity(exchanges.len());
    for (index, exchange) in exchanges.iter().enumerate() {
        let mut headers = Map::new();
        for name in exchange.headers.keys() {
            if let Some(value) = exchange.header(name.as_str()) {
                headers.insert(name.as_str().to_ascii_lowercase(), Value::from(value));
            }
        }
        let mut response = Map::new();
        response.insert("index".into(), Value::from(index + 1));
        response.insert("status".into(), Value::from(exchange.status));
        response.insert("headers".into(), Value::Object(headers));
        match exchange.json() {
            Ok(body) => {
                response.insert("body".into(), body.clone());
            }
            Err(_) => {
                response.insert("body".into(), Value::Null);
                if !exchange.body.is_empty() {
                    response.insert("text".into(), Value::from(excerpt(&exchange.body)));
                }
            }
        }
        let response = Value::Object(response);
        let status = exchange.status.to_string();
        *counts.entry(status.clone()).or_default() += 1;
        first.entry(status).or_insert_with(|| response.clone());
        responses.push(response);
    }
    serde_json::json!({
        "count": exchanges.len(),
        "statuses": exchanges.iter().map(|e| e.status).collect::<Vec<_>>(),
        "counts": counts,
        "responses": responses,
        "first": first,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};
    use serde_json::json;

    fn answer(status: u16, etag: Option<&str>, body: &[u8]) -> Exchange {
        let mut headers = HeaderMap::new();
        if let Some(etag) = etag {
            headers.insert("ETag", HeaderValue::from_str(etag).expect("header"));
        }
        Exchange::new("PATCH", "http://h/g/1", status, headers, body.to_vec())
    }

    #[test]
    fn the_aggregate_counts_statuses_and_keeps_send_order() {
        let document = aggregate(&[
            answer(
                412,
                None,
                br#"{"error":"precondition_failed","message":"x"}"#,
            ),
            answer(200, Some("\"2\""), br#"{"id":"g"}"#),
            answer(412, None, b"<html>"),
        ]);
        assert_eq!(document["count"], 3);
        assert_eq!(document["statuses"], json!([412, 200, 412]));
        assert_eq!(document["counts"], json!({"200": 1, "412": 2}));
        assert_eq!(document["responses"][1]["index"], 2);
        assert_eq!(document["responses"][1]["headers"]["etag"], "\"2\"");
        assert_eq!(document["first"]["200"]["body"], json!({"id": "g"}));
        assert_eq!(document["first"]["412"]["index"], 1);
        assert_eq!(document["responses"][2]["body"], Value::Null);
        assert_eq!(document["responses"][2]["text"], "<html>");
        assert!(document["responses"][0].get("text").is_none());
    }

    #[test]
    fn an_empty_answer_has_a_null_body_and_no_text() {
        let document = aggregate(&[answer(204, None, b""), answer(204, None, b"")]);
        assert_eq!(document["responses"][0]["body"], Value::Null);
        assert!(document["responses"][0].get("text").is_none());
        assert_eq!(document["counts"], json!({"204": 2}));
    }
}
