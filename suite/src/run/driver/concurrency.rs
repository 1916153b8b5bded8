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

use super::check::{exchange_story, Seen};
use super::step::{Repeater, Subject};
use super::{Driver, Place, Tally, Trace};
use crate::error::RunError;
use crate::http::{excerpt, Exchange, Outgoing};
use crate::model::{Parallel, RequestStep};
use crate::run::outcome::{CheckKind, CheckResult};
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
    ) -> Result<Tally, RunError> {
        let mut outgoing = Vec::with_capacity(parallel.count as usize);
        for index in 1..=parallel.count {
            let mut copy = vars.clone();
            copy.set(INDEX_VARIABLE, Value::from(index));
            outgoing.push(self.render(request, &copy)?);
        }
        let first = outgoing.first().cloned();
        trace.request = first.clone();
        let seam = request
            .request
            .seam
            .as_deref()
            .filter(|seam| self.host.capabilities.seams.contains(*seam));
        // The schema refuses `poll` and `observe` on a parallel step, so this
        // looks once; it keeps the one repeat loop's rules all the same.
        let mut repeater = Repeater::new(request.repeat, Subject::Host, self.poll_scale);
        let (answers, tally) = loop {
            let exchanges = self.send_together(outgoing.clone()).await?;
            trace.response = exchanges.first().cloned();
            let answers = Answers::new(exchanges, seam)?;
            // Every claim about parallel answers names the answer it is
            // about; a repeat's context line would add nothing.
            let _ = repeater.look();
            let tally = self
                .check(place, first.as_ref(), &request.expect, &answers, vars, None)?
                .settle()?;
            if let Some(tally) = repeater.settle(tally).await {
                break (answers, tally);
            }
        };
        self.capture(
            place,
            first.as_ref(),
            &request.capture,
            &answers,
            vars,
            tally,
        )
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
}

/// A parallel step's answers in send order, with their aggregate document
/// (what its assertions and captures read).
struct Answers<'a> {
    exchanges: Vec<Exchange>,
    document: Value,
    /// The seam the requests went to, when the host advertises it.
    seam: Option<&'a str>,
}

impl<'a> Answers<'a> {
    fn new(exchanges: Vec<Exchange>, seam: Option<&'a str>) -> Result<Answers<'a>, RunError> {
        if exchanges.is_empty() {
            return Err(no_answers());
        }
        let document = aggregate(&exchanges);
        Ok(Answers {
            exchanges,
            document,
            seam,
        })
    }
}

impl Seen for Answers<'_> {
    fn answers(&self) -> &[Exchange] {
        &self.exchanges
    }

    fn several(&self) -> Option<usize> {
        Some(self.exchanges.len())
    }

    fn advertised_seam(&self) -> Option<&str> {
        self.seam
    }

    fn document(&self) -> Option<&Value> {
        Some(&self.document)
    }

    fn header(&self, _: &str) -> Result<Option<Value>, &'static str> {
        Err("a parallel step has no single header to take")
    }

    fn absent(&self, pointer: &str) -> String {
        format!("a value at {pointer} of the aggregate")
    }

    fn prefix(&self, kind: CheckKind) -> &'static str {
        match kind {
            CheckKind::Assertion => "aggregate ",
            CheckKind::Status | CheckKind::Schema | CheckKind::Capture => "",
        }
    }

    fn note(&self, _: CheckKind) -> Option<String> {
        Some(summary(&self.document))
    }

    fn recorded(&self, answer: usize) -> Option<&Exchange> {
        self.exchanges.get(answer)
    }

    fn story(&self, answer: usize, result: &CheckResult) -> String {
        match self.exchanges.get(answer) {
            Some(exchange) => exchange_story(exchange, result),
            None => String::new(),
        }
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
