//! `goal`, `goal-evaluated`, `goal-closed` and `capabilities` must accept and
//! reject what openwop's published schemas do (SPEC §1). The first cases of
//! each group are openwop's own fixtures, verbatim; the rest pin each
//! constraint of the published schema one at a time.

use crate::support;

use serde_json::{json, Value};
use support::{assert_invalid_at, assert_valid, with, without};

fn conforming_goal() -> Value {
    json!({
        "id": "goal-1",
        "objective": "ship the release checklist",
        "state": "active",
        "completion": { "check": "verifier", "verifierRef": "vf-1" },
        "continuation": { "mode": "schedule", "armRef": "job-1" },
        "bounds": { "maxLoopIterations": 7 },
        "owner": { "tenant": "acme" },
        "createdAt": "2026-06-13T00:00:00Z"
    })
}

fn full_goal() -> Value {
    json!({
        "id": "goal-2",
        "objective": "keep the docs green",
        "state": "escalated",
        "completion": {
            "check": "host",
            "verifierRef": null,
            "lastVerdict": { "satisfied": false, "confidence": 0.25, "runId": "run-9" }
        },
        "continuation": { "mode": "manual", "armRef": null },
        "bounds": { "maxLoopIterations": 3, "runTimeoutMs": 60000, "maxCostUsd": 1.5 },
        "progress": { "iterations": 2, "contributingRunIds": ["run-8", "run-9"] },
        "owner": { "tenant": "acme", "workspace": "docs", "principal": "p-1" },
        "createdAt": "2026-06-13T00:00:00.123Z",
        "updatedAt": "2026-06-13T01:02:03+02:00"
    })
}

// openwop's goal fixtures.

#[test]
fn openwop_conforming_goal_is_valid() {
    assert_valid("goal", &conforming_goal());
}

#[test]
fn openwop_goal_with_unknown_state_is_invalid() {
    let goal = with(&conforming_goal(), "/state", json!("done"));
    assert_invalid_at("goal", &goal, "/state");
}

#[test]
fn openwop_goal_with_unknown_check_is_invalid() {
    let goal = with(
        &conforming_goal(),
        "/completion",
        json!({ "check": "vibes" }),
    );
    assert_invalid_at("goal", &goal, "/completion/check");
}

#[test]
fn openwop_goal_with_unknown_mode_is_invalid() {
    let goal = with(
        &conforming_goal(),
        "/continuation",
        json!({ "mode": "whenever" }),
    );
    assert_invalid_at("goal", &goal, "/continuation/mode");
}

// The rest of the published goal schema, constraint by constraint.

#[test]
fn goal_with_every_optional_field_is_valid() {
    assert_valid("goal", &full_goal());
}

#[test]
fn every_state_check_and_mode_is_accepted() {
    for state in [
        "active",
        "satisfied",
        "escalated",
        "abandoned",
        "bound-exceeded",
    ] {
        assert_valid("goal", &with(&conforming_goal(), "/state", json!(state)));
    }
    for check in ["verifier", "host"] {
        assert_valid(
            "goal",
            &with(&conforming_goal(), "/completion/check", json!(check)),
        );
    }
    for mode in ["schedule", "commitment", "heartbeat", "manual"] {
        assert_valid(
            "goal",
            &with(&conforming_goal(), "/continuation/mode", json!(mode)),
        );
    }
}

#[test]
fn every_required_goal_field_is_required() {
    for field in [
        "id",
        "objective",
        "state",
        "completion",
        "continuation",
        "bounds",
        "owner",
        "createdAt",
    ] {
        assert_invalid_at(
            "goal",
            &without(&conforming_goal(), &format!("/{field}")),
            "",
        );
    }
    assert_invalid_at(
        "goal",
        &without(&conforming_goal(), "/completion/check"),
        "/completion",
    );
    assert_invalid_at(
        "goal",
        &without(&conforming_goal(), "/continuation/mode"),
        "/continuation",
    );
    assert_invalid_at(
        "goal",
        &without(&conforming_goal(), "/owner/tenant"),
        "/owner",
    );
}

