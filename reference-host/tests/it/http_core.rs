//! SPEC §1–§2 over HTTP (`oneshot`): discovery, create, refusals, judge-only
//! completion, lifecycle, envelopes, tenancy, ETags.

use crate::support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use support::{assert_valid, goal_body, id_of, plain_body, Harness, A, B, BASE};

#[tokio::test]
async fn discovery_advertises_goals_and_seams() {
    let host = Harness::seams();
    let reply = host
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    let document = reply.expect(StatusCode::OK, "capabilities");
    assert_eq!(
        *document,
        json!({
            "protocol": "openwop",
            "host": { "name": "goalpost-host", "version": env!("CARGO_PKG_VERSION"),
                "goalsList": { "paging": ["limit", "after"], "maxLimit": 1000 },
                "reportedRuns": { "path": format!("{BASE}/{{id}}/runs"), "continuation": ["manual"] },
                "events": { "goalList": true, "stream": format!("{BASE}/events") } },
            "agents": { "goals": { "judge": "verifier", "continuation": ["manual", "schedule", "heartbeat", "commitment"], "requiresBounds": true } },
            "webhookEgress": { "internal": "denied" },
            "conformanceSeams": { "goals": { "basePath": BASE,
                "continue": true, "events": true, "fixtures": true, "webhooks": true } },
            "extensions": { "goalpost": { "attention": {
                "version": "1.0",
                "modes": ["pursue", "coordinate", "review", "falsify", "judge", "observe"],
                "policies": ["verifier", "host-confirmed", "principal-confirmed", "quorum"],
                "pauseWake": "tick",
                "bindings": format!("{BASE}/{{id}}/attention/bindings"),
                "list": format!("{BASE}/attention/bindings") } } }
        })
    );
}

#[tokio::test]
async fn without_seams_no_seam_is_advertised_and_seam_routes_are_404() {
    let host = Harness::new(false);
    let reply = host
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    let document = reply.expect(StatusCode::OK, "capabilities");
    assert!(document.get("conformanceSeams").is_none());
    assert!(document["agents"]["goals"].is_object());
    let id = id_of(&host.create(plain_body()).await);
    host.continue_once(&id)
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
    // Events and evaluations are host API, not seams: they answer.
    assert_eq!(
        *host
            .get(&format!("{BASE}/{id}/events"))
            .await
            .expect(StatusCode::OK, "event-list"),
        json!({ "events": [] })
    );
    assert_eq!(
        *host
            .get(&format!("{BASE}/{id}/evaluations"))
            .await
            .expect(StatusCode::OK, "evaluation-list"),
        json!({ "evaluations": [] })
    );
    assert_eq!(
        document["host"]["events"],
        json!({ "goalList": true, "stream": format!("{BASE}/events") })
    );
    let fixture = goal_body(
        "conformance:verifier?satisfyOn=1",
        None,
        json!({ "maxLoopIterations": 1 }),
    );
    host.post(BASE, Some(fixture))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "fixtures_disabled");
}

#[tokio::test]
async fn create_answers_201_with_location_and_etag() {
    let host = Harness::seams();
    let reply = host.post(BASE, Some(plain_body())).await;
    let goal = reply.expect(StatusCode::CREATED, "goal").clone();
    let id = id_of(&goal);
    assert!(id.starts_with("goal-"));
    assert_eq!(
        reply.header("location"),
        Some(format!("{BASE}/{id}").as_str())
    );
    assert_eq!(reply.header("etag"), Some("\"1\""));
    assert_eq!(goal["state"], "active");
    assert_eq!(goal["owner"], json!({ "tenant": "tenant-a" }));
    assert_eq!(
        goal["progress"],
        json!({ "iterations": 0, "contributingRunIds": [] })
    );
    assert_eq!(goal["completion"]["lastVerdict"], Value::Null);
    assert_eq!(goal["bounds"], json!({ "maxLoopIterations": 3 }));
    assert_eq!(goal["createdAt"], goal["updatedAt"]);
    assert_eq!(goal["createdAt"], "2026-06-13T00:00:00.000Z");

    let read = host.get(&format!("{BASE}/{id}")).await;
    assert_eq!(read.expect(StatusCode::OK, "goal"), &goal);
    assert_eq!(read.header("etag"), Some("\"1\""));
}

