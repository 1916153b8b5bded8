//! The mock's record of every call a host made in one scenario run, and the
//! JSON view a `mockLog` step asserts on.
//!
//! Pure data: the server appends records, the driver asks for a view. Times
//! are milliseconds since the scenario started, to the microsecond (the
//! clock `clock: "ms"` captures use, fine enough that "after the pause
//! answered" is never blurred by rounding), plus the wall-clock arrival as
//! RFC 3339.

use serde_json::{json, Map, Value};

use crate::model::mock_script::{Answer, AnswerBody, Endpoint};

/// Milliseconds rounded to the microsecond, as the log shows them.
pub fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// How the call's `X-Goalpost-Signature` compared (see `signature`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretCheck {
    /// Valid under the secret the suite knows, within the replay window.
    Match,
    /// Present but not valid under that secret (a forgery, or another
    /// tenant's key).
    Mismatch,
    /// Valid but outside the replay window: a replay or a wrong clock.
    Stale,
    /// Present; the suite does not know the secret.
    Present,
    Missing,
}

impl SecretCheck {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretCheck::Match => "match",
            SecretCheck::Mismatch => "mismatch",
            SecretCheck::Stale => "stale",
            SecretCheck::Present => "present",
            SecretCheck::Missing => "missing",
        }
    }

    fn authenticated(self) -> bool {
        matches!(self, SecretCheck::Match | SecretCheck::Present)
    }
}

/// One call as it arrived, and what the mock answered.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// 1-based arrival order within the scenario run.
    pub seq: u64,
    pub endpoint: Endpoint,
    /// 1-based number of this call for its endpoint and goal.
    pub number: u64,
    pub at_ms: f64,
    pub at: String,
    pub goal_id: Option<String>,
    pub run_id: Option<String>,
    pub iteration: Option<u64>,
    /// For an attention binding's run: its mode and binding id, from the
    /// projection.
    pub mode: Option<String>,
    pub binding_id: Option<String>,
    /// The payload; `null` when it was not JSON.
    pub body: Value,
    /// Why the payload breaks the contract; empty when it keeps it.
    pub problems: Vec<String>,
    pub secret: SecretCheck,
    pub answer: Answer,
    /// When the answer was handed to the host; `None` while the mock is
    /// still delaying it, or when the scenario ended first.
    pub answered_ms: Option<f64>,
}

impl CallRecord {
    fn fired(&self) -> bool {
        self.endpoint == Endpoint::Heartbeat
            && (200..300).contains(&self.answer.status)
            && matches!(&self.answer.body, AnswerBody::Json(body) if body.get("fire") == Some(&Value::Bool(true)))
    }

    /// The cost this call's answer reported, when the host could read it.
    fn reported_cost(&self) -> Option<f64> {
        match &self.answer.body {
            AnswerBody::Json(body)
                if self.endpoint == Endpoint::Arm && (200..300).contains(&self.answer.status) =>
            {
                body.get("costUsd").and_then(Value::as_f64)
            }
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "seq": self.seq,
            "endpoint": self.endpoint.as_str(),
            "number": self.number,
            "atMs": self.at_ms,
            "at": self.at,
            "goalId": self.goal_id,
            "runId": self.run_id,
            "iteration": self.iteration,
            "mode": self.mode,
            "bindingId": self.binding_id,
            "body": self.body,
            "valid": self.problems.is_empty(),
            "problems": self.problems,
            "secret": self.secret.as_str(),
            "answer": self.answer.to_json(),
            "answeredMs": self.answered_ms,
        })
    }
}

/// Which calls a view shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// Only this goal's calls.
    pub goal_id: Option<String>,
    /// Only calls that arrived after this many ms since the scenario start.
    pub since_ms: Option<f64>,
    /// Calls within this many ms after `since_ms` are left out of the view
    /// (they were in flight) but counted in its `window` block.
    pub grace_ms: f64,
}

