//! Races: many `continue` calls at once never cross the iteration
//! bound, and scheduler ticks (two schedulers, as if two loops ran) racing
//! manual continues never dispatch an iteration twice. Dispatches are
//! counted by the arm itself: a webhook receiver that logs every run.

use crate::support;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use goalpost_host::clock::ManualClock;
use goalpost_host::scheduler::Scheduler;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};
use support::{goal_body, id_of, Harness};

#[tokio::test]
async fn fifty_concurrent_continues_make_exactly_five_evaluations() {
    fifty_continues_on(Arc::new(Harness::seams())).await;
}

/// The same on a file database, where concurrent writes share group
/// commits and reads use their own connections; four goals at once so a
/// group mixes goals, on two workers so calls really overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_continues_on_a_file_database_keep_every_bound() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = DbLocation::File(dir.path().join("races.db"));
    let host = Arc::new(Harness::open(
        &location,
        true,
        Arc::new(ManualClock::fixed()),
    ));
    let goals: Vec<_> = (0..4)
        .map(|_| tokio::spawn(fifty_continues_on(Arc::clone(&host))))
        .collect();
    for goal in goals {
        goal.await.expect("every goal keeps its bound");
    }
}

async fn fifty_continues_on(host: Arc<Harness>) {
    let id = id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                Some("conformance:arm?runMs=2&costUsd=0.01"),
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let host = Arc::clone(&host);
            let id = id.clone();
            tokio::spawn(async move { host.continue_once(&id).await })
        })
        .collect();
    let (mut ran, mut refused) = (Vec::new(), 0);
    for call in calls {
        let reply = call.await.expect("the call finishes");
        match reply.status {
            StatusCode::OK => {
                let body = reply.expect(StatusCode::OK, "continue-response");
                ran.push(body["evaluation"]["iteration"].clone());
            }
            StatusCode::CONFLICT => {
                reply.refused(StatusCode::CONFLICT, "goal_terminal");
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", reply.body),
        }
    }
    ran.sort_by_key(|iteration| iteration.as_u64());
    assert_eq!(ran, vec![json!(1), json!(2), json!(3), json!(4), json!(5)]);
    assert_eq!(refused, 45);
    let evaluations = host.evaluations(&id).await;
    assert_eq!(evaluations.len(), 5);
    let goal = host.goal(&id).await;
    assert_eq!(goal["state"], "bound-exceeded");
    assert_eq!(goal["progress"]["iterations"], 5);
    let events = host.events(&id).await;
    let closes = events.iter().filter(|e| e["type"] == "goal.closed").count();
    assert_eq!((events.len(), closes), (6, 1));
}

/// Each goal's runs as the arm saw them: `(iteration, runId)` in arrival
/// order.
fn runs_by_goal(receiver: &Receiver) -> BTreeMap<String, Vec<(u64, String)>> {
    let mut runs: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    for call in receiver.calls_to("/arm") {
        let body = &call.body;
        runs.entry(body["goalId"].as_str().unwrap_or_default().to_string())
            .or_default()
            .push((
                body["iteration"].as_u64().unwrap_or_default(),
                body["runId"].as_str().unwrap_or_default().to_string(),
            ));
    }
    runs
}

#[tokio::test]
async fn ticks_racing_continues_never_dispatch_an_iteration_twice() {
    const GOALS: usize = 6;
    const MAX: u64 = 12;
    let receiver = Receiver::start(|_, _| Answer::Json(json!({ "output": { "ok": true } }))).await;
    let host = Arc::new(Harness::webhooks(Duration::from_secs(5)));
    let mut ids = Vec::new();
    for _ in 0..GOALS {
        let body = json!({
            "objective": "race me",
            "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
            "continuation": { "mode": "schedule", "armRef": format!("{}#intervalMs=1", receiver.url("/arm")) },
            "bounds": { "maxLoopIterations": MAX },
        });
        ids.push(id_of(&host.create(body).await));
    }
    // A second scheduler over the same engine: two tick loops at once.
    let second = Arc::new(Scheduler::new(Arc::clone(&host.engine)));
    let ticker = |scheduler: Option<Arc<Scheduler>>| {
        let host = Arc::clone(&host);
        tokio::spawn(async move {
            let mut fired = 0;
            for _ in 0..60 {
                let now = host.clock.advance(Duration::from_millis(1));
                let tick = match &scheduler {
                    Some(scheduler) => scheduler.tick(now).await,
                    None => host.scheduler.tick(now).await,
                };
                fired += tick.expect("tick works").fired.len();
                tokio::task::yield_now().await;
            }
            fired
        })
    };
    let tickers = [ticker(None), ticker(Some(Arc::clone(&second)))];
    let mut tasks = Vec::new();
    for worker in 0..4 {
        let host = Arc::clone(&host);
        let ids = ids.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..40 {
                let id = &ids[(worker * 7 + round) % ids.len()];
                let reply = host.continue_once(id).await;
                assert!(
                    reply.status == StatusCode::OK || reply.status == StatusCode::CONFLICT,
                    "{}: {}",
                    reply.status,
                    reply.body
                );
            }
        }));
    }
    for task in tasks {
        task.await.expect("the task finishes");
    }
    for ticker in tickers {
        let fired = ticker.await.expect("the ticker finishes");
        assert!(fired > 0, "each scheduler started fires");
    }
    host.scheduler.settle().await;
    second.settle().await;

    let runs = runs_by_goal(&receiver);
    let mut all_run_ids = HashSet::new();
    let mut total = 0;
    for id in &ids {
        let goal = host.goal(id).await;
        let evaluations = host.evaluations(id).await;
        let iterations = goal["progress"]["iterations"].as_u64().expect("iterations");
        let seen = runs.get(id).cloned().unwrap_or_default();
        let mut numbers: Vec<u64> = seen.iter().map(|(iteration, _)| *iteration).collect();
        numbers.sort_unstable();
        assert_eq!(
            numbers,
            (1..=iterations).collect::<Vec<_>>(),
            "{id}: every iteration dispatched exactly once"
        );
        assert!(iterations <= MAX, "{id}: {iterations} runs");
        assert_eq!(evaluations.len() as u64, iterations);
        let recorded: Vec<&Value> = evaluations.iter().map(|e| &e["runId"]).collect();
        let mut dispatched: Vec<(u64, String)> = seen.clone();
        dispatched.sort();
        let dispatched: Vec<Value> = dispatched.into_iter().map(|(_, run)| json!(run)).collect();
        assert_eq!(recorded, dispatched.iter().collect::<Vec<_>>(), "{id}");
        assert_eq!(goal["progress"]["contributingRunIds"], json!(dispatched));
        for (_, run) in seen {
            assert!(all_run_ids.insert(run), "a run id was reused");
        }
        total += iterations;
    }
    assert!(
        total >= GOALS as u64 * 2,
        "the race should have run something: {total} runs"
    );
    assert_eq!(receiver.calls_to("/arm").len() as u64, total);
}
