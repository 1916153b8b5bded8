//! Tenancy and credentials: another tenant's goal answers exactly
//! like a goal that does not exist, on every endpoint; nothing answers an
//! anonymous caller but discovery and the description; tokens also come
//! from a file.

use crate::support;

use std::io::Write;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use support::{goal_body, id_of, Harness, Reply, A, B, BASE};

const VERIFIERS: &str = "/v1/host/sample/verifiers";
/// A well-formed id nobody minted.
const UNKNOWN: &str = "goal-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d";

/// Every goal endpoint under `{base}/{id}`, with a body that would be
/// accepted on the owner's goal.
fn goal_endpoints(id: &str) -> Vec<(Method, String, Option<Value>)> {
    let path = format!("{BASE}/{id}");
    vec![
        (Method::GET, path.clone(), None),
        (
            Method::PATCH,
            path.clone(),
            Some(json!({ "objective": "mine now" })),
        ),
        (Method::POST, format!("{path}/pause"), None),
        (Method::POST, format!("{path}/resume"), None),
        (Method::POST, format!("{path}/abandon"), None),
        (Method::POST, format!("{path}/continue"), None),
        (Method::GET, format!("{path}/attention"), None),
        (Method::GET, format!("{path}/events"), None),
        (Method::GET, format!("{path}/events?after=0"), None),
        (Method::GET, format!("{path}/evaluations"), None),
    ]
}

/// Status, body and every header but `date`.
fn answer(reply: &Reply) -> (StatusCode, Value, Vec<(String, String)>) {
    let mut headers: Vec<(String, String)> = reply
        .headers
        .iter()
        .filter(|(name, _)| name.as_str() != "date")
        .map(|(name, value)| {
            (
                name.to_string(),
                value.to_str().unwrap_or("<binary>").to_string(),
            )
        })
        .collect();
    headers.sort();
    (reply.status, reply.body.clone(), headers)
}

#[tokio::test]
async fn another_tenants_goal_answers_exactly_like_an_unknown_one_everywhere() {
    let host = Harness::seams();
    let goal = host
        .create(goal_body(
            "conformance:verifier?satisfyOn=2",
            Some("conformance:arm?costUsd=0.1"),
            json!({ "maxLoopIterations": 3 }),
        ))
        .await;
    let id = id_of(&goal);
    host.continue_once(&id)
        .await
        .expect(StatusCode::OK, "continue-response");
    let before = (
        host.goal(&id).await,
        host.events(&id).await,
        host.evaluations(&id).await,
    );

    let theirs = goal_endpoints(&id);
    let unknown = goal_endpoints(UNKNOWN);
    for ((method, path, body), (_, unknown_path, _)) in theirs.into_iter().zip(unknown) {
        let from_b = host
            .call(method.clone(), &path, Some(B), body.clone())
            .await;
        from_b.refused(StatusCode::NOT_FOUND, "not_found");
        let missing = host
            .call(method.clone(), &unknown_path, Some(B), body)
            .await;
        assert_eq!(
            answer(&from_b),
            answer(&missing),
            "{method} {path}: another tenant's goal must look like no goal"
        );
    }

    // A tag never turns the 404 into a 412 (that would confirm the goal).
    for tag in ["\"1\"", "\"999\"", "*"] {
        for suffix in ["", "/pause", "/resume", "/abandon"] {
            let method = if suffix.is_empty() {
                Method::PATCH
            } else {
                Method::POST
            };
            let request = Request::builder()
                .method(method)
                .uri(format!("{BASE}/{id}{suffix}"))
                .header("authorization", format!("Bearer {B}"))
                .header("if-match", tag)
                .header("content-type", "application/json")
                .body(Body::from(r#"{"objective": "mine now"}"#))
                .expect("a valid request");
            host.send(request)
                .await
                .refused(StatusCode::NOT_FOUND, "not_found");
        }
    }

    let listed = host.call(Method::GET, BASE, Some(B), None).await;
    assert_eq!(
        listed.expect(StatusCode::OK, "goal-list")["goals"],
        json!([])
    );
    for state in ["active", "satisfied", "bound-exceeded"] {
        let filtered = host
            .call(Method::GET, &format!("{BASE}?state={state}"), Some(B), None)
            .await;
        assert_eq!(
            filtered.expect(StatusCode::OK, "goal-list")["goals"],
            json!([])
        );
    }
    // Nothing B sent changed A's goal.
    let after = (
        host.goal(&id).await,
        host.events(&id).await,
        host.evaluations(&id).await,
    );
    assert_eq!(after, before);
    assert_eq!(after.0["progress"]["iterations"], 1);
}

#[tokio::test]
async fn another_tenants_verifier_answers_exactly_like_an_unknown_one() {
    let host = Harness::seams();
    let registration = json!({
        "name": "release-ready",
        "criteria": [{ "id": "tests", "pointer": "/failed", "op": "equals", "value": 0 }],
    });
    host.post(VERIFIERS, Some(registration))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
    let theirs = host
        .call(
            Method::GET,
            &format!("{VERIFIERS}/release-ready"),
            Some(B),
            None,
        )
        .await;
    theirs.refused(StatusCode::NOT_FOUND, "not_found");
    let missing = host
        .call(
            Method::GET,
            &format!("{VERIFIERS}/nobody-made-this"),
            Some(B),
            None,
        )
        .await;
    assert_eq!(answer(&theirs), answer(&missing));
    let listed = host.call(Method::GET, VERIFIERS, Some(B), None).await;
    assert_eq!(
        listed.expect(StatusCode::OK, "verifier-list")["verifiers"],
        json!([])
    );
    // B cannot judge its goals with A's verifier either.
    let goal = json!({
        "objective": "borrow a verifier",
        "completion": { "check": "verifier", "verifierRef": "release-ready" },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 1 },
    });
    host.call(Method::POST, BASE, Some(B), Some(goal))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "unknown_verifier");
}