/// Every call of one scenario run, in arrival order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    calls: Vec<CallRecord>,
}

impl Log {
    /// The number the next call of `endpoint` for `goal_id` gets.
    pub fn next_number(&self, endpoint: Endpoint, goal_id: Option<&str>) -> u64 {
        let earlier = self
            .calls
            .iter()
            .filter(|call| call.endpoint == endpoint && call.goal_id.as_deref() == goal_id)
            .count();
        u64::try_from(earlier).unwrap_or(u64::MAX).saturating_add(1)
    }

    /// The number the next attention call of `mode` for `goal_id` gets:
    /// each mode of a goal counts its own calls, as each is its own agent.
    pub fn next_attention_number(&self, goal_id: Option<&str>, mode: Option<&str>) -> u64 {
        let earlier = self
            .calls
            .iter()
            .filter(|call| {
                call.endpoint == Endpoint::Attention
                    && call.goal_id.as_deref() == goal_id
                    && call.mode.as_deref() == mode
            })
            .count();
        u64::try_from(earlier).unwrap_or(u64::MAX).saturating_add(1)
    }

    pub fn next_seq(&self) -> u64 {
        u64::try_from(self.calls.len())
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    }

    pub fn push(&mut self, record: CallRecord) {
        self.calls.push(record);
    }

