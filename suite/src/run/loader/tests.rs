use super::*;
use crate::testing::assert_contains;
use serde_json::json;

fn schemas() -> Schemas {
    Schemas::embedded().expect("embedded schemas compile")
}

fn requirements(ids: &[&str]) -> Value {
    json!({ "requirements": ids.iter().map(|id| json!({
        "id": id,
        "profile": id.split('.').next().unwrap_or_default(),
        "level": "MUST",
        "clause": "§2",
        "text": "a requirement",
        "capability": [],
    })).collect::<Vec<_>>() })
}

fn scenario(requirements: &[&str], steps: Value) -> Value {
    json!({
        "title": "a scenario",
        "profile": "core",
        "requirements": requirements,
        "checks": 1,
        "steps": steps,
    })
}

fn get_step() -> Value {
    json!({"name": "read", "request": {"method": "GET", "path": "{base}"}, "expect": {"status": 200}})
}

/// A scenarios folder with these files (path relative to it → JSON).
fn folder(files: &[(&str, &Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, value) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    }
    dir
}

#[test]
fn loads_sorted_scenarios_with_names_paths_and_pointers() {
    let registry = requirements(&["core.a", "core.b"]);
    let b = scenario(&["core.b"], json!([get_step()]));
    let a = scenario(
        &["core.a", "core.b"],
        json!([{
            "name": "create",
            "request": {"method": "POST", "path": "{base}", "body": {"objective": "x {nonce}"}},
            "expect": {"status": [200, 201], "schema": "goal", "assert": [
                {"pointer": "/state", "equals": "active"},
                {"header": "ETag", "exists": true}
            ]},
            "capture": {"goalId": {"pointer": "/id"}}
        }, {
            "name": "wait", "quietMs": 5, "why": "nothing may happen"
        }, {
            "name": "read back",
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200},
            "poll": {"timeoutMs": 100, "intervalMs": 10}
        }]),
    );
    let dir = folder(&[
        ("requirements.json", &registry),
        ("core/b.json", &b),
        ("core/a.json", &a),
    ]);
    let catalog = load(dir.path(), &schemas()).unwrap();
    let names: Vec<&str> = catalog.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["core::a", "core::b"]);
    let a = &catalog.scenarios[0];
    assert_eq!(a.path, dir.path().join("core/a.json"));
    assert_eq!(a.quiet_ms(), 5);
    assert_eq!(a.steps[2].pointer, "/steps/2");
    let Action::Request(create) = &a.steps[0].action else {
        panic!("first step is a request")
    };
    assert_eq!(create.expect.status, [200, 201]);
    assert_eq!(create.expect.checks(), 4);
    assert_eq!(
        create.expect.assertions[1].pointer,
        "/steps/0/expect/assert/1"
    );
    assert_eq!(
        create.expect.assertions[1].target,
        Target::Header("ETag".into())
    );
    let Action::Request(read) = &a.steps[2].action else {
        panic!("third step is a request")
    };
    assert_eq!(
        read.repeat,
        Repeat::Poll {
            timeout_ms: 100,
            interval_ms: 10
        }
    );
    assert_eq!(catalog.profiles(), BTreeSet::from(["core".to_string()]));
}

fn load_error(files: &[(&str, &Value)]) -> (LoadError, tempfile::TempDir) {
    let dir = folder(files);
    let error = load(dir.path(), &schemas()).expect_err("the folder must not load");
    (error, dir)
}

#[test]
fn an_invalid_scenario_names_its_file_and_pointer() {
    let registry = requirements(&["core.a"]);
    let typo = scenario(
        &["core.a"],
        json!([get_step(), {
            "name": "typo",
            "request": {"method": "GET", "path": "{base}"},
            "expect": {"status": 200, "assert": [{"pointer": "/state", "equal": "active"}]}
        }]),
    );
    let (error, dir) = load_error(&[("requirements.json", &registry), ("core/typo.json", &typo)]);
    let LoadError::Invalid { path, pointer, .. } = &error else {
        panic!("expected an invalid-file error, got {error:?}")
    };
    assert_eq!(path, &dir.path().join("core/typo.json"));
    assert!(pointer.starts_with("/steps/1/expect/assert/0"), "{pointer}");
    let text = error.to_string();
    assert!(
        text.contains("typo.json") && text.contains("/steps/1/expect/assert/0"),
        "{text}"
    );
}

