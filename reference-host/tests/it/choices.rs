//! The choices the profile leaves open (`goalpost_host::choices`): each one
//! made the other way, over HTTP, in every build. The reference host's own
//! choices are what every other test checks.

use crate::support;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use goalpost_host::choices::{
    ArmlessSchedule, AttentionBody, Choices, ConfidenceWithoutVerdict, CreateStatus, EgressPolicy,
    ErrorCodes, EscalatedContinue, ReportedRuns, WebhookSigning,
};
use goalpost_host::clock::ManualClock;
use goalpost_host::domain::{Check, CostReading, Mode};
use goalpost_host::engine::EngineSettings;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{goal_body, id_of, plain_body, Harness, BASE};

fn host(choices: Choices) -> Harness {
    let settings = EngineSettings {
        conformance_seams: true,
        choices,
        // The test's receivers listen on loopback, which the egress policy
        // denies unless allowed.
        egress: goalpost_host::domain::egress::EgressPolicy::new(vec![
            goalpost_host::domain::egress::AllowEntry::parse("127.0.0.1").expect("entry"),
        ]),
        ..EngineSettings::default()
    };
    Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    )
}

async fn discovery(host: &Harness) -> Value {
    let reply = host
        .call(Method::GET, "/.well-known/openwop", None, None)
        .await;
    reply.expect(StatusCode::OK, "capabilities").clone()
}

#[tokio::test]
async fn a_create_may_answer_200_with_a_location() {
    let host = host(Choices {
        create_status: CreateStatus::Ok,
        ..Choices::default()
    });
    let reply = host.post(BASE, Some(plain_body())).await;
    let goal = reply.expect(StatusCode::OK, "goal");
    let location = format!("{BASE}/{}", id_of(goal));
    assert_eq!(reply.header("location"), Some(location.as_str()));
    assert!(reply.header("etag").is_some());
}

#[tokio::test]
async fn attention_may_carry_only_the_status() {
    let host = host(Choices {
        attention: AttentionBody::StatusOnly,
        ..Choices::default()
    });
    let reply = host.post(BASE, Some(plain_body())).await;
    let id = id_of(reply.expect(StatusCode::CREATED, "goal"));
    let attention = host.get(&format!("{BASE}/{id}/attention")).await;
    assert_eq!(attention.status, StatusCode::OK);
    assert_eq!(attention.body, json!({ "status": "active" }));
}

#[tokio::test]
async fn an_unjudged_evaluation_may_have_a_null_confidence() {
    let host = host(Choices {
        confidence_without_verdict: ConfidenceWithoutVerdict::Null,
        ..Choices::default()
    });
    // The arm fails its first run: no judge ever sees it. The second run is
    // judged (never satisfied) and keeps its number.
    let body = goal_body(
        "conformance:verifier",
        Some("conformance:arm?failOn=1"),
        json!({ "maxLoopIterations": 3 }),
    );
    let id = id_of(&host.create(body).await);
    let first = host.continue_once(&id).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["evaluation"]["failureClass"], "environmental");
    assert_eq!(first.body["evaluation"]["confidence"], Value::Null);
    // lastVerdict keeps a number: the goal schema requires one.
    assert!(first.body["goal"]["completion"]["lastVerdict"]["confidence"].is_number());
    let second = host.continue_once(&id).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.body);
    let evaluations = host.get(&format!("{BASE}/{id}/evaluations")).await;
    let evaluations = evaluations.body["evaluations"].as_array().expect("a list");
    assert_eq!(evaluations[0]["confidence"], Value::Null);
    assert!(evaluations[1]["confidence"].is_number(), "{evaluations:?}");
}