#[tokio::test]
async fn bounds_keep_the_numbers_as_written() {
    let host = Harness::seams();
    let mut body = plain_body();
    body["bounds"] = json!({ "maxLoopIterations": 2, "runTimeoutMs": 0, "maxCostUsd": 1 });
    let goal = host.create(body).await;
    assert_eq!(
        goal["bounds"],
        json!({ "maxLoopIterations": 2, "runTimeoutMs": 0, "maxCostUsd": 1 })
    );
    let mut body = plain_body();
    body["bounds"] = json!({ "maxCostUsd": 0.25 });
    assert_eq!(
        host.create(body).await["bounds"],
        json!({ "maxCostUsd": 0.25 })
    );
}

#[tokio::test]
async fn bounds_are_required() {
    let host = Harness::seams();
    let mut absent = plain_body();
    absent.as_object_mut().expect("object").remove("bounds");
    let mut empty = plain_body();
    empty["bounds"] = json!({});
    for body in [absent, empty] {
        let reply = host.post(BASE, Some(body)).await;
        reply.refused(StatusCode::UNPROCESSABLE_ENTITY, "bounds_required");
    }
    let list = host.get(BASE).await;
    assert_eq!(list.expect(StatusCode::OK, "goal-list")["goals"], json!([]));
}

#[tokio::test]
async fn out_of_range_bounds_and_unknown_keys_are_400_with_a_pointer() {
    let host = Harness::seams();
    for iterations in [json!(0), json!(-1), json!(2.5)] {
        let mut body = plain_body();
        body["bounds"] = json!({ "maxLoopIterations": iterations });
        let reply = host.post(BASE, Some(body)).await;
        let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(error["details"]["pointer"], "/bounds/maxLoopIterations");
    }
    for (pointer, body) in [
        ("/colour", {
            let mut body = plain_body();
            body["colour"] = json!("blue");
            body
        }),
        ("/continuation/cadence", {
            let mut body = plain_body();
            body["continuation"]["cadence"] = json!(5);
            body
        }),
        ("/bounds/maxRuns", {
            let mut body = plain_body();
            body["bounds"]["maxRuns"] = json!(5);
            body
        }),
    ] {
        let reply = host.post(BASE, Some(body)).await;
        let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(error["details"]["pointer"], pointer);
    }
    let mut wrong_type = plain_body();
    wrong_type["objective"] = json!(42);
    host.post(BASE, Some(wrong_type))
        .await
        .refused(StatusCode::BAD_REQUEST, "invalid_request");
    let list = host.get(BASE).await;
    assert_eq!(list.expect(StatusCode::OK, "goal-list")["goals"], json!([]));
}

#[tokio::test]
async fn malformed_fixture_refs_are_400_at_create_and_patch() {
    let host = Harness::seams();
    let body = goal_body(
        "conformance:verifier?satisfyOn=soon",
        None,
        json!({ "maxLoopIterations": 1 }),
    );
    let reply = host.post(BASE, Some(body)).await;
    let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(error["details"]["pointer"], "/completion/verifierRef");
    let id = id_of(&host.create(plain_body()).await);
    let reply = host
        .patch(
            &format!("{BASE}/{id}"),
            json!({ "continuation": { "armRef": "conformance:arm?costUsd=1&costUsd=2" } }),
        )
        .await;
    reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
    host.post(
        BASE,
        Some(goal_body("vf-1", None, json!({ "maxLoopIterations": 1 }))),
    )
    .await
    .refused(StatusCode::UNPROCESSABLE_ENTITY, "unknown_verifier");
}

