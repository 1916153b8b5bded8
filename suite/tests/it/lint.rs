//! The vacuity lint: each rule against a small scenario that breaks it (and
//! a near twin that does not), the real `scenarios/` folder linting clean,
//! and `goalpost lint`'s exit codes.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use goalpost::commands::lint::{self, Finding, Rule};
use goalpost::run::loader::LoadError;
use goalpost_schemas::Schemas;
use serde_json::{json, Value};

fn scenario(checks: u64, steps: Value) -> Value {
    json!({
        "title": "a scenario",
        "profile": "core",
        "requirements": ["core.a"],
        "checks": checks,
        "steps": steps,
    })
}

fn get(expect: Value) -> Value {
    json!({"name": "read", "request": {"method": "GET", "path": "{base}"}, "expect": expect})
}

/// The step and check rules over one scenario, as `(rule, pointer)`.
fn findings(value: &Value) -> Vec<(Rule, String)> {
    lint::lint_scenario(Path::new("x.json"), value)
        .into_iter()
        .map(|finding| (finding.rule, finding.pointer))
        .collect()
}

fn rules(value: &Value) -> Vec<Rule> {
    findings(value).into_iter().map(|(rule, _)| rule).collect()
}

#[test]
fn a_well_made_scenario_has_no_findings() {
    let value = scenario(
        6,
        json!([
            get(json!({"status": 200, "schema": "goal-list", "assert": [
                {"pointer": "/goals", "map": "/id", "contains": "x"},
                {"pointer": "/goals", "map": "/id", "notContains": "y"}
            ]})),
            get(json!({"status": 404, "schema": "error"})),
        ]),
    );
    assert_eq!(findings(&value), []);
}

#[test]
fn step_asserts_nothing() {
    let bad = scenario(1, json!([get(json!({})), get(json!({"status": 200}))]));
    assert_eq!(
        findings(&bad),
        [(Rule::StepAssertsNothing, "/steps/0".to_string())]
    );
    // A step with no `expect` at all is the same thing.
    let none = scenario(
        1,
        json!([
            {"name": "x", "request": {"method": "GET", "path": "{base}"}},
            get(json!({"status": 200}))
        ]),
    );
    assert_eq!(rules(&none), [Rule::StepAssertsNothing]);
    // A parallel step whose only checks are per-status schemas checks every
    // answer of those statuses (the envelope on each 4xx, whatever the
    // host chose to answer): that is a check. An empty map is none.
    let per_status = |schemas: serde_json::Value| {
        scenario(
            1,
            json!([
                {
                    "name": "x",
                    "request": {"method": "GET", "path": "{base}"},
                    "parallel": {"count": 2},
                    "expect": {"schemas": schemas}
                },
                get(json!({"status": 200}))
            ]),
        )
    };
    assert_eq!(
        findings(&per_status(json!({"400": "error", "404": "error"}))),
        []
    );
    assert_eq!(rules(&per_status(json!({}))), [Rule::StepAssertsNothing]);
}

#[test]
fn a_quiet_wait_must_be_checked_afterwards() {
    let quiet = json!({"name": "wait", "quietMs": 10, "why": "deadline"});
    let last = scenario(1, json!([get(json!({"status": 200})), quiet.clone()]));
    assert_eq!(
        findings(&last),
        [(Rule::QuietStepLast, "/steps/1".to_string())]
    );
    let checked = scenario(
        2,
        json!([
            get(json!({"status": 200})),
            quiet,
            get(json!({"status": 200}))
        ]),
    );
    assert_eq!(findings(&checked), []);
}

#[test]
fn a_refusal_needs_the_error_envelope() {
    let bare = scenario(1, json!([get(json!({"status": 404}))]));
    assert_eq!(
        findings(&bare),
        [(Rule::RefusalUnpinned, "/steps/0/expect".to_string())]
    );
    let wrong_schema = scenario(
        2,
        json!([get(json!({"status": [400, 422], "schema": "goal"}))]),
    );
    assert_eq!(rules(&wrong_schema), [Rule::RefusalUnpinned]);
    // A schema per status (parallel steps) pins every refusal it names.
    let per_status = |schemas: Value| {
        scenario(
            1,
            json!([get(json!({"status": [409, 412], "schemas": schemas}))]),
        )
    };
    assert_eq!(
        findings(&per_status(json!({"409": "error", "412": "error"}))),
        []
    );
    assert_eq!(
        rules(&per_status(json!({"409": "error"}))),
        [Rule::RefusalUnpinned]
    );
    // Two refusals the profile allows, with the envelope: fine.
    let pinned = scenario(
        2,
        json!([get(json!({"status": [400, 422], "schema": "error"}))]),
    );
    assert_eq!(findings(&pinned), []);
}

