//! The suite's own files: scenarios, the requirement registry and the report.

mod support;

use serde_json::{json, Value};
use support::{assert_invalid_at, assert_valid, with, without};

/// The example from docs/DESIGN.md, "Scenario files".
fn design_scenario() -> Value {
    json!({
      "title": "Create returns an active goal owned by the caller",
      "profile": "core",
      "requirements": ["core.create.returns-active-goal"],
      "needs": { "seams": ["continue", "events", "fixtures"], "continuation": ["schedule"], "tenants": 2 },
      "checks": 7,
      "steps": [
        {
          "name": "create a goal",
          "request": {
            "method": "POST",
            "path": "{base}",
            "as": "a",
            "headers": { "If-Match": "{etag}" },
            "body": { "objective": "goalpost {nonce} ship it", "completion": { "check": "verifier" },
                      "continuation": { "mode": "manual" }, "bounds": { "maxLoopIterations": 3 } }
          },
          "expect": {
            "status": [201, 200],
            "schema": "goal",
            "assert": [
              { "pointer": "/state", "equals": "active" },
              { "pointer": "/progress/iterations", "equals": 0 },
              { "header": "Location", "exists": true }
            ]
          },
          "capture": { "goalId": { "pointer": "/id" }, "etag": { "header": "ETag" } }
        }
      ]
    })
}

const STEP: &str = "/steps/0";
const ASSERTION: &str = "/steps/0/expect/assert/0";

#[test]
fn design_example_is_valid() {
    assert_valid("scenario", &design_scenario());
}

#[test]
fn optional_scenario_parts() {
    let scenario = with(
        &design_scenario(),
        "/$schema",
        json!("../../schemas/scenario.schema.json"),
    );
    let scenario = with(&scenario, "/description", json!("Longer notes."));
    assert_valid("scenario", &scenario);
    assert_valid("scenario", &without(&design_scenario(), "/needs"));
    assert_valid("scenario", &with(&design_scenario(), "/needs", json!({})));
    assert_valid(
        "scenario",
        &with(&design_scenario(), "/steps/0/expect/status", json!(201)),
    );
}

#[test]
fn every_predicate_is_accepted_alone() {
    let predicates = [
        ("equals", json!({ "a": [1] })),
        ("notEquals", json!(null)),
        ("oneOf", json!(["active", "paused"])),
        ("exists", json!(false)),
        ("absent", json!(true)),
        ("gt", json!(0)),
        ("gte", json!("{startIterations}")),
        ("lt", json!(1.5)),
        ("lte", json!(3)),
        ("length", json!(3)),
        ("minLength", json!("{expected}")),
        ("maxLength", json!(0)),
        ("contains", json!("run-1")),
        ("notContains", json!("goalpost {nonce} canary")),
        ("increasing", json!(true)),
        (
            "withinMs",
            json!({ "of": "{createdAt}", "min": 0, "max": 1000 }),
        ),
    ];
    for (predicate, value) in predicates {
        let mut assertion = json!({ "pointer": "/events" });
        assertion[predicate] = value;
        assert_valid("scenario", &with(&design_scenario(), ASSERTION, assertion));
    }
    let projected = json!({ "pointer": "/events", "where": { "/type": "goal.evaluated" }, "map": "/payload/runId",
                            "equals": "{runIds}" });
    assert_valid("scenario", &with(&design_scenario(), ASSERTION, projected));
    assert_valid(
        "scenario",
        &with(
            &design_scenario(),
            ASSERTION,
            json!({ "pointer": "", "exists": true }),
        ),
    );
}

#[test]
fn an_assertion_has_exactly_one_predicate() {
    let two = json!({ "pointer": "/state", "equals": "active", "notEquals": "satisfied" });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, two),
        ASSERTION,
    );
    let none = json!({ "pointer": "/state" });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, none),
        ASSERTION,
    );
    let unknown = json!({ "pointer": "/state", "matches": "act.*" });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, unknown),
        ASSERTION,
    );
}

#[test]
fn an_assertion_has_exactly_one_target() {
    let both = json!({ "pointer": "/state", "header": "ETag", "exists": true });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, both),
        ASSERTION,
    );
    let neither = json!({ "exists": true });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, neither),
        ASSERTION,
    );
    let header_where = json!({ "header": "ETag", "where": { "/a": 1 }, "exists": true });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, header_where),
        ASSERTION,
    );
    let relative = json!({ "pointer": "state", "exists": true });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), ASSERTION, relative),
        &format!("{ASSERTION}/pointer"),
    );
}

