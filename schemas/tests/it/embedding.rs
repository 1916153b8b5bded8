//! The crate's own contract: every name has a file with the right header,
//! the embedded texts are the files, loading from a directory gives the same
//! verdicts, and nothing is ever fetched or silently passed.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use goalpost_schemas::{schema_id, source, SchemaError, Schemas, Violation, NAMES};
use serde_json::{json, Value};

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

#[test]
fn names_are_sorted_unique_and_match_the_files_on_disk() {
    let mut sorted = NAMES.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(NAMES, sorted.as_slice(), "NAMES must be sorted and unique");

    let on_disk: BTreeSet<String> = std::fs::read_dir(schema_dir())
        .expect("schemas/ is readable")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|file| file.strip_suffix(".schema.json").map(str::to_string))
        .collect();
    let named: BTreeSet<String> = NAMES.iter().map(|name| name.to_string()).collect();
    assert_eq!(
        on_disk, named,
        "every schema file is named, every name has a file"
    );
}

#[test]
fn every_file_is_draft_2020_12_with_its_own_id() {
    for name in NAMES {
        let text = source(name).unwrap_or_else(|| panic!("`{name}` is not embedded"));
        let document: Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("`{name}`: {e}"));
        assert_eq!(
            document["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert_eq!(
            document["$id"],
            json!(format!("https://goalpost.dev/schemas/{name}.schema.json")),
            "{name}"
        );
        assert_eq!(document["$id"], json!(schema_id(name)), "{name}");
        assert!(
            document["title"].is_string() && document["description"].is_string(),
            "{name} says what it is"
        );
    }
}

#[test]
fn embedded_texts_are_the_files() {
    for name in NAMES {
        let on_disk = std::fs::read_to_string(schema_dir().join(format!("{name}.schema.json")))
            .unwrap_or_else(|e| panic!("`{name}`: {e}"));
        assert_eq!(
            source(name),
            Some(on_disk.as_str()),
            "`{name}` embedded text differs from the file"
        );
    }
    assert_eq!(source("goals"), None);
}

