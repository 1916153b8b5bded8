//! A file database survives the process: goals, progress, events and
//! evaluations read back the same, and a run left in flight by a crash gets
//! exactly one (environmental) verdict at the next start.

use crate::support;

use std::sync::Arc;

use axum::http::StatusCode;
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::domain::{GoalId, RunId};
use goalpost_host::storage::{DbLocation, RunReservation, Written};
use serde_json::json;
use support::{goal_body, id_of, Harness, BASE};

#[tokio::test]
async fn goals_progress_and_events_survive_a_restart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("host.db"));
    let clock = Arc::new(ManualClock::fixed());
    let body = goal_body(
        "conformance:verifier?satisfyOn=3",
        Some("conformance:arm?costUsd=0.25"),
        json!({ "maxLoopIterations": 5, "maxCostUsd": 1 }),
    );

    let (id, goal, events, evaluations) = {
        let host = Harness::open(&location, true, Arc::clone(&clock));
        let id = id_of(&host.create(body).await);
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
        host.continue_once(&id)
            .await
            .expect(StatusCode::OK, "continue-response");
        assert!(
            dir.path().join("host.db-wal").exists(),
            "the database runs in WAL mode"
        );
        (
            id.clone(),
            host.goal(&id).await,
            host.events(&id).await,
            host.evaluations(&id).await,
        )
    };
    assert_eq!(goal["progress"]["iterations"], 2);

    let host = Harness::open(&location, true, Arc::clone(&clock));
    assert_eq!(host.engine.recover().await.expect("recovery"), 0);
    assert_eq!(host.goal(&id).await, goal);
    assert_eq!(host.events(&id).await, events);
    assert_eq!(host.evaluations(&id).await, evaluations);
    let listed = host.get(BASE).await;
    assert_eq!(
        listed.expect(StatusCode::OK, "goal-list")["goals"],
        json!([goal])
    );

    // Spent cost survived too: 0.75 after the third run, satisfied there.
    let third = host.continue_once(&id).await;
    let body = third.expect(StatusCode::OK, "continue-response");
    assert_eq!(body["goal"]["state"], "satisfied");
    assert_eq!(body["goal"]["progress"]["iterations"], 3);
    let sequences: Vec<u64> = host
        .events(&id)
        .await
        .iter()
        .map(|event| event["sequence"].as_u64().expect("sequence"))
        .collect();
    assert_eq!(sequences, vec![1, 2, 3, 4]);
}

#[tokio::test]
async fn a_run_in_flight_at_a_crash_gets_one_environmental_verdict() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("host.db"));
    let clock = Arc::new(ManualClock::fixed());

    let (open, closed) = {
        let host = Harness::open(&location, true, Arc::clone(&clock));
        let open = id_of(
            &host
                .create(goal_body(
                    "conformance:verifier?satisfyOn=1",
                    None,
                    json!({ "maxLoopIterations": 2 }),
                ))
                .await,
        );
        let closed = id_of(
            &host
                .create(goal_body(
                    "conformance:verifier?satisfyOn=1",
                    None,
                    json!({ "maxLoopIterations": 2 }),
                ))
                .await,
        );
        // What a crash between dispatch and record leaves behind.
        for id in [&open, &closed] {
            let reservation = RunReservation {
                run_id: RunId::generate(),
                goal_id: GoalId::parse(id).expect("id"),
                iteration: 1,
                started_at: clock.now(),
                report: None,
            };
            assert_eq!(
                host.store
                    .reserve_run(&reservation, 1)
                    .await
                    .expect("reserved"),
                Written::Done(())
            );
        }
        host.post(&format!("{BASE}/{closed}/abandon"), None)
            .await
            .expect(StatusCode::OK, "goal");
        (open, closed)
    };

    let host = Harness::open(&location, true, Arc::clone(&clock));
    assert_eq!(host.engine.recover().await.expect("recovery"), 2);
    let goal = host.goal(&open).await;
    assert_eq!(goal["state"], "active");
    assert_eq!(goal["progress"]["iterations"], 1);
    let evaluations = host.evaluations(&open).await;
    assert_eq!(evaluations.len(), 1);
    assert_eq!(evaluations[0]["failureClass"], "environmental");
    assert_eq!(evaluations[0]["satisfied"], false);
    let abandoned = host.goal(&closed).await;
    assert_eq!(
        abandoned["progress"]["iterations"], 0,
        "nothing is recorded after a close"
    );
    assert!(host.evaluations(&closed).await.is_empty());
    // Recovery is done once: nothing is left in flight.
    assert_eq!(host.engine.recover().await.expect("recovery"), 0);
    // The next iteration is the second, and the bound still holds.
    let next = host.continue_once(&open).await;
    assert_eq!(
        next.expect(StatusCode::OK, "continue-response")["evaluation"]["iteration"],
        2
    );
}
