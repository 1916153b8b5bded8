//! Optimistic concurrency: every change a person makes honours
//! `If-Match`; a tag from before the last change is 412 and changes nothing,
//! and of many writers holding one tag exactly one wins.

use crate::support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use support::{id_of, plain_body, Harness, Reply, A, BASE};

async fn with_tag(
    host: &Harness,
    method: Method,
    path: &str,
    tag: &str,
    body: Option<Value>,
) -> Reply {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {A}"))
        .header("if-match", tag)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))
        .expect("a valid request");
    host.send(request).await
}

/// The four changes a person makes, each valid on an active, unpaused goal
/// (`resume` is a no-op there, and still checks the tag).
fn changes(id: &str) -> Vec<(Method, String, Option<Value>)> {
    let path = format!("{BASE}/{id}");
    vec![
        (
            Method::PATCH,
            path.clone(),
            Some(json!({ "objective": "edited" })),
        ),
        (Method::POST, format!("{path}/pause"), None),
        (Method::POST, format!("{path}/resume"), None),
        (Method::POST, format!("{path}/abandon"), None),
    ]
}

#[tokio::test]
async fn a_stale_tag_is_412_and_changes_nothing_on_every_change() {
    for index in 0..4 {
        let host = Harness::seams();
        let id = id_of(&host.create(plain_body()).await);
        let (method, path, body) = changes(&id).swap_remove(index);
        // Move the goal to version 2, so "1" is a real but stale tag.
        host.patch(
            &format!("{BASE}/{id}"),
            json!({ "objective": "second thoughts" }),
        )
        .await
        .expect(StatusCode::OK, "goal");
        let before = host.get(&format!("{BASE}/{id}")).await;
        assert_eq!(before.header("etag"), Some("\"2\""));
        let events = host.events(&id).await;

        for stale in ["\"1\"", "\"3\"", "W/\"2\"", "\"1\", \"3\""] {
            let reply = with_tag(&host, method.clone(), &path, stale, body.clone()).await;
            reply.refused(StatusCode::PRECONDITION_FAILED, "precondition_failed");
            assert_eq!(reply.header("etag"), None, "{method} {path}");
        }
        let after = host.get(&format!("{BASE}/{id}")).await;
        assert_eq!(after.body, before.body, "change {index}: {method} {path}");
        assert_eq!(after.header("etag"), Some("\"2\""));
        assert_eq!(host.events(&id).await, events);

        let fresh = with_tag(&host, method.clone(), &path, "\"2\"", body.clone()).await;
        fresh.expect(StatusCode::OK, "goal");
    }
}

#[tokio::test]
async fn of_many_writers_with_one_tag_exactly_one_wins() {
    for (method, suffix, body) in [
        (Method::PATCH, "", Some(json!({ "objective": "mine" }))),
        (Method::POST, "/pause", None),
        (Method::POST, "/abandon", None),
    ] {
        let host = Arc::new(Harness::seams());
        let id = id_of(&host.create(plain_body()).await);
        let path = format!("{BASE}/{id}{suffix}");
        let calls: Vec<_> = (0..16)
            .map(|_| {
                let (host, method, path, body) = (
                    Arc::clone(&host),
                    method.clone(),
                    path.clone(),
                    body.clone(),
                );
                tokio::spawn(async move { with_tag(&host, method, &path, "\"1\"", body).await })
            })
            .collect();
        let mut won = 0;
        for call in calls {
            let reply = call.await.expect("the call finishes");
            match reply.status {
                StatusCode::OK => {
                    won += 1;
                    assert_eq!(reply.header("etag"), Some("\"2\""));
                }
                StatusCode::PRECONDITION_FAILED => {
                    reply.refused(StatusCode::PRECONDITION_FAILED, "precondition_failed");
                }
                other => panic!("{method}{suffix}: unexpected {other}: {}", reply.body),
            }
        }
        assert_eq!(won, 1, "{method}{suffix}");
        let goal = host.get(&format!("{BASE}/{id}")).await;
        assert_eq!(goal.header("etag"), Some("\"2\""), "{method}{suffix}");
    }
}

#[tokio::test]
async fn a_malformed_if_match_is_400_and_changes_nothing() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("{BASE}/{id}/abandon"))
        .header("authorization", format!("Bearer {A}"))
        .header("if-match", &b"\"1\xff\""[..])
        .body(Body::empty())
        .expect("a valid request");
    let reply = host.send(request).await;
    let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(error["details"], json!({ "header": "If-Match" }));
    assert_eq!(host.goal(&id).await["state"], "active");
}