/// One valid and one invalid value per schema.
fn samples() -> Vec<(&'static str, Value, bool)> {
    let goal = json!({
        "id": "goal-1", "objective": "o", "state": "active",
        "completion": { "check": "verifier" }, "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 1 }, "owner": { "tenant": "t" }, "createdAt": "2026-06-13T00:00:00Z"
    });
    let evaluation = json!({ "runId": "r", "iteration": 1, "satisfied": true, "confidence": 1, "costUsd": 0,
                             "at": "2026-06-13T00:00:00Z" });
    let closed = json!({ "sequence": 1, "type": "goal.closed", "at": "2026-06-13T00:00:00Z",
                         "payload": { "goalId": "g", "finalState": "satisfied" } });
    let scenario = json!({ "title": "t", "profile": "core", "requirements": ["core.x"], "checks": 1,
        "steps": [{ "name": "s", "request": { "method": "GET", "path": "{base}" }, "expect": { "status": 200 } }] });
    vec![
        (
            "attention",
            json!({ "goalId": "g", "status": "paused" }),
            true,
        ),
        (
            "attention",
            json!({ "goalId": "g", "status": "napping" }),
            false,
        ),
        // Only `status` is required (PROFILE.md#seam-attention).
        ("attention", json!({ "status": "stopped" }), true),
        (
            "attention",
            json!({ "status": "active", "since": "x" }),
            true,
        ),
        ("attention", json!({ "goalId": "g" }), false),
        (
            "capabilities",
            json!({ "agents": { "goals": { "judge": "host", "continuation": [] } } }),
            true,
        ),
        (
            "capabilities",
            json!({ "agents": { "goals": { "judge": "host" } } }),
            false,
        ),
        (
            "continue-response",
            json!({ "goal": goal, "evaluation": null }),
            true,
        ),
        (
            "continue-response",
            json!({ "goal": {}, "evaluation": null }),
            false,
        ),
        (
            "create-request",
            json!({ "objective": "o", "completion": { "check": "host" }, "continuation": { "mode": "manual" } }),
            true,
        ),
        (
            "create-request",
            json!({ "objective": "o", "completion": { "check": "host" }, "continuation": { "mode": "manual" }, "state": "satisfied" }),
            false,
        ),
        (
            "error",
            json!({ "error": "not_found", "message": "m" }),
            true,
        ),
        ("error", json!({ "error": "", "message": "m" }), false),
        ("evaluation", evaluation.clone(), true),
        ("evaluation", json!({ "runId": "r" }), false),
        // A null confidence is an environmental failure's, and only its
        // (PROFILE.md#seam-events).
        (
            "evaluation",
            json!({ "runId": "r", "iteration": 1, "satisfied": false, "confidence": null, "costUsd": 0,
                    "failureClass": "environmental", "at": "2026-06-13T00:00:00Z" }),
            true,
        ),
        (
            "evaluation",
            json!({ "runId": "r", "iteration": 1, "satisfied": false, "confidence": null, "costUsd": 0,
                    "at": "2026-06-13T00:00:00Z" }),
            false,
        ),
        (
            "evaluation",
            json!({ "runId": "r", "iteration": 1, "satisfied": false, "confidence": null, "costUsd": 0,
                    "failureClass": "logical", "at": "2026-06-13T00:00:00Z" }),
            false,
        ),
        (
            "evaluation",
            json!({ "runId": "r", "iteration": 1, "satisfied": true, "confidence": null, "costUsd": 0,
                    "failureClass": "environmental", "at": "2026-06-13T00:00:00Z" }),
            false,
        ),
        (
            "evaluation-list",
            json!({ "evaluations": [evaluation] }),
            true,
        ),
        ("evaluation-list", json!({ "evaluations": [{}] }), false),
        ("event-envelope", closed.clone(), true),
        (
            "event-envelope",
            json!({ "sequence": 0, "type": "goal.closed", "at": "2026-06-13T00:00:00Z", "payload": {} }),
            false,
        ),
        ("event-list", json!({ "events": [closed] }), true),
        (
            "event-list",
            json!({ "events": [{ "sequence": 1 }] }),
            false,
        ),
        ("goal", goal.clone(), true),
        ("goal", json!({ "id": "goal-1" }), false),
        (
            "goal-closed",
            json!({ "goalId": "g", "finalState": "escalated" }),
            true,
        ),
        (
            "goal-closed",
            json!({ "goalId": "g", "finalState": "active" }),
            false,
        ),
        (
            "goal-evaluated",
            json!({ "goalId": "g", "satisfied": true, "runId": "r", "iterations": 1 }),
            true,
        ),
        (
            "goal-evaluated",
            json!({ "goalId": "g", "satisfied": true, "runId": "r" }),
            false,
        ),
        ("goal-list", json!({ "goals": [goal] }), true),
        ("goal-list", json!({ "goals": [{}] }), false),
        (
            "report",
            json!({ "suite": { "name": "goalpost", "version": "0" }, "host": { "url": "u", "discoverySha256": "0".repeat(64) },
                           "startedAt": "2026-06-13T00:00:00Z", "finishedAt": "2026-06-13T00:00:00Z", "profiles": {}, "requirements": [] }),
            true,
        ),
        (
            "mutants",
            json!({ "mutants": [{ "name": "create-200", "description": "d.", "breaks": ["core.x"], "collateral": [] }] }),
            true,
        ),
        (
            "mutants",
            json!({ "mutants": [{ "name": "create-200", "description": "d.", "breaks": [], "collateral": [] }] }),
            false,
        ),
        ("report", json!({ "suite": {} }), false),
        (
            "requirements",
            json!({ "requirements": [{ "id": "core.x", "profile": "core", "level": "MUST", "clause": "§2", "text": "t", "capability": [] }] }),
            true,
        ),
        (
            "requirements",
            json!({ "requirements": [{ "id": "core.x" }] }),
            false,
        ),
        ("scenario", scenario, true),
        ("scenario", json!({ "title": "t" }), false),
        (
            "variants",
            json!({ "variants": [{ "name": "create-200", "choice": "c", "allowedBy": "PROFILE.md#core.x", "certifies": ["core"], "pins": ["strict.create.status-201"], "scope": { "core": "judge verifier; mode manual" } }] }),
            true,
        ),
        (
            "variants",
            json!({ "variants": [{ "name": "create-200", "choice": "c", "allowedBy": "PROFILE.md#core.x", "certifies": ["strict"], "pins": [] }] }),
            false,
        ),
        (
            "verifier-definition",
            json!({ "name": "v", "criteria": [{ "id": "c", "pointer": "/done", "op": "exists", "failureClass": "logical" }], "createdAt": "2026-06-13T00:00:00Z" }),
            true,
        ),
        ("verifier-definition", json!({ "name": "v" }), false),
        ("verifier-list", json!({ "verifiers": [] }), true),
        ("verifier-list", json!({ "verifiers": [{}] }), false),
        (
            "verifier-registration",
            json!({ "name": "v", "criteria": [{ "id": "c", "pointer": "", "op": "equals", "value": 1 }] }),
            true,
        ),
        (
            "verifier-registration",
            json!({ "name": "v", "criteria": [] }),
            false,
        ),
        (
            "webhook-arm-request",
            json!({ "goalId": "g", "runId": "r", "iteration": 1, "objective": "o",
                    "remaining": { "iterations": 3, "costUsd": null, "deadline": null } }),
            true,
        ),
        ("webhook-arm-request", json!({ "goalId": "g" }), false),
        ("webhook-arm-response", json!({ "output": null }), true),
        ("webhook-arm-response", json!({ "costUsd": 1 }), false),
        (
            "webhook-arm-response",
            json!({ "output": 1, "commitment": { "afterMs": 1000 } }),
            true,
        ),
        (
            "webhook-arm-response",
            json!({ "output": 1, "commitment": { "afterMs": 999 } }),
            false,
        ),
        (
            "run-report-request",
            json!({ "runId": "ci-1", "output": { "ok": true }, "costUsd": 0.5,
                    "escalate": { "kind": "approval", "reason": "sign-off" } }),
            true,
        ),
        (
            "run-report-request",
            json!({ "runId": "", "output": 1 }),
            false,
        ),
        (
            "run-report-response",
            json!({ "runId": "run-1", "iteration": 1, "evaluation": null, "goal": goal.clone() }),
            true,
        ),
        (
            "run-report-response",
            json!({ "runId": "run-1", "iteration": 0, "evaluation": null, "goal": goal.clone() }),
            false,
        ),
        (
            "webhook-heartbeat-request",
            json!({ "goalId": "g", "probe": "heartbeat", "iteration": 1,
                    "remaining": { "iterations": null, "costUsd": 1.5, "deadline": "2026-06-13T00:00:00Z" } }),
            true,
        ),
        (
            "webhook-heartbeat-request",
            json!({ "goalId": "g", "probe": "ping" }),
            false,
        ),
        ("webhook-heartbeat-response", json!({ "fire": false }), true),
        (
            "webhook-heartbeat-response",
            json!({ "fire": "yes" }),
            false,
        ),
        (
            "webhook-verifier-request",
            json!({ "goalId": "g", "runId": "r", "iteration": 1, "output": {} }),
            true,
        ),
        (
            "webhook-verifier-request",
            json!({ "goalId": "g", "runId": "r", "iteration": 0, "output": {} }),
            false,
        ),
        (
            "webhook-verifier-response",
            json!({ "satisfied": true, "confidence": 0.5 }),
            true,
        ),
        (
            "webhook-verifier-response",
            json!({ "satisfied": true }),
            false,
        ),
        // The attention extension's bodies.
        (
            "attention-binding",
            json!({ "id": "b", "goalId": "g", "mode": "falsify", "armRef": "http://w",
                    "status": "paused", "until": null, "eligible": false,
                    "authority": ["add-evidence"] }),
            true,
        ),
        (
            "attention-binding",
            json!({ "id": "b", "goalId": "g", "mode": "supervise", "armRef": "http://w",
                    "status": "active", "eligible": true, "authority": [] }),
            false,
        ),
        ("attention-binding-list", json!({ "bindings": [] }), true),
        ("attention-binding-list", json!({ "bindings": [{}] }), false),
        (
            "attention-evidence",
            json!({ "id": "e", "bindingId": "b", "mode": "review", "kind": "test",
                    "ref": "t-1", "blocking": true, "resolved": false, "revision": 1 }),
            true,
        ),
        (
            "attention-evidence",
            json!({ "id": "e", "bindingId": "b", "mode": "review", "kind": "",
                    "ref": "t-1", "blocking": true, "resolved": false, "revision": 1 }),
            false,
        ),
        ("attention-evidence-list", json!({ "evidence": [] }), true),
        ("attention-evidence-list", json!({ "items": [] }), false),
        (
            "attention-policy",
            json!({ "goalId": "g", "kind": "quorum", "threshold": 2, "revision": 1 }),
            true,
        ),
        (
            "attention-policy",
            json!({ "goalId": "g", "kind": "quorum", "threshold": 0, "revision": 1 }),
            false,
        ),
        (
            "attention-closure",
            json!({ "goalId": "g", "policy": { "kind": "verifier" }, "revision": 1,
                    "grantable": false, "missing": [{ "what": "judge-verdict" }] }),
            true,
        ),
        (
            "attention-closure",
            json!({ "goalId": "g", "policy": { "kind": "verifier" }, "revision": 1,
                    "grantable": "no", "missing": [] }),
            false,
        ),
        (
            "attention-confirmation",
            json!({ "goalId": "g", "authority": "principal", "revision": 1 }),
            true,
        ),
        (
            "attention-confirmation",
            json!({ "goalId": "g", "authority": "tenant", "revision": 1 }),
            false,
        ),
        (
            "attention-arm-request",
            json!({ "goalId": "g", "bindingId": "b", "runId": "r", "iteration": 1,
                    "mode": "falsify", "stance": "test the claim", "authority": [],
                    "revision": 1, "claim": { "objective": "o" }, "evidence": [],
                    "remaining": { "iterations": 3, "costUsd": null, "deadline": null } }),
            true,
        ),
        (
            "attention-arm-request",
            json!({ "goalId": "g", "bindingId": "b", "runId": "r", "iteration": 1,
                    "mode": "falsify", "stance": "test the claim", "authority": [],
                    "revision": 1, "objective": "o", "evidence": [],
                    "remaining": { "iterations": 3, "costUsd": null, "deadline": null } }),
            false,
        ),
        (
            "attention-arm-response",
            json!({ "output": null, "evidence": [{ "kind": "test", "ref": "t-1", "blocking": true }],
                    "verdict": { "approve": false }, "requestClose": null }),
            true,
        ),
        (
            "attention-arm-response",
            json!({ "verdict": { "approve": "yes" } }),
            false,
        ),
        (
            "attention-continue-response",
            json!({ "goal": { "id": "g" }, "binding": {}, "run": {} }),
            false,
        ),
    ]
}

