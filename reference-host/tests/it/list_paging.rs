//! The goals list in pages (`?limit=N&after=ID`, `Link: <…>; rel="next"`)
//! and, without `limit`, streamed a page at a time: the same goals in the
//! same order either way, for one tenant only.

use crate::support;

use axum::http::{Method, StatusCode};
use serde_json::Value;
use support::{id_of, plain_body, Harness, Reply, A, B, BASE};

/// The target of a `rel="next"` link, if the reply has one.
fn next_link(reply: &Reply) -> Option<String> {
    let link = reply.header("link")?;
    let (target, params) = link.split_once(';')?;
    assert_eq!(params.trim(), "rel=\"next\"", "{link}");
    let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
    Some(target.to_string())
}

fn ids(reply: &Reply) -> Vec<String> {
    reply.expect(StatusCode::OK, "goal-list")["goals"]
        .as_array()
        .expect("a list")
        .iter()
        .map(id_of)
        .collect()
}

/// Every page by following `Link` from `first`, as the ids of each page.
async fn walk(host: &Harness, token: &str, first: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next {
        let reply = host.call(Method::GET, &path, Some(token), None).await;
        pages.push(ids(&reply));
        next = next_link(&reply);
        assert!(pages.len() < 100, "the links never end");
    }
    pages
}

#[tokio::test]
async fn pages_follow_the_links_through_every_goal_once_in_creation_order() {
    let host = Harness::seams();
    let mut created = Vec::new();
    for _ in 0..7 {
        created.push(id_of(&host.create(plain_body()).await));
    }
    // Another tenant's goals appear in none of A's pages.
    for _ in 0..3 {
        host.call(Method::POST, BASE, Some(B), Some(plain_body()))
            .await
            .expect(StatusCode::CREATED, "goal");
    }
    let pages = walk(&host, A, &format!("{BASE}?limit=3")).await;
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![3, 3, 1]);
    assert_eq!(pages.concat(), created);
    // A page that ends exactly at the last goal has no next link.
    let exact = walk(&host, A, &format!("{BASE}?limit=7")).await;
    assert_eq!(exact, vec![created.clone()]);
    // Without `limit`: all of them, the same order, no link.
    let whole = host.get(BASE).await;
    assert_eq!(ids(&whole), created);
    assert_eq!(whole.header("link"), None);
    // `after` alone: the rest of the list.
    let rest = host.get(&format!("{BASE}?after={}", created[4])).await;
    assert_eq!(ids(&rest), created[5..]);
}

#[tokio::test]
async fn the_state_filter_holds_on_every_page() {
    let host = Harness::seams();
    let mut active = Vec::new();
    for n in 0..6 {
        let id = id_of(&host.create(plain_body()).await);
        if n % 2 == 0 {
            host.post(&format!("{BASE}/{id}/abandon"), None)
                .await
                .expect(StatusCode::OK, "goal");
        } else {
            active.push(id);
        }
    }
    let pages = walk(&host, A, &format!("{BASE}?state=active&limit=2")).await;
    assert_eq!(pages.concat(), active);
    assert!(pages.iter().all(|page| page.len() <= 2));
}

/// The unpaged list streams in pages of 256: one that crosses several
/// of them is still one JSON document with every goal once.
#[tokio::test]
async fn a_list_longer_than_a_stream_page_is_whole() {
    let host = Harness::seams();
    let mut created = Vec::new();
    for _ in 0..600 {
        created.push(id_of(&host.create(plain_body()).await));
    }
    assert_eq!(ids(&host.get(BASE).await), created);
    let pages = walk(&host, A, &format!("{BASE}?limit=1000")).await;
    assert_eq!(pages, vec![created.clone()]);
    // An empty list is still a list.
    let empty = host.call(Method::GET, BASE, Some(B), None).await;
    assert_eq!(ids(&empty), Vec::<String>::new());
}

