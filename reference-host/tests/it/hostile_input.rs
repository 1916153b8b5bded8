//! Hostile bodies: every endpoint that reads a body refuses bytes
//! that are not one sane JSON document with 400, 413 or 415 and the right
//! code, never a 5xx, and nothing changes. Endpoints that ignore bodies
//! shrug them off.

use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;
use support::{id_of, plain_body, Harness, Reply, A, BASE};

const VERIFIERS: &str = "/v1/host/sample/verifiers";
const LIMIT: usize = 64 * 1024;

/// One hostile request body and what it must produce.
struct Hostile {
    name: &'static str,
    content_type: Option<&'static [u8]>,
    bytes: Vec<u8>,
    status: StatusCode,
    code: &'static str,
}

fn nested(depth: usize) -> Vec<u8> {
    format!(
        r#"{{"objective": {}1{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
    .into_bytes()
}

/// A create body with `value` spliced in for the iteration bound.
fn with_iterations(value: &str) -> Vec<u8> {
    format!(
        r#"{{"objective": "o", "completion": {{"check": "verifier"}}, "continuation": {{"mode": "manual"}}, "bounds": {{"maxLoopIterations": {value}}}}}"#
    )
    .into_bytes()
}

fn corpus() -> Vec<Hostile> {
    let json = Some(&b"application/json"[..]);
    let malformed = |name, bytes: Vec<u8>| Hostile {
        name,
        content_type: json,
        bytes,
        status: StatusCode::BAD_REQUEST,
        code: "malformed_json",
    };
    let mut oversized = br#"{"objective": ""#.to_vec();
    oversized.extend(std::iter::repeat_n(b'a', LIMIT));
    oversized.extend(br#""}"#);
    vec![
        malformed("invalid UTF-8", b"{\"objective\": \"caf\xe9\"}".to_vec()),
        malformed("overlong UTF-8", b"{\"objective\": \"\xc0\xaf\"}".to_vec()),
        malformed("lone surrogate", br#"{"objective": "\udc00"}"#.to_vec()),
        malformed(
            "duplicate key",
            br#"{"objective": "a", "objective": "b"}"#.to_vec(),
        ),
        malformed(
            "nested duplicate key",
            br#"{"completion": {"check": "verifier", "check": "host"}}"#.to_vec(),
        ),
        malformed("nesting 33 deep", nested(32)),
        malformed("nesting 20000 deep", nested(20_000)),
        malformed("number beyond a double", with_iterations("1e400")),
        malformed("negative number beyond a double", with_iterations("-1e400")),
        malformed("truncated", br#"{"objective": "#.to_vec()),
        malformed("empty", Vec::new()),
        malformed("trailing garbage", br#"{} x"#.to_vec()),
        malformed("two documents", br#"{} {}"#.to_vec()),
        malformed("byte order mark", b"\xef\xbb\xbf{}".to_vec()),
        malformed("NaN", with_iterations("NaN")),
        malformed("NUL", b"\x00".to_vec()),
        Hostile {
            name: "text/plain",
            content_type: Some(b"text/plain"),
            bytes: plain_body().to_string().into_bytes(),
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "unsupported_media_type",
        },
        Hostile {
            name: "form",
            content_type: Some(b"application/x-www-form-urlencoded"),
            bytes: b"objective=o".to_vec(),
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "unsupported_media_type",
        },
        Hostile {
            name: "content type that is not text",
            content_type: Some(b"application/json\xff"),
            bytes: plain_body().to_string().into_bytes(),
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "unsupported_media_type",
        },
        Hostile {
            name: "over 64 KiB",
            content_type: json,
            bytes: oversized,
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: "payload_too_large",
        },
    ]
}

async fn send(host: &Harness, method: Method, path: &str, hostile: &Hostile) -> Reply {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {A}"));
    if let Some(content_type) = hostile.content_type {
        request = request.header("content-type", content_type);
    }
    host.send(
        request
            .body(Body::from(hostile.bytes.clone()))
            .expect("a valid request"),
    )
    .await
}

#[tokio::test]
async fn every_body_reading_endpoint_refuses_every_hostile_body() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let goal_path = format!("{BASE}/{id}");
    let before = host.get(&goal_path).await;
    let endpoints = [
        (Method::POST, BASE.to_string()),
        (Method::PATCH, goal_path.clone()),
        (Method::POST, VERIFIERS.to_string()),
    ];
    for hostile in corpus() {
        for (method, path) in &endpoints {
            let reply = send(&host, method.clone(), path, &hostile).await;
            assert_eq!(
                (reply.status, reply.body["error"].as_str()),
                (hostile.status, Some(hostile.code)),
                "{} to {method} {path}: {}",
                hostile.name,
                reply.body
            );
            reply.expect(hostile.status, "error");
        }
    }
    // Nothing was created, edited or registered.
    let after = host.get(&goal_path).await;
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    let goals = host.get(BASE).await;
    assert_eq!(
        goals.expect(StatusCode::OK, "goal-list")["goals"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let verifiers = host.get(VERIFIERS).await;
    assert_eq!(
        verifiers.expect(StatusCode::OK, "verifier-list")["verifiers"],
        json!([])
    );
}

#[tokio::test]
async fn endpoints_that_ignore_bodies_never_fail_on_them() {
    let host = Harness::seams();
    for hostile in corpus() {
        let id = id_of(&host.create(plain_body()).await);
        for action in ["pause", "resume", "continue", "abandon"] {
            let path = format!("{BASE}/{id}/{action}");
            let reply = send(&host, Method::POST, &path, &hostile).await;
            assert!(
                reply.status.is_success() || reply.status == StatusCode::CONFLICT,
                "{} to {path}: {} {}",
                hostile.name,
                reply.status,
                reply.body
            );
        }
    }
}

#[tokio::test]
async fn valid_json_with_hostile_values_is_400_or_stored_as_written() {
    let host = Harness::seams();
    for (value, status) in [
        ("1e300", StatusCode::BAD_REQUEST),
        ("18446744073709551616", StatusCode::BAD_REQUEST),
        ("-9223372036854775809", StatusCode::BAD_REQUEST),
        ("2.5", StatusCode::BAD_REQUEST),
        ("0", StatusCode::BAD_REQUEST),
        ("\"3\"", StatusCode::BAD_REQUEST),
        ("3.0", StatusCode::CREATED),
        ("18446744073709551615", StatusCode::CREATED),
    ] {
        let request = Request::builder()
            .method(Method::POST)
            .uri(BASE)
            .header("authorization", format!("Bearer {A}"))
            .header("content-type", "application/json")
            .body(Body::from(with_iterations(value)))
            .expect("a valid request");
        let reply = host.send(request).await;
        if status == StatusCode::CREATED {
            reply.expect(status, "goal");
        } else {
            reply.refused(status, "invalid_request");
            assert_eq!(
                reply.body["details"]["pointer"], "/bounds/maxLoopIterations",
                "{value}"
            );
        }
    }
    for (bounds, stored) in [
        (
            json!({ "maxCostUsd": 1e300 }),
            json!({ "maxCostUsd": 1e300 }),
        ),
        (
            json!({ "runTimeoutMs": u64::MAX }),
            json!({ "runTimeoutMs": u64::MAX }),
        ),
        (
            json!({ "maxCostUsd": 5e-324 }),
            json!({ "maxCostUsd": 5e-324 }),
        ),
    ] {
        let mut body = plain_body();
        body["bounds"] = bounds;
        let goal = host.create(body).await;
        assert_eq!(goal["bounds"], stored);
        // The goal still works: one continue closes or runs, never fails.
        let reply = host.continue_once(&id_of(&goal)).await;
        assert!(
            reply.status == StatusCode::OK || reply.status == StatusCode::CONFLICT,
            "{}: {}",
            reply.status,
            reply.body
        );
    }
    // Strings that are hostile as text are just text.
    for objective in [
        "\u{0}",
        "'; DROP TABLE goals; --",
        "\u{202e}evil",
        "\u{1F600}",
    ] {
        let mut body = plain_body();
        body["objective"] = json!(objective);
        assert_eq!(host.create(body).await["objective"], objective);
    }
}

#[tokio::test]
async fn bad_query_parameters_are_400_not_500() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    for path in [
        format!("{BASE}?state=%FF"),
        format!("{BASE}?state=active&state=abandoned"),
        format!("{BASE}/{id}/events?after=-1"),
        format!("{BASE}/{id}/events?after=18446744073709551616"),
        format!("{BASE}/{id}/events?after=%00"),
    ] {
        let reply = host.get(&path).await;
        assert!(
            reply.status == StatusCode::BAD_REQUEST || reply.status == StatusCode::OK,
            "{path}: {} {}",
            reply.status,
            reply.body
        );
        if reply.status == StatusCode::BAD_REQUEST {
            reply.expect(StatusCode::BAD_REQUEST, "error");
        }
    }
}
