//! The built-in criteria verifier: the tenant-scoped registry over HTTP,
//! goals naming a registered verifier, per-criterion verdicts end to end,
//! and the verifiers file.

use crate::support;

use std::io::Write;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{id_of, Harness, B, BASE};

const VERIFIERS: &str = "/v1/host/sample/verifiers";

fn release_ready() -> Value {
    json!({ "name": "release-ready", "criteria": [
        { "id": "tests", "pointer": "/tests/failed", "op": "equals", "value": 0 },
        { "id": "tag", "pointer": "/tag", "op": "matches", "value": "v1.*" },
        { "id": "coverage", "pointer": "/coverage", "op": "gte", "value": 0.8,
          "failureClass": "environmental" }
    ] })
}

#[tokio::test]
async fn the_registry_is_tenant_scoped_and_strict() {
    let host = Harness::seams();
    let reply = host.post(VERIFIERS, Some(release_ready())).await;
    let created = reply
        .expect(StatusCode::CREATED, "verifier-definition")
        .clone();
    assert_eq!(
        reply.header("location"),
        Some("/v1/host/sample/verifiers/release-ready")
    );
    assert_eq!(created["name"], "release-ready");
    assert_eq!(created["criteria"][0]["failureClass"], "logical");
    assert_eq!(created["criteria"][2]["failureClass"], "environmental");

    let read = host.get(&format!("{VERIFIERS}/release-ready")).await;
    assert_eq!(*read.expect(StatusCode::OK, "verifier-definition"), created);
    let list = host.get(VERIFIERS).await;
    assert_eq!(
        list.expect(StatusCode::OK, "verifier-list")["verifiers"],
        json!([created])
    );

    host.post(VERIFIERS, Some(release_ready()))
        .await
        .refused(StatusCode::CONFLICT, "verifier_exists");
    let mut bad = release_ready();
    bad["criteria"][1]["op"] = json!("approximately");
    let refused = host.post(VERIFIERS, Some(bad)).await;
    let body = refused.refused(StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(body["details"]["pointer"], "/criteria/1/op");
    host.call(Method::POST, VERIFIERS, None, Some(release_ready()))
        .await
        .refused(StatusCode::UNAUTHORIZED, "unauthorized");
    host.call(Method::GET, VERIFIERS, None, None)
        .await
        .refused(StatusCode::UNAUTHORIZED, "unauthorized");
    host.get(&format!("{VERIFIERS}/nope"))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
    host.call(Method::DELETE, VERIFIERS, Some(support::A), None)
        .await
        .refused(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");

    // Tenant B sees none of it and cannot use A's name.
    host.call(
        Method::GET,
        &format!("{VERIFIERS}/release-ready"),
        Some(B),
        None,
    )
    .await
    .refused(StatusCode::NOT_FOUND, "not_found");
    let empty = host.call(Method::GET, VERIFIERS, Some(B), None).await;
    assert_eq!(
        empty.expect(StatusCode::OK, "verifier-list")["verifiers"],
        json!([])
    );
    let goal = goal_body("release-ready", "conformance:arm");
    host.call(Method::POST, BASE, Some(B), Some(goal))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "unknown_verifier");
    // B may register the same name for itself.
    host.call(Method::POST, VERIFIERS, Some(B), Some(release_ready()))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
}

fn goal_body(verifier: &str, arm: &str) -> Value {
    json!({
        "objective": "ship v1",
        "completion": { "check": "verifier", "verifierRef": verifier },
        "continuation": { "mode": "manual", "armRef": arm },
        "bounds": { "maxLoopIterations": 5 },
    })
}

#[tokio::test]
async fn a_goal_naming_a_verifier_is_judged_criterion_by_criterion() {
    let host = Harness::webhooks(Duration::from_secs(5));
    host.post(VERIFIERS, Some(release_ready()))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
    let outputs = [
        json!({ "tests": { "failed": 2 }, "tag": "v1.0-rc1", "coverage": 0.5 }),
        json!({ "tests": { "failed": 0 }, "tag": "v0.9", "coverage": 0.9 }),
        json!({ "tests": { "failed": 0.0 }, "tag": "v1.0", "coverage": 0.85, "done": true }),
    ];
    let receiver = Receiver::start(move |call, _| {
        let index = call.body["iteration"]
            .as_u64()
            .unwrap_or(1)
            .saturating_sub(1);
        let output = outputs
            .get(usize::try_from(index).unwrap_or(0))
            .cloned()
            .unwrap_or(Value::Null);
        Answer::Json(json!({ "output": output }))
    })
    .await;
    let id = id_of(
        &host
            .create(goal_body("release-ready", &receiver.url("/arm")))
            .await,
    );
    let verdicts = |evaluation: &Value| -> Vec<(Value, Value)> {
        evaluation["criteria"]
            .as_array()
            .expect("criteria")
            .iter()
            .map(|c| (c["verdict"].clone(), c["failureClass"].clone()))
            .collect()
    };

    let first = host.continue_once(&id).await;
    let first = &first.expect(StatusCode::OK, "continue-response")["evaluation"];
    assert_eq!(first["satisfied"], false);
    assert_eq!(
        verdicts(first),
        vec![
            (json!("fail"), json!("logical")),
            (json!("pass"), Value::Null),
            (json!("fail"), json!("environmental")),
        ]
    );
    assert_eq!(
        first["failureClass"], "logical",
        "the first failure's class"
    );

    let second = host.continue_once(&id).await;
    let second = &second.expect(StatusCode::OK, "continue-response")["evaluation"];
    assert_eq!(second["satisfied"], false);
    assert_eq!(
        verdicts(second),
        vec![
            (json!("pass"), Value::Null),
            (json!("fail"), json!("logical")),
            (json!("pass"), Value::Null),
        ]
    );

    let third = host.continue_once(&id).await;
    let third = third.expect(StatusCode::OK, "continue-response");
    assert_eq!(third["evaluation"]["satisfied"], true);
    assert_eq!(third["evaluation"]["confidence"], 1.0);
    assert_eq!(third["goal"]["state"], "satisfied");
    assert_eq!(host.evaluations(&id).await.len(), 3);
}

#[tokio::test]
async fn a_patch_may_name_a_registered_verifier_only() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body("conformance:verifier", "conformance:arm"))
            .await,
    );
    let patch = json!({ "completion": { "verifierRef": "release-ready" } });
    let refused = host.patch(&format!("{BASE}/{id}"), patch.clone()).await;
    let body = refused.refused(StatusCode::UNPROCESSABLE_ENTITY, "unknown_verifier");
    assert_eq!(body["details"]["pointer"], "/completion/verifierRef");
    // The goal check comes first: an unknown goal is 404 whatever the body.
    let missing = "goal-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d";
    host.patch(&format!("{BASE}/{missing}"), patch.clone())
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");

    host.post(VERIFIERS, Some(release_ready()))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
    let patched = host.patch(&format!("{BASE}/{id}"), patch).await;
    assert_eq!(
        patched.expect(StatusCode::OK, "goal")["completion"]["verifierRef"],
        "release-ready"
    );
    // The fixture arm's output has none of the criteria's fields.
    let reply = host.continue_once(&id).await;
    let evaluation = &reply.expect(StatusCode::OK, "continue-response")["evaluation"];
    assert_eq!(evaluation["satisfied"], false);
    assert_eq!(evaluation["criteria"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn a_verifiers_file_registers_for_each_tenant() {
    let host = Harness::seams();
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    let mut entry = release_ready();
    entry["tenant"] = json!("tenant-b");
    write!(file, "{}", json!({ "verifiers": [entry] })).expect("write");
    let loaded = host
        .engine
        .load_verifier_file(file.path())
        .await
        .expect("a valid file");
    assert_eq!(loaded, 1);
    let listed = host.call(Method::GET, VERIFIERS, Some(B), None).await;
    assert_eq!(
        listed.expect(StatusCode::OK, "verifier-list")["verifiers"][0]["name"],
        "release-ready"
    );
    let none = host.get(VERIFIERS).await;
    assert_eq!(
        none.expect(StatusCode::OK, "verifier-list")["verifiers"],
        json!([])
    );
    // Loading again replaces rather than conflicts.
    assert_eq!(
        host.engine.load_verifier_file(file.path()).await.ok(),
        Some(1)
    );

    let mut broken = tempfile::NamedTempFile::new().expect("temp file");
    write!(broken, "{{\"verifiers\": [{{\"tenant\": \"tenant-a\"}}]}}").expect("write");
    let error = host
        .engine
        .load_verifier_file(broken.path())
        .await
        .expect_err("invalid");
    assert!(error.to_string().contains("/verifiers/0"), "{error}");
}
