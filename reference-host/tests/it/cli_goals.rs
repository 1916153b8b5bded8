//! `goalpost-host goals …` against real hosts on 127.0.0.1:0: the built
//! binary's output and exit codes (0 satisfied, 3 escalated or open, 1
//! bound-exceeded / abandoned / error, 2 usage).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::{Json, Router};
use goalpost_host::domain::Tenant;
use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use tokio::runtime::Runtime;

const TOKEN: &str = "cli-token";
/// A watch that has not finished after this is a failure, not a wait.
const WATCH_LIMIT: Duration = Duration::from_secs(30);

struct Host {
    runtime: Runtime,
    host: Option<RunningHost>,
    url: String,
}

impl Host {
    fn start(seams: bool) -> Host {
        let runtime = Runtime::new().expect("a runtime");
        let mut config = Config::conformance_in_memory(vec![(TOKEN.into(), "acme".into())]);
        config.conformance_seams = seams;
        config.tick = Duration::from_millis(10);
        let host = runtime
            .block_on(RunningHost::start(config))
            .expect("the host starts");
        let url = host.base_url();
        Host {
            runtime,
            host: Some(host),
            url,
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(host) = self.host.take() {
            self.runtime.block_on(host.shutdown());
        }
    }
}

/// The binary with a clean environment: only what the test passes.
fn goals_command(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_goalpost-host"));
    command.arg("goals").args(args);
    for name in [
        "GOALPOST_HOST",
        "GOALPOST_TOKEN",
        "GOALPOST_JSON",
        "GOALPOST_REQUEST_TIMEOUT_MS",
        "GOALPOST_WATCH_INTERVAL_MS",
    ] {
        command.env_remove(name);
    }
    if !url.is_empty() {
        command.args(["--host", url, "--token", TOKEN]);
    }
    command
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl From<Output> for Ran {
    fn from(output: Output) -> Ran {
        Ran {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

fn goals(url: &str, args: &[&str]) -> Ran {
    goals_command(url, args)
        .output()
        .expect("the binary runs")
        .into()
}

/// Waits for a child with a deadline (killing it past the deadline).
fn finish(mut child: Child) -> Ran {
    let deadline = Instant::now() + WATCH_LIMIT;
    loop {
        if let Some(status) = child.try_wait().expect("the child can be polled") {
            let mut stdout = String::new();
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stdout.take() {
                pipe.read_to_string(&mut stdout).expect("stdout");
            }
            if let Some(mut pipe) = child.stderr.take() {
                pipe.read_to_string(&mut stderr).expect("stderr");
            }
            return Ran {
                code: status.code().expect("exited, not killed"),
                stdout,
                stderr,
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the watch did not finish within {WATCH_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn watch(url: &str, id: &str) -> Ran {
    let child = goals_command(url, &["watch", id, "--interval-ms", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    finish(child)
}

/// Creates a goal with `--json` and returns its id (exit 3: active).
fn create(url: &str, args: &[&str]) -> String {
    let mut all = vec!["create", "--json", "--objective", "keep the lights on"];
    all.extend_from_slice(args);
    let ran = goals(url, &all);
    assert_eq!(ran.code, 3, "stderr: {}", ran.stderr);
    let goal: Value = serde_json::from_str(&ran.stdout).expect("create --json prints the goal");
    assert_eq!(goal["state"], "active");
    goal["id"].as_str().expect("an id").to_string()
}

fn state_of(url: &str, id: &str) -> Value {
    let ran = goals(url, &["get", id, "--json"]);
    let goal: Value = serde_json::from_str(&ran.stdout).expect("get --json prints the goal");
    goal["state"].clone()
}

#[test]
fn create_get_pause_resume_abandon() {
    let host = Host::start(true);
    let url = host.url.as_str();
    let id = create(url, &["--max-iterations", "3", "--max-cost-usd", "1.5"]);

    let got = goals(url, &["get", &id]);
    assert_eq!(got.code, 3, "{}", got.stderr);
    assert!(
        got.stdout.contains(&format!("id:           {id}\n")),
        "{}",
        got.stdout
    );
    assert!(
        got.stdout.contains("state:        active\n"),
        "{}",
        got.stdout
    );
    assert!(
        got.stdout
            .contains("bounds:       maxCostUsd=1.5, maxLoopIterations=3\n"),
        "{}",
        got.stdout
    );

    let paused = goals(url, &["pause", &id]);
    assert_eq!(paused.code, 3, "{}", paused.stderr);
    assert!(
        paused.stdout.starts_with(&format!("paused goal {id}\n")),
        "{}",
        paused.stdout
    );
    assert!(
        paused.stdout.contains("attention:    paused\n"),
        "{}",
        paused.stdout
    );

    let resumed = goals(url, &["resume", &id]);
    assert_eq!(resumed.code, 3, "{}", resumed.stderr);
    assert!(
        resumed.stdout.contains("attention:    active\n"),
        "{}",
        resumed.stdout
    );

    let refused = goals(url, &["abandon", &id]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("without --yes"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        state_of(url, &id),
        "active",
        "a refused abandon changes nothing"
    );

    let abandoned = goals(url, &["abandon", &id, "--yes", "--json"]);
    assert_eq!(abandoned.code, 1, "{}", abandoned.stderr);
    let goal: Value = serde_json::from_str(&abandoned.stdout).expect("JSON");
    assert_eq!(goal["state"], "abandoned");
    assert_eq!(goals(url, &["get", &id]).code, 1);

    let again = goals(url, &["pause", &id]);
    assert_eq!(again.code, 1);
    assert!(
        again.stderr.starts_with("error: goal_terminal: "),
        "{}",
        again.stderr
    );
    assert!(again.stderr.contains("(HTTP 409)"), "{}", again.stderr);
}

#[test]
fn list_renders_a_table_filters_and_exits_0() {
    let host = Host::start(true);
    let url = host.url.as_str();
    let open = create(url, &["--max-iterations", "2"]);
    let closed = create(url, &["--max-iterations", "2"]);
    assert_eq!(goals(url, &["abandon", &closed, "--yes"]).code, 1);

    let all = goals(url, &["list"]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    assert!(all.stdout.starts_with("ID "), "{}", all.stdout);
    assert!(
        all.stdout.contains(&open) && all.stdout.contains(&closed),
        "{}",
        all.stdout
    );

    let active = goals(url, &["list", "--state", "active", "--json"]);
    assert_eq!(active.code, 0);
    let list: Value = serde_json::from_str(&active.stdout).expect("JSON");
    let ids: Vec<&str> = list["goals"]
        .as_array()
        .expect("goals")
        .iter()
        .filter_map(|goal| goal["id"].as_str())
        .collect();
    assert_eq!(ids, vec![open.as_str()]);

    let none = goals(url, &["list", "--state", "satisfied"]);
    assert_eq!(
        (none.code, none.stdout.as_str()),
        (0, "no goals in state satisfied\n")
    );
}

#[test]
fn watch_exits_0_when_the_goal_converges() {
    let host = Host::start(true);
    let url = host.url.as_str();
    let id = create(
        url,
        &[
            "--mode",
            "schedule",
            "--verifier",
            "conformance:verifier?satisfyOn=1",
            "--arm",
            "conformance:arm?intervalMs=20",
            "--max-iterations",
            "5",
        ],
    );
    let watched = watch(url, &id);
    assert_eq!(watched.code, 0, "{}{}", watched.stdout, watched.stderr);
    assert!(
        watched.stdout.contains(" goal.evaluated run=run-"),
        "{}",
        watched.stdout
    );
    assert!(
        watched.stdout.contains("satisfied=true"),
        "{}",
        watched.stdout
    );
    assert!(
        watched
            .stdout
            .ends_with(" goal.closed finalState=satisfied\n"),
        "{}",
        watched.stdout
    );
    assert_eq!(goals(url, &["get", &id]).code, 0, "get agrees: satisfied");
}

#[test]
fn watch_exits_1_when_a_bound_is_exceeded() {
    let host = Host::start(true);
    let url = host.url.as_str();
    let id = create(
        url,
        &[
            "--mode",
            "schedule",
            "--verifier",
            "conformance:verifier",
            "--arm",
            "conformance:arm?intervalMs=20",
            "--max-iterations",
            "2",
        ],
    );
    let watched = watch(url, &id);
    assert_eq!(watched.code, 1, "{}{}", watched.stdout, watched.stderr);
    assert_eq!(
        watched.stdout.matches(" goal.evaluated ").count(),
        2,
        "{}",
        watched.stdout
    );
    assert!(
        watched
            .stdout
            .ends_with(" goal.closed finalState=bound-exceeded\n"),
        "{}",
        watched.stdout
    );
}

#[test]
fn watch_exits_3_when_the_goal_escalates() {
    let host = Host::start(true);
    let url = host.url.as_str();
    let id = create(
        url,
        &[
            "--mode",
            "schedule",
            "--verifier",
            "conformance:verifier",
            "--arm",
            "conformance:arm?escalateOn=2&intervalMs=20",
            "--max-iterations",
            "5",
        ],
    );
    let watched = watch(url, &id);
    assert_eq!(watched.code, 3, "{}{}", watched.stdout, watched.stderr);
    assert!(
        watched
            .stdout
            .ends_with(" goal.closed finalState=escalated\n"),
        "{}",
        watched.stdout
    );
    assert_eq!(
        goals(url, &["get", &id]).code,
        3,
        "escalated is 3 for get too"
    );
}

#[test]
fn watch_json_prints_one_event_per_line() {
    let host = Host::start(true);
    let url = host.url.as_str();
    let id = create(
        url,
        &[
            "--mode",
            "schedule",
            "--verifier",
            "conformance:verifier?satisfyOn=2",
            "--arm",
            "conformance:arm?intervalMs=20",
            "--max-iterations",
            "5",
        ],
    );
    let child = goals_command(url, &["watch", &id, "--interval-ms", "20", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let watched = finish(child);
    assert_eq!(watched.code, 0, "{}", watched.stderr);
    let events: Vec<Value> = watched
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event per line"))
        .collect();
    let sequences: Vec<u64> = events
        .iter()
        .filter_map(|e| e["sequence"].as_u64())
        .collect();
    assert_eq!(sequences, vec![1, 2, 3], "each event once, in order");
    assert_eq!(events[2]["payload"]["finalState"], "satisfied");
}

#[test]
fn without_the_seams_watch_follows_the_goal_over_the_event_stream() {
    let host = Host::start(false);
    let url = host.url.as_str();
    let id = create(url, &["--max-iterations", "2"]);
    let mut child = goals_command(url, &["watch", "--goal", &id, "--interval-ms", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let stdout = child.stdout.take().expect("piped");
    let (lines, received) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // The watch is connected once the host counts its stream: poll for it
    // with a deadline rather than sleeping.
    let deadline = Instant::now() + WATCH_LIMIT;
    loop {
        let subscribers = host
            .host
            .as_ref()
            .expect("running")
            .feed()
            .subscribers(&Tenant::parse("acme").expect("a tenant"));
        if subscribers > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the watch never connected");
        std::thread::yield_now();
    }
    assert_eq!(goals(url, &["abandon", &id, "--yes"]).code, 1);
    let watched = finish(child);
    assert_eq!(watched.code, 1, "{}", watched.stderr);
    let closed = received
        .recv_timeout(WATCH_LIMIT)
        .expect("the watch prints the close");
    assert!(
        closed.starts_with("#1 ") && closed.ends_with(" goal.closed finalState=abandoned"),
        "{closed}"
    );
    reader.join().expect("the reader ends with the watch");
    assert!(received.try_recv().is_err(), "nothing after the close");
}

#[test]
fn refusals_print_the_envelope_and_exit_1() {
    let host = Host::start(true);
    let url = host.url.as_str();

    let unbounded = goals(url, &["create", "--objective", "o"]);
    assert_eq!(unbounded.code, 1);
    assert!(
        unbounded.stderr.starts_with("error: bounds_required: "),
        "{}",
        unbounded.stderr
    );
    assert!(
        unbounded.stderr.contains("(HTTP 422)"),
        "{}",
        unbounded.stderr
    );

    let missing = goals(
        url,
        &["get", "goal-00000000-0000-4000-8000-000000000000", "--json"],
    );
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.starts_with("error: not_found: "),
        "{}",
        missing.stderr
    );
    let envelope: Value =
        serde_json::from_str(&missing.stdout).expect("--json prints the envelope");
    assert_eq!(envelope["error"], "not_found");

    let mut wrong = goals_command("", &["list", "--host", url, "--token", "not-a-token"]);
    let wrong: Ran = wrong.output().expect("runs").into();
    assert_eq!(wrong.code, 1);
    assert!(
        wrong.stderr.starts_with("error: unauthorized: "),
        "{}",
        wrong.stderr
    );

    let unsupported = goals(
        url,
        &[
            "create",
            "--objective",
            "o",
            "--check",
            "host",
            "--max-iterations",
            "1",
        ],
    );
    assert_eq!(unsupported.code, 1);
    assert!(
        unsupported.stderr.contains("unsupported_judge"),
        "{}",
        unsupported.stderr
    );
}

#[test]
fn usage_errors_exit_2_without_a_request() {
    // Nothing listens here: a usage error must not even try.
    let nowhere = "http://127.0.0.1:9";
    for args in [
        vec!["get"],
        vec!["frobnicate"],
        vec!["list", "--state", "paused"],
        vec!["create", "--max-iterations", "1"],
        vec!["create", "--objective", "o", "--max-iterations", "0"],
        vec!["create", "--objective", "o", "--max-cost-usd", "-1"],
        vec!["create", "--objective", "o", "--check", "oracle"],
        vec!["watch", "g", "--interval-ms", "0"],
        vec!["abandon", "g"],
    ] {
        let ran = goals(nowhere, &args);
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        assert!(
            !ran.stderr.contains("cannot reach"),
            "{args:?} sent a request"
        );
    }
    let no_subcommand = goals(nowhere, &[]);
    assert_eq!(no_subcommand.code, 2);

    let no_host: Ran = goals_command("", &["list", "--token", "t"])
        .output()
        .expect("runs")
        .into();
    assert_eq!(no_host.code, 2);
    assert!(no_host.stderr.contains("--host URL"), "{}", no_host.stderr);

    let no_token: Ran = goals_command("", &["list", "--host", nowhere])
        .output()
        .expect("runs")
        .into();
    assert_eq!(no_token.code, 2);
    assert!(no_token.stderr.contains("--token"), "{}", no_token.stderr);

    let https: Ran = goals_command(
        "",
        &["list", "--host", "https://example.com", "--token", "t"],
    )
    .output()
    .expect("runs")
    .into();
    assert_eq!(https.code, 2);
    assert!(https.stderr.contains("plain http"), "{}", https.stderr);
}

#[test]
fn the_environment_configures_the_connection() {
    let host = Host::start(true);
    let ran: Ran = goals_command("", &["list"])
        .env("GOALPOST_HOST", &host.url)
        .env("GOALPOST_TOKEN", TOKEN)
        .env("GOALPOST_JSON", "true")
        // `serve`'s variables in the environment do not clash with `goals`.
        .env("GOALPOST_HOST_TOKENS", "serve-token=acme")
        .env("GOALPOST_HOST_LOG_FORMAT", "json")
        .output()
        .expect("runs")
        .into();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let list: Value = serde_json::from_str(&ran.stdout).expect("GOALPOST_JSON gives JSON");
    assert!(list["goals"].is_array());
}

#[test]
fn an_unreachable_host_exits_1() {
    // Bind then drop, so the port is very likely closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let ran = goals(&format!("http://127.0.0.1:{port}"), &["list"]);
    assert_eq!(ran.code, 1);
    assert!(
        ran.stderr.starts_with("error: cannot reach "),
        "{}",
        ran.stderr
    );
}

/// A host that answers discovery without `agents.goals`, and serves a goals
/// list anyway: the client must stop at discovery.
fn stub(runtime: &Runtime, discovery: Option<Value>) -> String {
    let mut router = Router::new().route(
        "/v1/host/sample/goals",
        get(|| async { Json(json!({ "goals": [] })) }),
    );
    if let Some(document) = discovery {
        router = router.route(
            "/.well-known/openwop",
            get(move || {
                let document = document.clone();
                async move { Json(document) }
            }),
        );
    }
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    runtime.spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    url
}

#[test]
fn a_host_without_agents_goals_is_refused_with_exit_1() {
    let runtime = Runtime::new().expect("a runtime");
    let no_goals = stub(
        &runtime,
        Some(json!({ "protocol": "openwop", "agents": { "chat": {} } })),
    );
    for args in [
        vec!["list"],
        vec!["create", "--objective", "o", "--max-iterations", "1"],
    ] {
        let ran = goals(&no_goals, &args);
        assert_eq!(ran.code, 1, "{args:?}");
        assert!(ran.stdout.is_empty(), "{}", ran.stdout);
        assert!(
            ran.stderr
                .contains("does not advertise standing goals (no agents.goals"),
            "{}",
            ran.stderr
        );
    }
    let no_discovery = stub(&runtime, None);
    let ran = goals(&no_discovery, &["list"]);
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("agents.goals"), "{}", ran.stderr);
    assert!(ran.stderr.contains("HTTP 404"), "{}", ran.stderr);
}

/// A host whose list comes in pages linked by `Link: rel="next"` (three
/// pages, the last linking nowhere), or, with `refuse_limit`, one that
/// refuses `limit` with 400 and answers everything unpaged.
fn paged_stub(runtime: &Runtime, refuse_limit: bool) -> String {
    use axum::extract::Query;
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    use std::collections::HashMap;
    let goal = |n: u32| {
        json!({
            "id": format!("goal-{n}"), "objective": "o", "state": "active",
            "completion": { "check": "verifier" }, "continuation": { "mode": "manual" },
            "bounds": { "maxLoopIterations": 3 }, "progress": { "iterations": 0 },
        })
    };
    let list = move |Query(query): Query<HashMap<String, String>>| async move {
        if refuse_limit && query.contains_key("limit") {
            let envelope = json!({ "error": "invalid_request", "message": "no limit here" });
            return (StatusCode::BAD_REQUEST, Json(envelope)).into_response();
        }
        if refuse_limit {
            return Json(json!({ "goals": [goal(1), goal(2)] })).into_response();
        }
        let page: u32 = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
        let body = Json(json!({ "goals": [goal(page * 2), goal(page * 2 + 1)] }));
        if page < 2 {
            let link = format!("</v1/host/sample/goals?page={}>; rel=\"next\"", page + 1);
            return ([(header::LINK, link)], body).into_response();
        }
        body.into_response()
    };
    let router = Router::new()
        .route("/v1/host/sample/goals", get(list))
        .route(
            "/.well-known/openwop",
            get(|| async {
                Json(json!({ "protocol": "openwop",
                    "agents": { "goals": { "judge": "verifier", "continuation": ["manual"] } } }))
            }),
        );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    runtime.spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    url
}

#[test]
fn list_follows_the_next_links_and_does_without_limit_when_refused() {
    let runtime = Runtime::new().expect("a runtime");
    let ids = |ran: &Ran| -> Vec<String> {
        let list: Value = serde_json::from_str(&ran.stdout).expect("JSON");
        list["goals"]
            .as_array()
            .expect("goals")
            .iter()
            .filter_map(|goal| goal["id"].as_str().map(str::to_string))
            .collect()
    };
    let paged = paged_stub(&runtime, false);
    let ran = goals(&paged, &["list", "--json"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let expected: Vec<String> = (0..6).map(|n| format!("goal-{n}")).collect();
    assert_eq!(ids(&ran), expected);

    let unpaged = paged_stub(&runtime, true);
    let ran = goals(&unpaged, &["list", "--json"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ids(&ran), vec!["goal-1", "goal-2"]);
}
