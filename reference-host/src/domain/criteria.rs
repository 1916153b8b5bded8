//! The built-in `criteria` verifier: named, tenant-scoped lists of
//! JSON-pointer predicates over a run's output. Each criterion is judged on
//! its own to pass or fail; the verdict is satisfied only if all pass.

use std::fmt;

use serde_json::Value;

use super::timestamp::Timestamp;
use super::verdict::{Criterion, FailureClass, Judgement};

/// Longest pointer and longest `matches` pattern.
pub const MAX_OPERAND: usize = 1024;
/// Longest verifier name.
pub const MAX_NAME: usize = 64;

/// A verifier's name: letters, digits, `.`, `_`, `-`, starting with a letter
/// or digit, at most 64 characters. It can never look like a fixture or a
/// URL (no `:`), so a `verifierRef` reads one way only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VerifierName(String);

impl VerifierName {
    pub fn parse(text: &str) -> Option<VerifierName> {
        let mut chars = text.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        (first_ok && rest_ok && text.len() <= MAX_NAME).then(|| VerifierName(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for VerifierName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Equals,
    NotEquals,
    Exists,
    Gt,
    Gte,
    Lt,
    Lte,
    Matches,
}

impl Op {
    const ALL: [Op; 8] = [
        Op::Equals,
        Op::NotEquals,
        Op::Exists,
        Op::Gt,
        Op::Gte,
        Op::Lt,
        Op::Lte,
        Op::Matches,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Equals => "equals",
            Op::NotEquals => "notEquals",
            Op::Exists => "exists",
            Op::Gt => "gt",
            Op::Gte => "gte",
            Op::Lt => "lt",
            Op::Lte => "lte",
            Op::Matches => "matches",
        }
    }

    pub fn parse(text: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == text)
    }
}

/// What a criterion checks about the value its pointer selects.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    Equals(Value),
    NotEquals(Value),
    /// `true`: the pointer selects something; `false`: it selects nothing.
    Exists(bool),
    Gt(f64),
    Gte(f64),
    Lt(f64),
    Lte(f64),
    /// A glob: `*` any run of characters, `?` one character, the rest
    /// literal; it must match the whole string.
    Matches(String),
}

impl Predicate {
    pub fn op(&self) -> Op {
        match self {
            Predicate::Equals(_) => Op::Equals,
            Predicate::NotEquals(_) => Op::NotEquals,
            Predicate::Exists(_) => Op::Exists,
            Predicate::Gt(_) => Op::Gt,
            Predicate::Gte(_) => Op::Gte,
            Predicate::Lt(_) => Op::Lt,
            Predicate::Lte(_) => Op::Lte,
            Predicate::Matches(_) => Op::Matches,
        }
    }

    /// The operand as the wire shows it.
    pub fn operand(&self) -> Value {
        match self {
            Predicate::Equals(value) | Predicate::NotEquals(value) => value.clone(),
            Predicate::Exists(present) => Value::Bool(*present),
            Predicate::Gt(n) | Predicate::Gte(n) | Predicate::Lt(n) | Predicate::Lte(n) => {
                serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number)
            }
            Predicate::Matches(pattern) => Value::String(pattern.clone()),
        }
    }

    /// Whether `target` (what the pointer selected, `None` when nothing)
    /// passes. Every predicate but `exists: false` fails on nothing.
    pub fn holds(&self, target: Option<&Value>) -> bool {
        self.holds_within(target, &mut Steps::new(u64::MAX))
            .unwrap_or(false)
    }

    /// [`Predicate::holds`] with its matching drawn from `steps`.
    pub fn holds_within(
        &self,
        target: Option<&Value>,
        steps: &mut Steps,
    ) -> Result<bool, OutOfSteps> {
        let number = || target.and_then(Value::as_f64);
        Ok(match self {
            Predicate::Exists(present) => target.is_some() == *present,
            Predicate::Equals(value) => target.is_some_and(|found| same(found, value)),
            Predicate::NotEquals(value) => target.is_some_and(|found| !same(found, value)),
            Predicate::Gt(bound) => number().is_some_and(|n| n > *bound),
            Predicate::Gte(bound) => number().is_some_and(|n| n >= *bound),
            Predicate::Lt(bound) => number().is_some_and(|n| n < *bound),
            Predicate::Lte(bound) => number().is_some_and(|n| n <= *bound),
            Predicate::Matches(pattern) => match target.and_then(Value::as_str) {
                Some(text) => glob_within(pattern, text, steps)?,
                None => false,
            },
        })
    }
}