#[tokio::test]
async fn the_cost_bound_may_be_read_as_exceeds() {
    for (reading, runs) in [(CostReading::Budget, 2), (CostReading::Exceeds, 3)] {
        let host = host(Choices {
            cost_reading: reading,
            ..Choices::default()
        });
        let body = goal_body(
            "conformance:verifier",
            Some("conformance:arm?costUsd=0.5"),
            json!({ "maxCostUsd": 1.0, "maxLoopIterations": 10 }),
        );
        let id = id_of(&host.create(body).await);
        for _ in 0..runs {
            let reply = host.continue_once(&id).await;
            assert_eq!(reply.status, StatusCode::OK, "{reading:?}: {}", reply.body);
        }
        let goal = host.goal(&id).await;
        assert_eq!(goal["state"], "bound-exceeded", "{reading:?}");
        assert_eq!(goal["progress"]["iterations"], runs, "{reading:?}");
    }
}

#[tokio::test]
async fn continue_on_an_escalated_goal_may_be_goal_terminal() {
    let host = host(Choices {
        escalated_continue: EscalatedContinue::GoalTerminal,
        ..Choices::default()
    });
    let body = goal_body(
        "conformance:verifier",
        Some("conformance:arm?escalateOn=1"),
        json!({ "maxLoopIterations": 3 }),
    );
    let id = id_of(&host.create(body).await);
    let first = host.continue_once(&id).await;
    assert_eq!(first.body["goal"]["state"], "escalated", "{}", first.body);
    host.continue_once(&id)
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    // Pause keeps its own code: only continue is the choice.
    host.post(&format!("{BASE}/{id}/pause"), None)
        .await
        .refused(StatusCode::CONFLICT, "goal_escalated");
}

#[tokio::test]
async fn error_codes_may_be_openwop_s_with_the_same_statuses() {
    let host = host(Choices {
        error_codes: ErrorCodes::Openwop,
        ..Choices::default()
    });
    let mut unbounded = plain_body();
    unbounded["bounds"] = json!({});
    host.post(BASE, Some(unbounded))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "validation_error");
    let mut wrong = plain_body();
    wrong["bounds"] = json!({ "maxLoopIterations": "3" });
    let refused = host.post(BASE, Some(wrong)).await;
    refused.refused(StatusCode::BAD_REQUEST, "validation_error");
    assert!(refused.body["details"]["pointer"].is_string());
    host.get(&format!("{BASE}/goal-unknown"))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
    let id = id_of(&host.create(plain_body()).await);
    host.post(&format!("{BASE}/{id}/abandon"), None).await;
    host.post(&format!("{BASE}/{id}/pause"), None)
        .await
        .refused(StatusCode::CONFLICT, "conflict");
    host.call(Method::GET, BASE, None, None)
        .await
        .refused(StatusCode::UNAUTHORIZED, "unauthenticated");
    // An envelope made for a rejection outside the handlers is re-coded too.
    host.get(&format!("{BASE}/%FF"))
        .await
        .refused(StatusCode::BAD_REQUEST, "validation_error");
}

#[tokio::test]
async fn webhook_calls_may_be_unsigned() {
    let host = host(Choices {
        webhook_signing: WebhookSigning::Unsigned,
        ..Choices::default()
    });
    let receiver = Receiver::start(|call, _| {
        if call.path == "/arm" {
            Answer::Json(json!({ "output": {} }))
        } else {
            Answer::Json(json!({ "satisfied": true, "confidence": 0.9 }))
        }
    })
    .await;
    let body = json!({
        "objective": "ship the release checklist",
        "completion": { "check": "verifier", "verifierRef": receiver.url("/verifier") },
        "continuation": { "mode": "manual", "armRef": receiver.url("/arm") },
        "bounds": { "maxLoopIterations": 2 },
    });
    let id = id_of(&host.create(body).await);
    let reply = host.continue_once(&id).await;
    assert_eq!(reply.body["goal"]["state"], "satisfied", "{}", reply.body);
    let calls = receiver.calls();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        assert_eq!(call.header("x-goalpost-signature"), None);
        assert!(
            call.header("x-goalpost-tenant").is_some(),
            "still says whose call it is"
        );
    }
}