    /// Notes that call `seq` was answered at `at_ms`.
    pub fn answered(&mut self, seq: u64, at_ms: f64) {
        if let Some(call) = self.calls.iter_mut().find(|call| call.seq == seq) {
            call.answered_ms = Some(at_ms);
        }
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// The JSON a `mockLog` step sees.
    pub fn view(&self, window: &Window) -> Value {
        let of_goal: Vec<&CallRecord> = self
            .calls
            .iter()
            .filter(|call| {
                window
                    .goal_id
                    .as_ref()
                    .is_none_or(|goal| call.goal_id.as_ref() == Some(goal))
            })
            .collect();
        let (in_grace, shown): (Vec<&CallRecord>, Vec<&CallRecord>) = match window.since_ms {
            None => (Vec::new(), of_goal),
            Some(since) => {
                let after: Vec<&CallRecord> = of_goal
                    .into_iter()
                    .filter(|call| call.at_ms > since)
                    .collect();
                after
                    .into_iter()
                    .partition(|call| call.at_ms <= since + window.grace_ms)
            }
        };
        let mut view = Map::new();
        view.insert("total".into(), Value::from(self.calls.len()));
        view.insert(
            "calls".into(),
            Value::Array(shown.iter().map(|call| call.to_json()).collect()),
        );
        for endpoint in Endpoint::ALL {
            let calls: Vec<&&CallRecord> =
                shown.iter().filter(|c| c.endpoint == endpoint).collect();
            let mut summary = Map::new();
            summary.insert("count".into(), Value::from(calls.len()));
            summary.insert(
                "iterations".into(),
                Value::Array(calls.iter().map(|c| Value::from(c.iteration)).collect()),
            );
            if endpoint != Endpoint::Heartbeat {
                summary.insert(
                    "runIds".into(),
                    Value::Array(
                        calls
                            .iter()
                            .map(|c| Value::from(c.run_id.clone()))
                            .collect(),
                    ),
                );
            }
            match endpoint {
                Endpoint::Verifier => {
                    let claimed = calls.iter().filter(|c| c.answer.claims_satisfied()).count();
                    summary.insert("satisfiedAnswers".into(), Value::from(claimed));
                }
                Endpoint::Arm => {
                    // Summed in micro-dollars so 0.1 + 0.2 reads 0.3.
                    let micros: i64 = calls
                        .iter()
                        .filter_map(|c| c.reported_cost())
                        .map(|cost| (cost * 1_000_000.0).round() as i64)
                        .sum();
                    summary.insert("costUsd".into(), Value::from(micros as f64 / 1_000_000.0));
                }
                Endpoint::Heartbeat => {
                    let fired = calls.iter().filter(|c| c.fired()).count();
                    summary.insert("fired".into(), Value::from(fired));
                }
                Endpoint::Attention => {}
            }
            view.insert(endpoint.as_str().into(), Value::Object(summary));
        }
        // The attention bindings' runs: how many, and how many per mode.
        let attention: Vec<&&CallRecord> = shown
            .iter()
            .filter(|c| c.endpoint == Endpoint::Attention)
            .collect();
        let mut by_mode = Map::new();
        for call in &attention {
            let mode = call.mode.clone().unwrap_or_default();
            let count = by_mode.get(&mode).and_then(Value::as_u64).unwrap_or(0);
            by_mode.insert(mode, Value::from(count + 1));
        }
        view.insert(
            Endpoint::Attention.as_str().into(),
            json!({ "count": attention.len(), "byMode": by_mode }),
        );
        view.insert(
            "invalid".into(),
            Value::from(shown.iter().filter(|c| !c.problems.is_empty()).count()),
        );
        view.insert(
            "unauthenticated".into(),
            Value::from(shown.iter().filter(|c| !c.secret.authenticated()).count()),
        );
        if let Some(since) = window.since_ms {
            view.insert(
                "window".into(),
                json!({
                    "sinceMs": since,
                    "graceMs": window.grace_ms,
                    "graceCalls": in_grace.len(),
                    "lastGraceMs": in_grace.iter().map(|c| round_us(c.at_ms - since)).reduce(f64::max),
                }),
            );
        }
        Value::Object(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn answer(body: Value) -> Answer {
        Answer {
            status: 200,
            body: AnswerBody::Json(body),
            delay: Duration::ZERO,
        }
    }

    fn record(log: &Log, endpoint: Endpoint, goal: &str, at_ms: f64, answer: Answer) -> CallRecord {
        let iteration = log.next_number(endpoint, Some(goal));
        CallRecord {
            seq: log.next_seq(),
            endpoint,
            number: iteration,
            at_ms,
            at: "2026-06-13T00:00:00.000Z".to_string(),
            goal_id: Some(goal.to_string()),
            run_id: (endpoint != Endpoint::Heartbeat).then(|| format!("run-{goal}-{iteration}")),
            iteration: Some(iteration),
            mode: None,
            binding_id: None,
            body: json!({"goalId": goal}),
            problems: Vec::new(),
            secret: SecretCheck::Match,
            answer,
            answered_ms: None,
        }
    }

    fn sample() -> Log {
        let mut log = Log::default();
        let steps = [
            (
                Endpoint::Arm,
                "g1",
                10.0,
                json!({"output": {}, "costUsd": 0.1}),
            ),
            (Endpoint::Verifier, "g1", 12.5, json!({"satisfied": false})),
            (
                Endpoint::Arm,
                "g1",
                30.0,
                json!({"output": {}, "costUsd": 0.2}),
            ),
            (Endpoint::Verifier, "g1", 31.25, json!({"satisfied": true})),
            (Endpoint::Arm, "g2", 40.0, json!({"output": {}})),
            (Endpoint::Heartbeat, "g2", 50.0, json!({"fire": true})),
            (Endpoint::Heartbeat, "g2", 60.0, json!({"fire": false})),
        ];
        for (endpoint, goal, at, body) in steps {
            let call = record(&log, endpoint, goal, at, answer(body));
            log.push(call);
        }
        log
    }

    #[test]
    fn numbers_count_per_endpoint_and_goal() {
        let log = sample();
        let numbers: Vec<(u64, u64)> = log.calls().iter().map(|c| (c.seq, c.number)).collect();
        assert_eq!(
            numbers,
            [(1, 1), (2, 1), (3, 2), (4, 2), (5, 1), (6, 1), (7, 2)]
        );
        assert_eq!(log.next_number(Endpoint::Arm, Some("g1")), 3);
        assert_eq!(log.next_number(Endpoint::Arm, None), 1);
    }

    #[test]
    fn the_view_summarises_each_endpoint() {
        let view = sample().view(&Window::default());
        assert_eq!(view["total"], 7);
        assert_eq!(view["calls"].as_array().map(Vec::len), Some(7));
        assert_eq!(view["arm"]["count"], 3);
        assert_eq!(
            view["arm"]["runIds"],
            json!(["run-g1-1", "run-g1-2", "run-g2-1"])
        );
        assert_eq!(view["arm"]["costUsd"], 0.3);
        assert_eq!(view["verifier"]["count"], 2);
        assert_eq!(view["verifier"]["satisfiedAnswers"], 1);
        assert_eq!(view["verifier"]["iterations"], json!([1, 2]));
        assert_eq!(view["heartbeat"]["count"], 2);
        assert_eq!(view["heartbeat"]["fired"], 1);
        assert!(view["heartbeat"].get("runIds").is_none());
        assert_eq!(view["invalid"], 0);
        assert_eq!(view["unauthenticated"], 0);
        assert!(view.get("window").is_none());
        assert_eq!(view["calls"][0]["endpoint"], "arm");
        assert_eq!(view["calls"][0]["valid"], true);
        assert_eq!(view["calls"][0]["answer"]["status"], 200);
        assert_eq!(view["calls"][0]["answeredMs"], Value::Null);
    }

    #[test]
    fn a_goal_filter_narrows_every_part_but_total() {
        let view = sample().view(&Window {
            goal_id: Some("g2".to_string()),
            ..Window::default()
        });
        assert_eq!(view["total"], 7);
        assert_eq!(view["arm"]["count"], 1);
        assert_eq!(view["verifier"]["count"], 0);
        assert_eq!(view["arm"]["costUsd"], 0.0);
    }

    #[test]
    fn a_window_leaves_out_earlier_calls_and_measures_the_grace() {
        let log = sample();
        let view = log.view(&Window {
            goal_id: None,
            since_ms: Some(30.0),
            grace_ms: 5.0,
        });
        // 31.25 is in flight (within the grace); 40, 50, 60 are after it.
        let seqs: Vec<&Value> = view["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["seq"])
            .collect();
        assert_eq!(seqs, [&json!(5), &json!(6), &json!(7)]);
        assert_eq!(
            view["window"],
            json!({"sinceMs": 30.0, "graceMs": 5.0, "graceCalls": 1, "lastGraceMs": 1.25})
        );
        let none = log.view(&Window {
            goal_id: None,
            since_ms: Some(60.0),
            grace_ms: 0.0,
        });
        assert_eq!(none["calls"], json!([]));
        assert_eq!(none["window"]["lastGraceMs"], Value::Null);
    }

    #[test]
    fn problems_and_secrets_are_counted() {
        let mut log = sample();
        let mut bad = record(&log, Endpoint::Arm, "g1", 70.0, answer(json!({})));
        bad.problems.push("/remaining: missing".to_string());
        bad.secret = SecretCheck::Mismatch;
        log.push(bad);
        let mut unsigned = record(&log, Endpoint::Verifier, "g1", 71.0, answer(json!({})));
        unsigned.secret = SecretCheck::Missing;
        log.push(unsigned);
        log.answered(8, 75.5);
        let view = log.view(&Window::default());
        assert_eq!(view["invalid"], 1);
        assert_eq!(view["unauthenticated"], 2);
        assert_eq!(view["calls"][7]["valid"], false);
        assert_eq!(view["calls"][7]["secret"], "mismatch");
        assert_eq!(view["calls"][7]["answeredMs"], 75.5);
    }

    #[test]
    fn secrets_compare_only_when_known() {
        assert!(!SecretCheck::Missing.authenticated());
        assert!(!SecretCheck::Stale.authenticated());
        assert!(!SecretCheck::Mismatch.authenticated());
        assert!(SecretCheck::Present.authenticated());
    }
}