#[test]
fn a_server_error_is_never_an_expected_answer() {
    let bad = scenario(
        2,
        json!([get(json!({"status": [422, 500], "schema": "error"}))]),
    );
    assert_eq!(
        findings(&bad),
        [(Rule::RefusalUnpinned, "/steps/0/expect/status".to_string())]
    );
}

#[test]
fn a_step_that_accepts_success_or_refusal_needs_a_later_check() {
    let either = get(json!({"status": [201, 200, 400, 422]}));
    let alone = scenario(2, json!([get(json!({"status": 200})), either.clone()]));
    assert_eq!(
        findings(&alone),
        [(
            Rule::EitherStepUnchecked,
            "/steps/1/expect/status".to_string()
        )]
    );
    let checked = scenario(2, json!([either, get(json!({"status": 200}))]));
    assert_eq!(findings(&checked), []);
}

#[test]
fn not_contains_over_a_selection_needs_a_witness() {
    let bad = scenario(
        2,
        json!([get(json!({"status": 200, "assert": [
            {"pointer": "/goals", "map": "/id", "notContains": "x"}
        ]}))]),
    );
    assert_eq!(
        findings(&bad),
        [(
            Rule::ArrayMayBeEmpty,
            "/steps/0/expect/assert/0".to_string()
        )]
    );
    // Witnesses: the same selection, non-empty.
    for witness in [
        json!({"pointer": "/goals", "map": "/id", "minLength": 1}),
        json!({"pointer": "/goals", "map": "/id", "length": 2}),
        json!({"pointer": "/goals", "map": "/id", "contains": "y"}),
        json!({"pointer": "/goals", "map": "/id", "equals": ["y"]}),
        json!({"pointer": "/goals", "map": "/id", "oneOf": [["y"], ["y", "z"]]}),
        // A narrower selection that has an element shows this one has one.
        json!({"pointer": "/goals", "where": {"/state": "active"}, "map": "/id", "minLength": 1}),
    ] {
        let good = scenario(
            3,
            json!([get(json!({"status": 200, "assert": [
                {"pointer": "/goals", "map": "/id", "notContains": "x"},
                witness.clone()
            ]}))]),
        );
        assert_eq!(findings(&good), [], "witness {witness}");
    }
}

#[test]
fn a_witness_must_cover_the_same_selection() {
    for not_a_witness in [
        // Another array.
        json!({"pointer": "/other", "map": "/id", "minLength": 1}),
        // Demands nothing.
        json!({"pointer": "/goals", "map": "/id", "minLength": 0}),
        json!({"pointer": "/goals", "map": "/id", "length": "{n}"}),
        json!({"pointer": "/goals", "map": "/id", "oneOf": [["y"], "z"]}),
        // Other selections may have elements this one lacks.
        json!({"pointer": "/goals", "map": "/id", "minLength": 1, "where": {"/state": "abandoned"}}),
        json!({"pointer": "/goals", "map": "/objective", "contains": "y"}),
        // The same elements, but with no schema nothing says each has an
        // `/objective` for the map to keep.
        json!({"pointer": "/goals", "where": {"/state": "active"}, "map": "/id", "contains": "y"}),
    ] {
        let bad = scenario(
            3,
            json!([get(json!({"status": 200, "assert": [
                {"pointer": "/goals", "where": {"/state": "active"}, "map": "/objective", "notContains": "x"},
                not_a_witness.clone()
            ]}))]),
        );
        assert_eq!(
            rules(&bad),
            [Rule::ArrayMayBeEmpty],
            "{not_a_witness} is no witness"
        );
    }
}

