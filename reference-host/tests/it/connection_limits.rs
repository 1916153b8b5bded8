//! Connections no client can keep from another: a write deadline on every
//! answer, a share of the connection cap per source address, and a smaller
//! one for connections that have not shown a known credential. Each runs
//! against a real `RunningHost` over TCP; clients that play other
//! machines bind other loopback addresses (127.0.0.x). Waits poll with a
//! deadline.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goalpost_host::serve::ConnectionLimits;
use goalpost_host::{Config, RunningHost};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const BASE: &str = "/v1/host/sample/goals";
const TOKEN: &str = "connection-token";

fn config(connections: ConnectionLimits) -> Config {
    let mut config = Config::conformance_in_memory(vec![(TOKEN.into(), "tenant-a".into())]);
    config.connections = connections;
    config
}

/// A connection to `host` from the loopback address `127.0.0.{last}`,
/// with a receive buffer of `receive` bytes when given.
async fn connect_from(
    host: SocketAddr,
    last: u8,
    receive: Option<u32>,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    if let Some(size) = receive {
        socket.set_recv_buffer_size(size)?;
    }
    socket.bind(SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)),
        0,
    ))?;
    socket.connect(host).await
}

/// Polls until `check` holds, or panics with `what` after `within`.
async fn until(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A client asks for a list far larger than the socket buffers between
/// it and the host, and never reads the answer: the host closes the
/// connection once it could write nothing for the write deadline, and the
/// answer it was writing goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_nobody_reads_is_dropped_at_the_write_deadline() {
    let host = RunningHost::start(config(ConnectionLimits {
        write_timeout: Duration::from_millis(500),
        ..ConnectionLimits::default()
    }))
    .await
    .expect("starts");
    let client = reqwest::Client::new();
    // About 8 MB of goals: more than the kernel buffers of one loopback
    // connection with a 4 KiB receive window.
    let objective = "o".repeat(8000);
    for _ in 0..1000 {
        let response = client
            .post(format!("{}{BASE}", host.base_url()))
            .bearer_auth(TOKEN)
            .json(&json!({
                "objective": objective,
                "completion": { "check": "verifier" },
                "continuation": { "mode": "manual" },
                "bounds": { "maxLoopIterations": 3 },
            }))
            .send()
            .await
            .expect("the host answers");
        assert_eq!(response.status(), 201);
    }
    drop(client);
    until(
        Duration::from_secs(15),
        "the seeding connections closed",
        || host.open_connections() == 0,
    )
    .await;
    let mut reader = connect_from(host.addr(), 1, Some(4096))
        .await
        .expect("connects");
    reader
        .write_all(
            format!("GET {BASE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("asks");
    until(
        Duration::from_secs(2),
        "the host took the connection",
        || host.open_connections() == 1,
    )
    .await;
    until(
        Duration::from_secs(15),
        "the host closed the connection whose answer nobody read",
        || host.open_connections() == 0,
    )
    .await;
    // What was written before the deadline is there; the answer is not
    // whole (its last chunk never came).
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), reader.read_to_end(&mut seen)).await;
    assert!(
        seen.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&seen[..seen.len().min(64)])
    );
    assert!(
        !seen.ends_with(b"0\r\n\r\n"),
        "the whole answer ({} bytes) was delivered",
        seen.len()
    );
    assert!(seen.len() < 8_000_000, "{} bytes", seen.len());
    host.shutdown().await;
}

/// One machine (eight addresses) keeps idle connections open without a
/// credential, reopening each the moment it is closed, far past the
/// connection cap. Another client's requests are all served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_anonymous_connections_cannot_keep_legitimate_clients_out() {
    let host = RunningHost::start(config(ConnectionLimits {
        max_connections: 64,
        max_anonymous_per_address: 8,
        ..ConnectionLimits::default()
    }))
    .await
    .expect("starts");
    let stop = Arc::new(AtomicBool::new(false));
    let mut attackers = Vec::new();
    for last in 2..10 {
        for _ in 0..16 {
            let (stop, addr) = (Arc::clone(&stop), host.addr());
            attackers.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut idle) = connect_from(addr, last, None).await else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    };
                    // Hold it until the host closes it, then open another.
                    let mut byte = [0u8; 1];
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), idle.read(&mut byte)).await;
                }
            }));
        }
    }
    until(
        Duration::from_secs(10),
        "the attackers hold their share",
        || host.open_connections() >= 32,
    )
    .await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(3))
        .build()
        .expect("a client");
    let mut served = 0;
    for _ in 0..22 {
        let answered = client
            .get(format!("{}{BASE}", host.base_url()))
            .bearer_auth(TOKEN)
            .send()
            .await
            .is_ok_and(|response| response.status().is_success());
        if answered {
            served += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let held = host.open_connections();
    for attacker in attackers {
        let _ = attacker.await;
    }
    eprintln!("legitimate requests served beside 128 idle anonymous connections: {served} of 22 (connections open: {held})");
    assert_eq!(served, 22, "{served} of 22 legitimate requests were served");
    assert!(held <= 64, "{held} connections open past the cap of 64");
    host.shutdown().await;
}

/// A client opens more connections at once than its address's share of
/// connections without a credential, before sending anything on any of
/// them (a pool filling for a burst of parallel requests): each is
/// admitted, and each request is served. Refused on arrival, every one
/// past the share was lost whenever the host accepted faster than it read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_new_connections_from_one_client_is_served_on_each() {
    const BURST: usize = 20;
    let host = RunningHost::start(config(ConnectionLimits {
        max_anonymous_per_address: 4,
        // Longer than the test can take on a loaded machine: what is
        // checked is the burst, not the default grace.
        anonymous_grace: Duration::from_secs(120),
        ..ConnectionLimits::default()
    }))
    .await
    .expect("starts");
    let mut opened = Vec::new();
    for _ in 0..BURST {
        opened.push(connect_from(host.addr(), 11, None).await.expect("connects"));
    }
    until(
        Duration::from_secs(10),
        "the host took every connection of the burst",
        || host.open_connections() == BURST,
    )
    .await;
    let mut served = 0;
    for mut stream in opened {
        stream
            .write_all(
                format!(
                    "GET {BASE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
                )
                .as_bytes(),
            )
            .await
            .expect("asks");
        let mut answer = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
        if answer.starts_with(b"HTTP/1.1 200") {
            served += 1;
        }
    }
    assert_eq!(served, BURST, "{served} of {BURST} connections were served");
    host.shutdown().await;
}
