//! The goalpost-specific wire shapes: create request, error envelope, events
//! seam (envelopes, evaluations), continue response, lists and attention.

use crate::support;

use serde_json::{json, Value};
use support::{assert_invalid_at, assert_valid, with, without};

fn goal() -> Value {
    json!({
        "id": "goal-1",
        "objective": "goalpost n1 ship it",
        "state": "active",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=2" },
        "continuation": { "mode": "manual", "armRef": null },
        "bounds": { "maxLoopIterations": 3 },
        "progress": { "iterations": 0, "contributingRunIds": [] },
        "owner": { "tenant": "acme" },
        "createdAt": "2026-06-13T00:00:00.000Z",
        "updatedAt": "2026-06-13T00:00:00.000Z"
    })
}

fn create() -> Value {
    json!({
        "objective": "goalpost n1 ship it",
        "completion": { "check": "verifier" },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 3 }
    })
}

fn evaluation() -> Value {
    json!({
        "runId": "run-1", "iteration": 1, "satisfied": false, "confidence": 0.9,
        "costUsd": 0.4, "at": "2026-06-13T00:00:01.000Z"
    })
}

#[test]
fn create_request_from_design_is_valid() {
    assert_valid("create-request", &create());
    assert_valid("create-request", &without(&create(), "/bounds"));
    assert_valid("create-request", &with(&create(), "/bounds", json!({})));
    let refs = with(&create(), "/completion/verifierRef", json!(null));
    assert_valid(
        "create-request",
        &with(
            &refs,
            "/continuation/armRef",
            json!("conformance:arm?costUsd=0.4"),
        ),
    );
}

#[test]
fn create_request_refuses_server_owned_fields_and_unknown_keys() {
    for (key, value) in [
        ("state", json!("satisfied")),
        ("id", json!("goal-9")),
        ("owner", json!({ "tenant": "evil" })),
        ("progress", json!({ "iterations": 5 })),
        ("createdAt", json!("2026-06-13T00:00:00Z")),
        ("colour", json!("blue")),
    ] {
        assert_invalid_at(
            "create-request",
            &with(&create(), &format!("/{key}"), value),
            "",
        );
    }
    let verdict = json!({ "satisfied": true, "confidence": 1, "runId": "r" });
    assert_invalid_at(
        "create-request",
        &with(&create(), "/completion/lastVerdict", verdict),
        "/completion",
    );
    assert_invalid_at(
        "create-request",
        &with(&create(), "/bounds/maxRuns", json!(3)),
        "/bounds",
    );
}

#[test]
fn create_request_needs_the_client_parts_with_valid_values() {
    for field in ["objective", "completion", "continuation"] {
        assert_invalid_at(
            "create-request",
            &without(&create(), &format!("/{field}")),
            "",
        );
    }
    let cases = [
        ("/bounds/maxLoopIterations", json!(0)),
        ("/bounds/maxLoopIterations", json!(2.5)),
        ("/bounds/maxCostUsd", json!(-1)),
        ("/bounds/runTimeoutMs", json!(-5)),
        ("/continuation/mode", json!("whenever")),
        ("/completion/check", json!("vibes")),
        ("/objective", json!(["ship"])),
    ];
    for (pointer, value) in cases {
        assert_invalid_at("create-request", &with(&create(), pointer, value), pointer);
    }
}

#[test]
fn error_envelope() {
    let error = json!({ "error": "bounds_required", "message": "a goal needs bounds" });
    assert_valid("error", &error);
    assert_valid(
        "error",
        &with(&error, "/details", json!({ "pointer": "/bounds" })),
    );
    assert_valid("error", &with(&error, "/error", json!("e2e_failure_9")));
    // The code's spelling is the host's: openwop's envelope asks only for a
    // non-empty string (snake_case recommended, vendor codes dotted).
    for code in ["validation_error", "acme.goal_closed", "BoundsRequired"] {
        assert_valid("error", &with(&error, "/error", json!(code)));
    }
    assert_invalid_at("error", &with(&error, "/error", json!("")), "/error");
    assert_invalid_at("error", &with(&error, "/error", json!(7)), "/error");
    assert_invalid_at("error", &with(&error, "/message", json!("")), "/message");
    assert_invalid_at(
        "error",
        &with(&error, "/details", json!("see logs")),
        "/details",
    );
    assert_invalid_at("error", &with(&error, "/message", json!(null)), "/message");
    assert_invalid_at("error", &without(&error, "/message"), "");
    assert_invalid_at("error", &without(&error, "/error"), "");
    assert_invalid_at("error", &with(&error, "/status", json!(422)), "");
}

