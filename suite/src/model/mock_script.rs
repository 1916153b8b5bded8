//! What the mock answers: a scenario's `mock` block, parsed, and the pure
//! function from one call to one answer.
//!
//! Each endpoint has a generated answer (from shorthands such as
//! `satisfyOn`, `costUsd`, `fireOn`) and a list of `replies` that override
//! parts of it for one iteration, one call, or every call. The first reply
//! whose selector matches wins, so a list reads top to bottom.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::template::{TemplateError, Vars};

/// Longest delay a reply may ask for: beyond the host's 5 s webhook timeout
/// with room to spare, short enough that a broken host cannot park a trial.
pub const MAX_DELAY_MS: u64 = 30_000;
/// The range of `commitment.afterMs` the arm answer's schema allows (1 s to
/// 30 days): the mock never commits to what the contract refuses.
pub const COMMIT_MS: std::ops::RangeInclusive<u64> = 1_000..=2_592_000_000;
/// Confidence of a generated verdict when the script names none.
pub const DEFAULT_CONFIDENCE: f64 = 0.9;

/// The things the mock serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Endpoint {
    Verifier,
    Arm,
    /// A heartbeat probe: a POST to the arm URL whose body has
    /// `probe: "heartbeat"`.
    Heartbeat,
    /// A run of an attention binding (the `attention` profile): a POST to
    /// `{mock.attention}` carrying the binding's projection. One URL plays
    /// every binding of a goal at once, each by the mode its projection
    /// names (a goal's live bindings never share a mode).
    Attention,
}

impl Endpoint {
    /// RFC 0097's endpoints, each summarised in a `mockLog` view.
    pub const ALL: [Endpoint; 3] = [Endpoint::Verifier, Endpoint::Arm, Endpoint::Heartbeat];

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Verifier => "verifier",
            Endpoint::Arm => "arm",
            Endpoint::Heartbeat => "heartbeat",
            Endpoint::Attention => "attention",
        }
    }

    /// The request schema the host's payload must match.
    pub fn request_schema(self) -> &'static str {
        match self {
            Endpoint::Verifier => "webhook-verifier-request",
            Endpoint::Arm => "webhook-arm-request",
            Endpoint::Heartbeat => "webhook-heartbeat-request",
            Endpoint::Attention => "attention-arm-request",
        }
    }
}

/// A scenario's `mock` block.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockScript {
    #[serde(default)]
    pub verifier: VerifierScript,
    #[serde(default)]
    pub arm: ArmScript,
    #[serde(default)]
    pub heartbeat: HeartbeatScript,
    /// How each attention binding answers, by its mode (`pursue`,
    /// `falsify`, …); a mode without a script answers `{output}` and
    /// nothing else.
    #[serde(default)]
    pub attention: std::collections::BTreeMap<String, AttentionScript>,
}

/// How the bindings of one mode answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttentionScript {
    /// The answer to every call (after `replies`); `{"output": {"mode": m,
    /// "call": n}}` when absent.
    pub answer: Option<Value>,
    /// How long every call takes before it answers.
    #[serde(default)]
    pub run_ms: u64,
    /// Overrides for the n-th call of this mode on one goal (`call`).
    #[serde(default)]
    pub replies: Vec<Reply>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifierScript {
    /// Satisfied from this iteration on; never when absent.
    pub satisfy_on: Option<u64>,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// Sent as is with every generated verdict.
    pub criteria: Option<Vec<Value>>,
    #[serde(default)]
    pub replies: Vec<Reply>,
}

impl Default for VerifierScript {
    fn default() -> Self {
        VerifierScript {
            satisfy_on: None,
            confidence: DEFAULT_CONFIDENCE,
            criteria: None,
            replies: Vec::new(),
        }
    }
}

