//! Accepting connections (DESIGN "Connections"): HTTP/1.1 with a deadline
//! for each request head (which also closes a keep-alive connection left
//! idle), a write deadline on every answer ([`deadline`]), a cap on open
//! connections with a share per source address and a smaller one for
//! connections that have not shown a credential yet ([`table`]; the
//! excess is closed at once rather than queued, so idle sockets cannot
//! exhaust descriptors), and a bounded drain on shutdown (a stuck client
//! cannot keep the process alive).

mod deadline;
mod table;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use deadline::WriteDeadline;
pub use table::{ConnectionMark, Connections, Refusal, Ticket};

/// Limits on client connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections open at once; more are closed as they arrive.
    pub max_connections: usize,
    /// A connection that has not sent a whole request head this long after
    /// it opened or after its last answer is closed (slow or idle clients).
    pub header_read_timeout: Duration,
    /// A connection whose answer could not be written for this long (its
    /// client stopped reading) is closed.
    pub write_timeout: Duration,
    /// Most connections one source address may hold (trusted proxies
    /// excepted).
    pub max_per_address: usize,
    /// Most connections one source address may hold that went
    /// `anonymous_grace` without carrying a request with a known token.
    pub max_anonymous_per_address: usize,
    /// How long a new connection may go without a known credential before
    /// it counts against its address's `max_anonymous_per_address`: a
    /// client that opens many connections at once is admitted on each
    /// before any of them has sent its request.
    pub anonymous_grace: Duration,
    /// After shutdown starts, requests in flight get this long to finish;
    /// then every connection is dropped.
    pub shutdown_deadline: Duration,
}

pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// A quarter of the default cap.
pub const DEFAULT_MAX_PER_ADDRESS: usize = 256;
pub const DEFAULT_MAX_ANONYMOUS_PER_ADDRESS: usize = 32;
/// Half the header deadline: a prompt client shows its credential within
/// milliseconds, a loaded host still reads it within seconds, and a socket
/// that sends nothing is closed at the header deadline anyway.
pub const DEFAULT_ANONYMOUS_GRACE: Duration = Duration::from_secs(5);
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            max_per_address: DEFAULT_MAX_PER_ADDRESS,
            max_anonymous_per_address: DEFAULT_MAX_ANONYMOUS_PER_ADDRESS,
            anonymous_grace: DEFAULT_ANONYMOUS_GRACE,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` turns true, then drains
/// within the deadline. `table` holds the connections (made with these
/// limits; the caller keeps it to read how many are open).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    table: Arc<Connections>,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (drain, draining) = watch::channel(false);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            // An error means the sender is gone: shut down too.
            _ = async { drop(shutdown.wait_for(|stop| *stop).await) } => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of descriptors and the like: accepting again at
                        // once would spin.
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let ticket = match table.admit(peer.ip(), std::time::Instant::now()) {
                    Ok(ticket) => ticket,
                    Err(refusal) => {
                        tracing::debug!(?refusal, "closing a new connection");
                        drop(stream);
                        continue;
                    }
                };
                // Each request carries its connection's peer address, which
                // failed credentials are throttled by (`http::throttle`),
                // and its mark, which a known credential sets.
                let mark = ticket.mark();
                let service = TowerToHyperService::new(tower::ServiceExt::map_request(
                    router.clone(),
                    move |mut request: axum::http::Request<hyper::body::Incoming>| {
                        request
                            .extensions_mut()
                            .insert(axum::extract::ConnectInfo(peer));
                        request.extensions_mut().insert(mark.clone());
                        request
                    },
                ));
                let mut draining = draining.clone();
                connections.spawn(async move {
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder
                        .timer(TokioTimer::new())
                        .header_read_timeout(limits.header_read_timeout)
                        .keep_alive(true);
                    let stream = WriteDeadline::new(stream, limits.write_timeout);
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(connection);
                    tokio::select! {
                        _ = connection.as_mut() => {}
                        // Closed to make room for a newer connection.
                        () = ticket.evicted() => {}
                        _ = async { drop(draining.wait_for(|stop| *stop).await) } => {
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
                    drop(ticket);
                });
            }
        }
    }
    drop(listener);
    let _ = drain.send(true);
    let drained = tokio::time::timeout(limits.shutdown_deadline, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "connections still open at the shutdown deadline were dropped"
        );
        connections.shutdown().await;
    }
    Ok(())
}
