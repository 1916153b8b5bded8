//! Shared helpers: one compiled set per test binary, and assertions that say
//! which schema, which value and which violations when they fail.

#![allow(dead_code)] // each test binary uses a different subset

use std::sync::OnceLock;

use goalpost_schemas::Schemas;
use serde_json::Value;

pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| match Schemas::embedded() {
        Ok(schemas) => schemas,
        Err(error) => panic!("embedded schemas do not compile: {error}"),
    })
}

#[track_caller]
pub fn assert_valid(name: &str, value: &Value) {
    if let Err(violations) = schemas().validate(name, value) {
        let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!(
            "expected valid `{name}`:\n{value:#}\nviolations:\n{}",
            listed.join("\n")
        );
    }
}

/// Invalid, and (so the test cannot pass for the wrong reason) at least one
/// violation sits at `pointer`.
#[track_caller]
pub fn assert_invalid_at(name: &str, value: &Value, pointer: &str) {
    match schemas().validate(name, value) {
        Ok(()) => panic!("expected invalid `{name}` (at {pointer:?}):\n{value:#}"),
        Err(violations) => {
            if !violations.iter().any(|v| v.pointer == pointer) {
                let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
                panic!(
                    "`{name}` is invalid, but not at {pointer:?}:\n{value:#}\nviolations:\n{}",
                    listed.join("\n")
                );
            }
        }
    }
}

/// `base` with the value at `pointer` replaced (or added, for a missing last key).
pub fn with(base: &Value, pointer: &str, replacement: Value) -> Value {
    let mut value = base.clone();
    let (parent, key) = split(pointer);
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_string(), replacement);
        }
        Some(Value::Array(items)) => {
            let index: usize = key.parse().expect("array index in test pointer");
            items[index] = replacement;
        }
        _ => panic!("test pointer {pointer:?} has no object or array parent"),
    }
    value
}

/// `base` without the key at `pointer`.
pub fn without(base: &Value, pointer: &str) -> Value {
    let mut value = base.clone();
    let (parent, key) = split(pointer);
    let removed = value
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|map| map.remove(key));
    assert!(removed.is_some(), "test pointer {pointer:?} names nothing");
    value
}

fn split(pointer: &str) -> (&str, &str) {
    pointer
        .rsplit_once('/')
        .expect("test pointers start with '/'")
}
