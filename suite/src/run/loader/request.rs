//! The request step's forms beyond one JSON request and its answer:
//! `parallel` sends, per-status `schemas`, `rawBodyBase64` bodies and the
//! scenario-level `generate` values they use.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;

use super::{invalid, no_headers, LoadError};
use crate::model::{Capture, Expect, Parallel};
use crate::template::BUILTINS;

/// The variable that numbers the copies of a parallel request (1-based).
pub const INDEX_VARIABLE: &str = "parallel.index";
/// Most bytes all `generate` values of one scenario add up to.
pub const MAX_GENERATED_BYTES: usize = 4 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawParallel {
    count: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGenerate {
    repeat: String,
    times: u32,
}

/// The `generate` block as variables, each `repeat` written `times` times.
pub(super) fn generate(
    path: &Path,
    raw: BTreeMap<String, RawGenerate>,
) -> Result<BTreeMap<String, String>, LoadError> {
    let mut total = 0usize;
    let mut out = BTreeMap::new();
    for (name, spec) in raw {
        let at = format!("/generate/{name}");
        if !is_identifier(&name) || BUILTINS.contains(&name.as_str()) {
            return Err(invalid(
                path,
                at,
                format!("`{name}` is not a plain variable name, or it is a built-in"),
            ));
        }
        if spec.repeat.is_empty() || spec.times == 0 {
            return Err(invalid(
                path,
                at,
                "`repeat` must be non-empty and `times` at least 1",
            ));
        }
        let size = usize::try_from(spec.times)
            .ok()
            .and_then(|times| spec.repeat.len().checked_mul(times))
            .filter(|size| total.saturating_add(*size) <= MAX_GENERATED_BYTES)
            .ok_or_else(|| {
                invalid(
                    path,
                    format!("{at}/times"),
                    format!("generated values are capped at {MAX_GENERATED_BYTES} bytes in all"),
                )
            })?;
        total += size;
        out.insert(name, spec.repeat.repeat(spec.times as usize));
    }
    Ok(out)
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A parallel step's shape beyond what the schema states (a count in range,
/// sent once, `schema` or `schemas`): nothing that needs one single answer
/// (header assertions, header captures).
pub(super) fn check(
    path: &Path,
    pointer: &str,
    raw: RawParallel,
    expect: &Expect,
    capture: &BTreeMap<String, Capture>,
) -> Result<Parallel, LoadError> {
    no_headers(
        path,
        pointer,
        (expect, capture),
        (
            "a parallel step asserts on the aggregate of its answers: use \
             `/responses/…/headers/<lower-case name>`",
            "a parallel step has no single answer: capture with `pointer` (e.g. `/first/200/headers/etag`)",
        ),
    )?;
    Ok(Parallel { count: raw.count })
}

/// `schemas` (by status) belongs to parallel steps, whose answers differ.
pub(super) fn no_schemas(path: &Path, pointer: &str, expect: &Expect) -> Result<(), LoadError> {
    if expect.schemas.is_empty() {
        Ok(())
    } else {
        Err(invalid(
            path,
            format!("{pointer}/expect/schemas"),
            "`schemas` is for `parallel` steps; a single answer takes `schema`",
        ))
    }
}

/// Standard base64 with padding, as RFC 4648 §4 writes it.
pub(super) fn decode_base64(path: &Path, at: &str, text: &str) -> Result<Vec<u8>, LoadError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| invalid(path, at, format!("not base64: {error}")))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::{load_scenario, LoadError};
    use crate::model::{Action, Body, Parallel, Scenario};
    use crate::testing::assert_contains;

    fn hardening(steps: Value) -> Value {
        json!({
            "title": "a hardening scenario",
            "profile": "hardening",
            "requirements": ["hardening.a"],
            "needs": {"requiresBounds": true},
            "generate": {"padding": {"repeat": "ab", "times": 3}},
            "checks": 1,
            "steps": steps,
        })
    }

    fn parallel_step(expect: Value) -> Value {
        json!({
            "name": "at once",
            "request": {"method": "PATCH", "path": "{base}/g",
                        "body": {"objective": "copy {parallel.index} {padding}"}},
            "parallel": {"count": 3},
            "expect": expect,
            "capture": {"winner": {"pointer": "/first/200/headers/etag"}}
        })
    }

    fn load(value: &Value) -> Result<Scenario, LoadError> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("hardening/s.json");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
        std::fs::write(&path, serde_json::to_vec(value).expect("json")).expect("write");
        let schemas = goalpost_schemas::Schemas::embedded().expect("schemas");
        load_scenario(&path, "hardening", &schemas)
    }

    fn refused_at(value: &Value) -> (String, String) {
        match load(value) {
            Err(LoadError::Invalid {
                pointer, message, ..
            }) => (pointer, message),
            other => panic!("expected an invalid scenario, got {other:?}"),
        }
    }

    #[test]
    fn parallel_steps_generated_values_and_bytes_load() {
        let scenario = load(&hardening(json!([
            parallel_step(json!({"status": [200, 412], "schemas": {"200": "goal", "412": "error"},
                                 "assert": [{"pointer": "/counts/200", "equals": 1}]})),
            {"name": "not UTF-8", "request": {"method": "POST", "path": "{base}",
                                              "rawBodyBase64": "/w=="},
             "expect": {"status": 400, "schema": "error",
                        "assert": [{"pointer": "/message", "notContains": "{winner}"}]}}
        ])))
        .expect("loads");
        assert_eq!(scenario.needs.requires_bounds, Some(true));
        assert_eq!(scenario.generated["padding"], "ababab");
        let Action::Request(first) = &scenario.steps[0].action else {
            panic!("a request step")
        };
        assert_eq!(first.parallel, Some(Parallel { count: 3 }));
        assert_eq!(first.expect.schemas.len(), 2);
        assert_eq!(first.expect.checks(), 2, "schemas are counted when applied");
        let Action::Request(second) = &scenario.steps[1].action else {
            panic!("a request step")
        };
        assert_eq!(second.request.body, Body::Bytes(vec![0xff]));
        assert_eq!(second.parallel, None);
    }

    #[test]
    fn a_parallel_step_has_no_single_answer() {
        let header = hardening(json!([parallel_step(
            json!({"assert": [{"header": "ETag", "exists": true}]})
        )]));
        let (pointer, message) = refused_at(&header);
        assert_eq!(pointer, "/steps/0/expect/assert/0");
        assert_contains(&message, "aggregate");
        let mut capture = hardening(json!([parallel_step(json!({"status": 200}))]));
        capture["steps"][0]["capture"] = json!({"etag": {"header": "ETag"}});
        let (pointer, _) = refused_at(&capture);
        assert_eq!(pointer, "/steps/0/capture/etag");
        let mut lone = hardening(json!([parallel_step(json!({"status": 200}))]));
        lone["steps"][0]["parallel"]["count"] = json!(1);
        assert_eq!(refused_at(&lone).0, "/steps/0/parallel/count");
        // The schema bounds the copies (2 to 100: enough for any race worth
        // showing, few enough that the suite never becomes the load test).
        let mut most = hardening(json!([parallel_step(json!({"status": 200}))]));
        most["steps"][0]["parallel"]["count"] = json!(100);
        assert!(load(&most).is_ok());
        most["steps"][0]["parallel"]["count"] = json!(101);
        assert_eq!(refused_at(&most).0, "/steps/0/parallel/count");
    }

    #[test]
    fn the_index_lives_only_in_a_parallel_request() {
        let mut outside = hardening(json!([parallel_step(json!({"status": 200}))]));
        outside["steps"][0]
            .as_object_mut()
            .expect("step")
            .remove("parallel");
        let (pointer, message) = refused_at(&outside);
        assert_eq!(pointer, "/steps/0/request/body");
        assert_contains(&message, "parallel");
        let in_assertion = hardening(json!([parallel_step(json!({
            "assert": [{"pointer": "/count", "equals": "{parallel.index}"}]
        }))]));
        assert_eq!(refused_at(&in_assertion).0, "/steps/0/expect/assert/0");
    }

    #[test]
    fn generated_values_are_capped_and_never_overwritten() {
        let mut shadow = hardening(json!([parallel_step(json!({"status": 200}))]));
        shadow["steps"][0]["capture"] = json!({"padding": {"pointer": "/count"}});
        let (pointer, message) = refused_at(&shadow);
        assert_eq!(pointer, "/steps/0/capture/padding");
        assert_contains(&message, "generated");
        let mut huge = hardening(json!([parallel_step(json!({"status": 200}))]));
        huge["generate"] = json!({"a": {"repeat": "xy", "times": 2_000_000},
                                  "b": {"repeat": "xy", "times": 200_000}});
        let (pointer, _) = refused_at(&huge);
        assert!(pointer.starts_with("/generate/"), "{pointer}");
        let mut fits = hardening(json!([parallel_step(json!({"status": 200}))]));
        fits["generate"] = json!({"padding": {"repeat": "xy", "times": 2_000_000}});
        assert!(load(&fits).is_ok());
    }
}