#[tokio::test]
async fn the_judge_may_be_the_host() {
    let host = host(Choices {
        judge: Check::Host,
        ..Choices::default()
    });
    assert_eq!(discovery(&host).await["agents"]["goals"]["judge"], "host");
    let mut body = plain_body();
    body["completion"] = json!({ "check": "host" });
    let id = id_of(&host.create(body).await);
    host.post(BASE, Some(plain_body()))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "unsupported_judge");
    // No verifier named: nothing judges the run, so it is an environmental
    // failure and never satisfies.
    let reply = host.continue_once(&id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["evaluation"]["satisfied"], false);
    assert_eq!(reply.body["evaluation"]["failureClass"], "environmental");
    let edit = host
        .patch(
            &format!("{BASE}/{id}"),
            json!({ "completion": { "check": "verifier" } }),
        )
        .await;
    assert_eq!(edit.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_host_that_judges_itself_lets_the_suite_script_its_verdicts() {
    let host = host(Choices {
        judge: Check::Host,
        ..Choices::default()
    });
    assert_eq!(
        discovery(&host).await["conformanceSeams"]["goals"]["scriptedJudge"],
        true
    );
    let mut body = plain_body();
    body["completion"] = json!({ "check": "host" });
    let id = id_of(&host.create(body).await);
    let judge = format!("{BASE}/{id}/judge");
    let before = host.get(&format!("{BASE}/{id}")).await;
    let script = json!({ "verifierRef": "conformance:verifier?satisfyOn=2" });
    let put = |token, body| host.call(Method::PUT, &judge, token, body);
    let scripted = put(Some(support::A), Some(script.clone())).await;
    assert_eq!(scripted.status, StatusCode::NO_CONTENT, "{}", scripted.body);
    // Beside the goal, not in it: the goal, its tag and its time are as
    // they were.
    let after = host.get(&format!("{BASE}/{id}")).await;
    assert_eq!(after.body, before.body);
    assert_eq!(after.header("etag"), before.header("etag"));
    // Tenancy and credentials as for every seam; a bad body stores nothing.
    put(None, Some(script.clone()))
        .await
        .refused(StatusCode::UNAUTHORIZED, "unauthorized");
    put(Some(support::B), Some(script.clone()))
        .await
        .refused(StatusCode::NOT_FOUND, "not_found");
    host.call(
        Method::PUT,
        &format!("{BASE}/goal-missing/judge"),
        Some(support::A),
        Some(script.clone()),
    )
    .await
    .refused(StatusCode::NOT_FOUND, "not_found");
    for bad in [
        json!({}),
        json!({ "verifierRef": 3 }),
        json!({ "verifierRef": "conformance:verifier", "extra": true }),
        json!({ "verifierRef": "conformance:verifier?satisfyOn=0" }),
    ] {
        put(Some(support::A), Some(bad))
            .await
            .refused(StatusCode::BAD_REQUEST, "invalid_request");
    }
    // The script judges: unsatisfied, then satisfied on the second run.
    let first = host.continue_once(&id).await;
    assert_eq!(
        first.body["evaluation"]["satisfied"], false,
        "{}",
        first.body
    );
    assert_eq!(first.body["evaluation"]["failureClass"], Value::Null);
    let second = host.continue_once(&id).await;
    assert_eq!(second.body["goal"]["state"], "satisfied", "{}", second.body);
    assert_eq!(
        second.body["goal"]["completion"]["check"], "host",
        "the goal still names its host judge"
    );
    assert_eq!(
        second.body["goal"]["completion"]["verifierRef"],
        Value::Null
    );
    // A closed goal has no judge to script.
    put(Some(support::A), Some(script))
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
}

/// A create on `host` as tenant A, its scripted judge in the seam's header.
async fn create_scripted(host: &Harness, body: Value, script: &str) -> support::Reply {
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri(BASE)
        .header("authorization", format!("Bearer {}", support::A))
        .header("content-type", "application/json")
        .header("x-goalpost-scripted-judge", script)
        .body(axum::body::Body::from(body.to_string()))
        .expect("a valid request");
    host.send(request).await
}

#[tokio::test]
async fn a_create_scripts_the_judge_before_the_goals_first_run() {
    let host = host(Choices {
        judge: Check::Host,
        ..Choices::default()
    });
    // A schedule goal is due at once: the scheduler's next tick runs it,
    // before any request after the create could script it.
    let schedule = json!({
        "objective": "ship the release checklist",
        "completion": { "check": "host" },
        "continuation": { "mode": "schedule", "armRef": "conformance:arm" },
        "bounds": { "maxLoopIterations": 3 },
    });
    let reply = create_scripted(&host, schedule.clone(), "conformance:verifier?satisfyOn=1").await;
    let scripted = id_of(reply.expect(StatusCode::CREATED, "goal"));
    let unscripted = id_of(&host.create(schedule.clone()).await);
    // Beside the goal, not in it.
    let completion = &host.goal(&scripted).await["completion"];
    assert_eq!(completion["check"], "host");
    assert_eq!(completion["verifierRef"], Value::Null);
    host.tick().await;
    let goal = host.goal(&scripted).await;
    assert_eq!(goal["state"], "satisfied", "{goal}");
    assert_eq!(goal["progress"]["iterations"], 1, "{goal}");
    // Without a script, nothing judges it: its run fails environmentally.
    let other = host.evaluations(&unscripted).await;
    assert_eq!(other[0]["satisfied"], false, "{other:?}");
    assert_eq!(other[0]["failureClass"], "environmental", "{other:?}");
    // The seam's PUT replaces a script given at create.
    let manual = json!({
        "objective": "ship the release checklist",
        "completion": { "check": "host" },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 3 },
    });
    let reply = create_scripted(&host, manual.clone(), "conformance:verifier").await;
    let replaced = id_of(reply.expect(StatusCode::CREATED, "goal"));
    let put = host
        .call(
            Method::PUT,
            &format!("{BASE}/{replaced}/judge"),
            Some(support::A),
            Some(json!({ "verifierRef": "conformance:verifier?satisfyOn=1" })),
        )
        .await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{}", put.body);
    let ran = host.continue_once(&replaced).await;
    assert_eq!(ran.body["goal"]["state"], "satisfied", "{}", ran.body);
    // A script the host cannot use refuses the create, naming the header,
    // and stores nothing.
    let before = host.get(BASE).await.body["goals"].as_array().map(Vec::len);
    for (script, status, code) in [
        (
            "conformance:verifier?satisfyOn=0",
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        ("quality-gate", StatusCode::BAD_REQUEST, "invalid_request"),
        (
            "http://10.1.2.3/verifier",
            StatusCode::UNPROCESSABLE_ENTITY,
            "egress_denied",
        ),
    ] {
        let reply = create_scripted(&host, manual.clone(), script).await;
        let refused = reply.refused(status, code);
        assert_eq!(
            refused["details"],
            json!({ "header": "X-Goalpost-Scripted-Judge" }),
            "{script}"
        );
    }
    let after = host.get(BASE).await.body["goals"].as_array().map(Vec::len);
    assert_eq!(after, before, "a refused create stores no goal");
}

#[tokio::test]
async fn a_host_that_serves_no_scripted_judge_ignores_the_header() {
    // A verifier host: its goals name their judge; the header means nothing.
    let host = host(Choices::default());
    let reply = create_scripted(&host, plain_body(), "not a ref at all").await;
    reply.expect(StatusCode::CREATED, "goal");
    // A host that judges itself without its seams: production, judged by
    // the host alone.
    let settings = EngineSettings {
        conformance_seams: false,
        choices: Choices {
            judge: Check::Host,
            ..Choices::default()
        },
        ..EngineSettings::default()
    };
    let production = Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    );
    let mut body = plain_body();
    body["completion"] = json!({ "check": "host" });
    let reply = create_scripted(&production, body, "conformance:verifier?satisfyOn=1").await;
    reply.expect(StatusCode::CREATED, "goal");
}

