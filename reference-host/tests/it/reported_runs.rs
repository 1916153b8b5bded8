//! Reported runs (`POST {base}/{id}/runs`, PROFILE.md "Reported runs")
//! beyond what the suite's scenarios see: without the seams, across a
//! restart, under concurrent reports, and against the cost bound.

use crate::support;

use std::sync::Arc;

use axum::http::StatusCode;
use goalpost_host::clock::ManualClock;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::{goal_body, id_of, Harness, BASE};

const VERIFIERS: &str = "/v1/host/sample/verifiers";

fn runs(id: &str) -> String {
    format!("{BASE}/{id}/runs")
}

/// What the release host does for an operator: no seams, a registered
/// criteria verifier judges the reported output, and the goal converges.
#[tokio::test]
async fn a_manual_goal_converges_through_reported_runs_without_the_seams() {
    let host = Harness::new(false);
    let discovery = host.get("/.well-known/openwop").await;
    let discovery = discovery.expect(StatusCode::OK, "capabilities");
    assert_eq!(
        discovery["host"]["reportedRuns"],
        json!({ "path": format!("{BASE}/{{id}}/runs"), "continuation": ["manual"] })
    );
    host.post(
        VERIFIERS,
        Some(json!({ "name": "green", "criteria": [
            { "id": "tests", "pointer": "/failed", "op": "equals", "value": 0 }
        ] })),
    )
    .await
    .expect(StatusCode::CREATED, "verifier-definition");
    let goal = host
        .create(json!({
            "objective": "make the build green",
            "completion": { "check": "verifier", "verifierRef": "green" },
            "continuation": { "mode": "manual" },
            "bounds": { "maxLoopIterations": 5 },
        }))
        .await;
    let id = id_of(&goal);

    let red = host
        .post(
            &runs(&id),
            Some(json!({ "runId": "ci-1", "output": { "failed": 3 } })),
        )
        .await;
    let red = red.expect(StatusCode::OK, "run-report-response");
    assert_eq!(red["evaluation"]["satisfied"], false);
    assert_eq!(red["evaluation"]["criteria"][0]["verdict"], "fail");
    assert_eq!(red["goal"]["state"], "active");

    let green = host
        .post(
            &runs(&id),
            Some(json!({ "runId": "ci-2", "output": { "failed": 0 } })),
        )
        .await;
    let green = green.expect(StatusCode::OK, "run-report-response");
    assert_eq!(green["evaluation"]["satisfied"], true);
    assert_eq!(green["goal"]["state"], "satisfied");
    assert_eq!(green["goal"]["progress"]["iterations"], 2);
    // The worker's word is output, never a verdict.
    let claimed = host
        .create(json!({
            "objective": "claims are not verdicts",
            "completion": { "check": "verifier", "verifierRef": "green" },
            "continuation": { "mode": "manual" },
            "bounds": { "maxLoopIterations": 5 },
        }))
        .await;
    let claim = host
        .post(
            &runs(&id_of(&claimed)),
            Some(json!({ "output": { "failed": 1, "satisfied": true, "done": true } })),
        )
        .await;
    assert_eq!(
        claim.expect(StatusCode::OK, "run-report-response")["goal"]["state"],
        "active"
    );
}

#[tokio::test]
async fn a_reported_run_is_remembered_across_a_restart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("host.db"));
    let clock = Arc::new(ManualClock::fixed());
    let report = json!({ "runId": "nightly-7", "output": { "ok": false }, "costUsd": 0.5 });
    let (id, first) = {
        let host = Harness::open(&location, true, Arc::clone(&clock));
        let id = id_of(
            &host
                .create(goal_body(
                    "conformance:verifier?satisfyOn=3",
                    None,
                    json!({ "maxLoopIterations": 5 }),
                ))
                .await,
        );
        let first = host.post(&runs(&id), Some(report.clone())).await;
        (
            id,
            first.expect(StatusCode::OK, "run-report-response").clone(),
        )
    };
    let host = Harness::open(&location, true, clock);
    let again = host.post(&runs(&id), Some(report.clone())).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let again = again.expect(StatusCode::OK, "run-report-response");
    assert_eq!(again["runId"], first["runId"]);
    assert_eq!(again["iteration"], 1);
    assert_eq!(again["evaluation"], first["evaluation"]);
    let mut changed = report;
    changed["costUsd"] = json!(0.75);
    host.post(&runs(&id), Some(changed))
        .await
        .refused(StatusCode::CONFLICT, "run_conflict");
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 1);
    assert_eq!(host.evaluations(&id).await.len(), 1);
}

/// Two reports of one run at once: the goal's lock orders them, the
/// second finds the first's run and answers it again.
#[tokio::test]
async fn concurrent_reports_of_one_run_are_one_iteration() {
    let host = Arc::new(Harness::seams());
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier?satisfyOn=9",
                None,
                json!({ "maxLoopIterations": 9 }),
            ))
            .await,
    );
    let report = json!({ "runId": "once", "output": 1 });
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (host, path, report) = (Arc::clone(&host), runs(&id), report.clone());
            tokio::spawn(async move {
                let reply = host.post(&path, Some(report)).await;
                reply.expect(StatusCode::OK, "run-report-response")["runId"].clone()
            })
        })
        .collect();
    let mut ids: Vec<Value> = Vec::new();
    for task in tasks {
        ids.push(task.await.expect("the report task"));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one run for every report: {ids:?}");
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 1);
}

/// The reported cost counts toward maxCostUsd, and the decision order is
/// the dispatched run's: an unsatisfied verdict that reaches the budget
/// closes the goal bound-exceeded; the next report is refused.
#[tokio::test]
async fn reported_cost_reaches_the_cost_bound() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                None,
                json!({ "maxCostUsd": 1 }),
            ))
            .await,
    );
    let half = host
        .post(&runs(&id), Some(json!({ "output": 1, "costUsd": 0.5 })))
        .await;
    assert_eq!(
        half.expect(StatusCode::OK, "run-report-response")["goal"]["state"],
        "active"
    );
    let all = host
        .post(&runs(&id), Some(json!({ "output": 1, "costUsd": 0.5 })))
        .await;
    assert_eq!(
        all.expect(StatusCode::OK, "run-report-response")["goal"]["state"],
        "bound-exceeded"
    );
    host.post(&runs(&id), Some(json!({ "output": 1 })))
        .await
        .refused(StatusCode::CONFLICT, "goal_terminal");
    // A paused goal takes no report either.
    let paused = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                None,
                json!({ "maxLoopIterations": 2 }),
            ))
            .await,
    );
    host.post(&format!("{BASE}/{paused}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.post(&runs(&paused), Some(json!({ "output": 1 })))
        .await
        .refused(StatusCode::CONFLICT, "goal_paused");
}