#[tokio::test]
async fn judge_owned_fields_are_refused_and_change_nothing() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let path = format!("{BASE}/{id}");
    let before = host.get(&path).await;
    let etag = before.header("etag").map(str::to_string);
    let run_id = "run-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d";
    for (body, field) in [
        (json!({ "state": "satisfied" }), "state"),
        (json!({ "state": "escalated" }), "state"),
        (json!({ "state": "bound-exceeded" }), "state"),
        (
            json!({ "progress": { "iterations": 5, "contributingRunIds": [run_id] } }),
            "progress",
        ),
        (
            json!({ "completion": { "lastVerdict": { "satisfied": true, "confidence": 1, "runId": run_id } } }),
            "completion.lastVerdict",
        ),
        (json!({ "owner": { "tenant": "tenant-b" } }), "owner"),
        (json!({ "id": "goal-mine" }), "id"),
        (
            json!({ "objective": "sneaky", "state": "satisfied" }),
            "state",
        ),
    ] {
        let reply = host.patch(&path, body.clone()).await;
        let error = reply.refused(StatusCode::UNPROCESSABLE_ENTITY, "judge_owned_field");
        assert_eq!(error["details"]["field"], field, "{body}");
        let after = host.get(&path).await;
        assert_eq!(after.expect(StatusCode::OK, "goal"), &before.body, "{body}");
        assert_eq!(after.header("etag").map(str::to_string), etag, "{body}");
    }
    // The same fields in a transition body are ignored, never applied.
    let reply = host
        .post(
            &format!("{path}/resume"),
            Some(json!({ "state": "satisfied" })),
        )
        .await;
    assert_eq!(reply.expect(StatusCode::OK, "goal")["state"], "active");
}

#[tokio::test]
async fn a_create_naming_state_never_makes_a_satisfied_goal() {
    let host = Harness::seams();
    let mut body = plain_body();
    body["state"] = json!("satisfied");
    host.post(BASE, Some(body))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "judge_owned_field");
    let list = host.get(&format!("{BASE}?state=satisfied")).await;
    assert_eq!(list.expect(StatusCode::OK, "goal-list")["goals"], json!([]));
    let all = host.get(BASE).await;
    assert_eq!(all.expect(StatusCode::OK, "goal-list")["goals"], json!([]));
}

#[tokio::test]
async fn immutable_fields_are_refused() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    for body in [
        json!({ "bounds": { "maxLoopIterations": 100 } }),
        json!({ "completion": { "check": "host" } }),
        json!({ "createdAt": "2020-01-01T00:00:00Z" }),
    ] {
        host.patch(&format!("{BASE}/{id}"), body)
            .await
            .refused(StatusCode::UNPROCESSABLE_ENTITY, "immutable_field");
    }
}

#[tokio::test]
async fn patch_edits_objective_and_continuation_and_bumps_the_etag() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let reply = host
        .patch(
            &format!("{BASE}/{id}"),
            json!({ "objective": "new words", "continuation": { "armRef": "conformance:arm?costUsd=0.1" } }),
        )
        .await;
    let goal = reply.expect(StatusCode::OK, "goal");
    assert_eq!(goal["objective"], "new words");
    assert_eq!(
        goal["continuation"],
        json!({ "mode": "manual", "armRef": "conformance:arm?costUsd=0.1" })
    );
    assert_eq!(reply.header("etag"), Some("\"2\""));
    // An edit that changes nothing keeps the version.
    let again = host
        .patch(&format!("{BASE}/{id}"), json!({ "objective": "new words" }))
        .await;
    again.expect(StatusCode::OK, "goal");
    assert_eq!(again.header("etag"), Some("\"2\""));
}

#[tokio::test]
async fn if_match_guards_every_change() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let path = format!("{BASE}/{id}");
    let request = |method: Method, uri: String, tag: &str, body: Option<Value>| {
        let builder = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {A}"))
            .header("if-match", tag)
            .header("content-type", "application/json");
        builder
            .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))
            .expect("valid request")
    };
    let stale = host
        .send(request(
            Method::PATCH,
            path.clone(),
            "\"7\"",
            Some(json!({ "objective": "x" })),
        ))
        .await;
    stale.refused(StatusCode::PRECONDITION_FAILED, "precondition_failed");
    for action in ["pause", "resume", "abandon"] {
        let reply = host
            .send(request(
                Method::POST,
                format!("{path}/{action}"),
                "W/\"1\"",
                None,
            ))
            .await;
        reply.refused(StatusCode::PRECONDITION_FAILED, "precondition_failed");
    }
    let unchanged = host.get(&path).await;
    assert_eq!(unchanged.header("etag"), Some("\"1\""));
    let fresh = host
        .send(request(
            Method::POST,
            format!("{path}/pause"),
            "\"1\"",
            None,
        ))
        .await;
    fresh.expect(StatusCode::OK, "goal");
    assert_eq!(fresh.header("etag"), Some("\"2\""));
    let any = host
        .send(request(
            Method::PATCH,
            path.clone(),
            "*",
            Some(json!({ "objective": "y" })),
        ))
        .await;
    assert_eq!(any.expect(StatusCode::OK, "goal")["objective"], "y");
}

