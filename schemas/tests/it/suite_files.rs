//! The suite's own files: scenarios, the requirement registry and the report.

use crate::support;

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
        "clause": "§2 Bounds required", "text": "A create with no bounds or empty bounds is refused with 422.",
        "capability": ["requires-bounds"] }
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
    for field in ["id", "profile", "level", "clause", "text", "capability"] {
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
        "core": { "certified": true, "status": "certified", "reason": null,
                  "scope": { "judge": "verifier", "modes": ["manual"], "offered": ["requires-bounds"], "notOffered": [] },
                  "pass": 20, "fail": 0, "skip": 0, "notApplicable": 0, "error": 0 },
        "behavior": { "certified": false, "status": "not-attempted", "reason": "needs the `continue` seam",
                      "scope": { "judge": "verifier", "modes": ["manual"], "offered": [], "notOffered": [] },
                      "pass": 0, "fail": 0, "skip": 12, "notApplicable": 0, "error": 0 }
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

/// Certified: every MUST requirement passed. Only MUST requirements fail,
/// so a certified profile has no failure and at least one pass; a skip or
/// an error there can only be a SHOULD requirement's, which the schema
/// cannot tell apart (goalpost's own tests cross-check the levels).
#[test]
fn certification_means_every_must_requirement_passed() {
    assert_invalid_at(
        "report",
        &with(&report(), "/profiles/core/fail", json!(1)),
        "/profiles/core/fail",
    );
    assert_valid("report", &with(&report(), "/profiles/core/skip", json!(1)));
    assert_invalid_at(
        "report",
        &with(&report(), "/profiles/core/pass", json!(0)),
        "/profiles/core/pass",
    );
    assert_valid(
        "report",
        &with(
            &with(&report(), "/profiles/core/certified", json!(false)),
            "/profiles/core/status",
            json!("not-certified"),
        ),
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

// The observed profile: the mock block, mockLog steps, clock captures and
// observations.

fn observed_scenario() -> Value {
    json!({
      "title": "The suite counts exactly three runs",
      "profile": "observed",
      "requirements": ["observed.bound.iterations-manual"],
      "needs": { "seams": ["continue", "webhooks"], "continuation": ["manual"] },
      "checks": 4,
      "mock": {
        "verifier": { "satisfyOn": 2, "confidence": 0.8, "criteria": [{ "id": "c1", "verdict": "pass" }],
                      "replies": [{ "iteration": 1, "status": 500 }, { "call": 2, "rawBody": "{ nope" },
                                  { "delayMs": 10 }] },
        "arm": { "output": { "note": "{nonce}" }, "costUsd": 0.25, "escalateOn": 3, "runMs": 5,
                 "replies": [{ "iteration": 2, "body": { "output": null } }] },
        "heartbeat": { "fireOn": [2, 4], "replies": [{ "call": 1, "body": { "fire": "yes" } }] }
      },
      "observations": [
        { "what": "runs", "requirement": "observed.bound.iterations-manual", "suite": "{armCalls}", "host": "{iterations}" },
        { "what": "grace", "suite": 0 }
      ],
      "steps": [
        {
          "name": "create",
          "request": { "method": "POST", "path": "{base}", "body": { "objective": "o",
            "completion": { "check": "verifier", "verifierRef": "{mock.verifier}" },
            "continuation": { "mode": "manual", "armRef": "{mock.arm}#intervalMs=20" } } },
          "expect": { "status": 201 },
          "capture": { "goalId": { "pointer": "/id" }, "createdMs": { "clock": "ms" }, "createdAt": { "clock": "rfc3339" } }
        },
        {
          "name": "count",
          "mockLog": { "goalId": "{goalId}", "sinceMs": "{createdMs}", "graceMs": 50 },
          "expect": { "assert": [{ "pointer": "/arm/count", "equals": 3 }, { "pointer": "/arm/count", "lte": "{mock.limit}" }] },
          "capture": { "armCalls": { "pointer": "/arm/count" }, "seenMs": { "clock": "ms" } },
          "poll": { "timeoutMs": 1000, "intervalMs": 10 }
        },
        {
          "name": "nothing later",
          "mockLog": { "sinceMs": 100 },
          "expect": { "assert": [{ "pointer": "/calls", "length": 0 }] },
          "observe": { "forMs": 100, "intervalMs": 10 }
        }
      ]
    })
}

const MOCK_STEP: &str = "/steps/1";

#[test]
fn an_observed_scenario_is_valid() {
    assert_valid("scenario", &observed_scenario());
    assert_valid("scenario", &with(&observed_scenario(), "/mock", json!({})));
    assert_valid(
        "scenario",
        &with(&observed_scenario(), "/steps/2/mockLog", json!({})),
    );
}

#[test]
fn mock_log_steps_send_nothing() {
    let status = json!({ "status": 200, "assert": [{ "pointer": "/total", "equals": 0 }] });
    assert_invalid_at(
        "scenario",
        &with(&observed_scenario(), "/steps/1/expect", status),
        "/steps/1/expect",
    );
    assert_invalid_at(
        "scenario",
        &with(&observed_scenario(), "/steps/1/expect", json!({})),
        "/steps/1/expect",
    );
    let request = json!({ "method": "GET", "path": "{base}" });
    assert_invalid_at(
        "scenario",
        &with(&observed_scenario(), "/steps/1/request", request),
        MOCK_STEP,
    );
    assert_invalid_at(
        "scenario",
        &with(
            &observed_scenario(),
            "/steps/1/observe",
            json!({ "forMs": 10, "intervalMs": 5 }),
        ),
        MOCK_STEP,
    );
}

#[test]
fn mock_windows_are_typed() {
    let cases = [
        ("/steps/1/mockLog/sinceMs", json!(-1)),
        ("/steps/1/mockLog/sinceMs", json!("{createdMs} ms")),
        ("/steps/1/mockLog/graceMs", json!(1.5)),
        ("/steps/1/mockLog/goalId", json!("")),
        ("/steps/1/mockLog/runId", json!("r")),
    ];
    for (pointer, value) in cases {
        let at = if pointer.ends_with("runId") {
            "/steps/1/mockLog"
        } else {
            pointer
        };
        assert_invalid_at("scenario", &with(&observed_scenario(), pointer, value), at);
    }
    assert_invalid_at(
        "scenario",
        &with(
            &observed_scenario(),
            "/steps/2/mockLog",
            json!({ "graceMs": 5 }),
        ),
        "/steps/2/mockLog",
    );
}

#[test]
fn clock_captures_are_ms_or_rfc3339() {
    assert_invalid_at(
        "scenario",
        &with(
            &observed_scenario(),
            "/steps/0/capture/createdMs",
            json!({ "clock": "seconds" }),
        ),
        "/steps/0/capture/createdMs/clock",
    );
    assert_invalid_at(
        "scenario",
        &with(
            &observed_scenario(),
            "/steps/0/capture/createdMs",
            json!({ "clock": "ms", "pointer": "/id" }),
        ),
        "/steps/0/capture/createdMs",
    );
}

#[test]
fn mock_scripts_are_closed_and_typed() {
    let cases = [
        ("/mock/judge", json!({}), "/mock"),
        (
            "/mock/verifier/satisfyOn",
            json!(0),
            "/mock/verifier/satisfyOn",
        ),
        (
            "/mock/verifier/confidence",
            json!(1.5),
            "/mock/verifier/confidence",
        ),
        ("/mock/verifier/threshold", json!(1), "/mock/verifier"),
        ("/mock/arm/costUsd", json!(-0.1), "/mock/arm/costUsd"),
        ("/mock/arm/runMs", json!(30001), "/mock/arm/runMs"),
        (
            "/mock/heartbeat/fireOn",
            json!([0]),
            "/mock/heartbeat/fireOn/0",
        ),
        (
            "/mock/heartbeat/fireOn",
            json!([2, 2]),
            "/mock/heartbeat/fireOn",
        ),
        (
            "/mock/arm/replies/0",
            json!({ "iteration": 2 }),
            "/mock/arm/replies/0",
        ),
        (
            "/mock/arm/replies/0",
            json!({ "body": {}, "rawBody": "x" }),
            "/mock/arm/replies/0",
        ),
        (
            "/mock/verifier/replies/0/status",
            json!(99),
            "/mock/verifier/replies/0/status",
        ),
        (
            "/mock/verifier/replies/2/delayMs",
            json!(30001),
            "/mock/verifier/replies/2/delayMs",
        ),
    ];
    for (pointer, value, at) in cases {
        assert_invalid_at("scenario", &with(&observed_scenario(), pointer, value), at);
    }
}

#[test]
fn observations_name_what_and_the_suite_side() {
    assert_invalid_at(
        "scenario",
        &without(&observed_scenario(), "/observations/0/suite"),
        "/observations/0",
    );
    assert_invalid_at(
        "scenario",
        &with(&observed_scenario(), "/observations/0/what", json!("")),
        "/observations/0/what",
    );
    assert_invalid_at(
        "scenario",
        &with(
            &observed_scenario(),
            "/observations/0/requirement",
            json!("observed"),
        ),
        "/observations/0/requirement",
    );
    assert_invalid_at(
        "scenario",
        &with(&observed_scenario(), "/observations/0/agree", json!(true)),
        "/observations/0",
    );
}

#[test]
fn dotted_variables_are_the_suites_own() {
    assert_valid(
        "scenario",
        &with(
            &design_scenario(),
            ASSERTION,
            json!({ "pointer": "/n", "gte": "{mock.arm.count}" }),
        ),
    );
    for bad in ["{mock.}", "{.arm}", "{mock..arm}"] {
        assert_invalid_at(
            "scenario",
            &with(
                &design_scenario(),
                ASSERTION,
                json!({ "pointer": "/n", "gte": bad }),
            ),
            &format!("{ASSERTION}/gte"),
        );
    }
    // Captures stay plain identifiers, so they never shadow the suite's names.
    assert_invalid_at(
        "scenario",
        &with(
            &design_scenario(),
            "/steps/0/capture/mock.arm",
            json!({ "pointer": "/id" }),
        ),
        "/steps/0/capture",
    );
}

fn observed_report() -> Value {
    let mut report = report();
    report["requirements"][0]["observations"] = json!([
        { "scenario": "observed::bound-manual", "what": "runs", "suite": 3, "host": 3, "agree": true },
        { "scenario": "observed::pause-schedule", "what": "in flight", "suite": 0, "agree": null }
    ]);
    report["scenarios"][0]["observations"] = json!([
        { "what": "runs", "requirement": "core.create.bounds-required", "suite": 3, "host": 4, "agree": false },
        { "what": "not measured", "suite": null, "host": 2, "agree": null }
    ]);
    report
}

#[test]
fn report_observations_put_the_suite_next_to_the_host() {
    assert_valid("report", &observed_report());
    assert_invalid_at(
        "report",
        &with(
            &observed_report(),
            "/requirements/0/observations/1/agree",
            json!(true),
        ),
        "/requirements/0/observations/1/agree",
    );
    assert_invalid_at(
        "report",
        &without(
            &observed_report(),
            "/requirements/0/observations/0/scenario",
        ),
        "/requirements/0/observations/0",
    );
    assert_invalid_at(
        "report",
        &with(
            &observed_report(),
            "/scenarios/0/observations/0/scenario",
            json!("observed::x"),
        ),
        "/scenarios/0/observations/0",
    );
    assert_invalid_at(
        "report",
        &without(&observed_report(), "/scenarios/0/observations/0/agree"),
        "/scenarios/0/observations/0",
    );
    assert_invalid_at(
        "report",
        &with(
            &observed_report(),
            "/scenarios/0/observations/0/agree",
            json!("yes"),
        ),
        "/scenarios/0/observations/0/agree",
    );
}

/// A hardening scenario: 50 copies of one request at once, asserted on the
/// aggregate, with a generated padding variable and per-status schemas.
fn parallel_scenario() -> Value {
    json!({
      "title": "Concurrent continues never exceed the bound",
      "profile": "hardening",
      "requirements": ["hardening.race.continue-bound"],
      "needs": { "seams": ["continue"], "continuation": ["manual"], "requiresBounds": true },
      "generate": { "padding": { "repeat": "x", "times": 70000 } },
      "checks": 4,
      "steps": [
        {
          "name": "50 continues at once",
          "request": { "method": "POST", "path": "{base}/{goalId}/continue", "seam": "continue",
                       "headers": { "X-Copy": "{parallel.index}" } },
          "parallel": { "count": 50 },
          "expect": {
            "status": [200, 409],
            "schemas": { "200": "continue-response", "409": "error" },
            "assert": [
              { "pointer": "/counts/200", "equals": 5 },
              { "pointer": "/responses", "where": { "/status": 409, "/body/error": "goal_terminal" }, "length": 45 }
            ]
          },
          "capture": { "winner": { "pointer": "/first/200/body/goal/id" } }
        }
      ]
    })
}

#[test]
fn a_parallel_scenario_is_valid() {
    assert_valid("scenario", &parallel_scenario());
    let one_schema = with(
        &without(&parallel_scenario(), "/steps/0/expect/schemas"),
        "/steps/0/expect/schema",
        json!("error"),
    );
    assert_valid("scenario", &one_schema);
}

#[test]
fn parallel_counts_and_combinations() {
    for count in [json!(1), json!(101), json!(2.5), json!("50")] {
        assert_invalid_at(
            "scenario",
            &with(&parallel_scenario(), "/steps/0/parallel/count", count),
            "/steps/0/parallel/count",
        );
    }
    assert_valid(
        "scenario",
        &with(&parallel_scenario(), "/steps/0/parallel/count", json!(2)),
    );
    assert_invalid_at(
        "scenario",
        &with(&parallel_scenario(), "/steps/0/parallel/spreadMs", json!(5)),
        "/steps/0/parallel",
    );
    let polled = with(
        &parallel_scenario(),
        "/steps/0/poll",
        json!({ "timeoutMs": 100, "intervalMs": 10 }),
    );
    assert_invalid_at("scenario", &polled, "/steps/0");
    let observed = with(
        &parallel_scenario(),
        "/steps/0/observe",
        json!({ "forMs": 100, "intervalMs": 10 }),
    );
    assert_invalid_at("scenario", &observed, "/steps/0");
}

#[test]
fn schemas_by_status_belong_to_parallel_steps() {
    let single = without(&parallel_scenario(), "/steps/0/parallel");
    assert_invalid_at("scenario", &single, "/steps/0/expect");
    let both = with(
        &parallel_scenario(),
        "/steps/0/expect/schema",
        json!("goal"),
    );
    assert_invalid_at("scenario", &both, "/steps/0/expect");
    for (status, schema) in [
        ("20", "goal"),
        ("600", "goal"),
        ("2xx", "goal"),
        ("200", "goals"),
    ] {
        let mut value = parallel_scenario();
        value["steps"][0]["expect"]["schemas"] = json!({ status: schema });
        let at = if schema == "goals" {
            format!("/steps/0/expect/schemas/{status}")
        } else {
            "/steps/0/expect/schemas".to_string()
        };
        assert_invalid_at("scenario", &value, &at);
    }
    let mut empty = parallel_scenario();
    empty["steps"][0]["expect"]["schemas"] = json!({});
    assert_invalid_at("scenario", &empty, "/steps/0/expect/schemas");
}

#[test]
fn raw_base64_bodies_are_bytes() {
    let request = "/steps/0/request";
    let raw = without(&design_scenario(), "/steps/0/request/body");
    let bytes = with(
        &raw,
        "/steps/0/request/rawBodyBase64",
        json!("eyJhIjoi/yJ9"),
    );
    assert_valid("scenario", &bytes);
    assert_valid(
        "scenario",
        &with(&bytes, "/steps/0/request/contentType", json!("text/plain")),
    );
    assert_invalid_at(
        "scenario",
        &with(&raw, "/steps/0/request/rawBodyBase64", json!("not base64!")),
        "/steps/0/request/rawBodyBase64",
    );
    let with_json = with(
        &design_scenario(),
        "/steps/0/request/rawBodyBase64",
        json!("e30="),
    );
    assert_invalid_at("scenario", &with_json, request);
    let with_text = with(&bytes, "/steps/0/request/rawBody", json!("{}"));
    assert_invalid_at("scenario", &with_text, request);
}

#[test]
fn generated_variables_and_the_requires_bounds_need() {
    let generate = "/generate";
    for (name, spec) in [
        ("nonce", json!({ "repeat": "x", "times": 2 })),
        ("two-words", json!({ "repeat": "x", "times": 2 })),
        ("padding", json!({ "repeat": "", "times": 2 })),
        ("padding", json!({ "repeat": "x", "times": 0 })),
        ("padding", json!({ "repeat": "x" })),
        ("padding", json!({ "repeat": "x", "times": 2, "then": "y" })),
    ] {
        let mut value = parallel_scenario();
        value["generate"] = json!({ name: spec });
        let violation_at = if name == "padding" {
            format!("{generate}/padding")
        } else {
            generate.to_string()
        };
        let found = support::schemas()
            .validate("scenario", &value)
            .expect_err("an invalid generate entry")
            .iter()
            .any(|v| v.pointer.starts_with(&violation_at));
        assert!(found, "{name}: {spec} should be refused at {violation_at}");
    }
    assert_invalid_at(
        "scenario",
        &with(&parallel_scenario(), "/needs/requiresBounds", json!("yes")),
        "/needs/requiresBounds",
    );
    assert_valid(
        "scenario",
        &with(&parallel_scenario(), "/needs/requiresBounds", json!(false)),
    );
}