#[test]
fn checks_the_schema_does_not_cover_are_still_caught_with_pointers() {
    let registry = requirements(&["core.a"]);
    let cases = [
        (
            json!([{"name": "x", "request": {"method": "GET", "path": "{base}/{goalId}"}, "expect": {"status": 200}}]),
            "/steps/0/request/path",
            "unknown variable `{goalId}`",
        ),
        (
            json!([{"name": "x", "request": {"method": "GET", "path": "{base}", "seam": "continue"}, "expect": {"status": 200}}]),
            "/steps/0/request/seam",
            "needs.seams",
        ),
        (
            json!([{"name": "x", "request": {"method": "GET", "path": "{base}", "as": "b"}, "expect": {"status": 200}}]),
            "/steps/0/request/as",
            "tenants",
        ),
        (
            json!([{"name": "x", "request": {"method": "GET", "path": "{base}"},
                    "expect": {"assert": [{"pointer": "/at", "withinMs": {"of": "later", "max": 5}}]}}]),
            "/steps/0/expect/assert/0/withinMs/of",
            "neither a timestamp nor a variable",
        ),
    ];
    for (steps, pointer, words) in cases {
        let bad = scenario(&["core.a"], steps);
        let (error, _dir) =
            load_error(&[("requirements.json", &registry), ("core/bad.json", &bad)]);
        let LoadError::Invalid {
            pointer: found,
            message,
            ..
        } = &error
        else {
            panic!("expected an invalid-file error, got {error:?}")
        };
        assert_eq!(found, pointer, "{error}");
        assert_contains(message, words);
    }
}

#[test]
fn a_scenario_in_the_wrong_folder_is_invalid() {
    let registry = requirements(&["core.a"]);
    let misplaced = scenario(&["core.a"], json!([get_step()]));
    let (error, _dir) = load_error(&[
        ("requirements.json", &registry),
        ("behavior/x.json", &misplaced),
    ]);
    assert!(
        matches!(&error, LoadError::Invalid { pointer, .. } if pointer == "/profile"),
        "{error:?}"
    );
}

#[test]
fn zero_scenario_files_is_an_error() {
    let registry = requirements(&["core.a"]);
    let (error, _dir) = load_error(&[("requirements.json", &registry)]);
    assert!(matches!(error, LoadError::NoScenarios { .. }), "{error:?}");
}

#[test]
fn an_unknown_requirement_stops_the_run() {
    let registry = requirements(&["core.a"]);
    let s = scenario(&["core.a", "core.nope"], json!([get_step()]));
    let (error, dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &s)]);
    let LoadError::UnknownRequirement { path, pointer, id } = &error else {
        panic!("expected an unknown-requirement error, got {error:?}")
    };
    assert_eq!(
        (pointer.as_str(), id.as_str()),
        ("/requirements/1", "core.nope")
    );
    assert_eq!(path, &dir.path().join("core/s.json"));
}

#[test]
fn a_requirement_no_scenario_names_stops_the_run() {
    let registry = requirements(&["core.a", "core.b"]);
    let s = scenario(&["core.a"], json!([get_step()]));
    let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &s)]);
    assert!(
        matches!(&error, LoadError::Unproven { id } if id == "core.b"),
        "{error:?}"
    );
}

#[test]
fn an_invalid_registry_names_its_pointer() {
    let mut registry = requirements(&["core.a"]);
    registry["requirements"][0]["level"] = json!("MAY");
    let s = scenario(&["core.a"], json!([get_step()]));
    let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &s)]);
    assert!(
        matches!(&error, LoadError::Invalid { pointer, .. } if pointer == "/requirements/0/level"),
        "{error:?}"
    );
}

#[test]
fn capability_tokens_are_typed_and_unknown_ones_refused() {
    let mut registry = requirements(&["core.a"]);
    registry["requirements"][0]["capability"] =
        json!(["mode:schedule", "seam:continue", "tenants:2"]);
    let mut s = scenario(&["core.a"], json!([get_step()]));
    s["needs"] = json!({"continuation": ["schedule"], "seams": ["continue"], "tenants": 2});
    let dir = folder(&[("requirements.json", &registry), ("core/s.json", &s)]);
    let catalog = load(dir.path(), &schemas()).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        catalog.requirements[0].capability,
        [
            Capability::Mode("schedule"),
            Capability::Seam("continue"),
            Capability::SecondTenant
        ]
    );
    for bad in [
        json!(["mode:hourly"]),
        json!(["tenants:3"]),
        json!("mode:manual"),
    ] {
        registry["requirements"][0]["capability"] = bad.clone();
        let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &s)]);
        assert!(
            matches!(&error, LoadError::Invalid { pointer, .. } if pointer.starts_with("/requirements/0/capability")),
            "{bad}: {error:?}"
        );
    }
    registry["requirements"][0]
        .as_object_mut()
        .unwrap()
        .remove("capability");
    let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &s)]);
    assert!(
        matches!(&error, LoadError::Invalid { .. }),
        "every requirement states its capability: {error:?}"
    );
}