#[tokio::test]
async fn terminal_goals_refuse_everything_and_change_nothing() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let path = format!("{BASE}/{id}");
    let closed = host.post(&format!("{path}/abandon"), None).await;
    assert_eq!(closed.expect(StatusCode::OK, "goal")["state"], "abandoned");
    let before = host.get(&path).await;
    for action in ["pause", "resume", "abandon", "continue"] {
        host.post(&format!("{path}/{action}"), None)
            .await
            .refused(StatusCode::CONFLICT, "goal_terminal");
    }
    host.patch(&path, json!({ "objective": "revive" }))
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    let after = host.get(&path).await;
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    let events = host.events(&id).await;
    assert_eq!(events.len(), 1, "abandon emits exactly one close");
    assert_eq!(events[0]["type"], "goal.closed");
    assert_eq!(
        events[0]["payload"],
        json!({ "goalId": id, "finalState": "abandoned" })
    );
}

#[tokio::test]
async fn attention_follows_pause_and_resume() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let path = format!("{BASE}/{id}");
    let attention =
        |reply: support::Reply| reply.expect(StatusCode::OK, "attention")["status"].clone();
    assert_eq!(
        attention(host.get(&format!("{path}/attention")).await),
        "active"
    );
    let paused = host.post(&format!("{path}/pause"), None).await;
    assert_eq!(paused.expect(StatusCode::OK, "goal")["state"], "active");
    assert_eq!(
        attention(host.get(&format!("{path}/attention")).await),
        "paused"
    );
    host.post(&format!("{path}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_paused");
    host.post(&format!("{path}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    assert_eq!(
        attention(host.get(&format!("{path}/attention")).await),
        "active"
    );
    host.post(&format!("{path}/abandon"), None)
        .await
        .expect(StatusCode::OK, "goal");
    let reply = host.get(&format!("{path}/attention")).await;
    assert_eq!(
        reply.expect(StatusCode::OK, "attention"),
        &json!({ "goalId": id, "status": "stopped" })
    );
}

#[tokio::test]
async fn credentials_are_required_on_goal_endpoints() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    for (method, path) in [
        (Method::GET, BASE.to_string()),
        (Method::POST, BASE.to_string()),
        (Method::GET, format!("{BASE}/{id}")),
        (Method::PATCH, format!("{BASE}/{id}")),
        (Method::POST, format!("{BASE}/{id}/pause")),
        (Method::GET, format!("{BASE}/{id}/attention")),
        (Method::POST, format!("{BASE}/{id}/continue")),
        (Method::GET, format!("{BASE}/{id}/events")),
    ] {
        for token in [None, Some("not-a-token")] {
            let reply = host
                .call(method.clone(), &path, token, Some(plain_body()))
                .await;
            reply.refused(StatusCode::UNAUTHORIZED, "unauthorized");
            assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        }
    }
    let basic = Request::builder()
        .uri(BASE)
        .header("authorization", format!("Basic {A}"))
        .body(Body::empty())
        .expect("valid request");
    host.send(basic)
        .await
        .refused(StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn another_tenants_goal_does_not_exist_for_them() {
    let host = Harness::seams();
    let id = id_of(&host.create(plain_body()).await);
    let path = format!("{BASE}/{id}");
    for (method, path, body) in [
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
        (Method::GET, format!("{path}/evaluations"), None),
    ] {
        host.call(method, &path, Some(B), body)
            .await
            .refused(StatusCode::NOT_FOUND, "not_found");
    }
    let theirs = host.call(Method::GET, BASE, Some(B), None).await;
    assert_eq!(
        theirs.expect(StatusCode::OK, "goal-list")["goals"],
        json!([])
    );
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "active");
    assert_eq!(goal["objective"], "ship the release checklist");
}

#[tokio::test]
async fn list_filters_by_state() {
    let host = Harness::seams();
    let first = id_of(&host.create(plain_body()).await);
    let second = id_of(&host.create(plain_body()).await);
    host.post(&format!("{BASE}/{second}/abandon"), None)
        .await
        .expect(StatusCode::OK, "goal");
    let ids = |reply: support::Reply| -> Vec<Value> {
        reply.expect(StatusCode::OK, "goal-list")["goals"]
            .as_array()
            .expect("goals")
            .iter()
            .map(|goal| goal["id"].clone())
            .collect()
    };
    assert_eq!(ids(host.get(BASE).await), vec![json!(first), json!(second)]);
    assert_eq!(
        ids(host.get(&format!("{BASE}?state=active")).await),
        vec![json!(first)]
    );
    assert_eq!(
        ids(host.get(&format!("{BASE}?state=abandoned")).await),
        vec![json!(second)]
    );
    assert_eq!(
        ids(host.get(&format!("{BASE}?state=bound-exceeded")).await),
        Vec::<Value>::new()
    );
    let reply = host.get(&format!("{BASE}?state=done")).await;
    let error = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(error["details"], json!({ "parameter": "state" }));
}

#[tokio::test]
async fn unknown_ids_are_404() {
    let host = Harness::seams();
    for id in [
        "goal-6f1c1a52-4a8e-4d5c-9a41-8f9c7b1f2e3d",
        "nope",
        "goal-1",
        "%E2%9C%93",
    ] {
        host.get(&format!("{BASE}/{id}"))
            .await
            .refused(StatusCode::NOT_FOUND, "not_found");
        host.post(&format!("{BASE}/{id}/abandon"), None)
            .await
            .refused(StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn every_refusal_is_an_envelope() {
    let host = Harness::seams();
    let raw = |method: Method, uri: &str, content_type: Option<&str>, body: Body| {
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {A}"));
        if let Some(content_type) = content_type {
            builder = builder.header("content-type", content_type);
        }
        builder.body(body).expect("valid request")
    };
    let cases = [
        (
            raw(
                Method::POST,
                BASE,
                Some("application/json"),
                Body::from("{\"objective\": "),
            ),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            raw(Method::POST, BASE, Some("application/json"), Body::empty()),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            raw(Method::POST, BASE, Some("text/plain"), Body::from("{}")),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            raw(
                Method::POST,
                BASE,
                Some("application/json"),
                Body::from(format!("{{\"objective\": \"{}\"}}", "x".repeat(70 * 1024))),
            ),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
        ),
        (
            raw(
                Method::GET,
                &format!("{BASE}/goal-x/nonsense"),
                None,
                Body::empty(),
            ),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            raw(Method::GET, "/nowhere", None, Body::empty()),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            raw(Method::DELETE, BASE, None, Body::empty()),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            raw(Method::PUT, "/.well-known/openwop", None, Body::empty()),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            raw(
                Method::POST,
                BASE,
                Some("application/json"),
                Body::from("[1, 2]"),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            raw(
                Method::POST,
                BASE,
                Some("application/json"),
                Body::from("[".repeat(10_000)),
            ),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            raw(
                Method::GET,
                &format!("{BASE}?state=%FF"),
                None,
                Body::empty(),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        // axum's own path rejection (not UTF-8), turned into an envelope.
        (
            raw(Method::GET, &format!("{BASE}/%FF%FE"), None, Body::empty()),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ];
    for (request, status, code) in cases {
        let description = format!("{} {}", request.method(), request.uri());
        let reply = host.send(request).await;
        assert_eq!(reply.status, status, "{description}: {}", reply.body);
        assert_valid("error", &reply.body);
        assert_eq!(reply.body["error"], code, "{description}");
    }
}