#[test]
fn predicate_values_have_their_types() {
    let cases = [
        ("absent", json!(false)),
        ("exists", json!("yes")),
        ("gt", json!("three")),
        ("length", json!(-1)),
        ("increasing", json!(false)),
        ("oneOf", json!([])),
        ("withinMs", json!({ "of": "{createdAt}" })),
        (
            "withinMs",
            json!({ "of": "{createdAt}", "max": 10, "within": 5 }),
        ),
    ];
    for (predicate, value) in cases {
        let mut assertion = json!({ "pointer": "/x" });
        assertion[predicate] = value;
        let pointer = format!("{ASSERTION}/{predicate}");
        assert_invalid_at(
            "scenario",
            &with(&design_scenario(), ASSERTION, assertion),
            &pointer,
        );
    }
}

#[test]
fn a_step_is_a_request_step_or_a_quiet_step() {
    let quiet = json!({ "name": "wait out the deadline", "quietMs": 1500, "why": "the close must happen without client calls" });
    assert_valid("scenario", &with(&design_scenario(), STEP, quiet.clone()));
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), STEP, without(&quiet, "/why")),
        STEP,
    );
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), STEP, with(&quiet, "/quietMs", json!(0))),
        "/steps/0/quietMs",
    );
    let neither = json!({ "name": "nothing to do" });
    assert_invalid_at("scenario", &with(&design_scenario(), STEP, neither), STEP);
    let both = with(&design_scenario()["steps"][0], "/quietMs", json!(100));
    assert_invalid_at("scenario", &with(&design_scenario(), STEP, both), STEP);
    assert_invalid_at(
        "scenario",
        &without(&design_scenario(), "/steps/0/expect"),
        STEP,
    );
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), "/steps/0/expect", json!({})),
        "/steps/0/expect",
    );
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), "/steps", json!([])),
        "/steps",
    );
}

#[test]
fn poll_and_observe() {
    let polled = with(
        &design_scenario(),
        "/steps/0/poll",
        json!({ "timeoutMs": 2000, "intervalMs": 50 }),
    );
    assert_valid("scenario", &polled);
    let observed = with(
        &design_scenario(),
        "/steps/0/observe",
        json!({ "forMs": 500, "intervalMs": 50 }),
    );
    assert_valid("scenario", &observed);
    let both = with(
        &polled,
        "/steps/0/observe",
        json!({ "forMs": 500, "intervalMs": 50 }),
    );
    assert_invalid_at("scenario", &both, STEP);
    assert_invalid_at(
        "scenario",
        &with(&polled, "/steps/0/poll/intervalMs", json!(0)),
        "/steps/0/poll/intervalMs",
    );
    assert_invalid_at(
        "scenario",
        &without(&observed, "/steps/0/observe/forMs"),
        "/steps/0/observe",
    );
}

#[test]
fn request_shape() {
    let request = "/steps/0/request";
    let raw = without(&design_scenario(), "/steps/0/request/body");
    let raw = with(&raw, "/steps/0/request/rawBody", json!("{not json"));
    assert_valid("scenario", &raw);
    assert_valid(
        "scenario",
        &with(&raw, "/steps/0/request/contentType", json!("text/plain")),
    );
    let both = with(&design_scenario(), "/steps/0/request/rawBody", json!("{}"));
    assert_invalid_at("scenario", &both, request);
    let bodiless = without(&design_scenario(), "/steps/0/request/body");
    assert_invalid_at(
        "scenario",
        &with(
            &bodiless,
            "/steps/0/request/contentType",
            json!("text/plain"),
        ),
        request,
    );
    let cases = [
        ("/steps/0/request/method", json!("FETCH")),
        ("/steps/0/request/as", json!("c")),
        ("/steps/0/request/path", json!("v1/goals")),
        ("/steps/0/request/seam", json!("replay")),
        ("/steps/0/request/headers/If-Match", json!(3)),
        ("/steps/0/expect/status", json!(99)),
        ("/steps/0/expect/schema", json!("goals")),
    ];
    for (pointer, value) in cases {
        assert_invalid_at(
            "scenario",
            &with(&design_scenario(), pointer, value),
            pointer,
        );
    }
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), "/steps/0/request/timeoutMs", json!(5)),
        request,
    );
    assert_valid(
        "scenario",
        &with(
            &design_scenario(),
            "/steps/0/request/seam",
            json!("continue"),
        ),
    );
    assert_valid(
        "scenario",
        &with(
            &design_scenario(),
            "/steps/0/request/as",
            json!("anonymous"),
        ),
    );
}