#[test]
fn evaluation_shape() {
    assert_valid("evaluation", &evaluation());
    let criteria = json!([
        { "id": "c1", "verdict": "pass", "failureClass": null },
        { "id": "c2", "verdict": "fail", "failureClass": "logical" },
        { "id": "c3", "verdict": "fail" }
    ]);
    let with_criteria = with(&evaluation(), "/criteria", criteria);
    assert_valid("evaluation", &with_criteria);
    assert_valid(
        "evaluation",
        &with(&evaluation(), "/failureClass", json!("environmental")),
    );
    assert_valid(
        "evaluation",
        &with(&evaluation(), "/failureClass", json!(null)),
    );
    for field in [
        "runId",
        "iteration",
        "satisfied",
        "confidence",
        "costUsd",
        "at",
    ] {
        assert_invalid_at(
            "evaluation",
            &without(&evaluation(), &format!("/{field}")),
            "",
        );
    }
    let cases = [
        ("/iteration", json!(0)),
        ("/confidence", json!(1.2)),
        ("/costUsd", json!(-0.1)),
        ("/failureClass", json!("flaky")),
        ("/at", json!("soon")),
        ("/runId", json!("")),
    ];
    for (pointer, value) in cases {
        assert_invalid_at("evaluation", &with(&evaluation(), pointer, value), pointer);
    }
    assert_invalid_at(
        "evaluation",
        &with(&with_criteria, "/criteria/1/verdict", json!("maybe")),
        "/criteria/1/verdict",
    );
    assert_invalid_at(
        "evaluation",
        &with(&with_criteria, "/criteria/1/weight", json!(1)),
        "/criteria/1",
    );
    assert_invalid_at(
        "evaluation",
        &with(&evaluation(), "/objective", json!("x")),
        "",
    );
}

#[test]
fn a_passing_criterion_or_satisfied_verdict_carries_no_failure() {
    let passing = json!([{ "id": "c1", "verdict": "pass", "failureClass": "logical" }]);
    assert_invalid_at(
        "evaluation",
        &with(&evaluation(), "/criteria", passing),
        "/criteria/0/failureClass",
    );
    let satisfied = with(&evaluation(), "/satisfied", json!(true));
    assert_valid("evaluation", &satisfied);
    assert_invalid_at(
        "evaluation",
        &with(&satisfied, "/failureClass", json!("environmental")),
        "/failureClass",
    );
    let one_fails = json!([{ "id": "c1", "verdict": "pass" }, { "id": "c2", "verdict": "fail" }]);
    assert_invalid_at(
        "evaluation",
        &with(&satisfied, "/criteria", one_fails),
        "/criteria/1/verdict",
    );
}

#[test]
fn evaluation_list() {
    let list =
        json!({ "evaluations": [evaluation(), with(&evaluation(), "/iteration", json!(2))] });
    assert_valid("evaluation-list", &list);
    assert_valid("evaluation-list", &json!({ "evaluations": [] }));
    assert_invalid_at(
        "evaluation-list",
        &with(&list, "/evaluations/1/iteration", json!(0)),
        "/evaluations/1/iteration",
    );
    assert_invalid_at("evaluation-list", &json!({}), "");
    assert_invalid_at("evaluation-list", &with(&list, "/next", json!(3)), "");
}

fn evaluated_event() -> Value {
    json!({
        "sequence": 1, "type": "goal.evaluated", "at": "2026-06-13T00:00:01.000Z",
        "payload": { "goalId": "goal-1", "satisfied": false, "confidence": 0.9, "runId": "run-1", "iterations": 1 }
    })
}

fn closed_event() -> Value {
    json!({
        "sequence": 2, "type": "goal.closed", "at": "2026-06-13T00:00:02.000Z",
        "payload": { "goalId": "goal-1", "finalState": "bound-exceeded" }
    })
}

