//! Crash safety: the real `goalpost-host` binary on a file
//! database, many goals on fast fixture schedule arms and a client poking at
//! them, killed with SIGKILL at seeded random moments and restarted. After
//! every restart, through the API and a read-only look at the database:
//! no goal, event or evaluation lost or duplicated, event sequences
//! gap-free, no goal past its iteration or cost bound, closed goals
//! unchanged, paused goals still paused with nothing run since the pause.
//!
//! `GOALPOST_CRASH_LOOPS` (default 20) sets the number of kills and
//! `GOALPOST_CRASH_SEED` the seed (printed on failure, so a run can be
//! repeated).

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BASE: &str = "/v1/host/sample/goals";
const TOKEN: &str = "crash-token";
const DEFAULT_LOOPS: usize = 20;
const DEFAULT_SEED: u64 = 0x6f61_6c70_6f73_7421;
const READY_WITHIN: Duration = Duration::from_secs(20);

/// SplitMix64: small, seedable, good enough to pick moments and goals.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let index = usize::try_from(self.next() % items.len() as u64).ok()?;
        items.get(index)
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

/// What the test knows for certain about one goal: from its create and
/// from every answer it got, never from a request the kill cut off.
#[derive(Debug, Clone)]
struct Known {
    max_iterations: u64,
    max_cost: Option<f64>,
    /// `Some(iterations)` while a pause is acknowledged and no resume is.
    paused_at: Option<u64>,
    /// A pause, resume or abandon was sent and its answer never arrived:
    /// whether it happened is learnt at the next check.
    uncertain: bool,
    /// The last consistent view; everything later must extend it.
    iterations: u64,
    events: Vec<Value>,
    evaluations: Vec<Value>,
    /// Goal, events and evaluations when first seen closed.
    closed: Option<(Value, Vec<Value>, Vec<Value>)>,
}

type Model = Arc<Mutex<BTreeMap<String, Known>>>;

fn lock(model: &Model) -> std::sync::MutexGuard<'_, BTreeMap<String, Known>> {
    model.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Host {
    child: Child,
    addr: SocketAddr,
}

impl Host {
    /// Starts the binary and learns its port from its JSON log.
    fn start(db: &Path) -> Host {
        let mut child = Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
            .args(["serve", "--listen", "127.0.0.1:0", "--conformance-seams"])
            .args(["--tick-ms", "5", "--log-format", "json"])
            .arg("--db")
            .arg(db)
            .arg("--token")
            .arg(format!("{TOKEN}=tenant-crash"))
            .env("RUST_LOG", "info")
            .env_remove("GOALPOST_HOST_TOKENS")
            .env_remove("GOALPOST_HOST_TOKENS_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the host binary starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (sender, addresses) = mpsc::channel();
        // Keeps draining stderr so the host never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let Some(addr) = entry["fields"]["addr"].as_str() {
                    let _ = sender.send(addr.to_string());
                }
            }
        });
        let addr = addresses
            .recv_timeout(READY_WITHIN)
            .expect("the host logs its address")
            .parse()
            .expect("a socket address");
        Host { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn kill(mut self) {
        // `Child::kill` is SIGKILL on Unix: no shutdown code runs.
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("the host is reaped");
    }
}

