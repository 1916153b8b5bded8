//! A tenant (or anyone who can open a socket) attacking the host over the
//! network: webhook refs aimed at the host's own network (SSRF) by IP
//! literal and by a name that resolves to loopback, a slowloris client,
//! idle sockets past the connection cap, a stuck client at shutdown, and a
//! tenant's receiver forging calls to another tenant's webhooks. Each runs
//! against a real `RunningHost` over TCP, configured as released (no
//! egress allowlist) unless the test says otherwise.

use crate::support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goalpost_host::serve::ConnectionLimits;
use goalpost_host::webhook::{signature, WebhookSecret};
use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BASE: &str = "/v1/host/sample/goals";
const TOKEN_A: &str = "hostile-token-a";
const TOKEN_B: &str = "hostile-token-b";
const MASTER: &str = "hostile-master-secret";

/// Two tenants, seams on (to drive runs with `continue`), and the released
/// egress policy: nothing internal allowed.
fn config() -> Config {
    let mut config = Config::conformance_in_memory(vec![
        (TOKEN_A.into(), "tenant-a".into()),
        (TOKEN_B.into(), "tenant-b".into()),
    ]);
    config.webhook_allow = Vec::new();
    config.webhook_secret = Some(MASTER.into());
    config
}

fn goal(verifier: &str, arm: &str) -> Value {
    json!({
        "objective": "hostile network",
        "completion": { "check": "verifier", "verifierRef": verifier },
        "continuation": { "mode": "manual", "armRef": arm },
        "bounds": { "maxLoopIterations": 3 },
    })
}

async fn send(
    host: &RunningHost,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut request = goalpost_host::tls::client()
        .request(method, format!("{}{path}", host.base_url()))
        .bearer_auth(token)
        .timeout(Duration::from_secs(30));
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("the host answers");
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

async fn create(host: &RunningHost, token: &str, body: &Value) -> (u16, Value) {
    send(host, reqwest::Method::POST, BASE, token, Some(body)).await
}

/// A TCP listener on loopback that counts the connections made to it and
/// answers nothing.
async fn counting_listener() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (addr, count)
}