#[test]
fn event_envelopes_carry_the_payload_of_their_type() {
    assert_valid("event-envelope", &evaluated_event());
    assert_valid("event-envelope", &closed_event());
    let swapped = with(
        &closed_event(),
        "/payload",
        evaluated_event()["payload"].clone(),
    );
    assert_invalid_at("event-envelope", &swapped, "/payload");
    let swapped = with(
        &evaluated_event(),
        "/payload",
        closed_event()["payload"].clone(),
    );
    assert_invalid_at("event-envelope", &swapped, "/payload");
    let leaky = with(
        &evaluated_event(),
        "/payload/objective",
        json!("goalpost n1 ship it"),
    );
    assert_invalid_at("event-envelope", &leaky, "/payload");
    let open = with(&closed_event(), "/payload/finalState", json!("active"));
    assert_invalid_at("event-envelope", &open, "/payload/finalState");
}

#[test]
fn event_envelope_fields() {
    let other = json!({ "sequence": 3, "type": "goal.created", "at": "2026-06-13T00:00:00Z", "payload": { "goalId": "g" } });
    assert_valid("event-envelope", &other);
    for field in ["sequence", "type", "at", "payload"] {
        assert_invalid_at(
            "event-envelope",
            &without(&evaluated_event(), &format!("/{field}")),
            "",
        );
    }
    let cases = [
        ("/sequence", json!(0)),
        ("/sequence", json!(1.5)),
        ("/type", json!("")),
        ("/at", json!("later")),
        ("/payload", json!("goal-1")),
    ];
    for (pointer, value) in cases {
        assert_invalid_at(
            "event-envelope",
            &with(&evaluated_event(), pointer, value),
            pointer,
        );
    }
    assert_invalid_at(
        "event-envelope",
        &with(&evaluated_event(), "/goalId", json!("goal-1")),
        "",
    );
}

#[test]
fn event_list_checks_every_event() {
    let list = json!({ "events": [evaluated_event(), closed_event()] });
    assert_valid("event-list", &list);
    assert_valid("event-list", &json!({ "events": [] }));
    assert_invalid_at(
        "event-list",
        &with(&list, "/events/1/payload/finalState", json!("active")),
        "/events/1/payload/finalState",
    );
    assert_invalid_at("event-list", &json!({ "events": {} }), "/events");
}

#[test]
fn continue_response() {
    let response = json!({ "goal": goal(), "evaluation": evaluation() });
    assert_valid("continue-response", &response);
    assert_valid(
        "continue-response",
        &with(&response, "/evaluation", json!(null)),
    );
    assert_invalid_at("continue-response", &without(&response, "/evaluation"), "");
    assert_invalid_at(
        "continue-response",
        &with(&response, "/goal/state", json!("done")),
        "/goal/state",
    );
    assert_invalid_at(
        "continue-response",
        &with(&response, "/evaluation/iteration", json!(0)),
        "/evaluation/iteration",
    );
    assert_invalid_at(
        "continue-response",
        &with(&response, "/run", json!("run-1")),
        "",
    );
}

#[test]
fn goal_list() {
    let list = json!({ "goals": [goal()] });
    assert_valid("goal-list", &list);
    assert_valid("goal-list", &json!({ "goals": [] }));
    assert_invalid_at(
        "goal-list",
        &with(&list, "/goals/0/owner/tenant", json!("")),
        "/goals/0/owner/tenant",
    );
    // Keys beside `goals` (a cursor, a count) are the host's business.
    assert_valid("goal-list", &with(&list, "/nextCursor", json!("c-2")));
    assert_invalid_at("goal-list", &with(&list, "/goals", json!({})), "/goals");
    assert_invalid_at("goal-list", &json!([goal()]), "");
}

#[test]
fn attention() {
    for status in ["active", "paused", "stopped"] {
        assert_valid(
            "attention",
            &json!({ "goalId": "goal-1", "status": status }),
        );
    }
    let attention = json!({ "goalId": "goal-1", "status": "active" });
    assert_invalid_at(
        "attention",
        &with(&attention, "/status", json!("asleep")),
        "/status",
    );
    assert_invalid_at(
        "attention",
        &with(&attention, "/goalId", json!("")),
        "/goalId",
    );
    assert_invalid_at("attention", &without(&attention, "/status"), "");
    // Only `status` is required; `goalId` and a host's own members are its
    // choice (PROFILE.md#seam-attention).
    assert_valid("attention", &without(&attention, "/goalId"));
    assert_valid("attention", &with(&attention, "/pausedAt", json!("x")));
}

fn remaining() -> Value {
    json!({ "iterations": 2, "costUsd": 0.7, "deadline": "2026-06-13T00:00:05.000Z" })
}

