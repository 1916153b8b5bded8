//! Whether every element of an array is known to have a field, so the
//! array rule knows when a `map` cannot drop elements. Two sources know:
//! the step's response schema, and, for a `mockLog` step, the suite's own
//! call log (every call record carries the same keys).
//!
//! The schema walk is deliberately small: it follows `$ref`s (local and
//! across the embedded schemas), `required` + `properties` and `items`, and
//! answers "no" to anything else (`allOf`, `oneOf`, conditionals), so a
//! doubt always means one more finding, never one fewer.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::mock::{CallRecord, Log, SecretCheck, Window};
use crate::model::mock_script::{Answer, AnswerBody, Endpoint};

/// What a step's "response" is known to look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape<'a> {
    /// Valid against this schema (`expect.schema`).
    Schema(&'a str),
    /// The mock's call-log view (a `mockLog` step).
    MockLog,
    Unknown,
}

impl Shape<'_> {
    /// True when every element of the array at `array` is known to have a
    /// value (maybe `null`) at `element`.
    pub(super) fn in_every_element(self, array: &str, element: &str) -> bool {
        match self {
            Shape::Schema(name) => in_every_element(name, array, element),
            Shape::MockLog => mock_view_sample()
                .pointer(array)
                .and_then(Value::as_array)
                .and_then(|items| items.first())
                .is_some_and(|item| item.pointer(element).is_some()),
            Shape::Unknown => false,
        }
    }
}

/// The view of a log holding one call with every optional part absent: the
/// keys it has are the ones every call record has.
fn mock_view_sample() -> &'static Value {
    static SAMPLE: OnceLock<Value> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let mut log = Log::default();
        log.push(CallRecord {
            seq: 1,
            endpoint: Endpoint::Arm,
            number: 1,
            at_ms: 0.0,
            at: String::new(),
            goal_id: None,
            run_id: None,
            iteration: None,
            mode: None,
            binding_id: None,
            body: Value::Null,
            problems: Vec::new(),
            secret: SecretCheck::Missing,
            answer: Answer {
                status: 200,
                body: AnswerBody::Raw(String::new()),
                delay: Duration::ZERO,
            },
            answered_ms: None,
        });
        log.view(&Window::default())
    })
}

/// How many `$ref`s one lookup may follow before it gives up.
const MAX_REFS: usize = 16;

type Docs = BTreeMap<&'static str, Value>;

fn docs() -> &'static Docs {
    static DOCS: OnceLock<Docs> = OnceLock::new();
    DOCS.get_or_init(|| {
        goalpost_schemas::NAMES
            .iter()
            .filter_map(|name| {
                let text = goalpost_schemas::source(name)?;
                Some((*name, serde_json::from_str(text).ok()?))
            })
            .collect()
    })
}

/// A schema node and the document its local `$ref`s resolve in.
#[derive(Clone, Copy)]
struct At {
    doc: &'static str,
    node: &'static Value,
}

impl At {
    fn deref(self, docs: &'static Docs) -> Option<At> {
        let mut at = self;
        for _ in 0..MAX_REFS {
            let Some(reference) = at.node.get("$ref").and_then(Value::as_str) else {
                return Some(at);
            };
            let (file, fragment) = reference.split_once('#').unwrap_or((reference, ""));
            if !file.is_empty() {
                let name = file
                    .strip_prefix(goalpost_schemas::ID_PREFIX)?
                    .strip_suffix(".schema.json")?;
                at.doc = docs.get_key_value(name)?.0;
            }
            at.node = docs.get(at.doc)?.pointer(fragment)?;
        }
        None
    }

    /// The schema of required property `key`.
    fn required(self, docs: &'static Docs, key: &str) -> Option<At> {
        let at = self.deref(docs)?;
        let listed = at
            .node
            .get("required")?
            .as_array()?
            .iter()
            .any(|name| name.as_str() == Some(key));
        let node = at.node.get("properties")?.get(key)?;
        listed.then_some(At { doc: at.doc, node })
    }

    fn items(self, docs: &'static Docs) -> Option<At> {
        let at = self.deref(docs)?;
        let node = at.node.get("items")?;
        Some(At { doc: at.doc, node })
    }
}

fn segments(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
}

/// True when every body valid against schema `name` has, at `array`, an
/// array whose every element has a value at `element`.
fn in_every_element(name: &str, array: &str, element: &str) -> bool {
    let docs = docs();
    let Some((doc, root)) = docs.get_key_value(name) else {
        return false;
    };
    let mut at = Some(At { doc, node: root });
    for key in segments(array) {
        at = at.and_then(|at| at.required(docs, &key));
    }
    at = at.and_then(|at| at.items(docs));
    for key in segments(element) {
        at = at.and_then(|at| at.required(docs, &key));
    }
    at.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_refs_across_schemas() {
        assert!(in_every_element("goal-list", "/goals", "/owner/tenant"));
        assert!(in_every_element("goal-list", "/goals", "/id"));
        assert!(in_every_element("event-list", "/events", "/sequence"));
    }

    #[test]
    fn every_mock_call_record_has_its_keys() {
        assert!(Shape::MockLog.in_every_element("/calls", "/secret"));
        assert!(Shape::MockLog.in_every_element("/calls", "/runId"));
        assert!(Shape::MockLog.in_every_element("/calls", "/answer/status"));
        // The host's payload can be anything.
        assert!(!Shape::MockLog.in_every_element("/calls", "/body/goalId"));
        assert!(!Shape::MockLog.in_every_element("/nope", "/secret"));
        assert!(!Shape::Unknown.in_every_element("/calls", "/secret"));
    }

    #[test]
    fn optional_fields_and_unknown_shapes_are_not_guaranteed() {
        // `progress` is optional on a goal.
        assert!(!in_every_element(
            "goal-list",
            "/goals",
            "/progress/iterations"
        ));
        assert!(!in_every_element("goal-list", "/goals", "/nope"));
        assert!(!in_every_element("goal-list", "/nope", "/id"));
        assert!(!in_every_element("no-such-schema", "/goals", "/id"));
        // `/goals` is the array, not an element of one.
        assert!(!in_every_element("goal-list", "", "/goals"));
    }
}
