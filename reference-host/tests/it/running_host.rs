//! The embedding API over a real socket: start, discovery, the scheduler
//! loop closing a goal at its deadline with no client call, shutdown.

use std::time::{Duration, Instant};

use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A minimal HTTP/1.1 exchange (`Connection: close`): status and JSON body.
async fn exchange(
    host: &RunningHost,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(host.addr())
        .await
        .expect("the host accepts");
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        host.addr(),
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request sent");
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .expect("response read");
    let text = String::from_utf8(response).expect("UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    // Small bodies come back chunked or with a length; JSON starts at `{`.
    let start = body.find('{').unwrap_or(body.len());
    let end = body.rfind('}').map_or(start, |end| end + 1);
    let json = serde_json::from_str(&body[start..end]).unwrap_or(Value::Null);
    (status, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_serves_closes_on_deadline_and_shuts_down() {
    let host = RunningHost::start(Config::conformance_in_memory(vec![(
        "tok".into(),
        "acme".into(),
    )]))
    .await
    .expect("the host starts");
    assert!(host.base_url().starts_with("http://127.0.0.1:"));
    assert_ne!(host.addr().port(), 0);

    let (status, discovery) = exchange(&host, "GET", "/.well-known/openwop", None).await;
    assert_eq!(status, 200);
    assert_eq!(discovery["conformanceSeams"]["goals"]["continue"], true);

    let body = json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "manual" },
        "bounds": { "runTimeoutMs": 300 }
    });
    let (status, goal) = exchange(&host, "POST", "/v1/host/sample/goals", Some(&body)).await;
    assert_eq!(status, 201);
    let path = format!("/v1/host/sample/goals/{}", goal["id"].as_str().expect("id"));
    let created = Instant::now();

    // Poll (this is the client being patient, not a call that causes the
    // close): the scheduler must close the goal within 1 s of its deadline.
    let deadline = created + Duration::from_millis(300 + 1000);
    loop {
        let (_, goal) = exchange(&host, "GET", &path, None).await;
        if goal["state"] == "bound-exceeded" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {} after the deadline",
            goal["state"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    host.shutdown().await;
}

#[tokio::test]
async fn refuses_bad_credentials_and_busy_ports() {
    let bad = RunningHost::start(Config::conformance_in_memory(vec![(
        "tok".into(),
        " spaced".into(),
    )]))
    .await;
    assert!(bad.is_err());
    let first = RunningHost::start(Config::conformance_in_memory(vec![]))
        .await
        .expect("starts");
    let mut config = Config::conformance_in_memory(vec![]);
    config.listen = first.addr();
    assert!(matches!(
        RunningHost::start(config).await,
        Err(goalpost_host::HostError::Bind { .. })
    ));
    first.shutdown().await;
}

#[tokio::test]
async fn loads_the_verifiers_file_and_checks_the_webhook_secret() {
    use std::io::Write;

    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    let verifiers = json!({ "verifiers": [{ "tenant": "acme", "name": "done",
        "criteria": [{ "id": "done", "pointer": "/done", "op": "equals", "value": true }] }] });
    write!(file, "{verifiers}").expect("write");
    let mut config = Config::conformance_in_memory(vec![("tok".into(), "acme".into())]);
    config.verifiers = Some(file.path().to_path_buf());
    config.webhook_secret = Some("s3cret".into());
    let host = RunningHost::start(config).await.expect("starts");
    let (status, body) = exchange(&host, "GET", "/v1/host/sample/verifiers/done", None).await;
    assert_eq!(status, 200);
    assert_eq!(body["criteria"][0]["pointer"], "/done");
    host.shutdown().await;

    let mut bad_secret = Config::conformance_in_memory(vec![]);
    bad_secret.webhook_secret = Some("two words".into());
    assert!(matches!(
        RunningHost::start(bad_secret).await,
        Err(goalpost_host::HostError::WebhookSecret)
    ));
    let mut missing = Config::conformance_in_memory(vec![]);
    missing.verifiers = Some(file.path().with_extension("missing"));
    assert!(matches!(
        RunningHost::start(missing).await,
        Err(goalpost_host::HostError::Verifiers(_))
    ));
}
