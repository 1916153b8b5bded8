//! The OpenAPI description against the real router: the same paths with the
//! same methods (seams on and off), served publicly, and real answers valid
//! against the schemas the description names for their status.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};

use axum::http::{Method, StatusCode};
use axum::Router;
use goalpost_host::http::{openapi_document, OPENAPI_PATH, VERIFIERS_BASE};
use serde_json::{json, Value};
use support::{goal_body, id_of, Harness, Reply, A, BASE};

const METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

/// The paths the router has routes for. axum cannot list its routes, but its
/// `Debug` output names every path of the path router; if that format ever
/// changes, this fails loudly rather than finding nothing.
fn router_paths(router: &Router) -> BTreeSet<String> {
    let debug = format!("{router:?}");
    let start = debug
        .find("path_router")
        .expect("axum's Router Debug names its path router");
    let section = &debug[start..];
    let section = &section[..section.find("fallback_router").unwrap_or(section.len())];
    let paths_at = section
        .find("paths: {")
        .expect("the path router lists its paths");
    // Entries look like `RouteId(3): "/v1/…/{id}"`: collect the quoted
    // strings up to the brace that closes the map.
    let mut paths = BTreeSet::new();
    let mut quoted: Option<String> = None;
    for c in section[paths_at + "paths: {".len()..].chars() {
        match (&mut quoted, c) {
            (Some(path), '"') => {
                if path.starts_with('/') && !path.contains("__private__") {
                    paths.insert(path.clone());
                }
                quoted = None;
            }
            (Some(path), c) => path.push(c),
            (None, '"') => quoted = Some(String::new()),
            (None, '}') => break,
            (None, _) => {}
        }
    }
    assert!(
        paths.contains("/.well-known/openwop"),
        "could not read the routes from {debug}"
    );
    paths
}

/// The methods a path answers: anything but 405 (and the not-found
/// fallback) means a route. Requests carry no credential, so they change
/// nothing.
async fn router_methods(host: &Harness, path: &str) -> BTreeSet<String> {
    let concrete = path.replace("{id}", "goal-00000000-0000-4000-8000-000000000000");
    let mut methods = BTreeSet::new();
    for method in METHODS {
        let reply = host.call(method.clone(), &concrete, None, None).await;
        assert_ne!(
            reply.status,
            StatusCode::NOT_FOUND,
            "{method} {path}: the router has the path but answers 404 without a credential"
        );
        if reply.status != StatusCode::METHOD_NOT_ALLOWED {
            methods.insert(method.as_str().to_ascii_lowercase());
        }
    }
    methods
}

fn described(document: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let paths = document["paths"].as_object().expect("paths");
    paths
        .iter()
        .map(|(path, item)| {
            let methods = item
                .as_object()
                .expect("a path item")
                .keys()
                .filter(|key| ["get", "post", "put", "patch", "delete"].contains(&key.as_str()))
                .cloned()
                .collect();
            (path.clone(), methods)
        })
        .collect()
}

#[tokio::test]
async fn the_description_matches_the_router_with_and_without_seams() {
    for seams in [true, false] {
        let host = Harness::new(seams);
        let mut actual = BTreeMap::new();
        for path in router_paths(&host.app) {
            let methods = router_methods(&host, &path).await;
            actual.insert(path, methods);
        }
        let document = openapi_document(seams, false);
        assert_eq!(
            described(&document),
            actual,
            "seams {seams}: the description and the router disagree"
        );
        if seams {
            assert!(actual.contains_key(&format!("{BASE}/{{id}}/continue")));
        } else {
            assert!(!actual.contains_key(&format!("{BASE}/{{id}}/continue")));
        }
    }
}

#[tokio::test]
async fn openapi_json_is_public_and_is_the_description() {
    for seams in [true, false] {
        let host = Harness::new(seams);
        let reply = host.call(Method::GET, OPENAPI_PATH, None, None).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, openapi_document(seams, false));
        assert_eq!(reply.body["openapi"], "3.1.0");
    }
}

/// A validator for the schema the description names for this answer
/// (compiled against the description itself, so the rewritten `$ref`s are
/// exercised too).
fn response_schema(document: &Value, path: &str, method: &str, status: u16) -> Value {
    let responses = &document["paths"][path][method]["responses"];
    let response = responses
        .get(status.to_string())
        .unwrap_or_else(|| panic!("{method} {path} does not describe {status}"));
    let schema = response["content"]["application/json"]["schema"].clone();
    assert!(
        schema.is_object(),
        "{method} {path} {status} has no JSON schema"
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": document["components"].clone(),
        "allOf": [schema],
    })
}

