//! goalpost-host: the reference host for RFC 0097 standing goals.
//!
//! `http` and the scheduler call `engine`, which runs each use case through
//! `domain` (pure rules), `arms` / `judge` (out through `webhook`) and
//! `storage`. See docs/DESIGN.md "Host contract" and "Engine".
//!
//! Embedding (what the suite does):
//!
//! ```no_run
//! # async fn demo() -> Result<(), goalpost_host::HostError> {
//! use goalpost_host::{Config, RunningHost};
//! let host = RunningHost::start(Config::conformance_in_memory(vec![
//!     ("token-a".into(), "tenant-a".into()),
//! ])).await?;
//! println!("{}", host.base_url());
//! host.shutdown().await;
//! # Ok(()) }
//! ```

pub mod arms;
pub mod bucket;
pub mod choices;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod domain;
pub mod engine;
pub mod event_webhooks;
pub mod future;
pub mod host;
pub mod http;
pub mod judge;
pub mod logging;
pub mod scheduler;
pub mod serve;
pub mod storage;
pub mod tls;
pub mod webhook;

pub use config::{Config, HistoryLimits, WorkLimits};
pub use host::{HostError, Ports, RunningHost};
pub use http::{app, AppState, Tokens};
pub use storage::DbLocation;