#[test]
fn captures() {
    let capture = "/steps/0/capture";
    assert_invalid_at(
        "scenario",
        &with(
            &design_scenario(),
            "/steps/0/capture/nonce",
            json!({ "pointer": "/id" }),
        ),
        capture,
    );
    assert_invalid_at(
        "scenario",
        &with(
            &design_scenario(),
            "/steps/0/capture/goal-id",
            json!({ "pointer": "/id" }),
        ),
        capture,
    );
    let both = json!({ "pointer": "/id", "header": "ETag" });
    assert_invalid_at(
        "scenario",
        &with(&design_scenario(), "/steps/0/capture/goalId", both),
        "/steps/0/capture/goalId",
    );
}

#[test]
fn scenario_header_fields() {
    let cases = [
        ("/profile", json!("extra"), "/profile"),
        ("/checks", json!(0), "/checks"),
        ("/checks", json!(2.5), "/checks"),
        ("/requirements", json!([]), "/requirements"),
        (
            "/requirements",
            json!(["core.a", "core.a"]),
            "/requirements",
        ),
        ("/requirements/0", json!("Core.create"), "/requirements/0"),
        ("/needs/seams", json!(["replay"]), "/needs/seams/0"),
        ("/needs/seams", json!(["events", "events"]), "/needs/seams"),
        (
            "/needs/continuation",
            json!(["cron"]),
            "/needs/continuation/0",
        ),
        ("/needs/tenants", json!(3), "/needs/tenants"),
        ("/needs/hosts", json!(2), "/needs"),
        ("/title", json!(""), "/title"),
        ("/timeoutMs", json!(5), ""),
    ];
    for (pointer, value, at) in cases {
        assert_invalid_at("scenario", &with(&design_scenario(), pointer, value), at);
    }
    assert_invalid_at("scenario", &without(&design_scenario(), "/checks"), "");
}

#[test]
fn requirements_belong_to_the_scenario_profile() {
    let foreign = with(
        &design_scenario(),
        "/requirements",
        json!(["core.create.returns-active-goal", "behavior.converges"]),
    );
    assert_invalid_at("scenario", &foreign, "/requirements/1");
    let behavior = with(&design_scenario(), "/profile", json!("behavior"));
    assert_valid(
        "scenario",
        &with(&behavior, "/requirements", json!(["behavior.converges"])),
    );
}

// The requirement registry.

fn registry() -> Value {
    json!({ "requirements": [
      { "id": "core.create.bounds-required", "profile": "core", "level": "MUST",
        "clause": "§2 Bounds required", "text": "A create with no bounds or empty bounds is refused with 422." }
    ] })
}

#[test]
fn design_registry_is_valid() {
    assert_valid("requirements", &registry());
    assert_valid(
        "requirements",
        &with(
            &registry(),
            "/$schema",
            json!("../schemas/requirements.schema.json"),
        ),
    );
}

#[test]
fn registry_entries_are_complete_and_consistent() {
    let entry = "/requirements/0";
    assert_invalid_at(
        "requirements",
        &with(&registry(), "/requirements/0/profile", json!("behavior")),
        "/requirements/0/id",
    );
    assert_invalid_at(
        "requirements",
        &with(&registry(), "/requirements/0/level", json!("MAY")),
        "/requirements/0/level",
    );
    assert_invalid_at(
        "requirements",
        &with(&registry(), "/requirements/0/id", json!("core")),
        "/requirements/0/id",
    );
    for field in ["id", "profile", "level", "clause", "text"] {
        assert_invalid_at(
            "requirements",
            &without(&registry(), &format!("{entry}/{field}")),
            entry,
        );
    }
    assert_invalid_at(
        "requirements",
        &with(&registry(), "/requirements/0/owner", json!("me")),
        entry,
    );
    assert_invalid_at(
        "requirements",
        &json!({ "requirements": [] }),
        "/requirements",
    );
}

