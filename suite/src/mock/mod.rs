//! The suite's own webhook server: it plays the judge (verifier), the
//! worker (arm) and the heartbeat predicate for hosts that call URLs, so the
//! suite counts every run a host dispatches instead of trusting the host's
//! counters.
//!
//! One server per run, bound on 127.0.0.1:0 (or `--callback-listen`). Each
//! scenario run opens a [`MockSession`] under its own path
//! `/mock/{nonce}/…`, answering from the scenario's [`MockScript`] and
//! logging every call; dropping the session closes the namespace (later
//! calls get 404) and cuts short any answer still being delayed.

pub mod contract;
pub mod log;
mod serve;
pub mod signature;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use goalpost_schemas::Schemas;
use serde_json::Value;
use time::OffsetDateTime;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::model::mock_script::MockScript;
pub use log::{round_us, CallRecord, Log, SecretCheck, Window};

/// Largest payload the mock reads; the contract caps answers at 1 MiB and a
/// host's requests are smaller still.
pub const BODY_LIMIT: usize = 1024 * 1024;
/// How long a shutdown waits for connections to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Milliseconds since `started`, to the microsecond: the clock of the call
/// log and of `clock: "ms"` captures.
pub fn elapsed_ms(started: Instant) -> f64 {
    round_us(started.elapsed().as_secs_f64() * 1000.0)
}

/// Where the mock listens and how the host reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockConfig {
    pub listen: SocketAddr,
    /// The base URL the host calls (`--callback-url`); `http://{bound
    /// address}` when absent.
    pub public_url: Option<String>,
    /// The host's webhook secret, when the suite knows it.
    pub secret: Option<String>,
}

impl MockConfig {
    /// 127.0.0.1 on a free port.
    pub fn local(secret: Option<String>) -> MockConfig {
        MockConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            public_url: None,
            secret,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MockError {
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        listen: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the mock listens on the unspecified address {0}; pass --callback-url with the address the host can reach")]
    NoPublicUrl(SocketAddr),
    #[error("a mock namespace `{0}` is already open")]
    Duplicate(String),
}

/// State shared by the server and every session.
struct Shared {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    secret: Option<String>,
    schemas: Arc<Schemas>,
    wall: fn() -> OffsetDateTime,
    /// Calls to a namespace that is not open (a scenario already over).
    strays: AtomicU64,
}

impl Shared {
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        // Entries are single inserts and removes: a panic elsewhere leaves
        // the map usable.
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One scenario run's namespace.
struct Session {
    script: MockScript,
    started: Instant,
    log: Mutex<Log>,
    closed: watch::Sender<bool>,
}

impl Session {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn elapsed_ms(&self) -> f64 {
        elapsed_ms(self.started)
    }
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("base_url", &self.base_url)
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// The running server.
pub struct MockServer {
    base_url: String,
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    /// Taken by the first [`MockServer::shutdown`].
    running: Mutex<Option<(oneshot::Sender<()>, tokio::task::JoinHandle<()>)>>,
}

impl MockServer {
    /// Binds and starts serving in the current tokio runtime. `wall` stamps
    /// each call's RFC 3339 arrival time.
    pub async fn start(
        config: MockConfig,
        schemas: Arc<Schemas>,
        wall: fn() -> OffsetDateTime,
    ) -> Result<MockServer, MockError> {
        if config.public_url.is_none() && config.listen.ip().is_unspecified() {
            return Err(MockError::NoPublicUrl(config.listen));
        }
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| MockError::Bind {
                listen: config.listen,
                source,
            })?;
        let local_addr = listener.local_addr().map_err(|source| MockError::Bind {
            listen: config.listen,
            source,
        })?;
        let base_url = match &config.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{local_addr}"),
        };
        let shared = Arc::new(Shared {
            sessions: Mutex::new(HashMap::new()),
            secret: config.secret,
            schemas,
            wall,
            strays: AtomicU64::new(0),
        });
        let (shutdown, signal) = oneshot::channel::<()>();
        let app = serve::router(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = signal.await;
                })
                .await;
        });
        Ok(MockServer {
            base_url,
            local_addr,
            shared,
            running: Mutex::new(Some((shutdown, task))),
        })
    }

    /// The base URL hosts call, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn knows_secret(&self) -> bool {
        self.shared.secret.is_some()
    }

    /// Calls that arrived for a namespace that was not open.
    pub fn strays(&self) -> u64 {
        self.shared.strays.load(Ordering::Relaxed)
    }

    /// Opens the namespace `/mock/{nonce}` answering from `script`; call
    /// times count from `started`.
    pub fn open(
        &self,
        nonce: &str,
        script: MockScript,
        started: Instant,
    ) -> Result<MockSession, MockError> {
        let (closed, _) = watch::channel(false);
        let session = Arc::new(Session {
            script,
            started,
            log: Mutex::new(Log::default()),
            closed,
        });
        let mut sessions = self.shared.sessions();
        if sessions.contains_key(nonce) {
            return Err(MockError::Duplicate(nonce.to_string()));
        }
        sessions.insert(nonce.to_string(), session.clone());
        Ok(MockSession {
            nonce: nonce.to_string(),
            base: format!("{}/mock/{nonce}", self.base_url),
            shared: self.shared.clone(),
            session,
        })
    }

    /// Stops serving; connections still open get a moment to finish.
    /// Later calls do nothing.
    pub async fn shutdown(&self) {
        for (_, session) in self.shared.sessions().drain() {
            session.closed.send_replace(true);
        }
        let running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some((shutdown, mut task)) = running {
            let _ = shutdown.send(());
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

/// One scenario run's open namespace; closed when dropped.
pub struct MockSession {
    nonce: String,
    base: String,
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl MockSession {
    /// `{mock.base}`: the namespace's URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `{mock.verifier}`.
    pub fn verifier_url(&self) -> String {
        format!("{}/verifier", self.base)
    }

    /// `{mock.arm}`: runs and heartbeat probes.
    pub fn arm_url(&self) -> String {
        format!("{}/arm", self.base)
    }

    /// `{mock.attention}`: every attention binding's runs, answered by the
    /// binding's mode.
    pub fn attention_url(&self) -> String {
        format!("{}/attention", self.base)
    }

    /// The template variables the session provides, name → URL.
    pub fn variables(&self) -> [(&'static str, String); 4] {
        [
            ("mock.base", self.base.clone()),
            ("mock.verifier", self.verifier_url()),
            ("mock.arm", self.arm_url()),
            ("mock.attention", self.attention_url()),
        ]
    }

    /// Calls received so far, whatever their goal or time.
    pub fn total(&self) -> usize {
        self.session.log().len()
    }

    /// The JSON view a `mockLog` step asserts on.
    pub fn view(&self, window: &Window) -> Value {
        self.session.log().view(window)
    }

    /// Milliseconds since the session's scenario started.
    pub fn elapsed_ms(&self) -> f64 {
        self.session.elapsed_ms()
    }

    /// A copy of every record so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.session.log().calls().to_vec()
    }
}

impl Drop for MockSession {
    fn drop(&mut self) {
        self.shared.sessions().remove(&self.nonce);
        self.session.closed.send_replace(true);
    }
}

#[cfg(test)]
mod tests;
