//! The observed profile's machinery against a small fake host that calls
//! the suite's mock: `mockLog` steps, windows, clock captures, the "never
//! called" message and filled observations, proven without the reference
//! host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use goalpost::http::{Http, DEFAULT_BODY_CAP};
use goalpost::mock::{MockConfig, MockServer};
use goalpost::run::discovery::Capabilities;
use goalpost::run::driver::{Driver, HostTarget};
use goalpost::run::loader::load_scenario;
use goalpost::run::outcome::Outcome;
use goalpost::run::outcome::ScenarioResult;
use goalpost_schemas::Schemas;
use serde_json::{json, Value};

const BASE: &str = "/v1/host/sample/goals";
const SECRET: &str = "fake-secret";

/// How the fake host misbehaves.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// Advertise webhooks but run nothing.
    never_call: bool,
    /// Call the arm twice per iteration.
    extra_run: bool,
}

#[derive(Default)]
struct Goal {
    arm: String,
    verifier: String,
    objective: String,
    iterations: u64,
    run_ids: Vec<String>,
}

#[derive(Clone)]
struct FakeHost {
    faults: Faults,
    goals: Arc<Mutex<HashMap<String, Goal>>>,
    client: reqwest::Client,
}

async fn create(State(host): State<FakeHost>, Json(body): Json<Value>) -> Response {
    let text = |pointer: &str| {
        body.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut goals = host.goals.lock().unwrap();
    let id = format!("goal-{}", goals.len() + 1);
    goals.insert(
        id.clone(),
        Goal {
            // The fragment carries host-side parameters and is never sent.
            arm: text("/continuation/armRef")
                .split('#')
                .next()
                .unwrap_or_default()
                .to_string(),
            verifier: text("/completion/verifierRef"),
            objective: text("/objective"),
            ..Goal::default()
        },
    );
    (
        StatusCode::CREATED,
        Json(json!({"id": id, "state": "active"})),
    )
        .into_response()
}

async fn call(host: &FakeHost, url: &str, body: Value) -> Value {
    // Signed as PROFILE.md's seam-webhooks says: under the secret itself.
    let text = body.to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    let key = goalpost_host::webhook::WebhookSecret::new(SECRET).expect("a valid secret");
    let response = host
        .client
        .post(url)
        .header("content-type", "application/json")
        .header(
            "x-goalpost-signature",
            goalpost_host::webhook::signature::sign(&key, now, text.as_bytes()),
        )
        .body(text)
        .send()
        .await
        .expect("the mock answers");
    response.json().await.unwrap_or(Value::Null)
}

async fn run_once(host: &FakeHost, id: &str) -> Option<(Value, u64)> {
    let (arm, verifier, objective, iteration) = {
        let mut goals = host.goals.lock().unwrap();
        let goal = goals.get_mut(id)?;
        goal.iterations += 1;
        (
            goal.arm.clone(),
            goal.verifier.clone(),
            goal.objective.clone(),
            goal.iterations,
        )
    };
    let run_id = format!("run-{id}-{iteration}");
    host.goals
        .lock()
        .unwrap()
        .get_mut(id)?
        .run_ids
        .push(run_id.clone());
    let remaining = json!({"iterations": null, "costUsd": null, "deadline": null});
    let run = call(
        host,
        &arm,
        json!({"goalId": id, "runId": run_id, "iteration": iteration,
               "objective": objective, "remaining": remaining}),
    )
    .await;
    if host.faults.extra_run {
        call(
            host,
            &arm,
            json!({"goalId": id, "runId": format!("{run_id}-extra"), "iteration": iteration,
                   "objective": objective, "remaining": remaining}),
        )
        .await;
    }
    let verdict = call(
        host,
        &verifier,
        json!({"goalId": id, "runId": run_id, "iteration": iteration, "output": run["output"]}),
    )
    .await;
    Some((verdict, iteration))
}

async fn continue_goal(State(host): State<FakeHost>, Path(id): Path<String>) -> Response {
    if host.faults.never_call {
        let mut goals = host.goals.lock().unwrap();
        let Some(goal) = goals.get_mut(&id) else {
            return StatusCode::NOT_FOUND.into_response();
        };
        goal.iterations += 1;
        let iterations = goal.iterations;
        return Json(
            json!({"goal": {"id": id, "progress": {"iterations": iterations}},
                           "evaluation": {"satisfied": false}}),
        )
        .into_response();
    }
    match run_once(&host, &id).await {
        Some((verdict, iterations)) => {
            let satisfied = verdict["satisfied"] == true;
            Json(json!({
                "goal": {"id": id, "state": if satisfied { "satisfied" } else { "active" },
                         "progress": {"iterations": iterations}},
                "evaluation": {"satisfied": satisfied}
            }))
            .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn read(State(host): State<FakeHost>, Path(id): Path<String>) -> Response {
    let goals = host.goals.lock().unwrap();
    match goals.get(&id) {
        Some(goal) => Json(json!({"id": id, "progress": {"iterations": goal.iterations,
                                                          "contributingRunIds": goal.run_ids}}))
        .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn start_host(faults: Faults) -> String {
    let host = FakeHost {
        faults,
        goals: Arc::default(),
        client: goalpost::http::client(),
    };
    let app = Router::new()
        .route(
            "/.well-known/openwop",
            get(|| async {
                Json(json!({"protocol": "openwop",
                    "agents": {"goals": {"judge": "verifier", "continuation": ["manual"]}},
                    "conformanceSeams": {"goals": {"basePath": BASE, "continue": true, "webhooks": true}}}))
            }),
        )
        .route(BASE, post(create))
        .route(&format!("{BASE}/{{id}}"), get(read))
        .route(&format!("{BASE}/{{id}}/continue"), post(continue_goal))
        .with_state(host);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}")
}

struct Setup {
    driver: Driver,
    mock: Arc<MockServer>,
    dir: tempfile::TempDir,
    schemas: Schemas,
}

async fn setup(faults: Faults, secret: Option<&str>) -> Setup {
    let base_url = start_host(faults).await;
    let capabilities = Capabilities {
        goals: true,
        continuation: ["manual".to_string()].into(),
        continuation_order: vec!["manual".to_string()],
        seams: ["continue", "webhooks"].map(String::from).into(),
        base_path: BASE.to_string(),
        judge: Some("verifier".to_string()),
        requires_bounds: true,
        egress_denies_internal: false,
        reported_runs: Default::default(),
        attention: false,
        host_events: Default::default(),
        events_stream: None,
    };
    let target = HostTarget {
        base_url,
        capabilities,
        token_a: Some("token-a".to_string()),
        token_b: None,
        authority: Default::default(),
    };
    let schemas = Arc::new(Schemas::embedded().expect("schemas"));
    let mock = Arc::new(
        MockServer::start(
            MockConfig::local(secret.map(str::to_string)),
            schemas.clone(),
            time::OffsetDateTime::now_utc,
        )
        .await
        .expect("the mock starts"),
    );
    let http = Http::new(1.0, DEFAULT_BODY_CAP).expect("client");
    Setup {
        driver: Driver::new(http, Arc::new(target), schemas, 1.0).with_mock(mock.clone()),
        mock,
        dir: tempfile::tempdir().expect("tempdir"),
        schemas: Schemas::embedded().expect("schemas"),
    }
}

fn scenario(checks: u32, mock: Value, steps: Value, observations: Value) -> Value {
    json!({"title": "fake observed", "profile": "observed", "requirements": ["observed.fake"],
           "needs": {"seams": ["continue", "webhooks"]}, "checks": checks, "mock": mock,
           "observations": observations, "steps": steps})
}

async fn run(setup: &Setup, scenario: Value, nonce: &str) -> ScenarioResult {
    let path = setup
        .dir
        .path()
        .join("observed")
        .join(format!("{nonce}.json"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, scenario.to_string()).unwrap();
    let scenario = load_scenario(&path, "observed", &setup.schemas)
        .unwrap_or_else(|error| panic!("fixture scenario must load: {error}"));
    setup.driver.run(&scenario, nonce).await
}

fn create_step() -> Value {
    json!({
        "name": "create a goal pointing at the mock",
        "request": {"method": "POST", "path": "{base}", "body": {
            "objective": "goalpost {nonce}",
            "completion": {"check": "verifier", "verifierRef": "{mock.verifier}"},
            "continuation": {"mode": "manual", "armRef": "{mock.arm}#intervalMs=50"}}},
        "expect": {"status": 201},
        "capture": {"goalId": {"pointer": "/id"}}
    })
}

fn continue_step(capture: Value) -> Value {
    json!({
        "name": "continue",
        "request": {"method": "POST", "path": "{base}/{goalId}/continue", "seam": "continue"},
        "expect": {"status": 200},
        "capture": capture
    })
}

#[tokio::test]
async fn the_suite_counts_what_the_host_dispatched_and_fills_observations() {
    let setup = setup(Faults::default(), Some(SECRET)).await;
    let steps = json!([
        create_step(),
        continue_step(json!({"firstMs": {"clock": "ms"}, "firstAt": {"clock": "rfc3339"}})),
        continue_step(json!({"hostIterations": {"pointer": "/goal/progress/iterations"}})),
        {
            "name": "two runs, two verdicts, the second satisfied",
            "mockLog": {"goalId": "{goalId}"},
            "expect": {"assert": [
                {"pointer": "/arm/count", "equals": 2},
                {"pointer": "/arm/iterations", "equals": [1, 2]},
                {"pointer": "/verifier/satisfiedAnswers", "equals": 1},
                {"pointer": "/calls", "map": "/endpoint", "equals": ["arm", "verifier", "arm", "verifier"]},
                {"pointer": "/calls", "map": "/seq", "increasing": true},
                {"pointer": "/calls/3/atMs", "gte": "{firstMs}"},
                {"pointer": "/calls/0/body/objective", "equals": "goalpost {nonce}"},
                {"pointer": "/calls/0/at", "withinMs": {"of": "firstAt", "min": -5000, "max": 0}},
                {"pointer": "/invalid", "equals": 0},
                {"pointer": "/unauthenticated", "equals": 0}
            ]},
            "capture": {"armCalls": {"pointer": "/arm/count"}, "armRuns": {"pointer": "/arm/runIds"}}
        },
        {
            "name": "only the second iteration's calls came after the first continue answered",
            "mockLog": {"goalId": "{goalId}", "sinceMs": "{firstMs}"},
            "expect": {"assert": [
                {"pointer": "/arm/iterations", "equals": [2]},
                {"pointer": "/window/sinceMs", "equals": "{firstMs}"},
                {"pointer": "/window/graceCalls", "equals": 0}
            ]}
        },
        {
            "name": "the host's contributing runs are the ones the suite saw",
            "request": {"method": "GET", "path": "{base}/{goalId}"},
            "expect": {"status": 200, "assert": [
                {"pointer": "/progress/contributingRunIds", "equals": "{armRuns}"}
            ]},
            "capture": {"hostRuns": {"pointer": "/progress/contributingRunIds"}}
        }
    ]);
    let observations = json!([
        {"what": "runs", "suite": "{armCalls}", "host": "{hostIterations}"},
        {"what": "run ids", "suite": "{armRuns}", "host": "{hostRuns}"},
        {"what": "first continue answered at (ms)", "suite": "{firstMs}"}
    ]);
    let result = run(
        &setup,
        scenario(
            16,
            json!({"verifier": {"satisfyOn": 2}}),
            steps,
            observations,
        ),
        "n-pass",
    )
    .await;
    assert_eq!(result.outcome, Outcome::Pass, "{result:?}");
    assert_eq!(result.checks, 18);
    let observed = &result.observations;
    assert_eq!(observed.len(), 3);
    assert_eq!(observed[0].suite, json!(2));
    assert_eq!(observed[0].host, Some(json!(2)));
    assert_eq!(observed[0].agree, Some(true));
    assert_eq!(observed[1].agree, Some(true));
    assert!(observed[2].suite.as_f64().is_some(), "{observed:?}");
    assert_eq!(observed[2].agree, None);
    // The session closed with the scenario.
    let late = goalpost::http::client()
        .post(format!("{}/mock/n-pass/arm", setup.mock.base_url()))
        .json(&json!({}))
        .send()
        .await
        .expect("the mock answers");
    assert_eq!(late.status().as_u16(), 404);
}

#[tokio::test]
async fn an_extra_run_is_caught_by_the_suite_count() {
    let setup = setup(
        Faults {
            extra_run: true,
            ..Faults::default()
        },
        Some(SECRET),
    )
    .await;
    let steps = json!([
        create_step(),
        continue_step(json!({})),
        {
            "name": "exactly one run",
            "mockLog": {"goalId": "{goalId}"},
            "expect": {"assert": [{"pointer": "/arm/count", "equals": 1}]}
        }
    ]);
    let result = run(&setup, scenario(1, json!({}), steps, json!([])), "n-extra").await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("expected a failure, got {result:?}")
    };
    for part in [
        "step 3 \"exactly one run\"",
        "mock log pointer /arm/count did not hold",
        "mock log: 3 calls in all at http://127.0.0.1:",
        "/mock/n-extra",
        "at:       /steps/2/expect/assert/0",
        "expected: equals 1",
        "actual:   2",
        "summary:  {",
    ] {
        assert!(message.contains(part), "missing `{part}` in:\n{message}");
    }
    assert!(!message.contains("never called"), "{message}");
}

#[tokio::test]
async fn a_host_that_advertises_webhooks_but_never_calls_is_named() {
    let setup = setup(
        Faults {
            never_call: true,
            ..Faults::default()
        },
        Some(SECRET),
    )
    .await;
    let steps = json!([
        create_step(),
        continue_step(json!({"hostIterations": {"pointer": "/goal/progress/iterations"}})),
        {
            "name": "the run reached the suite",
            "mockLog": {"goalId": "{goalId}"},
            "expect": {"assert": [{"pointer": "/arm/count", "equals": 1}]},
            "capture": {"armCalls": {"pointer": "/arm/count"}}
        }
    ]);
    let observations = json!([{"what": "runs", "suite": "{armCalls}", "host": "{hostIterations}"}]);
    let result = run(
        &setup,
        scenario(1, json!({}), steps, observations),
        "n-never",
    )
    .await;
    let Outcome::Fail(message) = &result.outcome else {
        panic!("expected a failure, got {result:?}")
    };
    assert!(
        message.contains(
            "host advertises conformanceSeams.goals.webhooks but never called the suite's mock"
        ),
        "{message}"
    );
    // What was measured before the failure is still reported.
    assert_eq!(result.observations[0].suite, Value::Null);
    assert_eq!(result.observations[0].host, Some(json!(1)));
    assert_eq!(result.observations[0].agree, None);
}

#[tokio::test]
async fn a_wrong_secret_is_visible_in_the_log() {
    let setup = setup(Faults::default(), Some("another-secret")).await;
    let steps = json!([
        create_step(),
        continue_step(json!({})),
        {
            "name": "every call authenticated",
            "mockLog": {},
            "expect": {"assert": [{"pointer": "/unauthenticated", "equals": 0}]}
        }
    ]);
    let result = run(&setup, scenario(1, json!({}), steps, json!([])), "n-secret").await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("/unauthenticated") && m.contains("actual:   2")),
        "{result:?}"
    );
}

#[tokio::test]
async fn polling_the_log_waits_for_calls_and_observing_it_holds_throughout() {
    let setup = setup(Faults::default(), Some(SECRET)).await;
    let steps = json!([
        create_step(),
        continue_step(json!({"doneMs": {"clock": "ms"}})),
        {
            "name": "the run is there",
            "mockLog": {"goalId": "{goalId}"},
            "expect": {"assert": [{"pointer": "/arm/count", "gte": 1}]},
            "poll": {"timeoutMs": 2000, "intervalMs": 10}
        },
        {
            "name": "nothing arrives afterwards",
            "mockLog": {"goalId": "{goalId}", "sinceMs": "{doneMs}", "graceMs": 20},
            "expect": {"assert": [{"pointer": "/calls", "length": 0}]},
            "observe": {"forMs": 60, "intervalMs": 20}
        },
        {
            "name": "a count that never comes",
            "mockLog": {"goalId": "{goalId}"},
            "expect": {"assert": [{"pointer": "/arm/count", "equals": 5}]},
            "poll": {"timeoutMs": 60, "intervalMs": 20}
        }
    ]);
    let result = run(&setup, scenario(1, json!({}), steps, json!([])), "n-poll").await;
    assert!(
        matches!(&result.outcome, Outcome::Fail(m) if m.contains("step 5") && m.contains("still failing after polling the mock log")),
        "{result:?}"
    );
    // Steps 1 to 4 made their checks, and step 5 made its one, which failed.
    assert_eq!(result.checks, 5);
}

/// The fake host on a runtime of its own, for the blocking runner.
fn start_host_in_background(faults: Faults) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let _ = sender.send(start_host(faults).await);
            std::future::pending::<()>().await;
        });
    });
    receiver.recv().expect("the fake host starts")
}