// The report.

fn report() -> Value {
    json!({
      "suite": { "name": "goalpost", "version": "0.1.0" },
      "host": { "url": "http://127.0.0.1:40123", "discoverySha256": "a".repeat(64), "bundled": true },
      "startedAt": "2026-06-13T00:00:00.000Z", "finishedAt": "2026-06-13T00:00:05.000Z",
      "durationMs": 5000,
      "profiles": {
        "core": { "certified": true, "pass": 20, "fail": 0, "skip": 0, "error": 0 },
        "behavior": { "certified": false, "pass": 0, "fail": 0, "skip": 12, "error": 0 }
      },
      "requirements": [
        { "id": "core.create.bounds-required", "profile": "core", "level": "MUST", "clause": "§2 Bounds required",
          "disposition": "pass", "reason": null, "scenarios": ["core::create"] },
        { "id": "behavior.converges", "profile": "behavior", "level": "MUST",
          "disposition": "skip", "reason": "seam-absent", "scenarios": ["behavior::convergence"] },
        { "id": "core.tenancy.isolated", "profile": "core", "level": "MUST",
          "disposition": "fail", "scenarios": ["core::tenancy"], "message": "step 2: expected 404, got 200" }
      ],
      "scenarios": [
        { "name": "core::create", "outcome": "pass", "checks": 7, "durationMs": 12, "message": null },
        { "name": "behavior::convergence", "outcome": "skip", "reason": "seam-absent", "checks": 0, "durationMs": 0 }
      ]
    })
}

#[test]
fn design_report_is_valid() {
    assert_valid("report", &report());
    assert_valid("report", &without(&report(), "/scenarios"));
}

#[test]
fn dispositions_and_reasons_agree() {
    assert_invalid_at(
        "report",
        &without(&report(), "/requirements/1/reason"),
        "/requirements/1",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/requirements/1/reason", json!(null)),
        "/requirements/1/reason",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/requirements/0/reason", json!("opted-out")),
        "/requirements/0/reason",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/requirements/1/reason", json!("lazy")),
        "/requirements/1/reason",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/requirements/0/disposition", json!("passed")),
        "/requirements/0/disposition",
    );
    assert_invalid_at(
        "report",
        &without(&report(), "/scenarios/1/reason"),
        "/scenarios/1",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/scenarios/0/reason", json!("opted-out")),
        "/scenarios/0/reason",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/requirements/0/profile", json!("behavior")),
        "/requirements/0/id",
    );
}

#[test]
fn certification_means_every_requirement_passed() {
    assert_invalid_at(
        "report",
        &with(&report(), "/profiles/core/fail", json!(1)),
        "/profiles/core/fail",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/profiles/core/skip", json!(1)),
        "/profiles/core/skip",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/profiles/core/error", json!(2)),
        "/profiles/core/error",
    );
    assert_invalid_at(
        "report",
        &with(&report(), "/profiles/core/pass", json!(0)),
        "/profiles/core/pass",
    );
    assert_valid(
        "report",
        &with(&report(), "/profiles/core/certified", json!(false)),
    );
}

#[test]
fn report_objects_are_closed_and_typed() {
    let cases = [
        (
            "/profiles/extra",
            json!({ "certified": false, "pass": 0, "fail": 0, "skip": 0, "error": 0 }),
            "/profiles",
        ),
        ("/profiles/core/flaky", json!(0), "/profiles/core"),
        (
            "/host/discoverySha256",
            json!("ABC"),
            "/host/discoverySha256",
        ),
        ("/startedAt", json!("now"), "/startedAt"),
        ("/scenarios/0/name", json!("create"), "/scenarios/0/name"),
        ("/scenarios/0/checks", json!(-1), "/scenarios/0/checks"),
        (
            "/requirements/0/scenarios",
            json!(["core::create", "core::create"]),
            "/requirements/0/scenarios",
        ),
        ("/exitCode", json!(0), ""),
        ("/suite/commit", json!("abc"), "/suite"),
    ];
    for (pointer, value, at) in cases {
        assert_invalid_at("report", &with(&report(), pointer, value), at);
    }
    for field in [
        "suite",
        "host",
        "startedAt",
        "finishedAt",
        "profiles",
        "requirements",
    ] {
        assert_invalid_at("report", &without(&report(), &format!("/{field}")), "");
    }
}
