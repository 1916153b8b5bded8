//! Create and patch bodies: what parses and how everything else is refused.

use serde_json::{json, Value};

use super::goal::{Check, Mode};
use super::request::{parse_create, parse_patch, RequestContext, RequestError};

const SEAMS: RequestContext = RequestContext::new(true);
const NO_SEAMS: RequestContext = RequestContext::new(false);

fn body() -> Value {
    json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=2" },
        "continuation": { "mode": "manual", "armRef": null },
        "bounds": { "maxLoopIterations": 7 }
    })
}

fn with(pointer: &str, value: Value) -> Value {
    let mut body = body();
    *body
        .pointer_mut(pointer)
        .expect("pointer exists in the base body") = value;
    body
}

fn with_in(base: &Value, pointer: &str, value: Value) -> Value {
    let mut body = base.clone();
    *body
        .pointer_mut(pointer)
        .expect("pointer exists in the base body") = value;
    body
}

fn without(key: &str) -> Value {
    let mut body = body();
    body.as_object_mut().expect("object").remove(key);
    body
}

fn invalid_at(result: Result<impl std::fmt::Debug, RequestError>) -> String {
    match result {
        Err(RequestError::Invalid { pointer, .. }) => pointer,
        other => panic!("expected invalid_request, got {other:?}"),
    }
}

#[test]
fn a_full_create_parses() {
    let new = parse_create(&body(), SEAMS).expect("valid");
    assert_eq!(new.objective.as_str(), "ship the release checklist");
    assert_eq!(new.check, Check::Verifier);
    assert_eq!(new.mode, Mode::Manual);
    assert_eq!(new.arm_ref, None);
    assert_eq!(
        new.verifier_ref.map(|r| r.as_str().to_string()),
        Some("conformance:verifier?satisfyOn=2".to_string())
    );
    assert_eq!(new.bounds.max_loop_iterations(), Some(7));
}

#[test]
fn refs_may_be_absent_or_null() {
    let mut body = body();
    body["completion"] = json!({ "check": "verifier", "verifierRef": null });
    body["continuation"] = json!({ "mode": "schedule" });
    let new = parse_create(&body, NO_SEAMS).expect("valid");
    assert_eq!(new.verifier_ref, None);
    assert_eq!(new.mode, Mode::Schedule);
}

#[test]
fn bounds_absent_null_or_empty_are_required() {
    for body in [
        without("bounds"),
        with("/bounds", Value::Null),
        with("/bounds", json!({})),
    ] {
        assert_eq!(
            parse_create(&body, SEAMS),
            Err(RequestError::BoundsRequired)
        );
    }
}

#[test]
fn out_of_range_bounds_are_invalid() {
    for (key, value) in [
        ("maxLoopIterations", json!(0)),
        ("maxLoopIterations", json!(-1)),
        ("maxLoopIterations", json!(1.5)),
        ("maxLoopIterations", json!("3")),
        ("maxLoopIterations", json!(null)),
        ("maxLoopIterations", json!(1e300)),
        ("runTimeoutMs", json!(-5)),
        ("runTimeoutMs", json!(0.5)),
        ("maxCostUsd", json!(-0.01)),
        ("maxCostUsd", json!("1")),
    ] {
        let body = with("/bounds", json!({ key: value }));
        assert_eq!(
            invalid_at(parse_create(&body, SEAMS)),
            format!("/bounds/{key}"),
            "{key}={value}"
        );
    }
}

#[test]
fn integral_numbers_and_zero_budgets_are_accepted() {
    let body = with(
        "/bounds",
        json!({ "maxLoopIterations": 3.0, "runTimeoutMs": 0, "maxCostUsd": 0 }),
    );
    let bounds = parse_create(&body, SEAMS).expect("valid").bounds;
    assert_eq!(bounds.max_loop_iterations(), Some(3));
    assert_eq!(bounds.run_timeout_ms(), Some(0));
    assert_eq!(
        bounds.max_cost().map(|cap| cap.written().to_string()),
        Some("0".into())
    );
}