#[test]
fn webhook_requests_are_the_documented_projections() {
    let arm = json!({ "goalId": "goal-1", "runId": "run-1", "iteration": 2,
                      "objective": "goalpost n1 ship it", "remaining": remaining() });
    assert_valid("webhook-arm-request", &arm);
    let unbounded = json!({ "iterations": null, "costUsd": null, "deadline": null });
    assert_valid("webhook-arm-request", &with(&arm, "/remaining", unbounded));
    assert_invalid_at("webhook-arm-request", &without(&arm, "/objective"), "");
    assert_invalid_at(
        "webhook-arm-request",
        &with(&arm, "/remaining/iterations", json!(-1)),
        "/remaining/iterations",
    );
    assert_invalid_at(
        "webhook-arm-request",
        &with(&arm, "/remaining/deadline", json!("tomorrow")),
        "/remaining/deadline",
    );
    assert_invalid_at(
        "webhook-arm-request",
        &without(&arm, "/remaining/costUsd"),
        "/remaining",
    );
    // A host may add members of its own beside the projection (PROFILE.md
    // seam-webhooks: a revision, the mode, evidence refs); the worker
    // ignores what it does not know.
    let typed = with(
        &with(
            &with(&arm, "/revision", json!(7)),
            "/mode",
            json!("schedule"),
        ),
        "/evidenceRefs",
        json!([{ "kind": "pr", "id": "42" }]),
    );
    assert_valid("webhook-arm-request", &typed);
    // What the projection itself defines stays closed.
    assert_invalid_at(
        "webhook-arm-request",
        &with(&arm, "/remaining/runs", json!(3)),
        "/remaining",
    );
    // The previous outcome and a resolution are optional host additions,
    // closed themselves: flags and ids, never a verdict's text.
    let previous =
        json!({ "satisfied": false, "failingCriteria": ["c2"], "failureClass": "logical" });
    assert_valid(
        "webhook-arm-request",
        &with(&arm, "/previous", previous.clone()),
    );
    assert_valid("webhook-arm-request", &with(&arm, "/previous", Value::Null));
    assert_invalid_at(
        "webhook-arm-request",
        &with(
            &with(&arm, "/previous", previous),
            "/previous/reason",
            json!("text"),
        ),
        "/previous",
    );
    let resolution = json!({ "kind": "approval", "note": "approved by ops" });
    assert_valid(
        "webhook-arm-request",
        &with(&arm, "/resolution", resolution),
    );
    assert_invalid_at(
        "webhook-arm-request",
        &with(
            &arm,
            "/resolution",
            json!({ "kind": "approval", "note": "n".repeat(2049) }),
        ),
        "/resolution/note",
    );

    let verifier = json!({ "goalId": "goal-1", "runId": "run-1", "iteration": 1,
                           "output": { "done": true } });
    assert_valid("webhook-verifier-request", &verifier);
    assert_invalid_at(
        "webhook-verifier-request",
        &with(&verifier, "/objective", json!("leaked")),
        "",
    );
    assert_invalid_at(
        "webhook-verifier-request",
        &without(&verifier, "/output"),
        "",
    );

    let probe = json!({ "goalId": "goal-1", "probe": "heartbeat", "iteration": 3,
                        "remaining": remaining() });
    assert_valid("webhook-heartbeat-request", &probe);
    assert_invalid_at(
        "webhook-heartbeat-request",
        &with(&probe, "/probe", json!("schedule")),
        "/probe",
    );
    assert_invalid_at(
        "webhook-heartbeat-request",
        &with(&probe, "/remaining", json!({})),
        "/remaining",
    );
}