#[test]
fn unknown_keys_are_refused_at_every_level() {
    for parent in [
        "",
        "/completion",
        "/completion/lastVerdict",
        "/continuation",
        "/bounds",
        "/progress",
        "/owner",
    ] {
        let goal = with(&full_goal(), &format!("{parent}/extra"), json!(1));
        assert_invalid_at("goal", &goal, parent);
    }
}

#[test]
fn optional_parts_may_be_empty_or_null() {
    // The published schema requires nothing inside these.
    assert_valid("goal", &with(&conforming_goal(), "/bounds", json!({})));
    assert_valid("goal", &with(&full_goal(), "/progress", json!({})));
    assert_valid(
        "goal",
        &with(&full_goal(), "/completion/lastVerdict", json!({})),
    );
    assert_valid(
        "goal",
        &with(&full_goal(), "/completion/lastVerdict", json!(null)),
    );
    assert_valid(
        "goal",
        &with(&conforming_goal(), "/completion/verifierRef", json!(null)),
    );
    assert_valid(
        "goal",
        &with(&conforming_goal(), "/continuation/armRef", json!(null)),
    );
    assert_valid("goal", &with(&conforming_goal(), "/objective", json!("")));
}

#[test]
fn bound_minimums() {
    let goal = conforming_goal();
    assert_valid("goal", &with(&goal, "/bounds/maxLoopIterations", json!(1)));
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/maxLoopIterations", json!(0)),
        "/bounds/maxLoopIterations",
    );
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/maxLoopIterations", json!(-3)),
        "/bounds/maxLoopIterations",
    );
    assert_valid("goal", &with(&goal, "/bounds/runTimeoutMs", json!(0)));
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/runTimeoutMs", json!(-1)),
        "/bounds/runTimeoutMs",
    );
    assert_valid("goal", &with(&goal, "/bounds/maxCostUsd", json!(0)));
    assert_valid("goal", &with(&goal, "/bounds/maxCostUsd", json!(0.01)));
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/maxCostUsd", json!(-0.01)),
        "/bounds/maxCostUsd",
    );
}

#[test]
fn integer_bounds_refuse_fractions_but_not_integral_floats() {
    let goal = conforming_goal();
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/maxLoopIterations", json!(1.5)),
        "/bounds/maxLoopIterations",
    );
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/runTimeoutMs", json!(10.5)),
        "/bounds/runTimeoutMs",
    );
    assert_invalid_at(
        "goal",
        &with(&goal, "/bounds/maxLoopIterations", json!("7")),
        "/bounds/maxLoopIterations",
    );
    // JSON Schema (and openwop's JavaScript validator) count 7.0 as the integer 7.
    assert_valid(
        "goal",
        &with(&goal, "/bounds/maxLoopIterations", json!(7.0)),
    );
}

#[test]
fn verdict_confidence_is_a_probability() {
    let goal = full_goal();
    for confidence in [0.0, 1.0] {
        assert_valid(
            "goal",
            &with(
                &goal,
                "/completion/lastVerdict/confidence",
                json!(confidence),
            ),
        );
    }
    for confidence in [1.01, -0.1] {
        assert_invalid_at(
            "goal",
            &with(
                &goal,
                "/completion/lastVerdict/confidence",
                json!(confidence),
            ),
            "/completion/lastVerdict/confidence",
        );
    }
    assert_invalid_at(
        "goal",
        &with(&goal, "/completion/lastVerdict/satisfied", json!("yes")),
        "/completion/lastVerdict/satisfied",
    );
}

#[test]
fn ids_and_owner_parts_must_not_be_empty() {
    assert_invalid_at("goal", &with(&conforming_goal(), "/id", json!("")), "/id");
    for part in ["tenant", "workspace", "principal"] {
        let pointer = format!("/owner/{part}");
        assert_invalid_at("goal", &with(&full_goal(), &pointer, json!("")), &pointer);
    }
}

