//! Hostile logging: anonymous clients must not be able to fill the disk
//! through the request log. Alone in its binary: a test of another binary
//! running without a subscriber could cache its callsites as disabled.

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request};
use support::{Harness, A, BASE};

fn from(source: [u8; 4], token: Option<&str>, path: &str) -> Request<Body> {
    let mut request = Request::builder().method(Method::GET).uri(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut request = request.body(Body::empty()).expect("a request");
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from((source, 40_000))));
    request
}

#[derive(Clone, Default)]
struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

#[test]
fn anonymous_floods_cannot_fill_the_logs() {
    let logs = Logs::default();
    let subscriber = goalpost_host::logging::subscriber(
        goalpost_host::logging::LogFormat::Text,
        tracing_subscriber::EnvFilter::new("info"),
        false,
        logs.clone(),
    );
    let long = format!("{BASE}/{}", "x".repeat(16 * 1024));
    support::scoped_subscribers_see_every_callsite();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let host = Harness::seams();
            // Each from its own address, so the throttle does not cut in.
            for n in 0..300u32 {
                let [_, _, high, low] = n.to_be_bytes();
                host.send(from([10, 1, high, low], None, &long)).await;
            }
            // A logged request with a long path is cut short.
            host.send(from([10, 2, 0, 1], Some(A), &long)).await;
        });
    });
    let text = String::from_utf8(logs.0.lock().expect("not poisoned").clone()).expect("UTF-8");
    check_refusal_flood(&text, &long);

    // Requests that need no credential at all (unknown routes, discovery,
    // the OpenAPI document), as fast as a client can send them: each was
    // a log line, 27.6 MB in 3 s. Without a known credential they are
    // logged a few a second, the rest counted.
    let logs = Logs::default();
    let subscriber = goalpost_host::logging::subscriber(
        goalpost_host::logging::LogFormat::Text,
        tracing_subscriber::EnvFilter::new("info"),
        false,
        logs.clone(),
    );
    let paths = [
        format!("/nowhere/{}", "y".repeat(200)),
        "/.well-known/openwop".to_string(),
        "/openapi.json".to_string(),
    ];
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let host = Harness::seams();
            for n in 0..3_000u32 {
                let [_, _, high, low] = n.to_be_bytes();
                let path = &paths[n as usize % paths.len()];
                host.send(from([10, 3, high, low], None, path)).await;
            }
            // A tenant's requests are each logged.
            for _ in 0..50 {
                host.send(from([10, 4, 0, 1], Some(A), BASE)).await;
            }
        });
    });
    let text = String::from_utf8(logs.0.lock().expect("not poisoned").clone()).expect("UTF-8");
    eprintln!(
        "3,000 anonymous requests and 50 of a tenant wrote {} bytes of logs in {} lines",
        text.len(),
        text.lines().count()
    );
    assert!(
        text.len() < 64 * 1024,
        "3,000 anonymous requests wrote {} bytes of logs",
        text.len()
    );
    let tenant_lines = text
        .lines()
        .filter(|line| line.contains("tenant=tenant-a") && line.contains("answered"))
        .count();
    assert_eq!(
        tenant_lines, 50,
        "every request of a tenant is logged, with its tenant"
    );
}

fn check_refusal_flood(text: &str, long: &str) {
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(
        text.lines().count() > 1,
        "the requests are logged at all: {text}"
    );
    assert!(longest < 1024, "a log line of {longest} bytes");
    assert!(
        text.len() < 64 * 1024,
        "300 refused requests wrote {} bytes of logs",
        text.len()
    );
    assert!(
        text.contains(&format!("({} bytes)", long.len())),
        "the long path is logged cut short: {text}"
    );
}
