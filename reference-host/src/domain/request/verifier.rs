//! `POST /v1/host/sample/verifiers`: `{name, criteria: [{id, pointer, op,
//! value?, failureClass?}]}`, parsed strictly (schema
//! `verifier-registration`). Stored verifiers are read back through here too.

use std::collections::BTreeSet;

use serde_json::Value;

use super::reader::{child, invalid, object, only_keys, required, string};
use super::RequestError;
use crate::domain::criteria::{CriteriaVerifier, Op, Predicate, Rule, VerifierName, MAX_OPERAND};
use crate::domain::timestamp::Timestamp;
use crate::domain::verdict::{FailureClass, MAX_CRITERIA, MAX_CRITERION_ID};

const TOP: [&str; 2] = ["name", "criteria"];
const CRITERION: [&str; 5] = ["id", "pointer", "op", "value", "failureClass"];

/// A valid registration.
#[derive(Debug, Clone, PartialEq)]
pub struct NewVerifier {
    pub name: VerifierName,
    pub rules: Vec<Rule>,
}

impl NewVerifier {
    pub fn into_verifier(self, created_at: Timestamp) -> CriteriaVerifier {
        CriteriaVerifier {
            name: self.name,
            rules: self.rules,
            created_at,
        }
    }
}

pub fn parse_verifier(body: &Value) -> Result<NewVerifier, RequestError> {
    let top = object(body, "")?;
    only_keys(top, "", &TOP)?;
    let name_text = string(required(top, "", "name")?, "/name")?;
    let name = VerifierName::parse(name_text).ok_or_else(|| {
        invalid(
            "/name",
            "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    })?;
    let criteria = required(top, "", "criteria")?
        .as_array()
        .ok_or_else(|| invalid("/criteria", "must be an array"))?;
    if criteria.is_empty() || criteria.len() > MAX_CRITERIA {
        return Err(invalid(
            "/criteria",
            format!("must hold 1 to {MAX_CRITERIA} criteria"),
        ));
    }
    let mut ids = BTreeSet::new();
    let mut rules = Vec::with_capacity(criteria.len());
    for (index, value) in criteria.iter().enumerate() {
        let at = child("/criteria", &index.to_string());
        let rule = rule(value, &at)?;
        if !ids.insert(rule.id.clone()) {
            return Err(invalid(
                &child(&at, "id"),
                "repeats an earlier criterion's id",
            ));
        }
        rules.push(rule);
    }
    Ok(NewVerifier { name, rules })
}

fn rule(value: &Value, at: &str) -> Result<Rule, RequestError> {
    let map = object(value, at)?;
    only_keys(map, at, &CRITERION)?;
    let field = |key: &str| child(at, key);

    let id = string(required(map, at, "id")?, &field("id"))?;
    if id.is_empty() || id.chars().count() > MAX_CRITERION_ID {
        return Err(invalid(
            &field("id"),
            format!("must be 1 to {MAX_CRITERION_ID} characters"),
        ));
    }
    let pointer = string(required(map, at, "pointer")?, &field("pointer"))?;
    if !is_pointer(pointer) || pointer.chars().count() > MAX_OPERAND {
        return Err(invalid(
            &field("pointer"),
            "must be an RFC 6901 pointer (\"\" or starting with '/', '~' only as ~0 or ~1)",
        ));
    }
    let op_text = string(required(map, at, "op")?, &field("op"))?;
    let op = Op::parse(op_text).ok_or_else(|| {
        invalid(
            &field("op"),
            "must be one of equals, notEquals, exists, gt, gte, lt, lte, matches",
        )
    })?;
    let value = map.get("value");
    let value_at = field("value");
    let needed = || invalid(&value_at, format!("is required for {}", op.as_str()));
    let number = |value: Option<&Value>| -> Result<f64, RequestError> {
        value
            .ok_or_else(needed)?
            .as_f64()
            .filter(|n| n.is_finite())
            .ok_or_else(|| invalid(&value_at, "must be a number"))
    };
    let predicate = match op {
        Op::Equals => Predicate::Equals(value.ok_or_else(needed)?.clone()),
        Op::NotEquals => Predicate::NotEquals(value.ok_or_else(needed)?.clone()),
        Op::Exists => match value {
            None => Predicate::Exists(true),
            Some(Value::Bool(present)) => Predicate::Exists(*present),
            Some(_) => return Err(invalid(&value_at, "must be a boolean for exists")),
        },
        Op::Gt => Predicate::Gt(number(value)?),
        Op::Gte => Predicate::Gte(number(value)?),
        Op::Lt => Predicate::Lt(number(value)?),
        Op::Lte => Predicate::Lte(number(value)?),
        Op::Matches => {
            let pattern = string(value.ok_or_else(needed)?, &value_at)?;
            if pattern.chars().count() > MAX_OPERAND {
                return Err(invalid(
                    &value_at,
                    format!("must be at most {MAX_OPERAND} characters"),
                ));
            }
            Predicate::Matches(pattern.to_string())
        }
    };
    let failure_class = match map.get("failureClass") {
        None => FailureClass::Logical,
        Some(value) => string(value, &field("failureClass"))
            .ok()
            .and_then(FailureClass::parse)
            .ok_or_else(|| {
                invalid(
                    &field("failureClass"),
                    "must be one of logical, environmental",
                )
            })?,
    };
    Ok(Rule {
        id: id.to_string(),
        pointer: pointer.to_string(),
        predicate,
        failure_class,
    })
}

/// RFC 6901: empty, or `/`-separated tokens where `~` only starts `~0`/`~1`.
fn is_pointer(text: &str) -> bool {
    if text.is_empty() {
        return true;
    }
    if !text.starts_with('/') {
        return false;
    }
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn registration() -> Value {
        json!({ "name": "release-ready", "criteria": [
            { "id": "tests", "pointer": "/tests/failed", "op": "equals", "value": 0 },
            { "id": "notes", "pointer": "/notes", "op": "exists" },
            { "id": "score", "pointer": "/score", "op": "gte", "value": 0.8, "failureClass": "environmental" },
            { "id": "tag", "pointer": "/tag", "op": "matches", "value": "v1.*" }
        ] })
    }

    fn refused_at(body: Value) -> String {
        match parse_verifier(&body) {
            Err(RequestError::Invalid { pointer, .. }) => pointer,
            other => panic!("expected a refusal of {body}, got {other:?}"),
        }
    }

    fn set(pointer: &str, value: Value) -> Value {
        let mut body = registration();
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        body.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .expect("parent")
            .insert(key.to_string(), value);
        body
    }

    #[test]
    fn a_valid_registration() {
        let parsed = parse_verifier(&registration()).expect("valid");
        assert_eq!(parsed.name.as_str(), "release-ready");
        assert_eq!(parsed.rules.len(), 4);
        assert_eq!(parsed.rules[0].predicate, Predicate::Equals(json!(0)));
        assert_eq!(parsed.rules[1].predicate, Predicate::Exists(true));
        assert_eq!(parsed.rules[1].failure_class, FailureClass::Logical);
        assert_eq!(parsed.rules[2].predicate, Predicate::Gte(0.8));
        assert_eq!(parsed.rules[2].failure_class, FailureClass::Environmental);
        assert_eq!(parsed.rules[3].predicate, Predicate::Matches("v1.*".into()));
    }

    #[test]
    fn every_bad_field_is_refused_with_its_pointer() {
        let cases = [
            (json!([]), ""),
            (set("/colour", json!("blue")), "/colour"),
            (set("/name", json!("has space")), "/name"),
            (set("/name", json!(7)), "/name"),
            (set("/criteria", json!([])), "/criteria"),
            (set("/criteria", json!({})), "/criteria"),
            (set("/criteria/0/weight", json!(1)), "/criteria/0/weight"),
            (set("/criteria/0/id", json!("")), "/criteria/0/id"),
            (set("/criteria/1/id", json!("tests")), "/criteria/1/id"),
            (
                set("/criteria/0/pointer", json!("tests")),
                "/criteria/0/pointer",
            ),
            (
                set("/criteria/0/pointer", json!("/a~2")),
                "/criteria/0/pointer",
            ),
            (
                set("/criteria/0/pointer", json!("/a~")),
                "/criteria/0/pointer",
            ),
            (set("/criteria/0/op", json!("approx")), "/criteria/0/op"),
            (set("/criteria/1/value", json!("yes")), "/criteria/1/value"),
            (set("/criteria/2/value", json!("0.8")), "/criteria/2/value"),
            (set("/criteria/3/value", json!(3)), "/criteria/3/value"),
            (
                set("/criteria/0/failureClass", json!(null)),
                "/criteria/0/failureClass",
            ),
            (
                set("/criteria/0/failureClass", json!("cosmic")),
                "/criteria/0/failureClass",
            ),
        ];
        for (body, pointer) in cases {
            assert_eq!(refused_at(body), pointer);
        }
        let mut missing = registration();
        missing["criteria"][0]
            .as_object_mut()
            .expect("criterion")
            .remove("value");
        assert_eq!(refused_at(missing), "/criteria/0/value");
        let many: Vec<Value> = (0..=MAX_CRITERIA)
            .map(|i| json!({ "id": format!("c{i}"), "pointer": "", "op": "exists" }))
            .collect();
        assert_eq!(refused_at(set("/criteria", json!(many))), "/criteria");
    }

    #[test]
    fn pointers() {
        for good in ["", "/", "/a", "/a/b", "/a~0b/~1c", "//"] {
            assert!(is_pointer(good), "{good:?}");
        }
        for bad in ["a", "/~", "/~2", "~0"] {
            assert!(!is_pointer(bad), "{bad:?}");
        }
    }
}