async fn wait_ready(client: &reqwest::Client, host: &Host) {
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        let ready = client
            .get(host.url("/.well-known/openwop"))
            .send()
            .await
            .is_ok_and(|response| response.status().is_success());
        if ready {
            return;
        }
        assert!(Instant::now() < deadline, "the host never became ready");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn call(
    client: &reqwest::Client,
    host_url: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Result<(u16, Value), reqwest::Error> {
    let mut request = client
        .request(method, format!("{host_url}{path}"))
        .bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

async fn get(client: &reqwest::Client, host: &Host, path: &str) -> Value {
    let (status, body) = call(client, &host.url(""), reqwest::Method::GET, path, None)
        .await
        .unwrap_or_else(|error| panic!("GET {path}: {error}"));
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// A goal on a fast fixture arm. Cost bounds never meet escalations, so
/// every cost is in an evaluation.
fn new_goal(rng: &mut Rng) -> (Value, u64, Option<f64>) {
    let max_iterations = rng.between(2, 60);
    let satisfy = if rng.chance(40) {
        format!("?satisfyOn={}", rng.between(2, 30))
    } else {
        String::new()
    };
    let mut arm = format!(
        "conformance:arm?intervalMs={}&runMs={}",
        rng.between(1, 20),
        rng.between(0, 15)
    );
    let mut bounds = json!({ "maxLoopIterations": max_iterations });
    let mut max_cost = None;
    if rng.chance(40) {
        let cost = [0.1, 0.25, 0.3][usize::try_from(rng.next() % 3).unwrap_or(0)];
        let cap = [0.5, 0.75, 1.0, 2.0][usize::try_from(rng.next() % 4).unwrap_or(0)];
        arm.push_str(&format!("&costUsd={cost}"));
        bounds["maxCostUsd"] = json!(cap);
        max_cost = Some(cap);
    } else if rng.chance(40) {
        arm.push_str(&format!("&escalateOn={}", rng.between(1, 10)));
    }
    if rng.chance(20) {
        arm.push_str(&format!("&failOn={}", rng.between(1, 10)));
    }
    let mode = if rng.chance(80) { "schedule" } else { "manual" };
    let body = json!({
        "objective": "survive the crash",
        "completion": { "check": "verifier", "verifierRef": format!("conformance:verifier{satisfy}") },
        "continuation": { "mode": mode, "armRef": arm },
        "bounds": bounds,
    });
    (body, max_iterations, max_cost)
}

fn is_closed(state: &str) -> bool {
    matches!(state, "satisfied" | "abandoned" | "bound-exceeded")
}

/// Reads goal, events, evaluations and the goal again until the goal did
/// not change in between (every change bumps the ETag version and writes
/// events and evaluations in the same transaction).
async fn consistent_view(
    client: &reqwest::Client,
    host: &Host,
    id: &str,
) -> (Value, Vec<Value>, Vec<Value>, bool) {
    let mut last = None;
    for _ in 0..40 {
        let goal = get(client, host, &format!("{BASE}/{id}")).await;
        let events = get(client, host, &format!("{BASE}/{id}/events")).await["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let evaluations = get(client, host, &format!("{BASE}/{id}/evaluations")).await
            ["evaluations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let again = get(client, host, &format!("{BASE}/{id}")).await;
        if again == goal {
            return (goal, events, evaluations, true);
        }
        last = Some((again, events, evaluations));
    }
    let (goal, events, evaluations) = last.expect("at least one attempt");
    (goal, events, evaluations, false)
}

fn assert_prefix(label: &str, id: &str, before: &[Value], now: &[Value]) {
    assert!(
        now.len() >= before.len() && now[..before.len()] == *before,
        "{id}: {label} lost or rewritten\nbefore: {before:#?}\nnow: {now:#?}"
    );
}

/// Agreement between a goal and its events and evaluations, on a view
/// where they were read without a change in between.
fn assert_agrees(id: &str, known: &Known, goal: &Value, events: &[Value], evaluations: &[Value]) {
    let iterations = goal["progress"]["iterations"].as_u64().expect("iterations");
    let runs: Vec<&Value> = goal["progress"]["contributingRunIds"]
        .as_array()
        .expect("runs")
        .iter()
        .collect();
    assert_eq!(
        runs.len() as u64,
        iterations,
        "{id}: one run id per iteration"
    );
    assert_eq!(
        runs.iter()
            .map(|run| run.to_string())
            .collect::<BTreeSet<_>>()
            .len(),
        runs.len(),
        "{id}: a run id repeats"
    );
    let evaluated: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "goal.evaluated")
        .map(|event| &event["payload"]["runId"])
        .collect();
    let judged: Vec<&Value> = evaluations.iter().map(|e| &e["runId"]).collect();
    assert_eq!(evaluated, judged, "{id}: one goal.evaluated per evaluation");
    let mut in_runs = runs.iter();
    for run in &judged {
        assert!(
            in_runs.any(|candidate| candidate == run),
            "{id}: evaluation {run} is not a contributing run in order"
        );
    }
    let numbers: Vec<u64> = evaluations
        .iter()
        .map(|e| e["iteration"].as_u64().expect("iteration"))
        .collect();
    assert!(
        numbers.windows(2).all(|pair| pair[0] < pair[1]),
        "{id}: evaluation iterations {numbers:?}"
    );
    let state = goal["state"].as_str().expect("state");
    let closes: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "goal.closed")
        .filter_map(|event| event["payload"]["finalState"].as_str())
        .collect();
    let final_closes = closes.iter().filter(|s| is_closed(s)).count();
    if is_closed(state) {
        assert_eq!(final_closes, 1, "{id}: one final close");
        assert_eq!(closes.last(), Some(&state), "{id}: closed as {state}");
    } else {
        assert_eq!(final_closes, 0, "{id}: open but closed: {closes:?}");
    }
    if let Some(cap) = known.max_cost {
        // Budget reading: no run starts with the budget used up, so every
        // run but the last started below the cap.
        let costs: Vec<f64> = evaluations
            .iter()
            .map(|e| e["costUsd"].as_f64().unwrap_or(0.0))
            .collect();
        let before_last: f64 = costs.iter().rev().skip(1).sum();
        assert!(
            before_last < cap + 1e-9,
            "{id}: a run started after spending {before_last} of {cap}"
        );
    }
}

async fn check(client: &reqwest::Client, host: &Host, db: &Path, model: &Model, round: usize) {
    let listed = get(client, host, BASE).await;
    let listed: Vec<String> = listed["goals"]
        .as_array()
        .expect("goals")
        .iter()
        .map(|goal| goal["id"].as_str().expect("id").to_string())
        .collect();
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "round {round}: a goal is listed twice"
    );
    let expected: Vec<String> = lock(model).keys().cloned().collect();
    assert_eq!(
        unique.into_iter().cloned().collect::<Vec<_>>(),
        expected,
        "round {round}: goals lost or made up"
    );

    let ids: Vec<String> = expected;
    for id in &ids {
        let known = lock(model).get(id).cloned().expect("known");
        let (goal, events, evaluations, stable) = consistent_view(client, host, id).await;
        let state = goal["state"].as_str().expect("state").to_string();
        let iterations = goal["progress"]["iterations"].as_u64().expect("iterations");
        let sequences: Vec<u64> = events
            .iter()
            .map(|e| e["sequence"].as_u64().expect("sequence"))
            .collect();
        assert_eq!(
            sequences,
            (1..=events.len() as u64).collect::<Vec<_>>(),
            "round {round}, {id}: event sequences have a gap or a repeat"
        );
        let run_ids: BTreeSet<String> =
            evaluations.iter().map(|e| e["runId"].to_string()).collect();
        assert_eq!(
            run_ids.len(),
            evaluations.len(),
            "{id}: an evaluation repeats"
        );
        assert!(
            iterations <= known.max_iterations,
            "round {round}, {id}: {iterations} iterations over {}",
            known.max_iterations
        );
        assert!(
            iterations >= known.iterations,
            "round {round}, {id}: progress went back from {}",
            known.iterations
        );
        assert_prefix("events", id, &known.events, &events);
        assert_prefix("evaluations", id, &known.evaluations, &evaluations);
        if let Some((closed_goal, closed_events, closed_evaluations)) = &known.closed {
            assert_eq!(
                &goal, closed_goal,
                "round {round}, {id}: a closed goal changed"
            );
            assert_eq!(&events, closed_events, "{id}: events after the close");
            assert_eq!(
                &evaluations, closed_evaluations,
                "{id}: runs after the close"
            );
        }
        if let (Some(paused_at), false) = (known.paused_at, known.uncertain) {
            let attention = get(client, host, &format!("{BASE}/{id}/attention")).await;
            assert_eq!(
                attention["status"], "paused",
                "round {round}, {id}: unpaused"
            );
            assert_eq!(
                iterations, paused_at,
                "round {round}, {id}: ran while paused"
            );
        }
        if stable {
            assert_agrees(id, &known, &goal, &events, &evaluations);
        }

        // Nobody pauses or resumes during a check, so an uncertain goal's
        // attention now is what it was when the view was read.
        let learnt = if !known.uncertain {
            None
        } else if state == "active" {
            Some(get(client, host, &format!("{BASE}/{id}/attention")).await["status"] == "paused")
        } else {
            Some(false)
        };
        let mut model = lock(model);
        let entry = model.get_mut(id).expect("known");
        entry.iterations = iterations;
        entry.events = events.clone();
        entry.evaluations = evaluations.clone();
        if let Some(paused) = learnt {
            entry.paused_at = paused.then_some(iterations);
            entry.uncertain = false;
        }
        if is_closed(&state) && stable && entry.closed.is_none() {
            entry.closed = Some((goal, events, evaluations));
        }
    }
    check_runs_table(db, model, round);
}

/// Reserved runs, read straight from the database (read-only, beside the
/// running host): no goal ever had a run beyond its iteration bound, and a
/// closed goal has every run ended and one recorded per iteration.
fn check_runs_table(db: &Path, model: &Model, round: usize) {
    let connection = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("the database opens read-only");
    connection
        .busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    let mut statement = connection
        .prepare(
            "SELECT goal_id, MAX(iteration), SUM(status = 'recorded'), SUM(status = 'in-flight')
             FROM runs GROUP BY goal_id",
        )
        .expect("prepare");
    let rows: Vec<(String, i64, i64, i64)> = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let model = lock(model);
    for (goal_id, max_iteration, recorded, in_flight) in rows {
        let (max_iteration, recorded) = (
            u64::try_from(max_iteration).expect("a run number"),
            u64::try_from(recorded).expect("a count"),
        );
        let known = model
            .get(&goal_id)
            .unwrap_or_else(|| panic!("round {round}: runs for an unknown goal {goal_id}"));
        assert!(
            max_iteration <= known.max_iterations,
            "round {round}, {goal_id}: run {max_iteration} reserved over the bound {}",
            known.max_iterations
        );
        if known.closed.is_some() {
            assert_eq!(
                in_flight, 0,
                "round {round}, {goal_id}: a run in flight after the close"
            );
            assert_eq!(
                recorded, known.iterations,
                "round {round}, {goal_id}: recorded runs and iterations disagree"
            );
        }
    }
}

/// Sends pause, resume, abandon and continue at random until aborted. Only
/// answered requests change the model; one cut off leaves the goal uncertain.
async fn poke(client: reqwest::Client, host_url: String, model: Model, seed: u64) {
    let mut rng = Rng(seed);
    loop {
        // Goals seen closed only ever answer 409: poke the others.
        let ids: Vec<String> = lock(&model)
            .iter()
            .filter(|(_, known)| known.closed.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        let Some(id) = rng.pick(&ids).cloned() else {
            return;
        };
        // Rare abandons, so most goals live through several kills.
        let action = match rng.next() % 40 {
            0..=9 => "pause",
            10..=19 => "resume",
            20 => "abandon",
            _ => "continue",
        };
        if action != "continue" {
            if let Some(known) = lock(&model).get_mut(&id) {
                known.uncertain = true;
            }
        }
        let path = format!("{BASE}/{id}/{action}");
        let answer = call(&client, &host_url, reqwest::Method::POST, &path, None).await;
        let Ok((status, body)) = answer else {
            return; // the host is gone: this goal stays uncertain
        };
        let mut model = lock(&model);
        let Some(known) = model.get_mut(&id) else {
            continue;
        };
        if action == "continue" {
            continue;
        }
        if status == 200 {
            let iterations = body["progress"]["iterations"].as_u64().unwrap_or(0);
            match action {
                "pause" => known.paused_at = Some(iterations),
                "resume" => known.paused_at = None,
                _ => known.paused_at = None,
            }
            known.uncertain = false;
        } else if status == 409 {
            // Nothing changed (closed, escalated): as certain as before.
            known.uncertain = false;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_and_breaks_nothing() {
    let loops = usize::try_from(env_number("GOALPOST_CRASH_LOOPS", DEFAULT_LOOPS as u64))
        .unwrap_or(DEFAULT_LOOPS);
    let seed = env_number("GOALPOST_CRASH_SEED", DEFAULT_SEED);
    eprintln!("crash loop: {loops} kills, seed {seed:#x}");
    let started = Instant::now();
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = dir.path().join("crash.db");
    let client = goalpost_host::tls::client_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a client");
    let model: Model = Arc::new(Mutex::new(BTreeMap::new()));

    for round in 0..=loops {
        let host = Host::start(&db);
        wait_ready(&client, &host).await;
        check(&client, &host, &db, &model, round).await;
        if round == loops {
            host.kill();
            break;
        }
        for _ in 0..4 {
            let (body, max_iterations, max_cost) = new_goal(&mut rng);
            let (status, goal) = call(
                &client,
                &host.url(""),
                reqwest::Method::POST,
                BASE,
                Some(body),
            )
            .await
            .expect("create");
            assert_eq!(status, 201, "{goal}");
            lock(&model).insert(
                goal["id"].as_str().expect("id").to_string(),
                Known {
                    max_iterations,
                    max_cost,
                    paused_at: None,
                    uncertain: false,
                    iterations: 0,
                    events: Vec::new(),
                    evaluations: Vec::new(),
                    closed: None,
                },
            );
        }
        let poker = tokio::spawn(poke(
            client.clone(),
            host.url(""),
            Arc::clone(&model),
            rng.next(),
        ));
        // The kill moment: the whole point is not to wait for any state.
        tokio::time::sleep(Duration::from_millis(rng.between(0, 250))).await;
        host.kill();
        poker.abort();
        let _ = poker.await;
    }
    let goals = lock(&model).len();
    let closed = lock(&model).values().filter(|k| k.closed.is_some()).count();
    let runs: u64 = lock(&model).values().map(|k| k.iterations).sum();
    eprintln!(
        "crash loop: {loops} kills, {goals} goals ({closed} closed), {runs} runs, {:?}",
        started.elapsed()
    );
    assert!(runs > 0, "the goals ran");
}
