//! No tenant can hurt another: two attacking tenants at their limits and a
//! victim that asks for little. Each test stages what tenants with valid
//! credentials can do to the shared parts of the host (the judge pool,
//! the fire and probe slots) and shows the victim still gets its share.
//! Waits poll with a deadline; nothing sleeps to wait for state.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::EngineSettings;
use goalpost_host::storage::DbLocation;
use serde_json::{json, Value};
use support::{id_of, Harness, A, B, BASE, C};

const VERIFIERS: &str = "/v1/host/sample/verifiers";

/// A verifier whose every judgement spends the judge's whole step budget:
/// one glob of a 1 KiB pattern over a long run of `a`s that never ends
/// in `b`.
fn expensive_verifier() -> Value {
    let pattern = format!("*{}b", "a".repeat(1022));
    json!({ "name": "expensive", "criteria": [
        { "id": "tag", "pointer": "/tag", "op": "matches", "value": pattern }
    ] })
}

/// One criterion, judged in microseconds.
fn cheap_verifier() -> Value {
    json!({ "name": "cheap", "criteria": [
        { "id": "done", "pointer": "/done", "op": "equals", "value": true }
    ] })
}

fn manual_goal(verifier: &str) -> Value {
    json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": verifier },
        "continuation": { "mode": "manual" },
        "bounds": { "maxLoopIterations": 100_000 },
    })
}

async fn create_as(host: &Harness, token: &str, body: Value) -> String {
    let reply = host.call(Method::POST, BASE, Some(token), Some(body)).await;
    id_of(reply.expect(StatusCode::CREATED, "goal"))
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// Two tenants keep the judge busy with judgements that each spend the
/// whole step budget; a third reports one-criterion runs. Judging is the
/// victim's own work only: it is never recorded as an environmental
/// failure because it waited behind the attackers, and it is not slowed
/// down to their pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expensive_judgements_of_two_tenants_leave_the_judge_to_a_third() {
    let settings = EngineSettings {
        conformance_seams: true,
        // Short, so a judgement that waited its turn behind the attackers
        // would run into it at once.
        judge_limit: Duration::from_millis(1_000),
        // Slots alone are under test here; the per-tenant budget of steps
        // is its own test.
        judge_steps_per_sec: None,
        ..EngineSettings::default()
    };
    let host = Arc::new(Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    ));
    for token in [A, B] {
        host.call(
            Method::POST,
            VERIFIERS,
            Some(token),
            Some(expensive_verifier()),
        )
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
    }
    host.call(Method::POST, VERIFIERS, Some(C), Some(cheap_verifier()))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
    let long_tag = "a".repeat(60_000);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut attackers = Vec::new();
    for token in [A, B] {
        for _ in 0..6 {
            let id = create_as(&host, token, manual_goal("expensive")).await;
            let (host, stop, tag) = (Arc::clone(&host), Arc::clone(&stop), long_tag.clone());
            attackers.push(tokio::spawn(async move {
                let path = format!("{BASE}/{id}/runs");
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let body = json!({ "output": { "tag": tag } });
                    let reply = host
                        .call(Method::POST, &path, Some(token), Some(body))
                        .await;
                    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
                }
            }));
        }
    }
    // The attackers' judgements fill the pool before the victim asks.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let victim = create_as(&host, C, manual_goal("cheap")).await;
    let path = format!("{BASE}/{victim}/runs");
    let mut latencies = Vec::new();
    let mut environmental = 0;
    for _ in 0..10 {
        let asked = Instant::now();
        let reply = host
            .call(
                Method::POST,
                &path,
                Some(C),
                Some(json!({ "output": { "done": false } })),
            )
            .await;
        latencies.push(asked.elapsed());
        let body = reply.expect(StatusCode::OK, "run-report-response");
        if body["evaluation"]["failureClass"] == "environmental" {
            environmental += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for attacker in attackers {
        attacker.await.expect("an attacker's loop");
    }
    let median = median(latencies.clone());
    let slowest = latencies.iter().max().copied().unwrap_or_default();
    eprintln!(
        "victim: 10 one-criterion judgements beside two attackers: median {median:?}, slowest {slowest:?}, {environmental} environmental"
    );
    assert_eq!(
        environmental, 0,
        "the victim's runs were failed for waiting behind other tenants (median {median:?})"
    );
    assert!(
        median < Duration::from_millis(500),
        "the victim's judgements took {median:?} at the median behind the attackers"
    );
}

fn armed(mode: &str, arm: &str) -> Value {
    json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": mode, "armRef": arm },
        "bounds": { "maxLoopIterations": 1000 },
    })
}

/// How many of `ids` (tenant `token`'s goals) have run at least once,
/// polled until all have or `within` passed.
async fn ran(host: &Harness, token: &str, ids: &[String], within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let mut count = 0;
        for id in ids {
            let reply = host
                .call(Method::GET, &format!("{BASE}/{id}"), Some(token), None)
                .await;
            if reply.expect(StatusCode::OK, "goal")["progress"]["iterations"] != 0 {
                count += 1;
            }
        }
        if count == ids.len() || Instant::now() >= deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Two tenants each keep more hanging fires going than one tenant may
/// run at once; a third's twelve due goals all fire at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_at_their_fire_caps_leave_a_third_its_share() {
    let host = Harness::seams();
    let hanging = armed("schedule", "conformance:arm?runMs=600000&intervalMs=20");
    for token in [A, B] {
        for _ in 0..(goalpost_host::scheduler::MAX_FIRES_PER_TENANT + 20) {
            create_as(&host, token, hanging.clone()).await;
        }
    }
    host.advance_and_tick_only(20).await;
    let mut victim = Vec::new();
    for _ in 0..12 {
        victim.push(create_as(&host, C, armed("schedule", "conformance:arm?intervalMs=20")).await);
    }
    host.advance_and_tick_only(20).await;
    let fired = ran(&host, C, &victim, Duration::from_secs(5)).await;
    eprintln!(
        "fires: the victim's goals that ran beside two attackers at their caps: {fired} of 12"
    );
    assert_eq!(fired, 12, "the third tenant got {fired} of its 12 fires");
}

/// The same for heartbeat probes: two tenants with more hanging probes
/// than one may run, and a third's twelve due probes all start in one
/// tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_at_their_probe_caps_leave_a_third_its_share() {
    let host = Harness::seams();
    let hanging = armed("heartbeat", "conformance:arm?runMs=600000&heartbeatMs=20");
    for token in [A, B] {
        for _ in 0..(goalpost_host::scheduler::MAX_PROBES_PER_TENANT + 8) {
            create_as(&host, token, hanging.clone()).await;
        }
    }
    host.advance_and_tick_only(20).await;
    let mut victim = Vec::new();
    for _ in 0..12 {
        victim.push(
            create_as(
                &host,
                C,
                armed("heartbeat", "conformance:arm?heartbeatMs=20"),
            )
            .await,
        );
    }
    let tick = host.advance_and_tick_only(20).await;
    let probed = victim
        .iter()
        .filter(|id| {
            tick.probed
                .iter()
                .any(|probed| probed.as_str() == id.as_str())
        })
        .count();
    eprintln!(
        "probes: the victim's goals probed beside two attackers at their caps: {probed} of 12"
    );
    assert_eq!(probed, 12, "the third tenant got {probed} of its 12 probes");
}