#[test]
fn samples_cover_every_schema() {
    let covered: BTreeSet<&str> = samples().iter().map(|(name, _, _)| *name).collect();
    assert_eq!(covered, NAMES.iter().copied().collect::<BTreeSet<_>>());
}

#[test]
fn loading_from_the_directory_gives_the_embedded_verdicts() {
    let embedded = support::schemas();
    let loaded = Schemas::from_dir(&schema_dir()).expect("schemas/ compiles");
    for (name, value, expected) in samples() {
        assert_eq!(
            embedded.is_valid(name, &value),
            expected,
            "embedded `{name}` on {value}"
        );
        assert_eq!(
            loaded.is_valid(name, &value),
            expected,
            "loaded `{name}` on {value}"
        );
        assert_eq!(
            embedded.validate(name, &value),
            loaded.validate(name, &value),
            "`{name}` on {value}"
        );
        assert_eq!(
            embedded.validate(name, &value).is_ok(),
            expected,
            "validate agrees with is_valid"
        );
    }
}

#[test]
fn an_unknown_name_is_never_a_pass() {
    let schemas = support::schemas();
    assert!(!schemas.is_valid("goals", &json!({})));
    let violations = schemas
        .validate("goals", &json!({}))
        .expect_err("unknown name must fail");
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0].message.contains("unknown schema `goals`"),
        "{}",
        violations[0]
    );
}