#[test]
fn a_schema_that_requires_the_mapped_field_lets_another_map_witness() {
    let step = |schema: &str, map: &str| {
        scenario(
            4,
            json!([get(json!({"status": 200, "schema": schema, "assert": [
                {"pointer": "/goals", "map": "/id", "contains": "y"},
                {"pointer": "/goals", "map": map, "notContains": "x"}
            ]}))]),
        )
    };
    // Every goal has an owner with a tenant: the map drops nothing.
    assert_eq!(findings(&step("goal-list", "/owner/tenant")), []);
    // `progress` is optional: the map may drop every element.
    assert_eq!(
        rules(&step("goal-list", "/progress/iterations")),
        [Rule::ArrayMayBeEmpty]
    );
}

#[test]
fn increasing_needs_two_elements() {
    let with = |witness: Value| {
        scenario(
            3,
            json!([get(json!({"status": 200, "assert": [
                {"pointer": "/events", "map": "/sequence", "increasing": true},
                witness
            ]}))]),
        )
    };
    assert_eq!(
        rules(&with(
            json!({"pointer": "/events", "map": "/sequence", "minLength": 1})
        )),
        [Rule::ArrayMayBeEmpty]
    );
    assert_eq!(
        findings(&with(
            json!({"pointer": "/events", "map": "/sequence", "minLength": 2})
        )),
        []
    );
}

#[test]
fn an_emptiness_claim_over_a_selection_needs_the_array_to_have_elements() {
    for claim in [
        json!({"pointer": "/events", "where": {"/type": "goal.closed"}, "length": 0}),
        json!({"pointer": "/events", "where": {"/type": "goal.closed"}, "equals": []}),
        json!({"pointer": "/events", "where": {"/type": "goal.closed"}, "maxLength": 1}),
        json!({"pointer": "/events", "where": {"/type": "goal.closed"}, "oneOf": [[], [1]]}),
    ] {
        let alone = scenario(
            2,
            json!([get(json!({"status": 200, "assert": [claim.clone()]}))]),
        );
        assert_eq!(rules(&alone), [Rule::ArrayMayBeEmpty], "{claim}");
        // Any element of /events, whatever its type, makes "none closed" mean something.
        let witnessed = scenario(
            3,
            json!([get(json!({"status": 200, "assert": [
                claim.clone(),
                {"pointer": "/events", "where": {"/type": "goal.evaluated"}, "length": 1}
            ]}))]),
        );
        assert_eq!(findings(&witnessed), [], "{claim}");
    }
    // Pinning a whole array empty is a claim, not a vacuity.
    let whole = scenario(
        2,
        json!([get(json!({"status": 200, "assert": [
            {"pointer": "/events", "length": 0}
        ]}))]),
    );
    assert_eq!(findings(&whole), []);
}

#[test]
fn plain_targets_are_not_assumed_to_be_arrays() {
    // `notContains` on the body is a text search; on a plain pointer the
    // target may be an object or a string. Both are outside the rule.
    let value = scenario(
        3,
        json!([get(json!({"status": 200, "assert": [
            {"pointer": "", "notContains": "secret"},
            {"pointer": "/completion", "notContains": "run-x"}
        ]}))]),
    );
    assert_eq!(findings(&value), []);
}

#[test]
fn declared_checks_must_equal_what_the_steps_make() {
    let steps = json!([
        get(json!({"status": 200, "schema": "goal", "assert": [{"pointer": "/id", "exists": true}]})),
        {"name": "wait", "quietMs": 5, "why": "time"},
        get(json!({"status": [200, 201]})),
    ]);
    assert_eq!(findings(&scenario(4, steps.clone())), []);
    assert_eq!(
        findings(&scenario(3, steps.clone())),
        [(Rule::ChecksBelow, "/checks".to_string())]
    );
    assert_eq!(
        findings(&scenario(5, steps)),
        [(Rule::ChecksAbove, "/checks".to_string())]
    );
}

