//! A host on `oneshot`: the router over an in-memory (or file) store with a
//! manual clock and a scheduler the test ticks. Every reply is checked
//! against the goalpost schemas through `expect`/`refused`.

#![allow(dead_code)]

pub mod readme;
pub mod receiver;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::engine::{Engine, EngineSettings};
use goalpost_host::scheduler::Scheduler;
use goalpost_host::storage::{DbLocation, Store};
use goalpost_host::webhook::WebhookSecret;
use goalpost_host::{app, AppState, Tokens};
use goalpost_schemas::Schemas;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

pub const BASE: &str = "/v1/host/sample/goals";
pub const A: &str = "token-a";
pub const B: &str = "token-b";
/// A third tenant, for tests with two attackers and a victim.
pub const C: &str = "token-c";
/// The webhook secret of [`Harness::webhooks`].
pub const SECRET: &str = "webhook-test-secret";

pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas::embedded().expect("the embedded schemas compile"))
}

pub struct Harness {
    pub app: Router,
    pub clock: Arc<ManualClock>,
    pub engine: Arc<Engine>,
    pub scheduler: Scheduler,
    pub store: Arc<dyn Store>,
}

impl Harness {
    pub fn new(seams: bool) -> Harness {
        Harness::open(&DbLocation::Memory, seams, Arc::new(ManualClock::fixed()))
    }

    pub fn seams() -> Harness {
        Harness::new(true)
    }

    pub fn open(location: &DbLocation, seams: bool, clock: Arc<ManualClock>) -> Harness {
        let settings = EngineSettings {
            conformance_seams: seams,
            ..EngineSettings::default()
        };
        Harness::with_settings(location, settings, clock)
    }

    /// Seams on, the webhook secret [`SECRET`] and this webhook timeout.
    pub fn webhooks(timeout: Duration) -> Harness {
        let settings = EngineSettings {
            conformance_seams: true,
            webhook_timeout: timeout,
            webhook_secret: WebhookSecret::new(SECRET).expect("a valid secret"),
            // The receivers listen on loopback.
            egress: goalpost_host::domain::egress::EgressPolicy::new(vec![
                goalpost_host::domain::egress::AllowEntry::parse("127.0.0.1").expect("entry"),
            ]),
            ..EngineSettings::default()
        };
        Harness::with_settings(
            &DbLocation::Memory,
            settings,
            Arc::new(ManualClock::fixed()),
        )
    }

    pub fn with_settings(
        location: &DbLocation,
        settings: EngineSettings,
        clock: Arc<ManualClock>,
    ) -> Harness {
        // SQLite for `:memory:` and files, PostgreSQL for a URL.
        let store: Arc<dyn Store> =
            goalpost_host::storage::open(location).expect("the store opens");
        Harness::with_store(store, settings, clock)
    }

    /// A host over a store the test opened itself.
    pub fn with_store(
        store: Arc<dyn Store>,
        settings: EngineSettings,
        clock: Arc<ManualClock>,
    ) -> Harness {
        let engine = Arc::new(Engine::new(
            Arc::clone(&store),
            Arc::clone(&clock) as Arc<dyn Clock>,
            settings,
        ));
        let tokens = Tokens::new(&[
            (A.to_string(), "tenant-a".to_string()),
            (B.to_string(), "tenant-b".to_string()),
            (C.to_string(), "tenant-c".to_string()),
        ])
        .expect("valid tokens");
        Harness {
            app: app(AppState::new(Arc::clone(&engine), tokens)),
            scheduler: Scheduler::new(Arc::clone(&engine)),
            clock,
            engine,
            store,
        }
    }