#[tokio::test]
async fn anonymous_and_unknown_callers_get_401_on_goals_seams_and_verifiers() {
    let host = Harness::seams();
    let id = id_of(&host.create(support::plain_body()).await);
    let mut endpoints = goal_endpoints(&id);
    endpoints.extend([
        (Method::GET, BASE.to_string(), None),
        (Method::POST, BASE.to_string(), Some(support::plain_body())),
        (Method::GET, VERIFIERS.to_string(), None),
        (
            Method::POST,
            VERIFIERS.to_string(),
            Some(json!({ "name": "x", "criteria": [] })),
        ),
        (Method::GET, format!("{VERIFIERS}/x"), None),
    ]);
    let credentials: [Option<String>; 6] = [
        None,
        Some("Bearer not-a-token".into()),
        Some(format!("Bearer {A}x")),
        Some(format!("Basic {A}")),
        Some("Bearer".into()),
        Some(format!("Bearer {}", &A[..A.len() - 1])),
    ];
    for (method, path, body) in endpoints {
        for credential in &credentials {
            let mut request = Request::builder().method(method.clone()).uri(&path);
            if let Some(credential) = credential {
                request = request.header("authorization", credential);
            }
            let request = match &body {
                Some(body) => request
                    .header("content-type", "application/json")
                    .body(Body::from(body.to_string())),
                None => request.body(Body::empty()),
            };
            let reply = host.send(request.expect("a valid request")).await;
            reply.refused(StatusCode::UNAUTHORIZED, "unauthorized");
            assert_eq!(
                reply.header("www-authenticate"),
                Some("Bearer"),
                "{method} {path}"
            );
        }
    }
    // None of it reached the goal.
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "active");
    assert_eq!(goal["progress"]["iterations"], 0);
    assert_eq!(goal["objective"], "ship the release checklist");
    // Discovery and the description stay public.
    for path in ["/.well-known/openwop", "/openapi.json"] {
        let reply = host.call(Method::GET, path, None, None).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn a_running_host_reads_tokens_from_a_file_as_well_as_flags() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tokens.txt");
    let mut file = std::fs::File::create(&path).expect("create");
    writeln!(
        file,
        "# tokens of the night shift\n\nfile-token-1=tenant-f\n"
    )
    .expect("write");
    drop(file);
    let mut config = Config::conformance_in_memory(vec![("flag-token".into(), "tenant-a".into())]);
    config.tokens_file = Some(path.clone());
    let host = RunningHost::start(config).await.expect("the host starts");
    let client = goalpost_host::tls::client();
    let list = |token: &'static str| {
        client
            .get(format!("{}{BASE}", host.base_url()))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(list("flag-token").await.expect("answer").status(), 200);
    assert_eq!(list("file-token-1").await.expect("answer").status(), 200);
    assert_eq!(list("file-token-2").await.expect("answer").status(), 401);
    host.shutdown().await;

    // A bad line stops the start, naming the line but not its text.
    std::fs::write(&path, "ok=tenant-a\nsecret-without-tenant\n").expect("write");
    let mut config = Config::conformance_in_memory(Vec::new());
    config.tokens_file = Some(path);
    let error = RunningHost::start(config)
        .await
        .expect_err("a bad tokens file is refused");
    let message = error.to_string();
    assert!(message.contains("line 2"), "{message}");
    assert!(!message.contains("secret-without-tenant"), "{message}");
}