#[test]
fn a_conditional_step_counts_toward_what_a_run_can_make_not_what_it_must() {
    let mut patch = get(json!({"status": [200, 422]}));
    patch["name"] = json!("patch");
    let mut applied = get(json!({"status": 200, "assert": [{"pointer": "/id", "exists": true}]}));
    applied["when"] = json!({"step": "patch", "status": "2xx"});
    let mut unchanged = get(json!({"status": 200}));
    unchanged["when"] = json!({"step": "patch", "status": "4xx"});
    let steps = json!([patch, applied, unchanged]);
    // Every run makes the PATCH's status check; at most all four.
    assert_eq!(findings(&scenario(1, steps.clone())), []);
    assert_eq!(findings(&scenario(2, steps.clone())), []);
    assert_eq!(findings(&scenario(4, steps.clone())), []);
    assert_eq!(
        findings(&scenario(0, steps.clone())),
        [(Rule::ChecksBelow, "/checks".to_string())]
    );
    assert_eq!(
        findings(&scenario(5, steps)),
        [(Rule::ChecksAbove, "/checks".to_string())]
    );
}

#[test]
fn unknown_step_kinds_are_judged_by_their_expect() {
    let watch =
        |expect: Value| json!({"name": "watch", "watchSomething": {"x": 1}, "expect": expect});
    // It asserts through `expect` like any step, and is counted the same way.
    let counted = scenario(
        2,
        json!([watch(json!({"assert": [
            {"pointer": "/calls", "minLength": 1},
            {"pointer": "/calls", "map": "/id", "notContains": "x"}
        ]}))]),
    );
    assert_eq!(rules(&counted), [Rule::ArrayMayBeEmpty]);
    // No expect: it asserts nothing.
    let silent = scenario(1, json!([watch(Value::Null), get(json!({"status": 200}))]));
    assert!(rules(&silent).contains(&Rule::StepAssertsNothing));
    // An expect key the lint cannot count: only "below" can be told.
    let uncountable = |checks| {
        scenario(
            checks,
            json!([watch(
                json!({"calls": 3, "assert": [{"pointer": "/x", "equals": 1}]})
            )]),
        )
    };
    assert_eq!(findings(&uncountable(5)), []);
    assert_eq!(rules(&uncountable(0)), [Rule::ChecksBelow]);
}

#[test]
fn nonsense_json_never_panics() {
    for value in [
        json!(null),
        json!([]),
        json!({"steps": 3}),
        json!({"steps": [1, "x", null, {"expect": 7}, {"expect": {"assert": [1, {"pointer": 2}]}}]}),
        json!({"steps": [{"expect": {"status": "x", "assert": [{"pointer": "/a", "map": 1, "where": [], "notContains": 1}]}}]}),
    ] {
        let _ = lint::lint_scenario(Path::new("x.json"), &value);
    }
}

// ---- whole folders --------------------------------------------------------

fn schemas() -> Schemas {
    Schemas::embedded().expect("embedded schemas")
}

fn good_file(requirement: &str) -> Value {
    json!({
        "title": "good",
        "profile": "core",
        "requirements": [requirement],
        "checks": 2,
        "steps": [get(json!({"status": 200, "schema": "goal-list"}))],
    })
}

/// A repository in miniature: `scenarios/` with `requirements.json` for
/// `ids` (each clause `PROFILE.md#<id>`) and the given files, and beside it
/// a PROFILE.md with an anchor for each id and a `docs/COVERAGE.md` with an
/// audit row for each. Returns the root and the scenarios folder.
fn profiled_folder(ids: &[&str], files: &[(&str, Value)]) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    let scenarios = root.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).expect("mkdir");
    let requirements = json!({ "profileVersion": "1.0", "requirements": ids.iter().map(|id| json!({
        "id": id, "profile": id.split('.').next().unwrap_or_default(),
        "level": "MUST", "clause": format!("PROFILE.md#{id}"), "text": "a requirement",
        "capability": [],
    })).collect::<Vec<_>>() });
    std::fs::write(
        scenarios.join("requirements.json"),
        requirements.to_string(),
    )
    .expect("write");
    let profile: String = ids
        .iter()
        .map(|id| {
            format!(
                "<a id=\"{id}\"></a>\n### {id}\n\nThe rule.\n\n**Level:** MUST.\n\n**Applies to:** every host that advertises `agents.goals`.\n\n"
            )
        })
        .collect();
    std::fs::write(root.path().join("PROFILE.md"), profile).expect("write");
    let rows: String = ids
        .iter()
        .map(|id| format!("| `{id}` | audited |\n"))
        .collect();
    write_coverage(
        root.path(),
        &format!("| requirement | audit |\n|---|---|\n{rows}"),
    );
    for (path, value) in files {
        let path = scenarios.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write");
    }
    (root, scenarios)
}