    pub async fn send(&self, request: Request<Body>) -> Reply {
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("the body is readable")
            .to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|error| {
                panic!(
                    "the body is not JSON ({error}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = match body {
            Some(body) => request
                .header("content-type", "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        };
        self.send(request.expect("a valid request")).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.call(Method::GET, path, Some(A), None).await
    }

    pub async fn post(&self, path: &str, body: Option<Value>) -> Reply {
        self.call(Method::POST, path, Some(A), body).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Reply {
        self.call(Method::PATCH, path, Some(A), Some(body)).await
    }

    /// Creates a goal as tenant A and returns it.
    pub async fn create(&self, body: Value) -> Value {
        self.post(BASE, Some(body))
            .await
            .expect(StatusCode::CREATED, "goal")
            .clone()
    }

    pub async fn goal(&self, id: &str) -> Value {
        self.get(&format!("{BASE}/{id}"))
            .await
            .expect(StatusCode::OK, "goal")
            .clone()
    }

    pub async fn continue_once(&self, id: &str) -> Reply {
        self.post(&format!("{BASE}/{id}/continue"), None).await
    }

    pub async fn events(&self, id: &str) -> Vec<Value> {
        let reply = self.get(&format!("{BASE}/{id}/events")).await;
        reply.expect(StatusCode::OK, "event-list")["events"]
            .as_array()
            .expect("events")
            .clone()
    }

    pub async fn evaluations(&self, id: &str) -> Vec<Value> {
        let reply = self.get(&format!("{BASE}/{id}/evaluations")).await;
        reply.expect(StatusCode::OK, "evaluation-list")["evaluations"]
            .as_array()
            .expect("evaluations")
            .clone()
    }

    /// One scheduler step at the clock's time, then waits for the fires it
    /// started.
    pub async fn tick(&self) -> goalpost_host::scheduler::Tick {
        let tick = self
            .scheduler
            .tick(self.clock.now())
            .await
            .expect("tick works");
        self.scheduler.settle().await;
        tick
    }

    /// Advances the clock and ticks once, without waiting for the fires
    /// the tick started (some may hang on purpose).
    pub async fn advance_and_tick_only(&self, ms: u64) -> goalpost_host::scheduler::Tick {
        self.clock.advance(Duration::from_millis(ms));
        self.scheduler
            .tick(self.clock.now())
            .await
            .expect("tick works")
    }

    pub async fn advance_and_tick(&self, ms: u64) -> goalpost_host::scheduler::Tick {
        self.clock.advance(Duration::from_millis(ms));
        self.tick().await
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Asserts the status and that the body validates against `schema`.
    #[track_caller]
    pub fn expect(&self, status: StatusCode, schema: &str) -> &Value {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.body
        );
        assert_valid(schema, &self.body);
        &self.body
    }

    /// Asserts an error envelope with this status and code.
    #[track_caller]
    pub fn refused(&self, status: StatusCode, code: &str) -> &Value {
        self.expect(status, "error");
        assert_eq!(self.body["error"], code, "body: {}", self.body);
        &self.body
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

#[track_caller]
pub fn assert_valid(schema: &str, value: &Value) {
    if let Err(violations) = schemas().validate(schema, value) {
        let violations: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!("{value} is not a valid {schema}: {violations:#?}");
    }
}

/// A manual goal with a fixture verifier (seams on).
pub fn goal_body(verifier: &str, arm: Option<&str>, bounds: Value) -> Value {
    json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": verifier },
        "continuation": { "mode": "manual", "armRef": arm },
        "bounds": bounds,
    })
}

/// A plain manual goal without refs (works without seams).
pub fn plain_body() -> Value {
    json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier" },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 3 },
    })
}

pub fn id_of(goal: &Value) -> String {
    goal["id"].as_str().expect("goal id").to_string()
}

/// Call before a test captures logs with a scoped subscriber
/// (`tracing::subscriber::with_default`). The tests share one process, and
/// while a single dispatcher exists tracing asks only the *current
/// thread's* default whether a callsite is of interest the first time the
/// callsite runs: another test's thread, whose default logs nothing, would
/// mark it "never" for everyone, and the capturing test would see nothing
/// of it. A second dispatcher kept for the whole process makes tracing ask
/// every live dispatcher instead, the capturing one among them.
pub fn scoped_subscribers_see_every_callsite() {
    static KEPT: OnceLock<tracing::Dispatch> = OnceLock::new();
    KEPT.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
}