#[test]
fn violations_name_every_problem_by_pointer() {
    let value = json!({ "goalId": "", "status": "napping", "extra": true });
    let violations = support::schemas()
        .validate("attention", &value)
        .expect_err("two problems");
    let pointers: BTreeSet<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        BTreeSet::from(["/goalId", "/status"]),
        "{violations:?}"
    );
    assert_eq!(violations.len(), 2, "{violations:?}");
    let missing = support::schemas()
        .validate("attention", &json!({ "goalId": "g" }))
        .expect_err("status is required");
    assert_eq!(missing[0].pointer, "", "{missing:?}");
}

#[test]
fn violation_display() {
    let at = Violation {
        pointer: "/status".into(),
        message: "bad".into(),
    };
    assert_eq!(at.to_string(), "/status: bad");
    let root = Violation {
        pointer: String::new(),
        message: "bad".into(),
    };
    assert_eq!(root.to_string(), "(root): bad");
}

fn copy_schemas_to(dir: &Path) {
    for name in NAMES {
        let file = format!("{name}.schema.json");
        std::fs::copy(schema_dir().join(&file), dir.join(&file)).expect("copy schema");
    }
}

#[test]
fn from_dir_reports_a_missing_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_schemas_to(dir.path());
    std::fs::remove_file(dir.path().join("goal.schema.json")).expect("remove");
    match Schemas::from_dir(dir.path()) {
        Err(SchemaError::Read { path, .. }) => {
            assert!(path.ends_with("goal.schema.json"), "{path:?}")
        }
        other => panic!("expected a read error, got {other:?}"),
    }
}

