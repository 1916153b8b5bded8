//! Hostile work: one tenant's goals must neither lock up the host nor
//! starve another tenant. Each test stages what a tenant with one valid
//! credential can do (pathological criteria, hanging arms, PATCH races) and
//! shows the host still bounds it. Waits poll with a deadline; nothing
//! sleeps to wait for state.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{id_of, Harness, A, B, BASE};

const VERIFIERS: &str = "/v1/host/sample/verifiers";

/// 58 criteria of a 1 KiB pattern each, the most a 64 KiB body holds, each
/// costing about a billion steps against a long run of `a`s.
fn pathological_verifier() -> Value {
    let pattern = format!("*{}b", "a".repeat(1022));
    let criteria: Vec<Value> = (0..58)
        .map(|n| json!({ "id": format!("c{n}"), "pointer": "/tag", "op": "matches", "value": pattern }))
        .collect();
    json!({ "name": "slow", "criteria": criteria })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pathological_verifier_is_an_environmental_failure_and_the_host_stays_responsive() {
    let host = Arc::new(Harness::webhooks(Duration::from_secs(30)));
    host.post(VERIFIERS, Some(pathological_verifier()))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
    // The largest answer the webhook client takes: 1 MiB with its wrapper.
    let tag = "a".repeat(1024 * 1024 - 64);
    let receiver = Receiver::start(move |_, _| Answer::Json(json!({ "output": { "tag": tag } }))).await;
    let goal = json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": "slow" },
        "continuation": { "mode": "manual", "armRef": receiver.url("/arm") },
        "bounds": { "maxLoopIterations": 5 },
    });
    let started = Instant::now();
    // Two at once: as many as the runtime has workers.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let id = id_of(&host.create(goal.clone()).await);
        let host = Arc::clone(&host);
        runs.push(tokio::spawn(async move { host.continue_once(&id).await }));
    }
    // Discovery answers promptly the whole time the judges work.
    let mut slowest = Duration::ZERO;
    while !runs.iter().all(tokio::task::JoinHandle::is_finished) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the judges never finished"
        );
        let asked = Instant::now();
        let discovery = tokio::time::timeout(
            Duration::from_secs(2),
            host.call(Method::GET, "/.well-known/openwop", None, None),
        )
        .await
        .expect("discovery answers within 2 s while the judges run");
        assert_eq!(discovery.status, StatusCode::OK);
        slowest = slowest.max(asked.elapsed());
        tokio::task::yield_now().await;
    }
    for run in runs {
        let reply = run.await.expect("the run task");
        let body = reply.expect(StatusCode::OK, "continue-response");
        assert_eq!(body["evaluation"]["satisfied"], false);
        assert_eq!(
            body["evaluation"]["failureClass"], "environmental",
            "a judge over its budget is an environmental failure: {}",
            body["evaluation"]
        );
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "both judgements took {took:?}"
    );
    eprintln!("two pathological judgements: {took:?}; slowest discovery meanwhile: {slowest:?}");
}