/// One criterion of a verifier.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub id: String,
    /// RFC 6901 pointer into the run output.
    pub pointer: String,
    pub predicate: Predicate,
    /// Recorded when the criterion fails.
    pub failure_class: FailureClass,
}

impl Rule {
    pub fn judge(&self, output: &Value) -> Criterion {
        self.judge_within(output, &mut Steps::new(u64::MAX))
            .unwrap_or_else(|OutOfSteps| self.criterion(false))
    }

    pub fn judge_within(&self, output: &Value, steps: &mut Steps) -> Result<Criterion, OutOfSteps> {
        let pass = self
            .predicate
            .holds_within(output.pointer(&self.pointer), steps)?;
        Ok(self.criterion(pass))
    }

    fn criterion(&self, pass: bool) -> Criterion {
        Criterion {
            id: self.id.clone(),
            pass,
            failure_class: (!pass).then_some(self.failure_class),
        }
    }
}

/// A registered criteria verifier.
#[derive(Debug, Clone, PartialEq)]
pub struct CriteriaVerifier {
    pub name: VerifierName,
    pub rules: Vec<Rule>,
    pub created_at: Timestamp,
}

impl CriteriaVerifier {
    /// Every criterion judged independently; satisfied only if all pass.
    /// The verifier is deterministic, hence confidence 1.
    pub fn judge(&self, output: &Value) -> Judgement {
        self.judge_within(output, &mut Steps::new(u64::MAX))
            .unwrap_or(Judgement {
                satisfied: false,
                confidence: 1.0,
                criteria: None,
            })
    }

    /// [`CriteriaVerifier::judge`] within a step budget shared by all its
    /// criteria: `Err` when they need more.
    pub fn judge_within(&self, output: &Value, steps: &mut Steps) -> Result<Judgement, OutOfSteps> {
        let criteria = self
            .rules
            .iter()
            .map(|rule| rule.judge_within(output, steps))
            .collect::<Result<Vec<Criterion>, OutOfSteps>>()?;
        Ok(Judgement {
            satisfied: criteria.iter().all(|criterion| criterion.pass),
            confidence: 1.0,
            criteria: Some(criteria),
        })
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(key, x)| ys.get(key).is_some_and(|y| same(x, y)))
        }
        _ => a == b,
    }
}

/// The work one judgement of a verifier may do, in matcher steps (a step
/// is one character compared or skipped). The glob matcher is O(pattern ×
/// text) at worst, and a verifier may hold 64 patterns of 1 KiB each over
/// an output of any size the arm returns: unbudgeted, one evaluation of
/// 58 criteria over a 1 MiB answer took 46 s of CPU. 50 million steps is
/// well under a second and far beyond what any sane criterion needs (a
/// 1 KiB pattern over a 64 KiB string in the worst case is 64 million).
pub const JUDGE_STEPS: u64 = 50_000_000;

/// The judgement ran out of its step budget: an environmental failure,
/// never a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfSteps;

/// Steps left to a judgement; every matcher call draws from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Steps(u64);

impl Steps {
    pub fn new(limit: u64) -> Steps {
        Steps(limit)
    }

    fn spend(&mut self, steps: u64) -> Result<(), OutOfSteps> {
        self.0 = self.0.checked_sub(steps).ok_or(OutOfSteps)?;
        Ok(())
    }
}

/// Whole-string glob match with `*` and `?`, in O(pattern × text) at worst
/// (one backtrack point, no recursion), every step drawn from `steps`.
pub fn glob_within(pattern: &str, text: &str, steps: &mut Steps) -> Result<bool, OutOfSteps> {
    // Reading the strings is work too, and must not be free for a huge text.
    steps.spend(GlobMatch::reading_cost(pattern, text))?;
    let mut matching = GlobMatch::new(pattern, text);
    let (spent, decided) = matching.advance(steps.0);
    steps.spend(spent)?;
    decided.ok_or(OutOfSteps)
}

/// A glob match under way: it stops after a given number of steps and
/// goes on from there later, so a long match can share a judge slot with
/// other tenants' work instead of holding it to the end (`judge::pool`).
#[derive(Debug, Clone)]
pub struct GlobMatch {
    pattern: Vec<char>,
    text: Vec<char>,
    p: usize,
    t: usize,
    /// The last `*` seen and the text position it currently covers up to.
    star: Option<(usize, usize)>,
}

impl GlobMatch {
    /// What reading the two strings costs, in steps (paid before the
    /// match starts).
    pub fn reading_cost(pattern: &str, text: &str) -> u64 {
        u64::try_from(pattern.len().saturating_add(text.len())).unwrap_or(u64::MAX)
    }