#[test]
fn from_dir_reports_bad_json_and_bad_schemas() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_schemas_to(dir.path());
    std::fs::write(dir.path().join("error.schema.json"), "{ not json").expect("write");
    match Schemas::from_dir(dir.path()) {
        Err(SchemaError::Parse { name, .. }) => assert_eq!(name, "error"),
        other => panic!("expected a parse error, got {other:?}"),
    }

    let wrong_id = json!({ "$schema": "https://json-schema.org/draft/2020-12/schema",
                           "$id": "https://goalpost.dev/schemas/other.schema.json", "title": "t", "description": "d" });
    std::fs::write(dir.path().join("error.schema.json"), wrong_id.to_string()).expect("write");
    match Schemas::from_dir(dir.path()) {
        Err(SchemaError::Compile { name, message }) => {
            assert!(name == "error" && message.contains("$id"), "{message}")
        }
        other => panic!("expected a compile error, got {other:?}"),
    }

    let bad_keyword = json!({ "$schema": "https://json-schema.org/draft/2020-12/schema",
                              "$id": "https://goalpost.dev/schemas/error.schema.json", "type": "widget" });
    std::fs::write(
        dir.path().join("error.schema.json"),
        bad_keyword.to_string(),
    )
    .expect("write");
    match Schemas::from_dir(dir.path()) {
        Err(SchemaError::Compile { name, .. }) => assert_eq!(name, "error"),
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn references_outside_the_set_fail_instead_of_fetching() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_schemas_to(dir.path());
    let remote = json!({ "$schema": "https://json-schema.org/draft/2020-12/schema",
                         "$id": "https://goalpost.dev/schemas/error.schema.json",
                         "$ref": "https://openwop.dev/spec/v1/goal.schema.json" });
    std::fs::write(dir.path().join("error.schema.json"), remote.to_string()).expect("write");
    assert!(matches!(
        Schemas::from_dir(dir.path()),
        Err(SchemaError::Compile { .. })
    ));
}

#[test]
fn schemas_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Schemas>();
    let schemas = support::schemas();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                assert!(schemas.is_valid(
                    "goal-closed",
                    &json!({ "goalId": "g", "finalState": "abandoned" })
                ))
            });
        }
    });
}