#[tokio::test]
async fn a_bad_limit_or_cursor_is_refused_with_the_envelope() {
    let host = Harness::seams();
    host.create(plain_body()).await;
    for query in [
        "limit=0",
        "limit=-1",
        "limit=abc",
        "limit=",
        "limit=%2B5",
        "limit=1.5",
        "after=",
        "after=not-a-goal",
        "after=goal-123",
    ] {
        let reply = host.get(&format!("{BASE}?{query}")).await;
        let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
        let name = query.split('=').next().expect("a name");
        assert_eq!(error["details"]["parameter"], name, "{query}: {error}");
    }
    // A huge limit is a page of the largest size, not a refusal.
    let reply = host.get(&format!("{BASE}?limit=99999999999")).await;
    assert_eq!(ids(&reply).len(), 1);
}

#[tokio::test]
async fn a_page_body_keeps_the_list_shape() {
    let host = Harness::seams();
    host.create(plain_body()).await;
    host.create(plain_body()).await;
    let reply = host.get(&format!("{BASE}?limit=1")).await;
    let body: &Value = reply.expect(StatusCode::OK, "goal-list");
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "{body}");
    assert!(next_link(&reply).is_some());
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "paged"
    );
    assert_eq!(
        host.get(BASE).await.header("content-type"),
        Some("application/json"),
        "streamed"
    );
}

/// A manual goal with a fixture verifier that never satisfies, continued
/// `runs` times: `runs` evaluations and `goal.evaluated` events.
async fn goal_with_history(host: &Harness, runs: usize) -> String {
    let id = id_of(
        &host
            .create(support::goal_body(
                "conformance:verifier",
                Some("conformance:arm"),
                serde_json::json!({ "maxLoopIterations": 100_000 }),
            ))
            .await,
    );
    for _ in 0..runs {
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
    }
    id
}

/// Every page of a goal's `member` list from `first`, following `Link`.
async fn walk_history(host: &Harness, first: &str, member: &str, schema: &str) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next {
        let reply = host.get(&path).await;
        let page = reply.expect(StatusCode::OK, schema)[member]
            .as_array()
            .expect("a list")
            .clone();
        pages.push(page);
        next = next_link(&reply);
        assert!(pages.len() < 1000, "the links never end");
    }
    pages
}

#[tokio::test]
async fn a_goals_events_and_evaluations_page_with_limit_and_stream_without() {
    let host = Harness::seams();
    // More than one stream page (256) of each.
    let id = goal_with_history(&host, 300).await;
    let whole_events = host.events(&id).await;
    let whole_evaluations = host.evaluations(&id).await;
    assert_eq!(whole_events.len(), 300);
    assert_eq!(whole_evaluations.len(), 300);
    let sequences: Vec<u64> = whole_events
        .iter()
        .map(|event| event["sequence"].as_u64().expect("a sequence"))
        .collect();
    assert_eq!(
        sequences,
        (1..=300).collect::<Vec<u64>>(),
        "whole and in order"
    );

    let pages = walk_history(
        &host,
        &format!("{BASE}/{id}/events?limit=128"),
        "events",
        "event-list",
    )
    .await;
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![128, 128, 44]);
    assert_eq!(pages.concat(), whole_events);
    let pages = walk_history(
        &host,
        &format!("{BASE}/{id}/evaluations?limit=100"),
        "evaluations",
        "evaluation-list",
    )
    .await;
    assert_eq!(pages.len(), 3);
    assert_eq!(pages.concat(), whole_evaluations);
    // `after` alone still means "after", whole.
    let later = host
        .get(&format!("{BASE}/{id}/evaluations?after=298"))
        .await;
    let later = later.expect(StatusCode::OK, "evaluation-list")["evaluations"]
        .as_array()
        .expect("a list")
        .clone();
    assert_eq!(later, whole_evaluations[298..].to_vec());
    for path in ["events", "evaluations"] {
        for bad in ["limit=0", "limit=x", "limit=-1", "after=x"] {
            host.get(&format!("{BASE}/{id}/{path}?{bad}"))
                .await
                .refused(StatusCode::BAD_REQUEST, "invalid_request");
        }
    }
}