#[test]
fn a_scenario_must_need_every_capability_of_what_it_proves() {
    let mut registry = requirements(&["core.a", "core.b"]);
    registry["requirements"][1]["capability"] = json!(["judge:verifier", "seam:events"]);
    let mut s = scenario(&["core.a", "core.b"], json!([get_step()]));
    s["needs"] = json!({"judge": "verifier"});
    let (error, dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &s)]);
    let LoadError::CapabilityUnneeded {
        path,
        pointer,
        id,
        capability,
    } = &error
    else {
        panic!("expected a capability the scenario does not need, got {error:?}")
    };
    assert_eq!(path, &dir.path().join("core/s.json"));
    assert_eq!(
        (pointer.as_str(), id.as_str(), *capability),
        ("/requirements/1", "core.b", Capability::Seam("events"))
    );
    assert!(error.to_string().contains("add it to `needs`"), "{error}");
    // Needing more than the requirement names is fine: the rule may hold
    // for every host even where one scenario can only judge it on some.
    s["needs"] =
        json!({"judge": "verifier", "seams": ["events", "continue"], "continuation": ["manual"]});
    let dir = folder(&[("requirements.json", &registry), ("core/s.json", &s)]);
    assert!(load(dir.path(), &schemas()).is_ok());
}

#[test]
fn a_file_that_is_not_json_names_its_path() {
    let registry = requirements(&["core.a"]);
    let dir = folder(&[("requirements.json", &registry)]);
    std::fs::create_dir_all(dir.path().join("core")).unwrap();
    std::fs::write(dir.path().join("core/broken.json"), "{ nope").unwrap();
    let error = load(dir.path(), &schemas()).unwrap_err();
    assert!(error.to_string().contains("broken.json"), "{error}");
    assert!(matches!(error, LoadError::NotJson { .. }));
}

#[test]
fn the_shipped_scenarios_load() {
    // The workspace's own scenarios must always pass the loader's checks.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let catalog = load(&dir, &schemas()).unwrap_or_else(|error| panic!("{error}"));
    assert!(!catalog.scenarios.is_empty());
}

// ---- the observed profile: mock blocks, mockLog steps, observations ----

fn observed(mock: Option<Value>, steps: Value, observations: Value) -> Value {
    let mut scenario = json!({
        "title": "an observed scenario",
        "profile": "observed",
        "requirements": ["observed.a"],
        "needs": {"seams": ["continue", "webhooks"]},
        "checks": 1,
        "observations": observations,
        "steps": steps,
    });
    if let Some(mock) = mock {
        scenario["mock"] = mock;
    }
    scenario
}

fn create_with_mock() -> Value {
    json!({
        "name": "create",
        "request": {"method": "POST", "path": "{base}", "body": {
            "objective": "o", "completion": {"check": "verifier", "verifierRef": "{mock.verifier}"},
            "continuation": {"mode": "manual", "armRef": "{mock.arm}#intervalMs=20"}}},
        "expect": {"status": 201},
        "capture": {"goalId": {"pointer": "/id"}, "createdMs": {"clock": "ms"}, "createdAt": {"clock": "rfc3339"}}
    })
}

fn mock_step(window: Value, assertions: Value) -> Value {
    json!({"name": "look at the log", "mockLog": window, "expect": {"assert": assertions}})
}

fn load_observed(scenario: &Value) -> Result<Scenario, LoadError> {
    let dir = folder(&[("observed/s.json", scenario)]);
    load_scenario(&dir.path().join("observed/s.json"), "observed", &schemas())
}

fn refused_at(scenario: &Value) -> (String, String) {
    match load_observed(scenario) {
        Err(LoadError::Invalid {
            pointer, message, ..
        }) => (pointer, message),
        other => panic!("expected an invalid scenario, got {other:?}"),
    }
}

