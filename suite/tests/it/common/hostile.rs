//! A host that misbehaves at the byte level, for the suite's own
//! robustness tests: raw TCP, so it can do what no well-behaved HTTP
//! framework would let it (lie about lengths, never finish, go silent).

#![allow(dead_code)] // each test binary uses a different part

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const DISCOVERY: &str = "/.well-known/openwop";

/// What the host does wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// 200 `application/json` with a truncated JSON text.
    InvalidJson,
    /// 200 announcing and streaming 50 MB.
    HugeBody,
    /// 200, chunked, one byte every 20 ms, forever.
    EndlessBody,
    /// A status line and headers promising a body, then nothing.
    HeadersThenSilence,
    /// 302 to the very same URL.
    RedirectLoop,
    /// 200 `text/html` with a web page.
    HtmlContentType,
    /// A status drawn from a seeded generator (1xx to 5xx, odd ones
    /// included) with a `{}` body.
    RandomStatus { seed: u64 },
    /// Reads the request, then closes the connection without a word.
    ClosedConnection,
}

/// Which requests it misbehaves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every request, discovery included.
    Everything,
    /// Everything but discovery, which gets `discovery` below.
    AfterDiscovery,
}

/// Statuses `RandomStatus` draws from: the plain ones and the ones a client
/// is most likely to mishandle (100 is informational and never final, 101
/// was not asked for, 204 and 304 may not have a body, 599 is unassigned).
const STATUSES: &[u16] = &[
    100, 101, 200, 201, 204, 301, 304, 400, 401, 404, 409, 418, 422, 500, 503, 599,
];
/// Cap on what the server reads of a request.
const REQUEST_CAP: usize = 1024 * 1024;
const HUGE: usize = 50 * 1024 * 1024;

/// Serves `misbehaviour` on 127.0.0.1 from a runtime on a background
/// thread; returns its base URL. `discovery` is what `AfterDiscovery`
/// answers the discovery path with. The thread ends with the test process.
pub fn start(misbehaviour: Misbehaviour, scope: Scope, discovery: Value) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("hostile-host".to_string())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("hostile-io")
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                let address = listener.local_addr().expect("address");
                let _ = sender.send(format!("http://{address}"));
                let state = Arc::new(State {
                    misbehaviour,
                    scope,
                    discovery: discovery.to_string(),
                    draws: AtomicU64::new(match misbehaviour {
                        Misbehaviour::RandomStatus { seed } => seed,
                        _ => 0,
                    }),
                });
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(serve(socket, state.clone()));
                }
            });
        })
        .expect("spawn the hostile host");
    receiver.recv().expect("the hostile host starts")
}

struct State {
    misbehaviour: Misbehaviour,
    scope: Scope,
    discovery: String,
    /// SplitMix64 state for `RandomStatus`.
    draws: AtomicU64,
}

impl State {
    fn draw(&self, pool: &[u16]) -> u16 {
        let mut z = self
            .draws
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::SeqCst)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        pool[(z % pool.len() as u64) as usize]
    }
}

/// The request head's path, after reading the whole request (head and a
/// `Content-Length` body); `None` when the client went away first.
async fn read_request(socket: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if buffer.len() > REQUEST_CAP {
            return None;
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let path = head.split_whitespace().nth(1)?.to_string();
    let length: usize = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
        .min(REQUEST_CAP);
    let mut body = buffer.len() - head_end;
    while body < length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body += read;
    }
    Some(path)
}

fn response(status: u16, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} Hostile\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Waits until the client hangs up (or a long time passes), so a silent
/// connection stays open exactly as long as the client tolerates it.
async fn until_hangup(socket: &mut TcpStream) {
    let mut sink = [0u8; 1024];
    let wait = async {
        while let Ok(read) = socket.read(&mut sink).await {
            if read == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(600), wait).await;
}

async fn serve(mut socket: TcpStream, state: Arc<State>) {
    let Some(path) = read_request(&mut socket).await else {
        return;
    };
    let discovery = path.split('?').next() == Some(DISCOVERY);
    if discovery && state.scope == Scope::AfterDiscovery {
        let _ = socket
            .write_all(&response(200, "application/json", &state.discovery))
            .await;
        return;
    }
    match state.misbehaviour {
        Misbehaviour::InvalidJson => {
            let _ = socket
                .write_all(&response(
                    200,
                    "application/json",
                    r#"{"goals": [{"id": "goal-1", "state": tru"#,
                ))
                .await;
        }
        Misbehaviour::HugeBody => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {HUGE}\r\n\r\n"
            );
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let block = vec![b' '; 64 * 1024];
            let mut sent = 0;
            while sent < HUGE {
                if socket.write_all(&block).await.is_err() {
                    return;
                }
                sent += block.len();
            }
        }
        Misbehaviour::EndlessBody => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1\r\n[\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if socket.write_all(b"1\r\n \r\n").await.is_err() {
                    return;
                }
            }
        }
        Misbehaviour::HeadersThenSilence => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_ok() {
                until_hangup(&mut socket).await;
            }
        }
        Misbehaviour::RedirectLoop => {
            let head = format!(
                "HTTP/1.1 302 Found\r\nlocation: {path}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = socket.write_all(head.as_bytes()).await;
        }
        Misbehaviour::HtmlContentType => {
            let page = "<!doctype html><html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>";
            let _ = socket
                .write_all(&response(200, "text/html; charset=utf-8", page))
                .await;
        }
        Misbehaviour::RandomStatus { .. } => {
            // A 2xx `{}` discovery document is a host that advertises
            // nothing, not a hostile one: discovery draws only the others.
            let pool: Vec<u16> = STATUSES
                .iter()
                .copied()
                .filter(|status| !discovery || !(200..300).contains(status))
                .collect();
            let status = state.draw(&pool);
            if status < 200 {
                // An informational answer promises a final one that never
                // comes; stay open until the client gives up.
                let head = format!("HTTP/1.1 {status} Hostile\r\n\r\n");
                if socket.write_all(head.as_bytes()).await.is_ok() {
                    until_hangup(&mut socket).await;
                }
            } else {
                let _ = socket
                    .write_all(&response(status, "application/json", "{}"))
                    .await;
            }
        }
        Misbehaviour::ClosedConnection => {}
    }
    let _ = socket.shutdown().await;
}

/// A discovery document that gates every scenario in (it advertises every
/// mode and seam the scenarios need, and the attention extension) but breaks the capabilities schema (an
/// unknown key under `agents.goals`), so even the discovery scenario cannot
/// pass.
pub fn discovery_document(continuation: &[String], seams: &[String]) -> Value {
    let mut flags = serde_json::Map::new();
    for seam in seams {
        flags.insert(seam.clone(), Value::Bool(true));
    }
    json!({
        "protocol": "openwop",
        "host": {
            "name": "hostile",
            "version": "6.6.6",
            "reportedRuns": {"path": "/v1/goals/{id}/runs", "continuation": continuation},
            "events": {"goalList": true, "stream": "/v1/host/sample/goals/events"}
        },
        "agents": {"goals": {
            "judge": "verifier",
            "continuation": continuation,
            "requiresBounds": true,
            "hostile": true
        }},
        "webhookEgress": {"internal": "denied"},
        "conformanceSeams": {"goals": flags},
        "extensions": {"goalpost": {"attention": {
            "version": "1.0",
            "modes": ["pursue", "coordinate", "review", "falsify", "judge", "observe"],
            "policies": ["verifier", "host-confirmed", "principal-confirmed", "quorum"]
        }}}
    })
}
