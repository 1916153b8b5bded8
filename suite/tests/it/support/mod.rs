//! A tiny fake host for the suite's own tests: just enough HTTP to exercise
//! the driver and the runner, with switches for the ways a host goes wrong.

#![allow(dead_code)] // each test binary uses a different part

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

pub const TOKEN_A: &str = "token-a";
pub const TOKEN_B: &str = "token-b";
/// The default `{base}`, so the fake works with and without `conformanceSeams`.
pub const BASE: &str = "/v1/host/sample/goals";

#[derive(Clone, Copy, Debug, Default)]
pub struct FakeOptions {
    /// Advertise `conformanceSeams.goals` with `continue` (which still 404s).
    pub advertise_seams: bool,
    /// Advertise `agents.goals`.
    pub advertise_goals: bool,
}

#[derive(Default)]
struct Counters {
    reads: AtomicUsize,
}

#[derive(Clone)]
struct AppState {
    options: FakeOptions,
    counters: Arc<Counters>,
}

fn tenant(headers: &HeaderMap) -> Option<&'static str> {
    match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        Some(value) if value == format!("Bearer {TOKEN_A}") => Some("tenant-a"),
        Some(value) if value == format!("Bearer {TOKEN_B}") => Some("tenant-b"),
        _ => None,
    }
}

fn error(status: StatusCode, code: &str) -> Response {
    (
        status,
        Json(json!({"error": code, "message": code.replace('_', " ")})),
    )
        .into_response()
}

async fn discovery(State(state): State<AppState>) -> Json<Value> {
    let mut document = json!({"protocol": "openwop"});
    if state.options.advertise_goals {
        document["agents"] = json!({"goals": {"judge": "verifier", "continuation": ["manual"], "requiresBounds": true}});
    }
    if state.options.advertise_seams {
        document["conformanceSeams"] =
            json!({"goals": {"basePath": BASE, "continue": true, "events": false}});
    }
    Json(document)
}

async fn create(headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let Some(tenant) = tenant(&headers) else {
        return error(StatusCode::UNAUTHORIZED, "unauthorized");
    };
    let goal = json!({"id": "goal-1", "state": "active", "objective": body["objective"],
                      "owner": {"tenant": tenant}, "createdAt": "2026-06-13T00:00:00.000Z"});
    (
        StatusCode::CREATED,
        [
            ("location", format!("{BASE}/goal-1")),
            ("etag", "\"1\"".to_string()),
        ],
        Json(goal),
    )
        .into_response()
}

async fn read(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if tenant(&headers).is_none() {
        return error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    if id != "goal-1" {
        return error(StatusCode::NOT_FOUND, "not_found");
    }
    let reads = state.counters.reads.fetch_add(1, Ordering::SeqCst) + 1;
    Json(json!({"id": id, "reads": reads, "updatedAt": "2026-06-13T00:00:00.250Z"})).into_response()
}

/// A schema-valid goal with this objective.
pub fn listed_goal(id: &str, objective: &str) -> Value {
    json!({"id": id, "objective": objective, "state": "active",
           "completion": {"check": "verifier"}, "continuation": {"mode": "manual"},
           "bounds": {"maxLoopIterations": 3}, "owner": {"tenant": "tenant-a"},
           "createdAt": "2026-06-13T00:00:00.000Z"})
}

/// `GET {base}?shape=...`: the tenant's list as a shared tenant shows it,
/// the scenario's goals (nonce `n0nce`) next to goals other scenarios
/// stored, one of them schema-invalid.
async fn list(
    headers: HeaderMap,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    if tenant(&headers).is_none() {
        return error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let foreign_invalid = json!({"id": 7, "objective": "goalpost 0ther poisoned", "state": "odd"});
    let foreign_valid = listed_goal("goal-9", "goalpost 0ther fine");
    let own = listed_goal("goal-1", "goalpost n0nce listed");
    match query.get("shape").map(String::as_str) {
        // The envelope itself is broken.
        Some("not-a-list") => Json(json!({"goals": "none"})).into_response(),
        Some("garbage") => ([("content-type", "text/plain")], "goals: none").into_response(),
        // The scenario's own goal is the invalid one.
        Some("own-invalid") => {
            let mut own = own;
            own["state"] = json!("odd");
            Json(json!({"goals": [foreign_valid, own, foreign_invalid]})).into_response()
        }
        _ => Json(json!({"goals": [foreign_invalid, own, foreign_valid]})).into_response(),
    }
}

/// Builds the router and serves it on 127.0.0.1:0 in the current runtime.
pub async fn start(options: FakeOptions) -> String {
    let state = AppState {
        options,
        counters: Arc::new(Counters::default()),
    };
    let app = Router::new()
        .route("/.well-known/openwop", get(discovery))
        .route(BASE, post(create).get(list))
        .route(&format!("{BASE}/{{id}}"), get(read))
        .route(
            &format!("{BASE}/{{id}}/continue"),
            post(|| async { error(StatusCode::NOT_FOUND, "not_found") }),
        )
        .route(
            "/html",
            get(|| async { ([("content-type", "text/html")], "<html>hello</html>") }),
        )
        .route(
            "/slow",
            get(|| async { std::future::pending::<&'static str>().await }),
        )
        .route("/big", get(|| async { "x".repeat(64 * 1024) }))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{address}")
}

/// Serves the fake host from a runtime on a background thread, for tests
/// that drive the blocking runner or the binary. The thread ends with the
/// test process.
pub fn start_in_background(options: FakeOptions) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let url = start(options).await;
            let _ = sender.send(url);
            std::future::pending::<()>().await;
        });
    });
    receiver.recv().expect("the fake host starts")
}

/// Writes a scenarios folder: `requirements.json` for `ids` plus the given
/// scenario files (path relative to the folder → JSON).
pub fn scenarios_folder(ids: &[&str], files: &[(&str, Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let requirements = json!({ "requirements": ids.iter().map(|id| json!({
        "id": id, "profile": id.split('.').next().unwrap_or_default(),
        "level": "MUST", "clause": "§2", "text": "a requirement", "capability": [],
    })).collect::<Vec<_>>() });
    std::fs::write(
        dir.path().join("requirements.json"),
        requirements.to_string(),
    )
    .expect("write");
    for (path, value) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write");
    }
    dir
}