fn write_coverage(root: &Path, text: &str) {
    let docs = root.join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(docs.join("COVERAGE.md"), text).expect("write");
}

fn folder_findings(dir: &Path) -> Vec<Finding> {
    lint::lint_dir(dir, &schemas())
        .expect("the folder lints")
        .findings
}

#[test]
fn requirements_named_by_nobody_and_unknown_requirements() {
    let (_root, dir) = profiled_folder(
        &["core.a", "core.b"],
        &[
            ("core/one.json", good_file("core.a")),
            ("core/two.json", good_file("core.nope")),
        ],
    );
    let found = folder_findings(&dir);
    let shown: Vec<(Rule, String, String)> = found
        .iter()
        .map(|f| {
            (
                f.rule,
                f.file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                f.pointer.clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                Rule::RequirementUnknown,
                "two.json".to_string(),
                "/requirements/0".to_string()
            ),
            (
                Rule::RequirementUnnamed,
                "requirements.json".to_string(),
                "/requirements/1/id".to_string()
            ),
        ]
    );
    assert!(found[0].message.contains("core.nope"), "{}", found[0]);
    assert!(found[1].message.contains("core.b"), "{}", found[1]);
}

#[test]
fn a_file_the_loader_rejects_is_a_finding_and_the_rest_is_still_linted() {
    let mut invalid = good_file("core.a");
    invalid["steps"][0]["expect"]["statuz"] = json!(200);
    let mut vacuous = good_file("core.a");
    vacuous["checks"] = json!(1);
    let (_root, dir) = profiled_folder(
        &["core.a"],
        &[("core/bad.json", invalid), ("core/low.json", vacuous)],
    );
    let found = folder_findings(&dir);
    let rules: Vec<Rule> = found.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        [Rule::ScenarioInvalid, Rule::ChecksBelow],
        "{found:?}"
    );
    assert!(found[0].to_string().contains("bad.json"), "{}", found[0]);
}

#[test]
fn a_folder_that_cannot_be_read_is_an_error_not_a_finding() {
    let dir = support::scenarios_folder(&["core.a"], &[("core/one.json", good_file("core.a"))]);
    std::fs::write(dir.path().join("core/broken.json"), "{ not json").unwrap();
    assert!(matches!(
        lint::lint_dir(dir.path(), &schemas()),
        Err(lint::LintError::Unreadable(LoadError::NotJson { .. }))
    ));
    let missing = tempfile::tempdir().unwrap();
    assert!(matches!(
        lint::lint_dir(missing.path(), &schemas()),
        Err(lint::LintError::Unreadable(LoadError::Read { .. }))
    ));
}

fn real_scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

#[test]
fn the_real_scenarios_lint_clean() {
    let report = lint::lint_dir(&real_scenarios(), &schemas()).expect("scenarios/ lints");
    let shown: Vec<String> = report.findings.iter().map(ToString::to_string).collect();
    assert!(shown.is_empty(), "lint findings:\n{}", shown.join("\n"));
    assert!(
        report.scenarios >= 50,
        "{} scenario files",
        report.scenarios
    );
    assert!(report
        .coverage
        .iter()
        .all(|requirement| !requirement.scenarios.is_empty()));
}

#[test]
fn every_rule_has_a_distinct_id_and_a_summary() {
    let ids: std::collections::BTreeSet<&str> = Rule::ALL.iter().map(|rule| rule.id()).collect();
    assert_eq!(ids.len(), Rule::ALL.len());
    assert!(Rule::ALL.iter().all(|rule| !rule.summary().is_empty()));
}

// ---- profile, attribution, isolation ------------------------------------------