fn default_confidence() -> f64 {
    DEFAULT_CONFIDENCE
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArmScript {
    /// The run's output; `{"iteration": n, "runId": r}` when absent, so
    /// every run's output differs and the verifier's copy can be compared.
    pub output: Option<Value>,
    /// Reported as the cost of every run.
    pub cost_usd: Option<f64>,
    /// The run of this iteration escalates.
    pub escalate_on: Option<u64>,
    /// How long every run takes before it answers.
    #[serde(default)]
    pub run_ms: u64,
    /// The runs that commit answer `commitment: {afterMs: N}` with this N
    /// (a `commitment` goal's next check-in); no run commits when absent.
    pub commit_after_ms: Option<u64>,
    /// The iterations whose runs commit; every run when absent.
    pub commit_on: Option<Vec<u64>>,
    #[serde(default)]
    pub replies: Vec<Reply>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HeartbeatScript {
    /// Probe numbers (1-based, per goal) answered `fire: true`; every other
    /// probe is answered `fire: false`.
    #[serde(default)]
    pub fire_on: Vec<u64>,
    #[serde(default)]
    pub replies: Vec<Reply>,
}

/// Overrides the generated answer of the calls its selector matches.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reply {
    /// Matches calls whose payload names this iteration.
    pub iteration: Option<u64>,
    /// Matches the n-th call (1-based) of this endpoint for one goal.
    pub call: Option<u64>,
    pub status: Option<u16>,
    /// Replaces the generated body.
    pub body: Option<Value>,
    /// Sent as is instead of any JSON body (malformed answers).
    pub raw_body: Option<String>,
    pub delay_ms: Option<u64>,
}

impl Reply {
    fn matches(&self, call: &CallFacts) -> bool {
        self.iteration.is_none_or(|it| call.iteration == Some(it))
            && self.call.is_none_or(|n| call.number == n)
    }
}

/// What the script needs to know about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallFacts {
    pub endpoint: Endpoint,
    /// `iteration` from the payload, when it is a whole number.
    pub iteration: Option<u64>,
    /// The call's number for its endpoint and goal, from 1.
    pub number: u64,
    pub run_id: Option<String>,
    /// An attention binding's mode, from its projection.
    pub mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AnswerBody {
    Json(Value),
    Raw(String),
}

/// One answer, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: AnswerBody,
    pub delay: Duration,
}

impl Answer {
    /// The answer as the call log shows it.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("status".into(), Value::from(self.status));
        out.insert(
            "delayMs".into(),
            Value::from(u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX)),
        );
        match &self.body {
            AnswerBody::Json(body) => out.insert("body".into(), body.clone()),
            AnswerBody::Raw(text) => out.insert("rawBody".into(), Value::from(text.clone())),
        };
        Value::Object(out)
    }

    /// Whether this answer tells the host its goal is satisfied (a verifier
    /// answer with status 2xx and `satisfied: true`).
    pub fn claims_satisfied(&self) -> bool {
        matches!(&self.body, AnswerBody::Json(body) if body.get("satisfied") == Some(&Value::Bool(true)))
            && (200..300).contains(&self.status)
    }
}

/// Why a script cannot be used; the loader reports it with a pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptProblem {
    /// Pointer below the `mock` block, e.g. `/verifier/replies/0`.
    pub pointer: String,
    pub message: String,
}

impl MockScript {
    /// Parses a `mock` block (already schema-checked) and checks what the
    /// schema cannot.
    pub fn parse(value: &Value) -> Result<MockScript, ScriptProblem> {
        let script = MockScript::deserialize(value).map_err(|error| ScriptProblem {
            pointer: String::new(),
            message: error.to_string(),
        })?;
        script.check()?;
        Ok(script)
    }