#[test]
fn an_observed_scenario_loads_its_mock_steps_and_observations() {
    let scenario = observed(
        Some(json!({"verifier": {"satisfyOn": 2}, "arm": {"output": {"note": "{nonce}"}}})),
        json!([
            create_with_mock(),
            mock_step(
                json!({"goalId": "{goalId}", "sinceMs": "{createdMs}", "graceMs": 50}),
                json!([{"pointer": "/arm/count", "equals": 1}])
            ),
            {"name": "poll it", "mockLog": {}, "expect": {"assert": [{"pointer": "/total", "gte": 1}]},
             "poll": {"timeoutMs": 100, "intervalMs": 10}, "capture": {"calls": {"pointer": "/total"}}}
        ]),
        json!([{"what": "runs", "requirement": "observed.a", "suite": "{calls}", "host": "{goalId}"}]),
    );
    let loaded = load_observed(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let script = loaded.mock.as_ref().expect("the mock block");
    assert_eq!(script.verifier.satisfy_on, Some(2));
    let Action::MockLog(step) = &loaded.steps[1].action else {
        panic!("a mockLog step")
    };
    assert_eq!(step.window.goal_id.as_deref(), Some("{goalId}"));
    assert_eq!(step.window.since_ms, Some(json!("{createdMs}")));
    assert_eq!(step.window.grace_ms, 50);
    let Action::MockLog(polled) = &loaded.steps[2].action else {
        panic!("a mockLog step")
    };
    assert!(matches!(polled.repeat, Repeat::Poll { .. }));
    let Action::Request(create) = &loaded.steps[0].action else {
        panic!("a request step")
    };
    assert_eq!(
        create.capture.get("createdMs"),
        Some(&Capture::Clock(ClockFormat::Ms))
    );
    assert_eq!(
        create.capture.get("createdAt"),
        Some(&Capture::Clock(ClockFormat::Rfc3339))
    );
    assert_eq!(loaded.observations.len(), 1);
    assert_eq!(loaded.observations[0].host, Some(json!("{goalId}")));
}

#[test]
fn a_mock_block_needs_the_webhooks_seam() {
    let mut scenario = observed(Some(json!({})), json!([create_with_mock()]), json!([]));
    scenario["needs"] = json!({"seams": ["continue"]});
    let (pointer, message) = refused_at(&scenario);
    assert_eq!(pointer, "/mock");
    assert_contains(&message, "webhooks");
}

#[test]
fn mock_variables_and_steps_need_the_mock_block() {
    let (pointer, message) = refused_at(&observed(None, json!([create_with_mock()]), json!([])));
    assert_eq!(pointer, "/steps/0/request/body");
    assert_contains(&message, "{mock.verifier}");
    let (pointer, _) = refused_at(&observed(
        None,
        json!([
            get_step(),
            mock_step(json!({}), json!([{"pointer": "/total", "equals": 0}]))
        ]),
        json!([]),
    ));
    assert_eq!(pointer, "/steps/1/mockLog");
}

#[test]
fn a_mock_log_step_sends_nothing_and_has_no_headers() {
    let with_header = observed(
        Some(json!({})),
        json!([mock_step(
            json!({}),
            json!([{"header": "ETag", "exists": true}])
        )]),
        json!([]),
    );
    assert_eq!(refused_at(&with_header).0, "/steps/0/expect/assert/0");
    let mut with_status = observed(
        Some(json!({})),
        json!([mock_step(
            json!({}),
            json!([{"pointer": "/total", "equals": 0}])
        )]),
        json!([]),
    );
    with_status["steps"][0]["expect"]["status"] = json!(200);
    assert!(refused_at(&with_status).0.starts_with("/steps/0"));
    let mut header_capture = observed(
        Some(json!({})),
        json!([mock_step(
            json!({}),
            json!([{"pointer": "/total", "equals": 0}])
        )]),
        json!([]),
    );
    header_capture["steps"][0]["capture"] = json!({"etag": {"header": "ETag"}});
    assert_eq!(refused_at(&header_capture).0, "/steps/0/capture/etag");
    let both = observed(
        Some(json!({})),
        json!([{"name": "x", "mockLog": {}, "request": {"method": "GET", "path": "{base}"},
                "expect": {"assert": [{"pointer": "/total", "equals": 0}]}}]),
        json!([]),
    );
    assert!(load_observed(&both).is_err());
}

#[test]
fn windows_take_milliseconds_or_one_variable() {
    let window = |since: Value| {
        observed(
            Some(json!({})),
            json!([
                create_with_mock(),
                mock_step(
                    json!({"sinceMs": since}),
                    json!([{"pointer": "/total", "equals": 0}])
                )
            ]),
            json!([]),
        )
    };
    assert!(load_observed(&window(json!(120))).is_ok());
    assert!(load_observed(&window(json!("{createdMs}"))).is_ok());
    assert!(refused_at(&window(json!("{createdMs}0")))
        .0
        .starts_with("/steps/1"));
    let (pointer, message) = refused_at(&window(json!("{later}")));
    assert_eq!(pointer, "/steps/1/mockLog/sinceMs");
    assert_contains(&message, "{later}");
    let grace_alone = observed(
        Some(json!({})),
        json!([mock_step(
            json!({"graceMs": 5}),
            json!([{"pointer": "/total", "equals": 0}])
        )]),
        json!([]),
    );
    assert!(refused_at(&grace_alone).0.starts_with("/steps/0"));
}

#[test]
fn scripts_are_checked_with_pointers_and_render_only_builtins() {
    let bad_reply = observed(
        Some(json!({"arm": {"replies": [{"iteration": 1}]}})),
        json!([create_with_mock()]),
        json!([]),
    );
    assert!(refused_at(&bad_reply).0.starts_with("/mock/arm/replies/0"));
    let captured = observed(
        Some(json!({"arm": {"output": "{goalId}"}})),
        json!([create_with_mock()]),
        json!([]),
    );
    let (pointer, message) = refused_at(&captured);
    assert_eq!(pointer, "/mock");
    assert_contains(&message, "{goalId}");
}

#[test]
fn observations_name_own_requirements_and_captured_variables() {
    let foreign = observed(
        Some(json!({})),
        json!([create_with_mock()]),
        json!([{"what": "x", "requirement": "observed.b", "suite": 1}]),
    );
    assert_eq!(refused_at(&foreign).0, "/observations/0/requirement");
    let uncaptured = observed(
        Some(json!({})),
        json!([create_with_mock()]),
        json!([{"what": "x", "suite": "{goalId}", "host": "{nowhere}"}]),
    );
    assert_eq!(refused_at(&uncaptured).0, "/observations/0/host");
}

#[test]
fn proves_on_steps_and_assertions_load_and_resolve() {
    let registry = requirements(&["core.a", "core.b"]);
    let file = scenario(
        &["core.a", "core.b"],
        json!([{
            "name": "setup",
            "proves": [],
            "request": {"method": "GET", "path": "{base}"},
            "expect": {"status": 200}
        }, {
            "name": "create",
            "proves": ["core.a"],
            "request": {"method": "POST", "path": "{base}", "body": {"objective": "goalpost {nonce}"}},
            "expect": {"status": 201, "assert": [
                {"pointer": "/state", "equals": "active"},
                {"header": "Location", "exists": true, "proves": ["core.b"]}
            ]}
        }, get_step()]),
    );
    let dir = folder(&[("requirements.json", &registry), ("core/p.json", &file)]);
    let catalog = load(dir.path(), &schemas()).unwrap();
    let scenario = &catalog.scenarios[0];
    let [setup, create, read] = &scenario.steps[..] else {
        panic!("three steps")
    };
    assert!(scenario.step_proves(setup).is_empty());
    assert_eq!(scenario.step_proves(create), ["core.a"]);
    assert_eq!(scenario.step_proves(read), ["core.a", "core.b"]);
    let Action::Request(request) = &create.action else {
        panic!("a request step")
    };
    let [state, location] = &request.expect.assertions[..] else {
        panic!("two assertions")
    };
    assert_eq!(scenario.assertion_proves(create, state), ["core.a"]);
    assert_eq!(scenario.assertion_proves(create, location), ["core.b"]);
}

#[test]
fn a_proves_id_the_scenario_does_not_name_stops_the_run() {
    let registry = requirements(&["core.a", "core.b"]);
    let other = scenario(&["core.b"], json!([get_step()]));
    let step_level = scenario(
        &["core.a"],
        json!([{
            "name": "read",
            "proves": ["core.b"],
            "request": {"method": "GET", "path": "{base}"},
            "expect": {"status": 200}
        }]),
    );
    let (error, _dir) = load_error(&[
        ("requirements.json", &registry),
        ("core/other.json", &other),
        ("core/s.json", &step_level),
    ]);
    let LoadError::Invalid {
        pointer, message, ..
    } = &error
    else {
        panic!("expected an invalid-file error, got {error:?}")
    };
    assert_eq!(pointer, "/steps/0/proves/0");
    assert_contains(message, "core.b");
    let assertion_level = scenario(
        &["core.a"],
        json!([{
            "name": "read",
            "request": {"method": "GET", "path": "{base}"},
            "expect": {"status": 200, "assert": [
                {"pointer": "/x", "exists": true, "proves": ["core.b"]}
            ]}
        }]),
    );
    let (error, _dir) = load_error(&[
        ("requirements.json", &registry),
        ("core/other.json", &other),
        ("core/s.json", &assertion_level),
    ]);
    let LoadError::Invalid { pointer, .. } = &error else {
        panic!("expected an invalid-file error, got {error:?}")
    };
    assert_eq!(pointer, "/steps/0/expect/assert/0/proves/0");
}

#[test]
fn needs_judge_and_options_load_and_are_checked_by_the_schema() {
    let registry = requirements(&["core.a"]);
    let mut file = scenario(&["core.a"], json!([get_step()]));
    file["needs"] = json!({"judge": "host", "options": ["webhook-secret"]});
    let dir = folder(&[("requirements.json", &registry), ("core/n.json", &file)]);
    let catalog = load(dir.path(), &schemas()).unwrap();
    let needs = &catalog.scenarios[0].needs;
    assert_eq!(needs.judge.as_deref(), Some("host"));
    assert_eq!(needs.options, ["webhook-secret"]);
    for bad in [json!({"judge": "oracle"}), json!({"options": ["token-c"]})] {
        let mut file = scenario(&["core.a"], json!([get_step()]));
        file["needs"] = bad;
        let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/n.json", &file)]);
        assert!(matches!(error, LoadError::Invalid { .. }), "{error:?}");
    }
}

#[test]
fn discovery_mode_is_a_known_variable() {
    let registry = requirements(&["core.a"]);
    let file = scenario(
        &["core.a"],
        json!([{
            "name": "create",
            "request": {"method": "POST", "path": "{base}", "body": {
                "objective": "goalpost {nonce}",
                "completion": {"check": "{discovery.judge}"},
                "continuation": {"mode": "{discovery.mode}"}
            }},
            "expect": {"status": 201}
        }]),
    );
    let dir = folder(&[("requirements.json", &registry), ("core/m.json", &file)]);
    load(dir.path(), &schemas()).unwrap();
}

#[test]
fn a_quiet_step_proves_nothing() {
    let registry = requirements(&["core.a"]);
    let file = scenario(
        &["core.a"],
        json!([get_step(), {"name": "wait", "quietMs": 5, "why": "w", "proves": []}]),
    );
    let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/q.json", &file)]);
    assert!(matches!(error, LoadError::Invalid { .. }), "{error:?}");
}

#[test]
fn the_profile_version_comes_from_requirements_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    assert_eq!(profile_version(Some(dir.path())), None);
    std::fs::write(
        dir.path().join(REQUIREMENTS_FILE),
        r#"{"profileVersion": "1.0", "requirements": []}"#,
    )
    .expect("write");
    assert_eq!(profile_version(Some(dir.path())).as_deref(), Some("1.0"));
    std::fs::write(dir.path().join(REQUIREMENTS_FILE), "[]").expect("write");
    assert_eq!(profile_version(Some(dir.path())), None);
    // The embedded registry is the published profile.
    assert_eq!(profile_version(None).as_deref(), Some("1.0"));
}