#[test]
fn a_clause_must_resolve_to_an_anchor_of_profile_md() {
    let (root, dir) = profiled_folder(
        &["core.a", "core.b"],
        &[
            ("core/one.json", good_file("core.a")),
            ("core/two.json", good_file("core.b")),
        ],
    );
    assert_eq!(folder_findings(&dir), []);

    // core.b's section goes missing, core.a's clause is the old SPEC form.
    std::fs::write(root.path().join("PROFILE.md"), "<a id=\"core.c\"></a>\n").unwrap();
    let registry = dir.join("requirements.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&registry).unwrap()).unwrap();
    value["requirements"][0]["clause"] = json!("§2 Bounds required");
    std::fs::write(&registry, value.to_string()).unwrap();
    let found = folder_findings(&dir);
    let shown: Vec<(Rule, &str)> = found.iter().map(|f| (f.rule, f.pointer.as_str())).collect();
    assert_eq!(
        shown,
        [
            (Rule::ClauseUnresolved, "/requirements/0/clause"),
            (Rule::ClauseUnresolved, "/requirements/1/clause"),
        ]
    );
    assert!(
        found[0].message.contains("PROFILE.md#<anchor>"),
        "{}",
        found[0]
    );
    assert!(found[1].message.contains("`core.b`"), "{}", found[1]);

    // No PROFILE.md beside the folder at all: one finding says so.
    std::fs::remove_file(root.path().join("PROFILE.md")).unwrap();
    value["requirements"][0]["clause"] = json!("PROFILE.md#core.a");
    std::fs::write(&registry, value.to_string()).unwrap();
    let found = folder_findings(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].rule, found[0].pointer.as_str()),
        (Rule::ClauseUnresolved, "")
    );
    assert!(found[0].message.contains("PROFILE.md"), "{}", found[0]);
}