    pub fn new(pattern: &str, text: &str) -> GlobMatch {
        GlobMatch {
            pattern: pattern.chars().collect(),
            text: text.chars().collect(),
            p: 0,
            t: 0,
            star: None,
        }
    }

    /// Takes at most `allowance` steps: the steps taken, and whether the
    /// pattern matches once that is decided (`None`: the allowance ran out
    /// first).
    pub fn advance(&mut self, allowance: u64) -> (u64, Option<bool>) {
        let mut taken = 0u64;
        while self.t < self.text.len() {
            if taken == allowance {
                return (taken, None);
            }
            taken += 1;
            match self.pattern.get(self.p) {
                Some('*') => {
                    self.star = Some((self.p, self.t));
                    self.p += 1;
                }
                Some(&c) if c == '?' || c == self.text[self.t] => {
                    self.p += 1;
                    self.t += 1;
                }
                _ => match self.star {
                    Some((star_p, star_t)) => {
                        self.p = star_p + 1;
                        self.t = star_t + 1;
                        self.star = Some((star_p, star_t + 1));
                    }
                    None => return (taken, Some(false)),
                },
            }
        }
        let rest = self.pattern.get(self.p..).unwrap_or_default();
        (taken, Some(rest.iter().all(|&c| c == '*')))
    }
}

/// A judgement of a criteria verifier under way: it works a slice of
/// steps at a time ([`Judging::work`]), so the judge pool can share its
/// slots between tenants at a fine grain and charge each tenant the steps
/// its judgements took. Its own budget ([`JUDGE_STEPS`] by default) bounds
/// the whole judgement, whatever it waited for between slices.
#[derive(Debug)]
pub struct Judging {
    verifier: std::sync::Arc<CriteriaVerifier>,
    output: Value,
    criteria: Vec<Criterion>,
    /// The glob match of the criterion `criteria.len()`, when one is under
    /// way.
    matching: Option<GlobMatch>,
    /// Steps the judgement may still take.
    left: u64,
}

impl Judging {
    pub fn new(verifier: std::sync::Arc<CriteriaVerifier>, output: Value, budget: u64) -> Judging {
        Judging {
            verifier,
            output,
            criteria: Vec::new(),
            matching: None,
            left: budget,
        }
    }

    /// Works at most about `slice` steps (the reading of a string a glob
    /// starts on may go past it): the steps taken, and the judgement once
    /// it is done (`Err` when it ran out of its budget).
    pub fn work(&mut self, slice: u64) -> (u64, Option<Result<Judgement, OutOfSteps>>) {
        let mut taken = 0u64;
        let verifier = std::sync::Arc::clone(&self.verifier);
        while let Some(rule) = verifier.rules.get(self.criteria.len()) {
            if taken >= slice {
                return (taken, None);
            }
            let target = self.output.pointer(&rule.pointer);
            let pass = match (&rule.predicate, target.and_then(Value::as_str)) {
                (Predicate::Matches(pattern), Some(text)) => {
                    if self.matching.is_none() {
                        let reading = GlobMatch::reading_cost(pattern, text);
                        if reading > self.left {
                            return (taken + self.left, Some(Err(OutOfSteps)));
                        }
                        self.left -= reading;
                        taken += reading;
                        self.matching = Some(GlobMatch::new(pattern, text));
                    }
                    let allowance = slice.saturating_sub(taken).min(self.left);
                    let Some(matching) = self.matching.as_mut() else {
                        continue;
                    };
                    let (spent, decided) = matching.advance(allowance);
                    taken += spent;
                    self.left -= spent;
                    match decided {
                        Some(pass) => pass,
                        None if self.left == 0 => return (taken, Some(Err(OutOfSteps))),
                        None => return (taken, None),
                    }
                }
                _ => {
                    // Every other predicate is one comparison of bounded
                    // operands: a step.
                    if self.left == 0 {
                        return (taken, Some(Err(OutOfSteps)));
                    }
                    self.left -= 1;
                    taken += 1;
                    rule.predicate.holds(target)
                }
            };
            self.matching = None;
            self.criteria.push(rule.criterion(pass));
        }
        let criteria = std::mem::take(&mut self.criteria);
        let judgement = Judgement {
            satisfied: criteria.iter().all(|criterion| criterion.pass),
            confidence: 1.0,
            criteria: Some(criteria),
        };
        (taken, Some(Ok(judgement)))
    }
}