#[tokio::test]
async fn a_verifier_host_serves_no_scripted_judge() {
    let host = host(Choices::default());
    let seams = discovery(&host).await["conformanceSeams"]["goals"].clone();
    assert_eq!(seams.get("scriptedJudge"), None);
    let id = id_of(&host.create(plain_body()).await);
    host.call(
        Method::PUT,
        &format!("{BASE}/{id}/judge"),
        Some(support::A),
        Some(json!({ "verifierRef": "conformance:verifier" })),
    )
    .await
    .refused(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn schedule_may_be_the_only_mode_and_an_armless_goal_waits_for_an_arm() {
    let host = host(Choices {
        modes: &[Mode::Schedule],
        armless_schedule: ArmlessSchedule::WaitsForArm,
        ..Choices::default()
    });
    assert_eq!(
        discovery(&host).await["agents"]["goals"]["continuation"],
        json!(["schedule"])
    );
    host.post(BASE, Some(plain_body()))
        .await
        .refused(StatusCode::UNPROCESSABLE_ENTITY, "unsupported_continuation");
    let mut body = plain_body();
    body["continuation"] = json!({ "mode": "schedule" });
    let id = id_of(&host.create(body).await);
    let created = host.goal(&id).await;
    for _ in 0..3 {
        host.advance_and_tick(120_000).await;
    }
    let waiting = host.goal(&id).await;
    assert_eq!(waiting["progress"]["iterations"], 0);
    assert_eq!(waiting["updatedAt"], created["updatedAt"]);
    // Paused and resumed, it still waits.
    host.post(&format!("{BASE}/{id}/pause"), None).await;
    host.post(&format!("{BASE}/{id}/resume"), None).await;
    host.advance_and_tick(120_000).await;
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 0);
    // Given an arm, it fires at once.
    let edit = host
        .patch(
            &format!("{BASE}/{id}"),
            json!({ "continuation": { "armRef": "conformance:arm?intervalMs=60000" } }),
        )
        .await;
    assert_eq!(edit.status, StatusCode::OK, "{}", edit.body);
    host.tick().await;
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 1);
}