#[test]
fn a_capability_must_be_stated_in_its_section_and_needed_by_its_scenarios() {
    let (root, dir) = profiled_folder(&["core.a"], &[("core/one.json", good_file("core.a"))]);
    assert_eq!(folder_findings(&dir), []);
    // The registry says core.a is about schedule goals: the section still
    // says every host, and the scenario does not need `schedule`.
    let registry = dir.join("requirements.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&registry).unwrap()).unwrap();
    value["requirements"][0]["capability"] = json!(["mode:schedule"]);
    std::fs::write(&registry, value.to_string()).unwrap();
    let found = folder_findings(&dir);
    let shown: Vec<(Rule, &str)> = found.iter().map(|f| (f.rule, f.pointer.as_str())).collect();
    assert_eq!(
        shown,
        [
            (Rule::CapabilityUnneeded, "/requirements/0"),
            (Rule::CapabilityUnstated, "/requirements/0/capability"),
        ],
        "{found:#?}"
    );
    assert!(found[0].message.contains("`mode:schedule`"), "{}", found[0]);
    assert!(
        found[1].message.contains(
            "**Applies to:** hosts that advertise the `schedule` continuation mode (`mode:schedule`)."
        ),
        "{}",
        found[1]
    );
    // Stated, and needed: clean again.
    let profile = std::fs::read_to_string(root.path().join("PROFILE.md")).unwrap().replace(
        "**Applies to:** every host that advertises `agents.goals`.",
        "**Applies to:** hosts that advertise the `schedule` continuation mode (`mode:schedule`).",
    );
    std::fs::write(root.path().join("PROFILE.md"), profile).unwrap();
    let mut file = good_file("core.a");
    file["needs"] = json!({"continuation": ["schedule"]});
    std::fs::write(dir.join("core/one.json"), file.to_string()).unwrap();
    assert_eq!(folder_findings(&dir), []);
}

fn two_requirements(steps: Value) -> Value {
    json!({
        "title": "a scenario",
        "profile": "core",
        "requirements": ["core.a", "core.b"],
        "steps": steps,
    })
}

#[test]
fn every_named_requirement_must_be_proven_by_a_check() {
    let setup = json!({"name": "setup", "proves": [], "request": {"method": "GET", "path": "{base}"},
                       "expect": {"status": 200}});
    let proves_a = json!({"name": "a", "proves": ["core.a"], "request": {"method": "GET", "path": "{base}"},
                          "expect": {"status": 200}});
    let bad = two_requirements(json!([setup, proves_a]));
    assert_eq!(
        findings(&bad),
        [(Rule::RequirementUnproven, "/requirements/1".to_string())]
    );

    // An assertion's own proves counts, and a step without proves proves all.
    let by_assertion = json!({"name": "b", "proves": ["core.a"],
        "request": {"method": "GET", "path": "{base}"},
        "expect": {"status": 200, "assert": [{"pointer": "", "exists": true, "proves": ["core.b"]}]}});
    assert_eq!(
        findings(&two_requirements(json!([setup, by_assertion]))),
        []
    );
    let plain = json!({"name": "all", "request": {"method": "GET", "path": "{base}"}, "expect": {"status": 200}});
    assert_eq!(findings(&two_requirements(json!([plain]))), []);

    // A setup step's assertions prove nothing either.
    let setup_assertions = json!({"name": "setup", "proves": [],
        "request": {"method": "GET", "path": "{base}"},
        "expect": {"status": 200, "assert": [{"pointer": "", "exists": true}]}});
    assert_eq!(
        findings(&two_requirements(json!([setup_assertions, proves_a]))),
        [(Rule::RequirementUnproven, "/requirements/1".to_string())]
    );
}

fn create(body: Value) -> Value {
    json!({"name": "create", "request": {"method": "POST", "path": "{base}", "body": body},
           "expect": {"status": [400, 422], "schema": "error"}})
}

#[test]
fn every_create_objective_carries_the_nonce() {
    let good = json!({"objective": "goalpost {nonce} fine", "completion": {"check": "host"}});
    let bad = json!({"objective": "goalpost fine", "completion": {"check": "host"}});
    assert_eq!(findings(&scenario(2, json!([create(good.clone())]))), []);
    assert_eq!(
        findings(&scenario(
            4,
            json!([create(good.clone()), create(bad.clone())])
        )),
        [(
            Rule::CreateWithoutNonce,
            "/steps/1/request/body/objective".to_string()
        )]
    );
    // A body that is a list is checked element by element.
    assert_eq!(
        findings(&scenario(
            2,
            json!([create(json!([good.clone(), bad.clone()]))])
        )),
        [(
            Rule::CreateWithoutNonce,
            "/steps/0/request/body/1/objective".to_string()
        )]
    );
    // A wrongly typed objective cannot be stored as one: not this rule's.
    assert_eq!(
        findings(&scenario(2, json!([create(json!({"objective": 42}))]))),
        []
    );
    // Only creates: a PATCH of the objective is another rule's business.
    let patch = json!({"name": "edit", "request": {"method": "PATCH", "path": "{base}/x", "body": bad},
                       "expect": {"status": 200}});
    assert_eq!(findings(&scenario(1, json!([patch]))), []);
}

// ---- the command ------------------------------------------------------------

fn goalpost_lint(dir: &Path) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .args(["lint", "--scenarios"])
        .arg(dir)
        .output()
        .expect("goalpost runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

#[test]
fn the_command_exits_0_clean_1_findings_2_unreadable() {
    let (_clean_root, clean) =
        profiled_folder(&["core.a"], &[("core/one.json", good_file("core.a"))]);
    let (code, out) = goalpost_lint(&clean);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("clean"), "{out}");

    let (_dirty_root, dirty) = profiled_folder(
        &["core.a", "core.b"],
        &[("core/one.json", good_file("core.a"))],
    );
    let (code, out) = goalpost_lint(&dirty);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("[requirement-unnamed]"), "{out}");
    assert!(out.contains("/requirements/1/id"), "{out}");

    std::fs::write(dirty.join("requirements.json"), "nope").unwrap();
    let (code, out) = goalpost_lint(&dirty);
    assert_eq!(code, Some(2), "{out}");
}

// ---- the coverage map --------------------------------------------------------

/// `(rule, pointer, message)` of the `coverage-*` findings of `dir`.
fn coverage_findings(dir: &Path) -> Vec<(Rule, String, String)> {
    folder_findings(dir)
        .into_iter()
        .filter(|f| {
            matches!(
                f.rule,
                Rule::CoverageUnknown | Rule::CoverageUnmapped | Rule::CoverageUnaudited
            )
        })
        .map(|f| (f.rule, f.pointer, f.message))
        .collect()
}