#[test]
fn webhook_answers() {
    let verdict = json!({ "satisfied": true, "confidence": 0.8, "criteria": [
        { "id": "c1", "verdict": "pass" },
        { "id": "c2", "verdict": "fail", "failureClass": "logical" },
        { "id": "c3", "verdict": "fail", "failureClass": null }
    ] });
    // Schema-valid although the criteria outvote the flag: aggregation is the
    // host's job, not the schema's.
    assert_valid("webhook-verifier-response", &verdict);
    assert_valid(
        "webhook-verifier-response",
        &with(&verdict, "/criteria", json!(null)),
    );
    for (pointer, value, at) in [
        ("/confidence", json!(1.5), "/confidence"),
        ("/satisfied", json!("yes"), "/satisfied"),
        ("/criteria/0/verdict", json!("maybe"), "/criteria/0/verdict"),
        (
            "/criteria/1/failureClass",
            json!("cosmic"),
            "/criteria/1/failureClass",
        ),
        ("/extra", json!(1), ""),
    ] {
        assert_invalid_at(
            "webhook-verifier-response",
            &with(&verdict, pointer, value),
            at,
        );
    }
    assert_invalid_at(
        "webhook-verifier-response",
        &without(&verdict, "/confidence"),
        "",
    );

    let run = json!({ "output": { "done": true }, "costUsd": 0.25,
                      "escalate": { "kind": "confidence", "reason": "unsure" } });
    assert_valid("webhook-arm-response", &run);
    assert_valid("webhook-arm-response", &json!({ "output": "text" }));
    assert_valid(
        "webhook-arm-response",
        &json!({ "output": null, "costUsd": null, "escalate": null }),
    );
    assert_invalid_at("webhook-arm-response", &without(&run, "/output"), "");
    assert_invalid_at(
        "webhook-arm-response",
        &with(&run, "/costUsd", json!(-0.1)),
        "/costUsd",
    );
    assert_invalid_at(
        "webhook-arm-response",
        &without(&run, "/escalate/reason"),
        "/escalate",
    );

    assert_valid("webhook-heartbeat-response", &json!({ "fire": true }));
    assert_invalid_at("webhook-heartbeat-response", &json!({}), "");
    assert_invalid_at("webhook-heartbeat-response", &json!({ "fire": 1 }), "/fire");
}

#[test]
fn criteria_verifier_registration() {
    let registration = json!({ "name": "release-ready", "criteria": [
        { "id": "tests", "pointer": "/tests/failed", "op": "equals", "value": 0 },
        { "id": "notes", "pointer": "/notes", "op": "exists" },
        { "id": "score", "pointer": "/score", "op": "gte", "value": 0.8, "failureClass": "logical" },
        { "id": "tag", "pointer": "/tag", "op": "matches", "value": "v1.*" },
        { "id": "no-todo", "pointer": "/a~1b/~0c", "op": "notEquals", "value": "TODO" },
        { "id": "gone", "pointer": "/draft", "op": "exists", "value": false, "failureClass": "environmental" }
    ] });
    assert_valid("verifier-registration", &registration);
    for (pointer, value, at) in [
        ("/name", json!("has space"), "/name"),
        ("/name", json!("-leading"), "/name"),
        ("/name", json!("conformance:verifier"), "/name"),
        ("/criteria/0/pointer", json!("tests"), "/criteria/0/pointer"),
        (
            "/criteria/0/pointer",
            json!("/bad~2escape"),
            "/criteria/0/pointer",
        ),
        ("/criteria/0/op", json!("approx"), "/criteria/0/op"),
        ("/criteria/2/value", json!("0.8"), "/criteria/2/value"),
        ("/criteria/3/value", json!(1), "/criteria/3/value"),
        ("/criteria/1/value", json!("yes"), "/criteria/1/value"),
        (
            "/criteria/0/failureClass",
            json!(null),
            "/criteria/0/failureClass",
        ),
        ("/criteria/0/weight", json!(2), "/criteria/0"),
    ] {
        assert_invalid_at(
            "verifier-registration",
            &with(&registration, pointer, value),
            at,
        );
    }
    assert_invalid_at(
        "verifier-registration",
        &without(&registration, "/criteria/0/value"),
        "/criteria/0",
    );
    assert_invalid_at(
        "verifier-registration",
        &with(&registration, "/criteria", json!([])),
        "/criteria",
    );

    let definition = json!({ "name": "release-ready", "createdAt": "2026-06-13T00:00:00.000Z",
        "criteria": [{ "id": "notes", "pointer": "/notes", "op": "exists", "failureClass": "logical" }] });
    assert_valid("verifier-definition", &definition);
    assert_invalid_at(
        "verifier-definition",
        &without(&definition, "/criteria/0/failureClass"),
        "/criteria/0",
    );
    assert_valid("verifier-list", &json!({ "verifiers": [definition] }));
    assert_invalid_at(
        "verifier-list",
        &json!({ "verifiers": [without(&definition, "/createdAt")] }),
        "/verifiers/0",
    );
}
