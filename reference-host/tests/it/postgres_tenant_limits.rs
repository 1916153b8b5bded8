//! Every tenant limit holds across three replicas of the host on one
//! PostgreSQL database: the quotas exactly (checked in the database, under
//! the tenant's row), the per-tenant rates by the documented division per
//! replica (`--replicas`), and a run reported at once to all three is
//! answered as one host answers it (one run, never a 500).
//!
//! Needs `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh` prints it);
//! without it each test prints why it did not run and passes.

use crate::pg;
use crate::support;

use std::collections::HashSet;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::{EngineSettings, Quotas, MAX_VERIFIERS_PER_TENANT};
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::{id_of, plain_body, Harness, A, BASE};

const VERIFIERS: &str = "/v1/host/sample/verifiers";

fn replicas(location: &DbLocation, settings: &EngineSettings) -> Vec<Arc<Harness>> {
    let clock = Arc::new(ManualClock::fixed());
    (0..3)
        .map(|_| {
            Arc::new(Harness::with_settings(
                location,
                settings.clone(),
                Arc::clone(&clock),
            ))
        })
        .collect()
}

/// Forty manual goals, each PATCHed into `schedule` at once, spread over
/// three replicas, against a quota of five armed goals: exactly five are
/// armed, and the others refused with 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn arming_patches_on_three_replicas_hold_the_armed_quota_exactly() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let settings = EngineSettings {
        conformance_seams: true,
        quotas: Quotas {
            goals_per_tenant: 1_000,
            active_arms_per_tenant: 5,
            ..Quotas::default()
        },
        ..EngineSettings::default()
    };
    let hosts = replicas(&location, &settings);
    let mut goals = Vec::new();
    for _ in 0..40 {
        goals.push(id_of(&hosts[0].create(plain_body()).await));
    }
    let mut patches = tokio::task::JoinSet::new();
    for (n, id) in goals.iter().enumerate() {
        let host = Arc::clone(&hosts[n % 3]);
        let path = format!("{BASE}/{id}");
        patches.spawn(async move {
            host.patch(&path, json!({ "continuation": { "mode": "schedule" } }))
                .await
                .status
        });
    }
    let (mut armed, mut refused) = (0, 0);
    while let Some(status) = patches.join_next().await {
        match status.expect("the PATCH task") {
            StatusCode::OK => armed += 1,
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("a PATCH answered {other}"),
        }
    }
    let mut scheduled = 0;
    for id in &goals {
        if hosts[1].goal(id).await["continuation"]["mode"] == "schedule" {
            scheduled += 1;
        }
    }
    eprintln!("armed across three replicas at a quota of 5: {scheduled} ({armed} answered 200, {refused} 429)");
    assert_eq!(
        (armed, refused, scheduled),
        (5, 35, 5),
        "the armed quota is 5"
    );
    drop(hosts);
    schema.drop().await;
}

/// Registrations of new verifiers at once on three replicas, with room
/// for three: exactly three are registered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn verifier_registrations_on_three_replicas_hold_the_quota_exactly() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let settings = EngineSettings {
        conformance_seams: true,
        ..EngineSettings::default()
    };
    let hosts = replicas(&location, &settings);
    let verifier = |n: u64| {
        json!({ "name": format!("v{n}"), "criteria": [
            { "id": "done", "pointer": "/done", "op": "equals", "value": true }
        ] })
    };
    let room = 3;
    for n in 0..MAX_VERIFIERS_PER_TENANT - room {
        hosts[0]
            .post(VERIFIERS, Some(verifier(n)))
            .await
            .expect(StatusCode::CREATED, "verifier-definition");
    }
    let mut registrations = tokio::task::JoinSet::new();
    for n in 0..12 {
        let host = Arc::clone(&hosts[n as usize % 3]);
        let body = verifier(1_000 + n);
        registrations.spawn(async move { host.post(VERIFIERS, Some(body)).await.status });
    }
    let (mut registered, mut refused) = (0, 0);
    while let Some(status) = registrations.join_next().await {
        match status.expect("the registration task") {
            StatusCode::CREATED => registered += 1,
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("a registration answered {other}"),
        }
    }
    let listed = hosts[2].get(VERIFIERS).await;
    let held = listed.expect(StatusCode::OK, "verifier-list")["verifiers"]
        .as_array()
        .expect("verifiers")
        .len();
    eprintln!("verifiers held across three replicas at a quota of {MAX_VERIFIERS_PER_TENANT}: {held} ({registered} registered, {refused} refused)");
    assert_eq!((registered, refused), (3, 9));
    assert_eq!(held as u64, MAX_VERIFIERS_PER_TENANT);
    drop(hosts);
    schema.drop().await;
}

