//! Bytes bounded: what one tenant can make the host store, and how large
//! an answer about one goal can grow, do not grow without bound with what
//! its verifier answers or how long its goal runs. Each test stages a
//! tenant that tries, and shows the bound and its marker.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::EngineSettings;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{id_of, Harness};

/// A verifier that answers 256 criteria with 256-character ids, the 201st
/// failing: every evaluation of it kept all of them (about 72 KB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluation_keeps_a_bounded_number_of_criteria_and_marks_the_rest() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let verifier = Receiver::start(|_, _| {
        let criteria: Vec<Value> = (0..256)
            .map(|n| {
                let failing = n == 200;
                json!({
                    "id": format!("{n:0>256}"),
                    "verdict": if failing { "fail" } else { "pass" },
                    "failureClass": if failing { json!("logical") } else { Value::Null },
                })
            })
            .collect();
        Answer::Json(json!({ "satisfied": true, "confidence": 0.9, "criteria": criteria }))
    })
    .await;
    let id = id_of(
        &host
            .create(support::goal_body(
                &verifier.url("/verify"),
                Some("conformance:arm"),
                json!({ "maxLoopIterations": 3 }),
            ))
            .await,
    );
    let reply = host.continue_once(&id).await;
    let evaluation = reply.expect(StatusCode::OK, "continue-response")["evaluation"].clone();
    let stored = host.evaluations(&id).await;
    assert_eq!(
        stored,
        vec![evaluation.clone()],
        "the answer shows what is kept"
    );
    let criteria = evaluation["criteria"].as_array().expect("criteria");
    let bytes = evaluation.to_string().len();
    eprintln!(
        "an evaluation of 256 criteria with 256-character ids: {} criteria kept, {bytes} bytes",
        criteria.len()
    );
    assert_eq!(criteria.len(), 64);
    assert!(criteria.iter().all(|criterion| criterion["id"]
        .as_str()
        .expect("an id")
        .chars()
        .count()
        <= 64));
    assert_eq!(criteria[63]["id"], "…+193 more");
    assert_eq!(
        criteria[63]["verdict"], "fail",
        "the failure among the rest shows"
    );
    assert_eq!(evaluation["satisfied"], false, "judged on every criterion");
    assert_eq!(evaluation["failureClass"], "logical");
    assert!(bytes < 8_000, "{bytes} bytes");
}

/// A goal that runs and runs keeps the history of its most recent runs
/// only, a batch at a time; its body lists its most recent run ids; its
/// iteration count stays exact, and what it keeps still agrees.
#[tokio::test]
async fn a_long_running_goal_keeps_its_recent_history_and_a_bounded_body() {
    let settings = EngineSettings {
        conformance_seams: true,
        history_per_goal: Some(100),
        ..EngineSettings::default()
    };
    let host = Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    );
    let id = id_of(
        &host
            .create(support::goal_body(
                "conformance:verifier",
                Some("conformance:arm"),
                json!({ "maxLoopIterations": 100_000 }),
            ))
            .await,
    );
    let mut body_bytes = Vec::new();
    for run in 1..=400 {
        let reply = host.continue_once(&id).await;
        let body = reply.expect(StatusCode::OK, "continue-response");
        if [1, 100, 400].contains(&run) {
            body_bytes.push((run, body.to_string().len()));
        }
    }
    let goal = host.goal(&id).await;
    assert_eq!(goal["progress"]["iterations"], 400, "the count is exact");
    let shown: Vec<String> = goal["progress"]["contributingRunIds"]
        .as_array()
        .expect("run ids")
        .iter()
        .map(|id| id.as_str().expect("an id").to_string())
        .collect();
    assert_eq!(shown.len(), 100, "the body lists the most recent 100");
    let evaluations = host.evaluations(&id).await;
    let events = host.events(&id).await;
    eprintln!(
        "a goal of 400 runs, history of 100 kept: {} evaluations, {} events kept; continue answer bytes (run, bytes): {body_bytes:?}",
        evaluations.len(),
        events.len()
    );
    for kept in [evaluations.len(), events.len()] {
        assert!((100..=164).contains(&kept), "{kept} kept");
    }
    // What is kept is the most recent, and agrees: the body's run ids are
    // the last evaluations', in order.
    let iterations: Vec<u64> = evaluations
        .iter()
        .map(|evaluation| evaluation["iteration"].as_u64().expect("an iteration"))
        .collect();
    let first = 400 - evaluations.len() as u64 + 1;
    assert_eq!(iterations, (first..=400).collect::<Vec<u64>>());
    let evaluated: Vec<String> = evaluations[evaluations.len() - 100..]
        .iter()
        .map(|evaluation| evaluation["runId"].as_str().expect("a run id").to_string())
        .collect();
    assert_eq!(shown, evaluated);
    let last_event = events.last().expect("events");
    assert_eq!(last_event["sequence"], 400);
    assert_eq!(last_event["payload"]["iterations"], 400);
    // The body does not grow with the history once past what it lists.
    let (_, at_100) = body_bytes[1];
    let (_, at_400) = body_bytes[2];
    assert!(at_400 <= at_100 + 64, "{body_bytes:?}");
}