#[test]
fn unknown_keys_are_invalid_with_their_pointer() {
    let mut top = body();
    top["colour"] = json!("blue");
    assert_eq!(invalid_at(parse_create(&top, SEAMS)), "/colour");
    let nested = with("/completion", json!({ "check": "verifier", "extra": 1 }));
    assert_eq!(
        invalid_at(parse_create(&nested, SEAMS)),
        "/completion/extra"
    );
    let bounds = with("/bounds", json!({ "maxLoopIterations": 1, "max/Runs": 2 }));
    assert_eq!(
        invalid_at(parse_create(&bounds, SEAMS)),
        "/bounds/max~1Runs"
    );
    let mut timestamps = body();
    timestamps["createdAt"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(invalid_at(parse_create(&timestamps, SEAMS)), "/createdAt");
}

#[test]
fn wrong_types_and_missing_fields_are_invalid() {
    assert_eq!(invalid_at(parse_create(&json!([]), SEAMS)), "");
    assert_eq!(
        invalid_at(parse_create(&with("/objective", json!(5)), SEAMS)),
        "/objective"
    );
    assert_eq!(
        invalid_at(parse_create(&without("objective"), SEAMS)),
        "/objective"
    );
    assert_eq!(
        invalid_at(parse_create(&without("completion"), SEAMS)),
        "/completion"
    );
    assert_eq!(
        invalid_at(parse_create(&with("/continuation", json!("manual")), SEAMS)),
        "/continuation"
    );
    assert_eq!(
        invalid_at(parse_create(
            &with("/completion/check", json!("vibes")),
            SEAMS
        )),
        "/completion/check"
    );
    assert_eq!(
        invalid_at(parse_create(
            &with("/continuation/mode", json!("whenever")),
            SEAMS
        )),
        "/continuation/mode"
    );
    assert_eq!(
        invalid_at(parse_create(&with("/continuation/armRef", json!(3)), SEAMS)),
        "/continuation/armRef"
    );
}

#[test]
fn judge_owned_fields_are_refused_first() {
    for key in ["id", "state", "progress", "owner"] {
        let mut body = body();
        body[key] = json!("x");
        body["colour"] = json!("unknown keys lose to judge-owned ones");
        assert!(
            matches!(parse_create(&body, SEAMS), Err(RequestError::JudgeOwned { field, .. }) if field == key),
            "{key}"
        );
    }
    let body = with(
        "/completion",
        json!({ "check": "verifier", "lastVerdict": { "satisfied": true, "confidence": 1, "runId": "r" } }),
    );
    assert!(matches!(
        parse_create(&body, SEAMS),
        Err(RequestError::JudgeOwned {
            field: "completion.lastVerdict",
            ..
        })
    ));
}

#[test]
fn unsupported_modes_and_checks_are_422() {
    let schedule_only = RequestContext {
        modes: &[Mode::Schedule],
        ..SEAMS
    };
    assert!(matches!(
        parse_create(
            &with("/continuation/mode", json!("commitment")),
            schedule_only
        ),
        Err(RequestError::UnsupportedContinuation { .. })
    ));
    let commitment = parse_create(&with("/continuation/mode", json!("commitment")), SEAMS);
    assert_eq!(commitment.map(|new| new.mode), Ok(Mode::Commitment));
    let heartbeat = parse_create(&with("/continuation/mode", json!("heartbeat")), SEAMS);
    assert_eq!(heartbeat.map(|new| new.mode), Ok(Mode::Heartbeat));
    assert!(matches!(
        parse_create(&with("/completion/check", json!("host")), SEAMS),
        Err(RequestError::UnsupportedJudge { .. })
    ));
}

#[test]
fn fixture_refs_need_seams_and_a_strict_grammar() {
    assert!(matches!(
        parse_create(&body(), NO_SEAMS),
        Err(RequestError::FixturesDisabled { pointer }) if pointer == "/completion/verifierRef"
    ));
    let malformed = with(
        "/completion/verifierRef",
        json!("conformance:verifier?satisfyOn=0"),
    );
    assert_eq!(
        invalid_at(parse_create(&malformed, SEAMS)),
        "/completion/verifierRef"
    );
    let malformed = with(
        "/continuation/armRef",
        json!("conformance:arm?costUsd=lots"),
    );
    assert_eq!(
        invalid_at(parse_create(&malformed, SEAMS)),
        "/continuation/armRef"
    );
    assert!(matches!(
        parse_create(&with("/completion/verifierRef", json!("vf 1")), SEAMS),
        Err(RequestError::UnknownVerifier { .. })
    ));
    // A plain name parses; whether the tenant registered it is the engine's
    // check.
    let named = parse_create(&with("/completion/verifierRef", json!("vf-1")), NO_SEAMS)
        .expect("a name parses");
    assert_eq!(
        named
            .verifier_ref
            .as_ref()
            .and_then(|r| r.name())
            .map(|n| n.as_str()),
        Some("vf-1")
    );
    let webhook = with("/completion/verifierRef", json!("http://127.0.0.1:9/v"));
    let webhook = with_in(
        &webhook,
        "/continuation/armRef",
        json!("http://127.0.0.1:9/a#intervalMs=5000"),
    );
    let parsed = parse_create(&webhook, NO_SEAMS).expect("webhooks need no seams");
    assert_eq!(parsed.arm_ref.and_then(|r| r.interval_ms()), Some(5000));
    assert_eq!(
        invalid_at(parse_create(
            &with(
                "/continuation/armRef",
                json!("http://127.0.0.1:9/a#everyMs=5")
            ),
            SEAMS
        )),
        "/continuation/armRef"
    );
    assert!(matches!(
        parse_create(&with("/continuation/armRef", json!("job-1")), SEAMS),
        Err(RequestError::UnknownArm { .. })
    ));
}

#[test]
fn a_patch_edits_objective_refs_and_continuation() {
    let edit = parse_patch(
        &json!({
            "objective": "new",
            "completion": { "verifierRef": null },
            "continuation": { "mode": "schedule", "armRef": "conformance:arm?intervalMs=10" }
        }),
        SEAMS,
    )
    .expect("valid");
    assert_eq!(
        edit.objective.map(|o| o.as_str().to_string()),
        Some("new".into())
    );
    assert_eq!(edit.verifier_ref, Some(None));
    assert_eq!(edit.mode, Some(Mode::Schedule));
    assert!(matches!(edit.arm_ref, Some(Some(_))));
    assert_eq!(parse_patch(&json!({}), SEAMS), Ok(Default::default()));
}

#[test]
fn a_patch_refuses_judge_owned_then_immutable_then_unknown() {
    for (body, field) in [
        (json!({ "state": "satisfied" }), "state"),
        (json!({ "progress": { "iterations": 9 } }), "progress"),
        (json!({ "owner": { "tenant": "evil" } }), "owner"),
        (json!({ "id": "goal-x" }), "id"),
        (
            json!({ "completion": { "lastVerdict": null } }),
            "completion.lastVerdict",
        ),
        (json!({ "state": "satisfied", "bounds": {} }), "state"),
    ] {
        assert!(
            matches!(parse_patch(&body, SEAMS), Err(RequestError::JudgeOwned { field: found, .. }) if found == field),
            "{body}"
        );
    }
    for (body, field) in [
        (json!({ "bounds": { "maxLoopIterations": 99 } }), "bounds"),
        (json!({ "createdAt": "2026-01-01T00:00:00Z" }), "createdAt"),
        (json!({ "updatedAt": "2026-01-01T00:00:00Z" }), "updatedAt"),
        (
            json!({ "completion": { "check": "host" } }),
            "completion.check",
        ),
    ] {
        assert!(
            matches!(parse_patch(&body, SEAMS), Err(RequestError::Immutable { field: found, .. }) if found == field),
            "{body}"
        );
    }
    assert_eq!(
        invalid_at(parse_patch(&json!({ "colour": 1 }), SEAMS)),
        "/colour"
    );
    assert_eq!(
        invalid_at(parse_patch(
            &json!({ "continuation": { "armRef": "conformance:arm?x=1" } }),
            SEAMS
        )),
        "/continuation/armRef"
    );
    assert_eq!(invalid_at(parse_patch(&json!("text"), SEAMS)), "");
}

#[test]
fn a_host_that_drops_what_it_may_not_change_applies_the_rest() {
    let dropping = RequestContext {
        unappliable: crate::domain::Unappliable::Dropped,
        ..SEAMS
    };
    let body = json!({
        "objective": "edited",
        "progress": {"iterations": 5},
        "owner": {"tenant": "other"},
        "id": "g-other",
        "state": "escalated",
        "bounds": {"maxLoopIterations": 1000},
        "completion": {"lastVerdict": {"satisfied": true, "confidence": 1, "runId": "r"}},
    });
    let edit = parse_patch(&body, dropping).expect("the judge-owned members are dropped");
    assert_eq!(
        edit.objective.map(|o| o.as_str().to_string()),
        Some("edited".to_string())
    );
    assert_eq!(edit.verifier_ref, None);
    assert!(matches!(
        parse_patch(&body, SEAMS),
        Err(RequestError::JudgeOwned { .. })
    ));
    // A client's claim of success is still refused, not ignored.
    assert!(matches!(
        parse_patch(&json!({"state": "satisfied", "objective": "x"}), dropping),
        Err(RequestError::JudgeOwned { field: "state", .. })
    ));
}