    fn check(&self) -> Result<(), ScriptProblem> {
        let problem = |pointer: String, message: &str| ScriptProblem {
            pointer,
            message: message.to_string(),
        };
        if !(0.0..=1.0).contains(&self.verifier.confidence) {
            return Err(problem(
                "/verifier/confidence".into(),
                "confidence must lie in 0..1",
            ));
        }
        if self.verifier.satisfy_on == Some(0) {
            return Err(problem(
                "/verifier/satisfyOn".into(),
                "iterations count from 1",
            ));
        }
        if self.arm.escalate_on == Some(0) {
            return Err(problem("/arm/escalateOn".into(), "iterations count from 1"));
        }
        // NaN cannot come from JSON, but a negative cost can.
        if self.arm.cost_usd.is_some_and(|cost| cost < 0.0) {
            return Err(problem("/arm/costUsd".into(), "a cost is never negative"));
        }
        if self.arm.run_ms > MAX_DELAY_MS {
            return Err(problem("/arm/runMs".into(), "at most 30000 ms"));
        }
        if self
            .arm
            .commit_after_ms
            .is_some_and(|ms| !COMMIT_MS.contains(&ms))
        {
            return Err(problem(
                "/arm/commitAfterMs".into(),
                "a commitment lies in 1000..2592000000 ms",
            ));
        }
        if let Some(on) = &self.arm.commit_on {
            if self.arm.commit_after_ms.is_none() {
                return Err(problem(
                    "/arm/commitOn".into(),
                    "commitOn needs commitAfterMs",
                ));
            }
            if on.contains(&0) {
                return Err(problem("/arm/commitOn".into(), "iterations count from 1"));
            }
        }
        if self.heartbeat.fire_on.contains(&0) {
            return Err(problem("/heartbeat/fireOn".into(), "probes count from 1"));
        }
        const MODES: [&str; 6] = [
            "pursue",
            "coordinate",
            "review",
            "falsify",
            "judge",
            "observe",
        ];
        for (mode, script) in &self.attention {
            if !MODES.contains(&mode.as_str()) {
                return Err(problem(
                    format!("/attention/{mode}"),
                    "not an attention mode",
                ));
            }
            if script.run_ms > MAX_DELAY_MS {
                return Err(problem(
                    format!("/attention/{mode}/runMs"),
                    "at most 30000 ms",
                ));
            }
        }
        let attention: Vec<(String, &Vec<Reply>)> = self
            .attention
            .iter()
            .map(|(mode, script)| (format!("attention/{mode}"), &script.replies))
            .collect();
        for (endpoint, replies) in [
            ("verifier".to_string(), &self.verifier.replies),
            ("arm".to_string(), &self.arm.replies),
            ("heartbeat".to_string(), &self.heartbeat.replies),
        ]
        .into_iter()
        .chain(attention)
        {
            for (index, reply) in replies.iter().enumerate() {
                let at = format!("/{endpoint}/replies/{index}");
                if reply.body.is_some() && reply.raw_body.is_some() {
                    return Err(problem(at, "`body` and `rawBody` exclude each other"));
                }
                if reply.status.is_none()
                    && reply.body.is_none()
                    && reply.raw_body.is_none()
                    && reply.delay_ms.is_none()
                {
                    return Err(problem(
                        at,
                        "a reply changes status, body, rawBody or delayMs",
                    ));
                }
                if reply.status.is_some_and(|s| !(100..=599).contains(&s)) {
                    return Err(problem(at, "status must lie in 100..599"));
                }
                if reply.delay_ms.is_some_and(|ms| ms > MAX_DELAY_MS) {
                    return Err(problem(at, "delayMs is at most 30000"));
                }
                if reply.iteration == Some(0) || reply.call == Some(0) {
                    return Err(problem(at, "iterations and calls count from 1"));
                }
            }
        }
        Ok(())
    }

    /// Renders every template in outputs and reply bodies against the
    /// scenario's variables (`{nonce}` in an output, say).
    pub fn render(&self, vars: &Vars) -> Result<MockScript, TemplateError> {
        let mut out = self.clone();
        let render_replies = |replies: &mut Vec<Reply>| -> Result<(), TemplateError> {
            for reply in replies {
                if let Some(body) = &reply.body {
                    reply.body = Some(vars.render_value(body)?);
                }
                if let Some(raw) = &reply.raw_body {
                    reply.raw_body = Some(vars.render_str(raw)?);
                }
            }
            Ok(())
        };
        if let Some(output) = &out.arm.output {
            out.arm.output = Some(vars.render_value(output)?);
        }
        if let Some(criteria) = &out.verifier.criteria {
            out.verifier.criteria = Some(
                criteria
                    .iter()
                    .map(|c| vars.render_value(c))
                    .collect::<Result<_, _>>()?,
            );
        }
        render_replies(&mut out.verifier.replies)?;
        render_replies(&mut out.arm.replies)?;
        render_replies(&mut out.heartbeat.replies)?;
        for script in out.attention.values_mut() {
            if let Some(answer) = &script.answer {
                script.answer = Some(vars.render_value(answer)?);
            }
            render_replies(&mut script.replies)?;
        }
        Ok(out)
    }