#[test]
fn a_run_reports_the_suites_counts_next_to_the_hosts() {
    use clap::Parser;
    let scenarios = tempfile::tempdir().expect("tempdir");
    let reports = tempfile::tempdir().expect("tempdir");
    let registry = json!({"requirements": [
        {"id": "observed.fake", "profile": "observed", "level": "MUST", "clause": "§4", "text": "counted", "capability": []}]});
    std::fs::write(
        scenarios.path().join("requirements.json"),
        registry.to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(scenarios.path().join("observed")).unwrap();
    let steps = json!([
        create_step(),
        continue_step(json!({"hostIterations": {"pointer": "/goal/progress/iterations"}})),
        {"name": "one run", "mockLog": {"goalId": "{goalId}"},
         "expect": {"assert": [{"pointer": "/arm/count", "equals": 1}, {"pointer": "/unauthenticated", "equals": 0}]},
         "capture": {"armCalls": {"pointer": "/arm/count"}}}
    ]);
    let observations = json!([{"what": "runs", "suite": "{armCalls}", "host": "{hostIterations}"}]);
    std::fs::write(
        scenarios.path().join("observed/count.json"),
        scenario(4, json!({}), steps, observations).to_string(),
    )
    .unwrap();
    let mut harness = libtest_mimic::Arguments::try_parse_from(["goalpost"]).expect("harness");
    harness.logfile = Some(
        reports
            .path()
            .join("harness.log")
            .to_string_lossy()
            .into_owned(),
    );
    let mut config = goalpost::RunConfig::bundled(
        scenarios.path().to_path_buf(),
        reports.path().to_path_buf(),
        harness,
    );
    config.host = goalpost::HostChoice::Remote(start_host_in_background(Faults::default()));
    config.token_a = "token-a".to_string();
    config.token_b = None;
    config.callback.secret = Some(SECRET.to_string());
    let outcome = goalpost::run(config).expect("the run starts");
    assert_eq!(outcome.exit_code(), 0, "{:?}", outcome.report);
    let text = std::fs::read_to_string(reports.path().join("report.json")).expect("report.json");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    let schemas = Schemas::embedded().expect("schemas");
    assert_eq!(schemas.validate("report", &report), Ok(()), "{report:#}");
    assert_eq!(report["profiles"]["observed"]["certified"], true);
    let expected = json!([{"what": "runs", "suite": 1, "host": 1, "agree": true}]);
    assert_eq!(report["scenarios"][0]["observations"], expected);
    assert_eq!(
        report["requirements"][0]["observations"],
        json!([{"scenario": "observed::count", "what": "runs", "suite": 1, "host": 1, "agree": true}])
    );
}