#[test]
fn wrong_types_are_refused() {
    let cases = [
        ("/objective", json!(42)),
        ("/completion/verifierRef", json!(7)),
        ("/continuation/armRef", json!(false)),
        ("/completion/lastVerdict", json!("pass")),
        ("/progress/iterations", json!(-1)),
        ("/progress/iterations", json!(0.5)),
        ("/progress/contributingRunIds", json!("run-1")),
        ("/progress/contributingRunIds/0", json!(5)),
        ("/bounds", json!([])),
    ];
    for (pointer, value) in cases {
        assert_invalid_at("goal", &with(&full_goal(), pointer, value), pointer);
    }
}

#[test]
fn timestamps_must_be_rfc3339_date_times() {
    for bad in [
        "2026-06-13",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-06-13 00:00",
    ] {
        assert_invalid_at(
            "goal",
            &with(&conforming_goal(), "/createdAt", json!(bad)),
            "/createdAt",
        );
        assert_invalid_at(
            "goal",
            &with(&full_goal(), "/updatedAt", json!(bad)),
            "/updatedAt",
        );
    }
}

// goal.evaluated and goal.closed payloads.

fn evaluated() -> Value {
    json!({ "goalId": "g1", "satisfied": false, "confidence": 0.4, "runId": "r1", "iterations": 2 })
}

#[test]
fn openwop_goal_evaluated_fixture_is_valid() {
    assert_valid("goal-evaluated", &evaluated());
}

#[test]
fn openwop_goal_evaluated_with_objective_is_invalid() {
    let payload = with(
        &evaluated(),
        "/objective",
        json!("ship the release checklist"),
    );
    assert_invalid_at("goal-evaluated", &payload, "");
}

#[test]
fn goal_evaluated_constraints() {
    assert_valid("goal-evaluated", &without(&evaluated(), "/confidence"));
    assert_valid(
        "goal-evaluated",
        &with(&evaluated(), "/iterations", json!(0)),
    );
    for field in ["goalId", "satisfied", "runId", "iterations"] {
        assert_invalid_at(
            "goal-evaluated",
            &without(&evaluated(), &format!("/{field}")),
            "",
        );
    }
    let cases = [
        ("/confidence", json!(1.5)),
        ("/confidence", json!(-0.5)),
        ("/iterations", json!(-1)),
        ("/iterations", json!(2.5)),
        ("/goalId", json!("")),
        ("/runId", json!("")),
        ("/satisfied", json!("false")),
    ];
    for (pointer, value) in cases {
        assert_invalid_at(
            "goal-evaluated",
            &with(&evaluated(), pointer, value),
            pointer,
        );
    }
}

#[test]
fn openwop_goal_closed_with_active_final_state_is_invalid() {
    let payload = json!({ "goalId": "g1", "finalState": "active" });
    assert_invalid_at("goal-closed", &payload, "/finalState");
}

#[test]
fn goal_closed_accepts_every_terminal_state_and_nothing_more() {
    for state in ["satisfied", "escalated", "abandoned", "bound-exceeded"] {
        assert_valid(
            "goal-closed",
            &json!({ "goalId": "g1", "finalState": state }),
        );
    }
    let closed = json!({ "goalId": "g1", "finalState": "abandoned" });
    assert_invalid_at("goal-closed", &with(&closed, "/objective", json!("x")), "");
    assert_invalid_at(
        "goal-closed",
        &with(&closed, "/goalId", json!("")),
        "/goalId",
    );
    assert_invalid_at("goal-closed", &without(&closed, "/finalState"), "");
    assert_invalid_at("goal-closed", &without(&closed, "/goalId"), "");
}

// The discovery document.