#[test]
fn a_step_names_an_endpoint_only_within_needs_endpoints() {
    let registry = requirements(&["cluster.a"]);
    let on = |endpoint: u8, endpoints: u8| {
        json!({
            "title": "a cluster scenario",
            "profile": "cluster",
            "requirements": ["cluster.a"],
            "needs": {"endpoints": endpoints},
            "checks": 1,
            "steps": [{
                "name": "read on one replica",
                "request": {"method": "GET", "path": "{base}", "endpoint": endpoint},
                "expect": {"status": 200}
            }],
        })
    };
    let fits = on(2, 2);
    let dir = folder(&[("requirements.json", &registry), ("cluster/s.json", &fits)]);
    let catalog = load(dir.path(), &schemas()).expect("loads");
    let scenario = &catalog.scenarios[0];
    assert_eq!(scenario.needs.endpoints, 2);
    let Action::Request(step) = &scenario.steps[0].action else {
        panic!("a request step")
    };
    assert_eq!(step.request.endpoint, Some(2));
    let beyond = on(3, 2);
    let (error, _dir) = load_error(&[
        ("requirements.json", &registry),
        ("cluster/s.json", &beyond),
    ]);
    let LoadError::Invalid { pointer, .. } = &error else {
        panic!("expected an invalid-file error, got {error:?}")
    };
    assert_eq!(pointer, "/steps/0/request/endpoint", "{error}");
}