#[test]
fn the_coverage_map_names_only_what_exists_and_every_requirement() {
    let (root, dir) = profiled_folder(
        &["core.a", "core.b"],
        &[
            ("core/one.json", good_file("core.a")),
            ("core/two.json", good_file("core.b")),
        ],
    );
    assert_eq!(coverage_findings(&dir), []);
    // A row naming a requirement and a scenario nobody has; `core.b` in
    // prose only, so in no row; `core.a` mapped but not audited.
    write_coverage(
        root.path(),
        "`core.b` is discussed here, outside any table.\n\
         | # | promise | requirements | scenarios |\n\
         |---|---|---|---|\n\
         | A.1 | a promise | `core.a`, `core.gone` | `core/one.json`, `core/none.json` |\n",
    );
    let found = coverage_findings(&dir);
    let rules: Vec<(Rule, String)> = found.iter().map(|(r, p, _)| (*r, p.clone())).collect();
    assert_eq!(
        rules,
        [
            (Rule::CoverageUnknown, "line 4".to_string()),
            (Rule::CoverageUnknown, "line 4".to_string()),
            (Rule::CoverageUnaudited, String::new()),
            (Rule::CoverageUnmapped, String::new()),
        ],
        "{found:?}"
    );
    assert!(found[0].2.contains("core.gone"), "{}", found[0].2);
    assert!(found[1].2.contains("core/none.json"), "{}", found[1].2);
    assert!(found[2].2.contains("core.a"), "{}", found[2].2);
    assert!(found[3].2.contains("core.b"), "{}", found[3].2);
    // No map at all: one finding says where it belongs.
    std::fs::remove_file(root.path().join("docs/COVERAGE.md")).unwrap();
    let found = coverage_findings(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, Rule::CoverageUnmapped);
    assert!(found[0].2.contains("docs/COVERAGE.md"), "{}", found[0].2);
}

#[test]
fn a_should_requirement_needs_a_row_but_no_audit() {
    let root = tempfile::tempdir().expect("tempdir");
    let scenarios = root.path().join("scenarios");
    std::fs::create_dir_all(scenarios.join("core")).expect("mkdir");
    let requirements = json!({ "requirements": [
        {"id": "core.s", "profile": "core", "level": "SHOULD", "clause": "PROFILE.md#core.s", "text": "t", "capability": []}
    ] });
    std::fs::write(
        scenarios.join("requirements.json"),
        requirements.to_string(),
    )
    .unwrap();
    std::fs::write(root.path().join("PROFILE.md"), "<a id=\"core.s\"></a>\n").unwrap();
    std::fs::write(
        scenarios.join("core/one.json"),
        serde_json::to_vec(&good_file("core.s")).unwrap(),
    )
    .unwrap();
    write_coverage(root.path(), "| P.1 | a promise | `core.s` |\n");
    assert_eq!(coverage_findings(&scenarios), []);
}

#[test]
fn the_real_coverage_map_is_consistent_with_the_registry() {
    let found = coverage_findings(&real_scenarios());
    assert!(found.is_empty(), "{found:?}");
    let text = std::fs::read_to_string(real_scenarios().join("../docs/COVERAGE.md"))
        .expect("docs/COVERAGE.md is committed");
    assert!(
        text.contains("<a id=\"audit\"></a>"),
        "the audit table has its anchor"
    );
}

#[test]
fn a_level_must_be_the_one_its_profile_md_section_states() {
    let (root, dir) = profiled_folder(
        &["core.a", "core.b"],
        &[
            ("core/one.json", good_file("core.a")),
            ("core/two.json", good_file("core.b")),
        ],
    );
    assert_eq!(folder_findings(&dir), []);

    // core.a's section says SHOULD; core.b's says no level at all.
    std::fs::write(
        root.path().join("PROFILE.md"),
        "<a id=\"core.a\"></a>\n### core.a\n\n**Level:** SHOULD (a qualifier).\n\n\
         **Applies to:** every host that advertises `agents.goals`.\n\n\
         <a id=\"core.b\"></a>\n### core.b\n\nThe rule.\n\n\
         **Applies to:** every host that advertises `agents.goals`.\n",
    )
    .unwrap();
    let found = folder_findings(&dir);
    let shown: Vec<(Rule, &str)> = found.iter().map(|f| (f.rule, f.pointer.as_str())).collect();
    assert_eq!(
        shown,
        [
            (Rule::LevelMismatch, "/requirements/0/level"),
            (Rule::LevelMismatch, "/requirements/1/level"),
        ]
    );
    assert!(
        found[0].message.contains("`**Level:** SHOULD`"),
        "{}",
        found[0]
    );
    assert!(found[1].message.contains("states no level"), "{}", found[1]);
}