#[tokio::test]
async fn refs_into_internal_addresses_are_refused_at_create_and_patch() {
    let host = RunningHost::start(config()).await.expect("starts");
    let public = "http://203.0.114.7/hook";
    for internal in [
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/x",
        "http://127.0.0.1:22/x",
        "http://[::1]/x",
        "http://[::ffff:169.254.169.254]/x",
        "http://0x7f000001/x",
    ] {
        for body in [goal(internal, public), goal(public, internal)] {
            let (status, answer) = create(&host, TOKEN_A, &body).await;
            assert_eq!(status, 422, "{internal}: {answer}");
            assert_eq!(answer["error"], "egress_denied", "{answer}");
        }
    }
    let (status, created) = create(&host, TOKEN_A, &goal(public, public)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("an id");
    let (status, answer) = send(
        &host,
        reqwest::Method::PATCH,
        &format!("{BASE}/{id}"),
        TOKEN_A,
        Some(&json!({ "completion": { "verifierRef": "http://10.0.0.1/x" } })),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"], "egress_denied");
    assert_eq!(answer["details"]["pointer"], "/completion/verifierRef");
    host.shutdown().await;
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_never_called() {
    let (addr, connections) = counting_listener().await;
    let host = RunningHost::start(config()).await.expect("starts");
    let url = format!("http://localhost:{}/hook", addr.port());
    // Names are judged when they resolve, so the ref itself is accepted.
    let (status, created) = create(&host, TOKEN_A, &goal(&url, &url)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("an id");
    let (status, outcome) = send(
        &host,
        reqwest::Method::POST,
        &format!("{BASE}/{id}/continue"),
        TOKEN_A,
        None,
    )
    .await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(
        outcome["evaluation"]["failureClass"], "environmental",
        "{outcome}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0, "the host connected");
    host.shutdown().await;

    // The operator can allow it, and then it is called.
    let mut allowed = config();
    allowed.webhook_allow = vec![goalpost_host::domain::egress::AllowEntry::parse(&format!(
        "localhost:{}",
        addr.port()
    ))
    .expect("entry")];
    let host = RunningHost::start(allowed).await.expect("starts");
    let (_, created) = create(&host, TOKEN_A, &goal(&url, &url)).await;
    let id = created["id"].as_str().expect("an id");
    send(
        &host,
        reqwest::Method::POST,
        &format!("{BASE}/{id}/continue"),
        TOKEN_A,
        None,
    )
    .await;
    assert!(connections.load(Ordering::SeqCst) >= 1);
    host.shutdown().await;
}

fn limits(max_connections: usize, header: Duration, shutdown: Duration) -> ConnectionLimits {
    ConnectionLimits {
        max_connections,
        header_read_timeout: header,
        shutdown_deadline: shutdown,
        ..ConnectionLimits::default()
    }
}

/// Reads until the server closes the connection, or fails at `deadline`.
async fn closed_within(stream: &mut TcpStream, deadline: Duration) -> Result<Vec<u8>, String> {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(deadline, async {
        let mut buffer = [0u8; 1024];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    match read {
        Ok(()) => Ok(seen),
        Err(_) => Err(format!("still open after {deadline:?}")),
    }
}

#[tokio::test]
async fn a_slowloris_client_is_disconnected() {
    let mut config = config();
    config.connections = limits(64, Duration::from_millis(500), Duration::from_secs(5));
    let host = RunningHost::start(config).await.expect("starts");
    let mut slow = TcpStream::connect(host.addr()).await.expect("connect");
    slow.write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let started = Instant::now();
    closed_within(&mut slow, Duration::from_secs(5))
        .await
        .expect("the host closes a connection that never finishes its head");
    assert!(started.elapsed() >= Duration::from_millis(400));
    host.shutdown().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let mut config = config();
    config.connections = limits(64, Duration::from_millis(500), Duration::from_secs(5));
    let host = RunningHost::start(config).await.expect("starts");
    let mut idle = TcpStream::connect(host.addr()).await.expect("connect");
    idle.write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let answer = closed_within(&mut idle, Duration::from_secs(5))
        .await
        .expect("the host closes a connection left idle after its answer");
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    host.shutdown().await;
}

#[tokio::test]
async fn connections_past_the_cap_are_closed_at_once() {
    let mut config = config();
    config.connections = limits(4, Duration::from_secs(60), Duration::from_secs(5));
    let host = RunningHost::start(config).await.expect("starts");
    // Four clients that showed a known credential and stay idle (an
    // anonymous one would be closed to make room for the fifth:
    // `tests/connection_limits.rs`).
    let mut idle = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(host.addr()).await.expect("connect");
        stream
            .write_all(
                format!(
                    "GET {BASE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\n\r\n"
                )
                .as_bytes(),
            )
            .await
            .expect("write");
        let mut answer = Vec::new();
        while !answer.windows(2).any(|pair| pair == b"]}") {
            let mut buffer = [0u8; 1024];
            let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
                .await
                .expect("answered")
                .expect("read");
            assert!(read > 0, "closed before its answer");
            answer.extend_from_slice(&buffer[..read]);
        }
        idle.push(stream);
    }
    let mut extra = TcpStream::connect(host.addr()).await.expect("connect");
    let _ = extra
        .write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let answer = closed_within(&mut extra, Duration::from_secs(5))
        .await
        .expect("the fifth connection is closed");
    assert!(
        answer.is_empty(),
        "it was served: {:?}",
        String::from_utf8_lossy(&answer)
    );

    // Once an idle socket goes, a new client is served again.
    drop(idle.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let served = goalpost_host::tls::client()
            .get(format!("{}/.well-known/openwop", host.base_url()))
            .timeout(Duration::from_secs(1))
            .send()
            .await
            .is_ok_and(|response| response.status().is_success());
        if served {
            break;
        }
        assert!(Instant::now() < deadline, "no connection freed up");
        tokio::task::yield_now().await;
    }
    drop(idle);
    host.shutdown().await;
}

#[tokio::test]
async fn shutdown_is_bounded_by_its_deadline_even_with_a_stuck_client() {
    let mut config = config();
    config.connections = limits(64, Duration::from_secs(60), Duration::from_millis(500));
    let host = RunningHost::start(config).await.expect("starts");
    let mut stuck = TcpStream::connect(host.addr()).await.expect("connect");
    stuck
        .write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    // The host has the connection once a full request on another one is
    // answered after it (the accept loop takes them in order).
    let (status, _) = send(
        &host,
        reqwest::Method::GET,
        "/.well-known/openwop",
        TOKEN_A,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), host.shutdown())
        .await
        .expect("shutdown finishes within its deadline");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    closed_within(&mut stuck, Duration::from_secs(2))
        .await
        .expect("the stuck connection is dropped");
}

#[tokio::test]
async fn one_tenants_receiver_cannot_forge_calls_to_another_tenants_webhooks() {
    let receiver = Receiver::start(|call, _| {
        if call.path == "/arm" {
            Answer::Json(json!({ "output": {} }))
        } else {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        }
    })
    .await;
    let mut config = config();
    config.webhook_allow =
        vec![
            goalpost_host::domain::egress::AllowEntry::parse(&receiver.addr.to_string())
                .expect("entry"),
        ];
    let host = RunningHost::start(config).await.expect("starts");
    let body = goal(&receiver.url("/verifier"), &receiver.url("/arm"));
    for token in [TOKEN_A, TOKEN_B] {
        let (status, created) = create(&host, token, &body).await;
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_str().expect("an id");
        let (status, _) = send(
            &host,
            reqwest::Method::POST,
            &format!("{BASE}/{id}/continue"),
            token,
            None,
        )
        .await;
        assert_eq!(status, 200);
    }
    let calls = receiver.calls();
    assert_eq!(calls.len(), 4);
    let master = WebhookSecret::new(MASTER).expect("valid");
    let key_a = signature::tenant_secret(&master, "tenant-a");
    let key_b = signature::tenant_secret(&master, "tenant-b");
    assert_ne!(key_a, key_b);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64;
    for call in &calls {
        let tenant = call
            .header(signature::TENANT_HEADER)
            .expect("a tenant header");
        let (own, other) = match tenant {
            "tenant-a" => (&key_a, &key_b),
            "tenant-b" => (&key_b, &key_a),
            unknown => panic!("unknown tenant {unknown}"),
        };
        let header = call.header(signature::SIGNATURE_HEADER).expect("signed");
        assert!(call.header(signature::GOAL_HEADER).is_some());
        assert_eq!(signature::verify(own, header, &call.raw, now), Ok(()));
        // The other tenant's receiver holds only its own key: whatever it
        // signs does not verify under this tenant's.
        assert_eq!(
            signature::verify(other, header, &call.raw, now),
            Err(signature::SignatureError::Mismatch)
        );
        let forged = signature::sign(other, now, &call.raw);
        assert_eq!(
            signature::verify(own, &forged, &call.raw, now),
            Err(signature::SignatureError::Mismatch)
        );
        // A recorded call replayed later is refused.
        assert_eq!(
            signature::verify(
                own,
                header,
                &call.raw,
                now + signature::REPLAY_WINDOW_SECS + 60
            ),
            Err(signature::SignatureError::Stale)
        );
        // The master secret itself never travels.
        for (_, value) in call.headers.iter() {
            assert!(!value.to_str().unwrap_or_default().contains(MASTER));
        }
    }
    host.shutdown().await;
}

/// The released binary with `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` set
/// still calls the webhook directly: a proxy would connect on the host's
/// behalf to addresses its resolver never sees. A child process, so the
/// environment of the tests is left alone.
#[tokio::test]
async fn the_webhook_client_ignores_proxies_from_the_environment() {
    let (proxy, proxied) = counting_listener().await;
    let receiver = Receiver::start(|call, _| {
        if call.path == "/arm" {
            Answer::Json(json!({ "output": {} }))
        } else {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        }
    })
    .await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let proxy_url = format!("http://{proxy}");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
        .args(["serve", "--conformance-seams", "--db", ":memory:"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("GOALPOST_HOST_TOKENS", format!("{TOKEN_A}=tenant-a"))
        .env("GOALPOST_HOST_WEBHOOK_ALLOW", receiver.addr.to_string())
        .env("HTTP_PROXY", &proxy_url)
        .env("http_proxy", &proxy_url)
        .env("ALL_PROXY", &proxy_url)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");
    let _child = KillOnDrop(child);
    let base = format!("http://127.0.0.1:{port}");
    let client = goalpost_host::tls::client();
    let deadline = Instant::now() + Duration::from_secs(20);
    while client
        .get(format!("{base}/.well-known/openwop"))
        .send()
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the host did not come up");
        tokio::task::yield_now().await;
    }
    let created: Value = client
        .post(format!("{base}{BASE}"))
        .bearer_auth(TOKEN_A)
        .json(&goal(&receiver.url("/verifier"), &receiver.url("/arm")))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let id = created["id"].as_str().expect("an id");
    let outcome: Value = client
        .post(format!("{base}{BASE}/{id}/continue"))
        .bearer_auth(TOKEN_A)
        .send()
        .await
        .expect("continue")
        .json()
        .await
        .expect("json");
    assert_eq!(outcome["evaluation"]["satisfied"], false, "{outcome}");
    assert_eq!(receiver.calls().len(), 2, "{outcome}");
    assert_eq!(proxied.load(Ordering::SeqCst), 0, "the proxy was used");
}

/// Stops the child host however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