#[test]
fn a_stream_read_and_a_host_events_need_are_read() {
    let registry = requirements(&["behavior.a"]);
    let with = |stream_ms: Value, host_events: Value| {
        json!({
            "title": "a stream",
            "profile": "behavior",
            "requirements": ["behavior.a"],
            "needs": {"hostEvents": host_events},
            "checks": 1,
            "steps": [{
                "name": "read the stream",
                "request": {"method": "GET", "path": "{discovery.eventsStream}", "streamMs": stream_ms},
                "expect": {"status": 200}
            }],
        })
    };
    let fits = with(json!(1500), json!("stream"));
    let dir = folder(&[("requirements.json", &registry), ("behavior/s.json", &fits)]);
    let catalog = load(dir.path(), &schemas()).expect("loads");
    let scenario = &catalog.scenarios[0];
    assert_eq!(scenario.needs.host_events.as_deref(), Some("stream"));
    let Action::Request(step) = &scenario.steps[0].action else {
        panic!("a request step")
    };
    assert_eq!(step.request.stream_ms, Some(1500));
    for bad in [
        with(json!(0), json!("stream")),
        with(json!(10), json!("feed")),
    ] {
        let (error, _dir) =
            load_error(&[("requirements.json", &registry), ("behavior/s.json", &bad)]);
        assert!(matches!(error, LoadError::Invalid { .. }), "{error:?}");
    }
}

// ---- `when`: steps conditional on an earlier step's status ----

fn named(name: &str, path: &str) -> Value {
    json!({"name": name, "request": {"method": "GET", "path": path}, "expect": {"status": [200, 404]}})
}

fn when(name: &str, on: &str, status: Value) -> Value {
    json!({"name": name, "when": {"step": on, "status": status},
           "request": {"method": "GET", "path": "{base}"}, "expect": {"status": 200}})
}

fn load_core(steps: Value) -> Result<Scenario, LoadError> {
    let file = scenario(&["core.a"], steps);
    let dir = folder(&[("core/s.json", &file)]);
    load_scenario(&dir.path().join("core/s.json"), "core", &schemas())
}

fn refused(steps: Value) -> (String, String) {
    match load_core(steps) {
        Err(LoadError::Invalid {
            pointer, message, ..
        }) => (pointer, message),
        other => panic!("expected an invalid scenario, got {other:?}"),
    }
}

