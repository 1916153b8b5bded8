//! A webhook receiver on 127.0.0.1:0: every POST is logged and answered by
//! the test's script. Answers can be delayed, held until released, or be
//! anything at all (malformed JSON, 500s), so each failure mode of the
//! host's webhook client can be staged.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// One call as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Call {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
    /// The body as sent (what the signature covers).
    pub raw: Bytes,
    pub at: Instant,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// Whether the call is signed with `tenant`'s key derived from
    /// `master`, for `tenant`, within the replay window.
    pub fn signed_for(&self, master: &str, tenant: &str) -> bool {
        use goalpost_host::webhook::{signature, WebhookSecret};
        let key = signature::tenant_secret(&WebhookSecret::new(master).expect("valid"), tenant);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs() as i64;
        self.header(signature::TENANT_HEADER) == Some(tenant)
            && self
                .header(signature::SIGNATURE_HEADER)
                .is_some_and(|header| signature::verify(&key, header, &self.raw, now).is_ok())
    }

    pub fn is_probe(&self) -> bool {
        self.body.get("probe").is_some()
    }
}

/// How to answer one call.
#[derive(Debug, Clone)]
pub enum Answer {
    Json(Value),
    Status(u16, Value),
    Raw(String),
    /// Answer after this long.
    Delayed(Duration, Box<Answer>),
    /// Answer once [`Receiver::release`] is called.
    Held(Box<Answer>),
}

type Script = dyn Fn(&Call, usize) -> Answer + Send + Sync;

struct Shared {
    calls: Mutex<Vec<Call>>,
    script: Box<Script>,
    released: watch::Sender<bool>,
}

pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    /// Serves `script(call, n)` where `n` counts the calls to that path
    /// from 1 (heartbeat probes and arm runs share the arm's path).
    pub async fn start(
        script: impl Fn(&Call, usize) -> Answer + Send + Sync + 'static,
    ) -> Receiver {
        let shared = Arc::new(Shared {
            calls: Mutex::new(Vec::new()),
            script: Box::new(script),
            released: watch::channel(false).0,
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let router = Router::new()
            .fallback(receive)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Receiver {
            addr,
            shared,
            server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn calls_to(&self, path: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|call| call.path == path)
            .collect()
    }

    /// Lets every held answer go, now and later.
    pub fn release(&self) {
        self.shared.released.send_replace(true);
    }

    /// Polls until `count` calls reached `path`, failing after 5 s.
    pub async fn wait_for_calls(&self, path: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.calls_to(path).len() < count {
            assert!(
                Instant::now() < deadline,
                "{path} got {} calls, expected {count}",
                self.calls_to(path).len()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn receive(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = Call {
        path: uri.path().to_string(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: body.clone(),
        at: Instant::now(),
    };
    let number = {
        let mut calls = shared.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.push(call.clone());
        calls.iter().filter(|seen| seen.path == call.path).count()
    };
    let answer = (shared.script)(&call, number);
    respond(&shared, answer).await
}

async fn respond(shared: &Shared, mut answer: Answer) -> Response {
    loop {
        match answer {
            Answer::Json(body) => return (StatusCode::OK, axum::Json(body)).into_response(),
            Answer::Status(status, body) => {
                let status = StatusCode::from_u16(status).expect("a valid status");
                return (status, axum::Json(body)).into_response();
            }
            Answer::Raw(text) => {
                return (StatusCode::OK, [("content-type", "application/json")], text)
                    .into_response()
            }
            Answer::Delayed(delay, next) => {
                tokio::time::sleep(delay).await;
                answer = *next;
            }
            Answer::Held(next) => {
                let mut released = shared.released.subscribe();
                let _ = released.wait_for(|released| *released).await;
                answer = *next;
            }
        }
    }
}