/// [`glob_within`] without a budget, for callers that bound the text
/// themselves.
pub fn glob(pattern: &str, text: &str) -> bool {
    glob_within(pattern, text, &mut Steps::new(u64::MAX)).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(pointer: &str, predicate: Predicate) -> Rule {
        Rule {
            id: "c".into(),
            pointer: pointer.into(),
            predicate,
            failure_class: FailureClass::Logical,
        }
    }

    #[test]
    fn names_are_plain() {
        for good in ["release-ready", "v1.2_x", "A", &"a".repeat(64)] {
            assert!(VerifierName::parse(good).is_some(), "{good:?}");
        }
        for bad in [
            "",
            "-x",
            ".x",
            "has space",
            "conformance:verifier",
            "http://x",
            "é",
            &"a".repeat(65),
        ] {
            assert!(VerifierName::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn globs_match_whole_strings() {
        assert!(glob("v1.*", "v1.2.3"));
        assert!(glob("*ready*", "all ready now"));
        assert!(glob("a?c", "abc"));
        assert!(glob("*", ""));
        assert!(glob("", ""));
        assert!(glob("a*b*c", "aXbYbZc"));
        assert!(!glob("v1.*", "v2.0"));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("abc", "abcd"));
        assert!(!glob("", "a"));
        assert!(glob("ü?", "üx"));
        assert!(!glob(&"*a".repeat(30), &"b".repeat(200)));
    }

    #[test]
    fn a_pathological_match_runs_out_of_steps() {
        let pattern = format!("*{}b", "a".repeat(1022));
        let text = "a".repeat(1 << 20);
        let mut steps = Steps::new(JUDGE_STEPS);
        assert_eq!(glob_within(&pattern, &text, &mut steps), Err(OutOfSteps));
        let mut steps = Steps::new(JUDGE_STEPS);
        assert_eq!(glob_within("a*", &text, &mut steps), Ok(true));
        assert!(steps.0 < JUDGE_STEPS);
    }

    #[test]
    fn predicates_on_the_selected_value() {
        let output = json!({ "tests": { "failed": 0, "passed": 12.0 }, "tag": "v1.4", "notes": null,
                             "list": [1, { "k": 2 }] });
        let cases = [
            ("/tests/failed", Predicate::Equals(json!(0.0)), true),
            ("/tests/failed", Predicate::Equals(json!("0")), false),
            ("/list", Predicate::Equals(json!([1.0, { "k": 2 }])), true),
            ("/tag", Predicate::NotEquals(json!("TODO")), true),
            ("/missing", Predicate::NotEquals(json!("TODO")), false),
            ("/notes", Predicate::Exists(true), true),
            ("/missing", Predicate::Exists(true), false),
            ("/missing", Predicate::Exists(false), true),
            ("/notes", Predicate::Exists(false), false),
            ("/tests/passed", Predicate::Gt(11.5), true),
            ("/tests/passed", Predicate::Gte(12.0), true),
            ("/tests/passed", Predicate::Lt(12.0), false),
            ("/tests/passed", Predicate::Lte(12.0), true),
            ("/tag", Predicate::Gt(0.0), false),
            ("/tag", Predicate::Matches("v1.*".into()), true),
            ("/tests", Predicate::Matches("*".into()), false),
            ("", Predicate::Exists(true), true),
        ];
        for (pointer, predicate, expected) in cases {
            let criterion = rule(pointer, predicate.clone()).judge(&output);
            assert_eq!(criterion.pass, expected, "{pointer} {predicate:?}");
            assert_eq!(
                criterion.failure_class,
                (!expected).then_some(FailureClass::Logical)
            );
        }
    }

    #[test]
    fn satisfied_only_if_every_criterion_passes() {
        let mut verifier = CriteriaVerifier {
            name: VerifierName::parse("v").expect("name"),
            rules: vec![
                rule("/done", Predicate::Equals(json!(true))),
                Rule {
                    id: "score".into(),
                    pointer: "/score".into(),
                    predicate: Predicate::Gte(0.8),
                    failure_class: FailureClass::Environmental,
                },
            ],
            created_at: Timestamp::from_unix_ms(0).expect("epoch"),
        };
        let judgement = verifier.judge(&json!({ "done": true, "score": 0.5 }));
        assert!(!judgement.satisfied);
        let criteria = judgement.criteria.expect("criteria");
        assert!(criteria[0].pass);
        assert_eq!(criteria[1].failure_class, Some(FailureClass::Environmental));
        assert!(
            verifier
                .judge(&json!({ "done": true, "score": 0.9 }))
                .satisfied
        );
        verifier.rules.truncate(1);
        assert!(verifier.judge(&json!({ "done": true })).satisfied);
    }
}