#[tokio::test]
async fn the_reference_host_s_armless_schedule_goal_fires_at_once() {
    let host = host(Choices::default());
    let mut body = plain_body();
    body["continuation"] = json!({ "mode": "schedule" });
    let id = id_of(&host.create(body).await);
    host.tick().await;
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 1);
}

#[tokio::test]
async fn a_host_may_take_no_reported_runs_and_keep_its_egress_policy_to_itself() {
    let host = host(Choices {
        reported_runs: ReportedRuns::NotOffered,
        egress_policy: EgressPolicy::Unadvertised,
        ..Choices::default()
    });
    let document = discovery(&host).await;
    assert_eq!(document.pointer("/host/reportedRuns"), None, "{document}");
    assert_eq!(document.get("webhookEgress"), None, "{document}");
    // No route for reported runs: the unknown route's 404, with the
    // envelope, and the goal is untouched.
    let reply = host.post(BASE, Some(plain_body())).await;
    let id = id_of(reply.expect(StatusCode::CREATED, "goal")).to_string();
    let report = host
        .post(
            &format!("{BASE}/{id}/runs"),
            Some(json!({"output": {"done": true}})),
        )
        .await;
    report.expect(StatusCode::NOT_FOUND, "error");
    let goal = host.get(&format!("{BASE}/{id}")).await;
    assert_eq!(goal.body.pointer("/progress/iterations"), Some(&json!(0)));
    // The policy still holds: an internal target is refused at create.
    let mut internal = plain_body();
    internal["completion"]["verifierRef"] = json!("http://169.254.169.254/latest");
    let refused = host.post(BASE, Some(internal)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        refused.body
    );
}