#[track_caller]
fn assert_described(document: &Value, path: &str, method: &str, reply: &Reply) {
    let schema = response_schema(document, path, method, reply.status.as_u16());
    let validator = jsonschema::validator_for(&schema).expect("the described schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&reply.body)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {}: {errors:#?}\n{}",
        reply.status,
        reply.body
    );
}

#[tokio::test]
async fn real_answers_validate_against_the_described_schemas() {
    let host = Harness::seams();
    let document = openapi_document(true, false);
    let goal_path = format!("{BASE}/{{id}}");

    let discovery = host
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    assert_described(&document, "/.well-known/openwop", "get", &discovery);

    let created = host
        .post(
            BASE,
            Some(goal_body(
                "conformance:verifier?satisfyOn=2",
                Some("conformance:arm?costUsd=0.1"),
                json!({ "maxLoopIterations": 3 }),
            )),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_described(&document, BASE, "post", &created);
    let id = id_of(&created.body);
    let at = |suffix: &str| format!("{BASE}/{id}{suffix}");

    assert_described(&document, BASE, "get", &host.get(BASE).await);
    assert_described(&document, &goal_path, "get", &host.get(&at("")).await);
    let stepped = host.continue_once(&id).await;
    assert_eq!(stepped.status, StatusCode::OK);
    assert_described(
        &document,
        &format!("{goal_path}/continue"),
        "post",
        &stepped,
    );
    assert_described(
        &document,
        &format!("{goal_path}/events"),
        "get",
        &host.get(&at("/events")).await,
    );
    assert_described(
        &document,
        &format!("{goal_path}/evaluations"),
        "get",
        &host.get(&at("/evaluations")).await,
    );
    let paused = host.post(&at("/pause"), None).await;
    assert_described(&document, &format!("{goal_path}/pause"), "post", &paused);
    assert_described(
        &document,
        &format!("{goal_path}/attention"),
        "get",
        &host.get(&at("/attention")).await,
    );
    let edited = host
        .patch(&at(""), json!({ "objective": "new words" }))
        .await;
    assert_eq!(edited.status, StatusCode::OK);
    assert_described(&document, &goal_path, "patch", &edited);

    // Refusals are described with the envelope.
    let judge_owned = host.patch(&at(""), json!({ "state": "satisfied" })).await;
    assert_eq!(judge_owned.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_described(&document, &goal_path, "patch", &judge_owned);
    let anonymous = host.call(Method::GET, BASE, None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_described(&document, BASE, "get", &anonymous);
    let abandoned = host.post(&at("/abandon"), None).await;
    assert_described(
        &document,
        &format!("{goal_path}/abandon"),
        "post",
        &abandoned,
    );
    let terminal = host.post(&at("/resume"), None).await;
    assert_eq!(terminal.status, StatusCode::CONFLICT);
    assert_described(&document, &format!("{goal_path}/resume"), "post", &terminal);
    let missing = host
        .call(
            Method::GET,
            &format!("{BASE}/goal-00000000-0000-4000-8000-000000000000"),
            Some(A),
            None,
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_described(&document, &goal_path, "get", &missing);

    let registered = host
        .post(
            VERIFIERS_BASE,
            Some(json!({
                "name": "release-ready",
                "criteria": [{ "id": "green", "pointer": "/ci", "op": "equals", "value": "green" }],
            })),
        )
        .await;
    assert_eq!(
        registered.status,
        StatusCode::CREATED,
        "{}",
        registered.body
    );
    assert_described(&document, VERIFIERS_BASE, "post", &registered);
    let taken = host
        .post(
            VERIFIERS_BASE,
            Some(json!({
                "name": "release-ready",
                "criteria": [{ "id": "c", "pointer": "", "op": "exists" }],
            })),
        )
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert_described(&document, VERIFIERS_BASE, "post", &taken);
    assert_described(
        &document,
        VERIFIERS_BASE,
        "get",
        &host.get(VERIFIERS_BASE).await,
    );
    assert_described(
        &document,
        &format!("{VERIFIERS_BASE}/{{name}}"),
        "get",
        &host.get(&format!("{VERIFIERS_BASE}/release-ready")).await,
    );

    // The check has teeth: a goal is not a valid goal list.
    let schema = response_schema(&document, BASE, "get", 200);
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    assert!(!validator.is_valid(&created.body));
}