fn discovery() -> Value {
    json!({
        "protocol": "openwop",
        "host": { "name": "goalpost-host", "version": "0.1.0" },
        "agents": { "goals": { "judge": "verifier", "continuation": ["manual", "schedule"], "requiresBounds": true } },
        "conformanceSeams": { "goals": { "basePath": "/v1/host/sample/goals",
            "continue": true, "events": true, "fixtures": true, "webhooks": false } }
    })
}

#[test]
fn design_discovery_document_is_valid_with_and_without_seams() {
    assert_valid("capabilities", &discovery());
    assert_valid("capabilities", &without(&discovery(), "/conformanceSeams"));
    assert_valid(
        "capabilities",
        &without(&discovery(), "/agents/goals/requiresBounds"),
    );
    assert_valid("capabilities", &json!({}));
}

#[test]
fn other_capability_families_are_left_alone() {
    let doc = with(&discovery(), "/memory", json!({ "supported": true }));
    let doc = with(&doc, "/agents/proposals", json!({ "anything": [1, 2] }));
    let doc = with(&doc, "/conformanceSeams/runs", json!({ "x": 1 }));
    assert_valid("capabilities", &doc);
}

#[test]
fn judge_is_one_string() {
    let doc = with(&discovery(), "/agents/goals/judge", json!(["verifier"]));
    assert_invalid_at("capabilities", &doc, "/agents/goals/judge");
    let doc = with(&discovery(), "/agents/goals/judge", json!("oracle"));
    assert_invalid_at("capabilities", &doc, "/agents/goals/judge");
    assert_valid(
        "capabilities",
        &with(&discovery(), "/agents/goals/judge", json!("host")),
    );
}

#[test]
fn continuation_modes_are_unique_and_known() {
    let doc = with(
        &discovery(),
        "/agents/goals/continuation",
        json!(["manual", "manual"]),
    );
    assert_invalid_at("capabilities", &doc, "/agents/goals/continuation");
    let doc = with(
        &discovery(),
        "/agents/goals/continuation",
        json!(["manual", "cron"]),
    );
    assert_invalid_at("capabilities", &doc, "/agents/goals/continuation/1");
    let doc = with(&discovery(), "/agents/goals/continuation", json!("manual"));
    assert_invalid_at("capabilities", &doc, "/agents/goals/continuation");
    let all = json!(["schedule", "commitment", "heartbeat", "manual"]);
    assert_valid(
        "capabilities",
        &with(&discovery(), "/agents/goals/continuation", all),
    );
}

#[test]
fn goals_family_is_closed_and_needs_judge_and_continuation() {
    let doc = with(&discovery(), "/agents/goals/maxGoals", json!(10));
    assert_invalid_at("capabilities", &doc, "/agents/goals");
    assert_invalid_at(
        "capabilities",
        &without(&discovery(), "/agents/goals/judge"),
        "/agents/goals",
    );
    assert_invalid_at(
        "capabilities",
        &without(&discovery(), "/agents/goals/continuation"),
        "/agents/goals",
    );
    let doc = with(&discovery(), "/agents/goals/requiresBounds", json!("yes"));
    assert_invalid_at("capabilities", &doc, "/agents/goals/requiresBounds");
}

#[test]
fn goal_seams_are_closed_booleans_under_an_absolute_base_path() {
    let doc = with(&discovery(), "/conformanceSeams/goals/replay", json!(true));
    assert_invalid_at("capabilities", &doc, "/conformanceSeams/goals");
    let doc = with(
        &discovery(),
        "/conformanceSeams/goals/events",
        json!("true"),
    );
    assert_invalid_at("capabilities", &doc, "/conformanceSeams/goals/events");
    let doc = with(
        &discovery(),
        "/conformanceSeams/goals/basePath",
        json!("v1/goals"),
    );
    assert_invalid_at("capabilities", &doc, "/conformanceSeams/goals/basePath");
    assert_valid(
        "capabilities",
        &json!({ "conformanceSeams": { "goals": { "continue": true } } }),
    );
}