    /// Every string the script's bodies hold, for the loader's variable check.
    pub fn templated_values(&self) -> Vec<&Value> {
        let mut values: Vec<&Value> = Vec::new();
        values.extend(self.arm.output.iter());
        values.extend(self.verifier.criteria.iter().flatten());
        for replies in [
            &self.verifier.replies,
            &self.arm.replies,
            &self.heartbeat.replies,
        ]
        .into_iter()
        .chain(self.attention.values().map(|script| &script.replies))
        {
            values.extend(replies.iter().filter_map(|r| r.body.as_ref()));
        }
        values.extend(
            self.attention
                .values()
                .filter_map(|script| script.answer.as_ref()),
        );
        values
    }

    /// Raw reply bodies, for the loader's variable check.
    pub fn templated_strings(&self) -> Vec<&str> {
        [
            &self.verifier.replies,
            &self.arm.replies,
            &self.heartbeat.replies,
        ]
        .into_iter()
        .chain(self.attention.values().map(|script| &script.replies))
        .flatten()
        .filter_map(|reply| reply.raw_body.as_deref())
        .collect()
    }

    /// The answer to one call.
    pub fn answer(&self, call: &CallFacts) -> Answer {
        static NO_REPLIES: Vec<Reply> = Vec::new();
        let (generated, replies, base_delay) = match call.endpoint {
            Endpoint::Verifier => (self.verdict(call), &self.verifier.replies, 0),
            Endpoint::Arm => (self.run(call), &self.arm.replies, self.arm.run_ms),
            Endpoint::Heartbeat => (
                json!({"fire": self.heartbeat.fire_on.contains(&call.number)}),
                &self.heartbeat.replies,
                0,
            ),
            Endpoint::Attention => {
                let mode = call.mode.as_deref().unwrap_or_default();
                let generated = json!({"output": {"mode": mode, "call": call.number}});
                match self.attention.get(mode) {
                    Some(script) => (
                        script.answer.clone().unwrap_or(generated),
                        &script.replies,
                        script.run_ms,
                    ),
                    None => (generated, &NO_REPLIES, 0),
                }
            }
        };
        let reply = replies.iter().find(|reply| reply.matches(call));
        let body = match reply {
            Some(Reply {
                raw_body: Some(raw),
                ..
            }) => AnswerBody::Raw(raw.clone()),
            Some(Reply {
                body: Some(body), ..
            }) => AnswerBody::Json(body.clone()),
            _ => AnswerBody::Json(generated),
        };
        Answer {
            status: reply.and_then(|r| r.status).unwrap_or(200),
            body,
            delay: Duration::from_millis(reply.and_then(|r| r.delay_ms).unwrap_or(base_delay)),
        }
    }

    fn verdict(&self, call: &CallFacts) -> Value {
        let script = &self.verifier;
        let satisfied = match (script.satisfy_on, call.iteration) {
            (Some(on), Some(iteration)) => iteration >= on,
            _ => false,
        };
        let mut verdict = json!({"satisfied": satisfied, "confidence": script.confidence});
        if let Some(criteria) = &script.criteria {
            verdict["criteria"] = Value::Array(criteria.clone());
        }
        verdict
    }