#[test]
fn a_when_resolves_its_step_and_reads_classes_and_codes() {
    let loaded = load_core(json!([
        named("patch", "{base}"),
        named("other", "{base}/x"),
        when("applied", "patch", json!("2xx")),
        when("refused", "patch", json!(["4xx", 501])),
        get_step(),
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.steps[0].when, None);
    let applied = loaded.steps[2].when.as_ref().expect("a when");
    assert_eq!(applied.pointer, "/steps/2/when");
    assert_eq!(applied.step, 0);
    assert_eq!(applied.status, [StatusMatch::Class(2)]);
    assert!(applied.holds(200) && applied.holds(204) && !applied.holds(422));
    let refused = loaded.steps[3].when.as_ref().expect("a when");
    assert_eq!(
        refused.status,
        [StatusMatch::Class(4), StatusMatch::Code(501)]
    );
    assert!(refused.holds(409) && refused.holds(501) && !refused.holds(500) && !refused.holds(200));
    assert_eq!(refused.to_string(), "step 1 \"patch\" answered 4xx or 501");
    assert_eq!(loaded.steps[4].when, None);
}

#[test]
fn a_when_that_cannot_be_read_is_refused_at_its_location() {
    let parallel = json!({"name": "race", "request": {"method": "GET", "path": "{base}"},
                          "parallel": {"count": 2}, "expect": {"status": 200}});
    let cases = [
        // No such step, or only a later one, or this step itself.
        (
            json!([get_step(), when("x", "nope", json!("2xx"))]),
            "/steps/1/when/step",
            "no earlier step is named `nope`",
        ),
        (
            json!([when("x", "later", json!("2xx")), named("later", "{base}")]),
            "/steps/0/when/step",
            "no earlier step is named `later`",
        ),
        (
            json!([get_step(), when("x", "x", json!("2xx"))]),
            "/steps/1/when/step",
            "no earlier step is named `x`",
        ),
        // Two earlier steps of that name.
        (
            json!([get_step(), get_step(), when("x", "read", json!("2xx"))]),
            "/steps/2/when/step",
            "2 earlier steps are named `read` (/steps/0, /steps/1)",
        ),
        // A step without one status to read.
        (
            json!([parallel, when("x", "race", json!("2xx"))]),
            "/steps/1/when/step",
            "is a parallel step",
        ),
        (
            json!([{"name": "wait", "quietMs": 5, "why": "time"}, get_step(), when("x", "wait", json!("2xx"))]),
            "/steps/2/when/step",
            "is a quiet step",
        ),
        // A step that may not have run.
        (
            json!([
                get_step(),
                when("maybe", "read", json!("2xx")),
                when("x", "maybe", json!("2xx"))
            ]),
            "/steps/2/when/step",
            "has a `when` of its own",
        ),
        // A class or code that is none.
        (
            json!([get_step(), when("x", "read", json!(["2xx", 600]))]),
            "/steps/1/when/status",
            "",
        ),
    ];
    for (steps, pointer, words) in cases {
        let (found, message) = refused(steps);
        assert!(
            found.starts_with(pointer),
            "{found} vs {pointer}: {message}"
        );
        assert_contains(&message, words);
    }
    // A class that is none, or a list of nothing, is stopped by the schema
    // at the same place.
    let (found, message) = refused(json!([get_step(), when("x", "read", json!("6xx"))]));
    assert!(
        found.starts_with("/steps/1/when/status"),
        "{found}: {message}"
    );
    let (found, message) = refused(json!([get_step(), when("x", "read", json!([]))]));
    assert!(
        found.starts_with("/steps/1/when/status"),
        "{found}: {message}"
    );
}

#[test]
fn a_conditional_step_captures_nothing_and_a_quiet_step_is_never_conditional() {
    let mut capturing = when("x", "read", json!("2xx"));
    capturing["capture"] = json!({"goalId": {"pointer": "/id"}});
    let (pointer, message) = refused(json!([get_step(), capturing]));
    assert_eq!(pointer, "/steps/1/capture");
    assert_contains(&message, "captures nothing");
    let (pointer, _) = refused(json!([
        get_step(),
        {"name": "wait", "quietMs": 5, "why": "time", "when": {"step": "read", "status": "2xx"}},
        get_step()
    ]));
    assert!(pointer.starts_with("/steps/1"), "{pointer}");
}

#[test]
fn a_mock_log_step_may_be_conditional_but_never_read() {
    let mock = json!({"verifier": {"satisfyOn": 1}});
    let mut look = mock_step(json!({}), json!([{"pointer": "/total", "gte": 0}]));
    look["when"] = json!({"step": "create", "status": "2xx"});
    let loaded = load_observed(&observed(
        Some(mock.clone()),
        json!([create_with_mock(), look]),
        json!([]),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.steps[1].when.as_ref().map(|w| w.step), Some(0));
    let read_it = json!({"name": "after", "when": {"step": "look at the log", "status": "2xx"},
                         "request": {"method": "GET", "path": "{base}"}, "expect": {"status": 200}});
    let (pointer, message) = refused_at(&observed(
        Some(mock),
        json!([
            create_with_mock(),
            mock_step(json!({}), json!([{"pointer": "/total", "gte": 0}])),
            read_it
        ]),
        json!([]),
    ));
    assert_eq!(pointer, "/steps/2/when/step");
    assert_contains(&message, "is a mockLog step");
}

#[test]
fn the_shipped_scenarios_ask_for_attention_unprompted_only_as_its_owner() {
    // RFC 0097 defines no attention view, and a host without one may
    // answer 404 to any caller before it looks at the credential: an
    // anonymous or other-tenant request to it says something about the
    // host only where the owner's read showed the view is served.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let catalog = load(&dir, &schemas()).unwrap_or_else(|error| panic!("{error}"));
    let mut unprompted = Vec::new();
    for scenario in &catalog.scenarios {
        for step in &scenario.steps {
            let Action::Request(request) = &step.action else {
                continue;
            };
            let req = &request.request;
            // The goal's attention view itself; the attention profile's
            // routes below it run only against a host that advertises them.
            if req.path.ends_with("/attention")
                && req.principal != Principal::A
                && step.when.is_none()
            {
                unprompted.push(format!("{} {}", scenario.path.display(), step.pointer));
            }
        }
    }
    assert!(unprompted.is_empty(), "{unprompted:#?}");
}

/// A scenario that scripts its verdicts: a create naming a fixture judge
/// (captured as `goalId`), a `when` on it, and a read.
fn scripted(extra: Value) -> Value {
    let mut steps = vec![
        json!({
            "name": "create",
            "proves": [],
            "request": {"method": "POST", "path": "{base}", "body": {
                "objective": "goalpost {nonce}",
                "completion": {"check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=2"},
                "continuation": {"mode": "{discovery.mode}"}
            }},
            "expect": {"status": [201, 200]},
            "capture": {"goalId": {"pointer": "/id"}}
        }),
        json!({
            "name": "read",
            "when": {"step": "create", "status": "2xx"},
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [{"pointer": "/completion/lastVerdict", "equals": null}]}
        }),
    ];
    if !extra.is_null() {
        steps.push(extra);
    }
    let mut file = scenario(&["core.a"], Value::Array(steps));
    file["needs"] = json!({"judge": "scripted", "seams": ["fixtures"]});
    file
}

#[test]
fn a_scripted_scenario_moves_its_refs_to_the_seam_on_a_host_judge() {
    let registry = requirements(&["core.a"]);
    let file = scripted(Value::Null);
    let dir = folder(&[("requirements.json", &registry), ("core/s.json", &file)]);
    let catalog = load(dir.path(), &schemas()).unwrap();
    let written = &catalog.scenarios[0];
    let moved = scripted_judge::through_seam(written).expect("scriptable");
    // No step is added: the create itself carries the script, so it is in
    // force before the goal's first run, whatever its mode.
    assert_eq!(moved.steps.len(), 2);
    assert!(moved.needs.seams.iter().any(|seam| seam == "scriptedJudge"));
    let Action::Request(create) = &moved.steps[0].action else {
        panic!("the create stays first")
    };
    let Body::Json(body) = &create.request.body else {
        panic!("a JSON body")
    };
    assert_eq!(body["completion"], json!({"check": "host"}));
    assert_eq!(body["objective"], "goalpost {nonce}");
    assert_eq!(
        create
            .request
            .headers
            .get(scripted_judge::HEADER)
            .map(String::as_str),
        Some("conformance:verifier?satisfyOn=2")
    );
    assert_eq!(create.expect.status, [201, 200]);
    // The read and its `when` are as written.
    assert_eq!(moved.steps[1], written.steps[1]);
    // Nothing changes on a verifier host.
    assert!(!scripted_judge::applies(written, Some("verifier")));
    assert!(scripted_judge::applies(written, Some("host")));
}

#[test]
fn a_scripted_scenario_that_is_about_verifier_refs_is_refused() {
    let registry = requirements(&["core.a"]);
    let patch = json!({
        "name": "patch the ref",
        "request": {"method": "PATCH", "path": "{base}/{goalId}", "body": {
            "completion": {"verifierRef": "conformance:verifier"}
        }},
        "expect": {"status": 200}
    });
    let read_back = json!({
        "name": "read the ref",
        "request": {"method": "GET", "path": "{base}/{goalId}"},
        "expect": {"status": 200, "assert": [{"pointer": "/completion/verifierRef", "equals": "x"}]}
    });
    for (extra, at) in [
        (patch, "/steps/2/request/body/completion"),
        (read_back, "/steps/2/expect/assert/0"),
    ] {
        let file = scripted(extra);
        let (error, _dir) = load_error(&[("requirements.json", &registry), ("core/s.json", &file)]);
        let LoadError::Invalid {
            pointer, message, ..
        } = error
        else {
            panic!("{error:?}")
        };
        assert_eq!(pointer, at, "{message}");
    }
    let mut unscripted = scripted(Value::Null);
    unscripted["steps"][0]["request"]["body"]["completion"] = json!({"check": "{discovery.judge}"});
    let (error, _dir) = load_error(&[
        ("requirements.json", &registry),
        ("core/s.json", &unscripted),
    ]);
    assert!(
        matches!(&error, LoadError::Invalid { pointer, .. } if pointer == "/needs/judge"),
        "{error:?}"
    );
}