/// Twelve identical reports of one run, four on each replica at once, are
/// answered as one host answers them: one run recorded, every answer 200
/// naming it (all but one replayed), never a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn identical_reports_on_three_replicas_are_answered_as_one_host_answers_them() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let settings = EngineSettings {
        conformance_seams: true,
        ..EngineSettings::default()
    };
    let hosts = replicas(&location, &settings);
    let mut failures = Vec::new();
    for trial in 0..4 {
        let id = id_of(
            &hosts[0]
                .create(json!({
                    "objective": "o",
                    "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
                    "continuation": { "mode": "manual" },
                    "bounds": { "maxLoopIterations": 10 },
                }))
                .await,
        );
        let body = json!({ "runId": format!("ci-{trial}"), "output": { "ok": true } });
        let mut reports = tokio::task::JoinSet::new();
        for n in 0..12 {
            let host = Arc::clone(&hosts[n % 3]);
            let (path, body) = (format!("{BASE}/{id}/runs"), body.clone());
            reports.spawn(async move {
                let reply = host.call(Method::POST, &path, Some(A), Some(body)).await;
                (reply.status, reply.body)
            });
        }
        let mut runs = HashSet::new();
        while let Some(joined) = reports.join_next().await {
            let (status, body): (StatusCode, Value) = joined.expect("the report task");
            if status == StatusCode::OK {
                runs.insert(body["runId"].as_str().unwrap_or_default().to_string());
            } else {
                failures.push(format!("trial {trial}: {status} {body}"));
            }
        }
        assert!(runs.len() <= 1, "one report made several runs: {runs:?}");
        let goal = hosts[2].goal(&id).await;
        assert_eq!(goal["progress"]["iterations"], 1, "trial {trial}");
    }
    eprintln!(
        "identical reports across three replicas, 4 trials of 12: {} not 200: {failures:?}",
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:?}");
    drop(hosts);
    schema.drop().await;
}

/// A per-tenant rate holds across replicas by division: with three
/// replicas configured, each allows a third of it, so a tenant that sends
/// its reports to all three gets the rate, not three times it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_rate_is_divided_between_three_replicas() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let settings = EngineSettings {
        conformance_seams: true,
        outbound_per_tenant_per_sec: Some(30),
        replicas: 3,
        ..EngineSettings::default()
    };
    let hosts = replicas(&location, &settings);
    let mut goals = Vec::new();
    for _ in 0..3 {
        goals.push(id_of(
            &hosts[0]
                .create(json!({
                    "objective": "o",
                    "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
                    "continuation": { "mode": "manual" },
                    "bounds": { "maxLoopIterations": 1000 },
                }))
                .await,
        ));
    }
    let mut accepted = 0;
    for n in 0..90 {
        let host = &hosts[n % 3];
        let body = json!({ "output": { "n": n } });
        let reply = host
            .call(
                Method::POST,
                &format!("{BASE}/{}/runs", goals[n % 3]),
                Some(A),
                Some(body),
            )
            .await;
        match reply.status {
            StatusCode::OK => accepted += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("a report answered {other}: {}", reply.body),
        }
    }
    eprintln!("reports accepted in one second across three replicas at a rate of 30: {accepted}");
    assert_eq!(accepted, 30, "the tenant's rate, not three times it");
    drop(hosts);
    schema.drop().await;
}

/// A goal's history is forgotten a batch at a time on PostgreSQL as on
/// SQLite: run ids, evaluations and events of the oldest runs, while the
/// count stays exact and another replica reads the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_running_goal_keeps_its_recent_history_on_postgres() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let settings = EngineSettings {
        conformance_seams: true,
        history_per_goal: Some(100),
        ..EngineSettings::default()
    };
    let hosts = replicas(&location, &settings);
    let id = id_of(
        &hosts[0]
            .create(support::goal_body(
                "conformance:verifier",
                Some("conformance:arm"),
                json!({ "maxLoopIterations": 100_000 }),
            ))
            .await,
    );
    let tenant = goalpost_host::domain::Tenant::parse("tenant-a").expect("tenant");
    let goal_id = goalpost_host::domain::GoalId::parse(&id).expect("an id");
    for run in 0..300 {
        if let Err(error) = hosts[run % 3].engine.continue_once(&tenant, &goal_id).await {
            panic!("run {run}: {error:?}");
        }
    }
    let goal = hosts[1].goal(&id).await;
    assert_eq!(goal["progress"]["iterations"], 300);
    let shown = goal["progress"]["contributingRunIds"]
        .as_array()
        .expect("ids")
        .clone();
    assert_eq!(shown.len(), 100);
    let evaluations = hosts[2].evaluations(&id).await;
    let events = hosts[2].events(&id).await;
    for kept in [evaluations.len(), events.len()] {
        assert!((100..=164).contains(&kept), "{kept} kept");
    }
    assert_eq!(evaluations.last().expect("evaluations")["iteration"], 300);
    assert_eq!(events.last().expect("events")["sequence"], 300);
    let evaluated: Vec<Value> = evaluations[evaluations.len() - 100..]
        .iter()
        .map(|evaluation| evaluation["runId"].clone())
        .collect();
    assert_eq!(shown, evaluated, "the kept lists agree");
    drop(hosts);
    schema.drop().await;
}
