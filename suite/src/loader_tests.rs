use super::*;
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
        assert!(message.contains(words), "{message}");
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
