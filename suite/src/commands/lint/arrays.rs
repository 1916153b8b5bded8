//! `array-may-be-empty`: an assertion that holds on an empty array proves
//! nothing unless the same step shows the array has elements.
//!
//! Two kinds of assertion hold on an empty array:
//! - membership and order claims (`notContains`, `notEquals`, `exists`,
//!   `increasing`): the selection they inspect (after `where` and `map`)
//!   must be shown to have elements (two for `increasing`);
//! - emptiness claims (`length: 0`, `equals: []`, `maxLength`, a `oneOf`
//!   that allows `[]`) over a `where`/`map` selection: the array they select
//!   from must be shown to have an element, or "none of them" is vacuous.
//!
//! A *witness* is another assertion of the same step, on the same pointer,
//! that fails on an empty array: `minLength`/`length` n ≥ 1, `contains`, an
//! `equals` with a non-empty array, a `oneOf` of non-empty arrays.

use serde_json::{Map, Value};

use super::required::Shape;
use crate::model::array_reading;

/// Keys of an assertion besides its predicate: what it looks at, and which
/// requirements it proves.
const TARGET_KEYS: &[&str] = &["pointer", "header", "where", "map", "proves"];

/// One assertion as the rule sees it.
struct Probe<'a> {
    at: String,
    pointer: &'a str,
    /// `where`, as written.
    filter: Vec<(&'a str, &'a Value)>,
    map: Option<&'a str>,
    predicate: &'a str,
    operand: &'a Value,
}

enum Tolerance {
    /// Holds on an empty selection: the selection itself must be shown to
    /// have this many elements.
    Selection(u64),
    /// States that a selection is empty (or small): the array it selects
    /// from must be shown to have an element.
    Whole,
}

impl Probe<'_> {
    /// `None` for header targets and anything the loader would reject.
    fn read(at: String, assertion: &Value) -> Option<Probe<'_>> {
        let object = assertion.as_object()?;
        let pointer = object.get("pointer")?.as_str()?;
        let mut predicates = object
            .iter()
            .filter(|(key, _)| !TARGET_KEYS.contains(&key.as_str()));
        let (predicate, operand) = predicates.next()?;
        if predicates.next().is_some() {
            return None;
        }
        Some(Probe {
            at,
            pointer,
            filter: object
                .get("where")
                .and_then(Value::as_object)
                .map(|filter| filter.iter().map(|(k, v)| (k.as_str(), v)).collect())
                .unwrap_or_default(),
            map: object.get("map").and_then(Value::as_str),
            predicate: predicate.as_str(),
            operand,
        })
    }

    /// The lint knows the target is an array: `where` and `map` need one,
    /// and `increasing` means nothing on anything else. Other targets may
    /// be objects or strings, where `notContains` is a text search.
    fn on_array(&self) -> bool {
        !self.filter.is_empty() || self.map.is_some() || self.predicate == "increasing"
    }

    fn describe(&self) -> String {
        let mut text = match self.predicate {
            "notContains" | "increasing" | "exists" => format!("`{}`", self.predicate),
            _ => format!("`{}: {}`", self.predicate, self.operand),
        };
        text.push_str(&format!(" over {}", show(self.pointer)));
        text.push_str(&array_reading(self.filter.iter().copied(), self.map));
        text
    }

    /// How many elements an array must have for this assertion to hold;
    /// 0 when it holds on an empty one or the lint cannot tell (a
    /// `"{variable}"` operand).
    fn demands(&self) -> u64 {
        let len = |items: &Vec<Value>| u64::try_from(items.len()).unwrap_or(u64::MAX);
        match self.predicate {
            "minLength" | "length" => self.operand.as_u64().unwrap_or(0),
            "equals" => self.operand.as_array().map_or(0, len),
            "contains" => 1,
            "oneOf" => self
                .operand
                .as_array()
                .and_then(|options| {
                    options
                        .iter()
                        .map(|option| option.as_array().map(len))
                        .collect::<Option<Vec<u64>>>()
                })
                .and_then(|lengths| lengths.into_iter().min())
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// What must be shown to have elements for this assertion to mean
    /// something; `None` when it fails on an empty array anyway.
    fn tolerance(&self) -> Option<Tolerance> {
        let empty = Value::Array(Vec::new());
        match self.predicate {
            "notContains" => Some(Tolerance::Selection(1)),
            "notEquals" if *self.operand != empty => Some(Tolerance::Selection(1)),
            "exists" if *self.operand == Value::Bool(true) => Some(Tolerance::Selection(1)),
            "increasing" => Some(Tolerance::Selection(2)),
            "length" if self.operand.as_u64() == Some(0) => Some(Tolerance::Whole),
            "equals" if *self.operand == empty => Some(Tolerance::Whole),
            "maxLength" => Some(Tolerance::Whole),
            "oneOf"
                if self
                    .operand
                    .as_array()
                    .is_some_and(|options| options.contains(&empty)) =>
            {
                Some(Tolerance::Whole)
            }
            _ => None,
        }
    }

    /// `other` shows that `self`'s selection has at least `needed`
    /// elements: it looks at a subset of the same array (every `where`
    /// entry of `self`, maybe more) and demands that many, and `self`'s
    /// `map` drops none of them: `self` has no `map`, or `other` maps the
    /// same way, or the step's response is known to have the mapped pointer
    /// in every element (`map` only drops elements that lack it).
    fn witnessed_by(&self, other: &Probe<'_>, needed: u64, shape: Shape<'_>) -> bool {
        other.pointer == self.pointer
            && other.demands() >= needed
            && self.filter.iter().all(|entry| other.filter.contains(entry))
            && match self.map {
                None => true,
                Some(map) if other.map == Some(map) => true,
                Some(map) => shape.in_every_element(self.pointer, map),
            }
    }
}

fn show(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the body"
    } else {
        pointer
    }
}

/// `(pointer in the file, message)` for every unwitnessed assertion of one
/// step's `expect` (found at `at`), whose response has `shape`.
pub(super) fn check(
    expect: &Map<String, Value>,
    shape: Shape<'_>,
    at: &str,
) -> Vec<(String, String)> {
    let assertions = expect
        .get("assert")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let probes: Vec<Probe<'_>> = assertions
        .iter()
        .enumerate()
        .filter_map(|(index, assertion)| Probe::read(format!("{at}/assert/{index}"), assertion))
        .collect();
    let mut found = Vec::new();
    for probe in probes.iter().filter(|probe| probe.on_array()) {
        let Some(tolerance) = probe.tolerance() else {
            continue;
        };
        let (witnessed, needs) = match tolerance {
            Tolerance::Selection(needed) => (
                probes
                    .iter()
                    .any(|other| probe.witnessed_by(other, needed, shape)),
                if needed == 1 {
                    "that this selection has an element".to_string()
                } else {
                    format!("that this selection has at least {needed} elements")
                },
            ),
            Tolerance::Whole => (
                probes
                    .iter()
                    .any(|other| other.pointer == probe.pointer && other.demands() >= 1),
                format!("that {} has an element", show(probe.pointer)),
            ),
        };
        if !witnessed {
            found.push((
                probe.at.clone(),
                format!(
                    "{} also holds on an empty array, and no assertion of this step on {} shows \
                     {needs} (`minLength`, `length`, `contains` or a non-empty `equals`)",
                    probe.describe(),
                    show(probe.pointer),
                ),
            ));
        }
    }
    found
}