    fn run(&self, call: &CallFacts) -> Value {
        let script = &self.arm;
        let output = script
            .output
            .clone()
            .unwrap_or_else(|| json!({"iteration": call.iteration, "runId": call.run_id}));
        let mut run = json!({ "output": output });
        if let Some(cost) = script.cost_usd {
            run["costUsd"] = Value::from(cost);
        }
        if script.escalate_on.is_some() && script.escalate_on == call.iteration {
            run["escalate"] =
                json!({"kind": "clarification", "reason": "the goalpost mock escalates this run"});
        }
        if let Some(after_ms) = script.commit_after_ms {
            let commits = match (&script.commit_on, call.iteration) {
                (None, _) => true,
                (Some(on), Some(iteration)) => on.contains(&iteration),
                (Some(_), None) => false,
            };
            if commits {
                run["commitment"] = json!({ "afterMs": after_ms });
            }
        }
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(endpoint: Endpoint, iteration: Option<u64>, number: u64) -> CallFacts {
        CallFacts {
            endpoint,
            iteration,
            number,
            run_id: Some(format!("run-{number}")),
            mode: None,
        }
    }

    fn script(value: Value) -> MockScript {
        MockScript::parse(&value).unwrap_or_else(|p| panic!("{p:?}"))
    }

    fn body(answer: &Answer) -> &Value {
        match &answer.body {
            AnswerBody::Json(body) => body,
            AnswerBody::Raw(raw) => panic!("raw body {raw}"),
        }
    }

    #[test]
    fn an_empty_script_never_satisfies_and_runs_for_free() {
        let empty = script(json!({}));
        let verdict = empty.answer(&call(Endpoint::Verifier, Some(7), 7));
        assert_eq!(verdict.status, 200);
        assert_eq!(
            body(&verdict),
            &json!({"satisfied": false, "confidence": 0.9})
        );
        assert!(!verdict.claims_satisfied());
        let run = empty.answer(&call(Endpoint::Arm, Some(2), 2));
        assert_eq!(
            body(&run),
            &json!({"output": {"iteration": 2, "runId": "run-2"}})
        );
        assert_eq!(run.delay, Duration::ZERO);
        let probe = empty.answer(&call(Endpoint::Heartbeat, Some(1), 1));
        assert_eq!(body(&probe), &json!({"fire": false}));
    }

    #[test]
    fn satisfy_on_holds_from_that_iteration_on() {
        let s = script(json!({"verifier": {"satisfyOn": 3, "confidence": 0.5,
                                           "criteria": [{"id": "c1", "verdict": "pass"}]}}));
        let at = |iteration| s.answer(&call(Endpoint::Verifier, Some(iteration), iteration));
        assert!(!at(2).claims_satisfied());
        assert!(at(3).claims_satisfied());
        assert!(at(4).claims_satisfied());
        assert_eq!(
            body(&at(3)),
            &json!({"satisfied": true, "confidence": 0.5, "criteria": [{"id": "c1", "verdict": "pass"}]})
        );
        // A payload without an iteration is never satisfied.
        assert!(!s
            .answer(&call(Endpoint::Verifier, None, 1))
            .claims_satisfied());
    }

    #[test]
    fn cost_escalation_and_run_time_shape_arm_answers() {
        let s = script(
            json!({"arm": {"costUsd": 0.25, "escalateOn": 2, "runMs": 40,
                                      "output": {"done": true}}}),
        );
        let first = s.answer(&call(Endpoint::Arm, Some(1), 1));
        assert_eq!(
            body(&first),
            &json!({"output": {"done": true}, "costUsd": 0.25})
        );
        assert_eq!(first.delay, Duration::from_millis(40));
        let second = s.answer(&call(Endpoint::Arm, Some(2), 2));
        assert_eq!(second.status, 200);
        assert_eq!(body(&second)["escalate"]["kind"], "clarification");
        assert_eq!(body(&second)["costUsd"], 0.25);
    }

    #[test]
    fn runs_commit_on_the_listed_iterations_or_every_run() {
        let listed = script(json!({"arm": {"commitAfterMs": 1500, "commitOn": [1, 3]}}));
        let committed: Vec<Option<Value>> = (1..=3)
            .map(|n| {
                body(&listed.answer(&call(Endpoint::Arm, Some(n), n)))
                    .get("commitment")
                    .cloned()
            })
            .collect();
        assert_eq!(
            committed,
            [
                Some(json!({"afterMs": 1500})),
                None,
                Some(json!({"afterMs": 1500}))
            ]
        );
        // A payload without an iteration matches no listed run.
        assert!(body(&listed.answer(&call(Endpoint::Arm, None, 4)))
            .get("commitment")
            .is_none());
        let every = script(json!({"arm": {"commitAfterMs": 1000}}));
        assert_eq!(
            body(&every.answer(&call(Endpoint::Arm, Some(7), 7)))["commitment"],
            json!({"afterMs": 1000})
        );
        // Nothing commits unless asked, and a probe never does.
        assert!(
            body(&script(json!({})).answer(&call(Endpoint::Arm, Some(1), 1)))
                .get("commitment")
                .is_none()
        );
        assert!(body(&every.answer(&call(Endpoint::Heartbeat, Some(1), 1)))
            .get("commitment")
            .is_none());
    }

    #[test]
    fn heartbeat_fires_on_the_listed_probes_only() {
        let s = script(json!({"heartbeat": {"fireOn": [2, 4]}}));
        let fired: Vec<bool> = (1..=5)
            .map(|n| body(&s.answer(&call(Endpoint::Heartbeat, Some(1), n)))["fire"] == true)
            .collect();
        assert_eq!(fired, [false, true, false, true, false]);
    }

    #[test]
    fn the_first_matching_reply_wins() {
        let s = script(json!({"verifier": {"satisfyOn": 1, "replies": [
            {"iteration": 2, "status": 500},
            {"call": 3, "rawBody": "not json {"},
            {"iteration": 2, "delayMs": 10},
            {"delayMs": 5}
        ]}}));
        let second = s.answer(&call(Endpoint::Verifier, Some(2), 2));
        assert_eq!(second.status, 500);
        // Status only: the generated body is kept, and a 500 never claims.
        assert_eq!(body(&second)["satisfied"], true);
        assert!(!second.claims_satisfied());
        assert_eq!(second.delay, Duration::ZERO);
        let third = s.answer(&call(Endpoint::Verifier, Some(3), 3));
        assert_eq!(third.body, AnswerBody::Raw("not json {".to_string()));
        assert_eq!(third.status, 200);
        let first = s.answer(&call(Endpoint::Verifier, Some(1), 1));
        assert_eq!(first.delay, Duration::from_millis(5));
        assert!(first.claims_satisfied());
    }

    #[test]
    fn a_reply_body_replaces_the_generated_one() {
        let s = script(json!({"verifier": {"replies": [
            {"body": {"satisfied": true, "confidence": 1, "criteria": [{"id": "a", "verdict": "fail"}]}}
        ]}}));
        let answer = s.answer(&call(Endpoint::Verifier, Some(1), 1));
        assert_eq!(body(&answer)["criteria"][0]["verdict"], "fail");
        assert_eq!(
            answer.to_json(),
            json!({"status": 200, "delayMs": 0, "body": body(&answer).clone()})
        );
    }

    #[test]
    fn templates_in_bodies_are_rendered() {
        let s = script(json!({"arm": {"output": {"note": "{nonce}"},
                                      "replies": [{"call": 2, "rawBody": "{nonce}"}]}}));
        let vars = Vars::new("/b", "n0nce", "observed::x");
        let rendered = s.render(&vars).unwrap();
        assert_eq!(rendered.arm.output, Some(json!({"note": "n0nce"})));
        assert_eq!(rendered.arm.replies[0].raw_body.as_deref(), Some("n0nce"));
        assert_eq!(s.templated_values().len(), 1);
        assert_eq!(s.templated_strings(), vec!["{nonce}"]);
        let unknown = script(json!({"arm": {"output": "{nope}"}}));
        assert!(unknown.render(&vars).is_err());
    }

    #[test]
    fn bad_scripts_are_refused_with_a_pointer() {
        let refused = |value: Value| MockScript::parse(&value).unwrap_err();
        assert_eq!(
            refused(json!({"verifier": {"confidence": 2}})).pointer,
            "/verifier/confidence"
        );
        assert_eq!(
            refused(json!({"arm": {"replies": [{"iteration": 1}]}})).pointer,
            "/arm/replies/0"
        );
        assert_eq!(
            refused(json!({"arm": {"replies": [{"body": {}, "rawBody": "x"}]}})).pointer,
            "/arm/replies/0"
        );
        assert_eq!(
            refused(json!({"heartbeat": {"replies": [{"delayMs": 30001}]}})).pointer,
            "/heartbeat/replies/0"
        );
        assert_eq!(
            refused(json!({"heartbeat": {"fireOn": [0]}})).pointer,
            "/heartbeat/fireOn"
        );
        assert!(refused(json!({"judge": {}}))
            .message
            .contains("unknown field"));
        assert_eq!(
            refused(json!({"arm": {"costUsd": -1}})).pointer,
            "/arm/costUsd"
        );
        for (arm, pointer) in [
            (json!({"commitAfterMs": 999}), "/arm/commitAfterMs"),
            (
                json!({"commitAfterMs": 2_592_000_001_u64}),
                "/arm/commitAfterMs",
            ),
            (json!({"commitOn": [1]}), "/arm/commitOn"),
            (
                json!({"commitAfterMs": 1000, "commitOn": [0]}),
                "/arm/commitOn",
            ),
        ] {
            assert_eq!(refused(json!({ "arm": arm })).pointer, pointer);
        }
        assert!(MockScript::parse(&json!({"arm": {"commitAfterMs": 2_592_000_000_u64}})).is_ok());
    }
}
