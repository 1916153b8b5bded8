//! Hostile work: one tenant's goals must neither lock up the host nor
//! starve another tenant. Each test stages what a tenant with one valid
//! credential can do (pathological criteria, hanging arms, PATCH races) and
//! shows the host still bounds it. Waits poll with a deadline; nothing
//! sleeps to wait for state.

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::engine::{EngineSettings, Quotas};
use goalpost_host::storage::DbLocation;
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
    let receiver =
        Receiver::start(move |_, _| Answer::Json(json!({ "output": { "tag": tag } }))).await;
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
            started.elapsed() < Duration::from_secs(60),
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
    // The step budget is what ends them: without it the 58 criteria are
    // some 58 billion steps, hours of work; within it the two take 3–4 s
    // on a loaded 2-core machine. The bound leaves room for the other
    // tests sharing the process and its cores.
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(30),
        "both judgements took {took:?}"
    );
    eprintln!("two pathological judgements: {took:?}; slowest discovery meanwhile: {slowest:?}");
}

fn armed(mode: &str, arm: &str) -> Value {
    json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": mode, "armRef": arm },
        "bounds": { "maxLoopIterations": 1000 },
    })
}

async fn create_as(host: &Harness, token: &str, body: Value) -> String {
    let reply = host.call(Method::POST, BASE, Some(token), Some(body)).await;
    id_of(reply.expect(StatusCode::CREATED, "goal"))
}

/// Polls tenant `token`'s goal until it has run at least once.
async fn wait_for_a_run(host: &Harness, token: &str, id: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let reply = host
            .call(Method::GET, &format!("{BASE}/{id}"), Some(token), None)
            .await;
        if reply.expect(StatusCode::OK, "goal")["progress"]["iterations"] != 0 {
            return true;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_heartbeats_of_one_tenant_leave_probes_for_another() {
    let host = Harness::seams();
    // Each probe says fire, and the run it starts hangs for ten minutes.
    let hanging = armed("heartbeat", "conformance:arm?runMs=600000&heartbeatMs=20");
    for _ in 0..20 {
        create_as(&host, A, hanging.clone()).await;
    }
    let b = create_as(
        &host,
        B,
        armed("heartbeat", "conformance:arm?heartbeatMs=20"),
    )
    .await;
    let tick = host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert!(
        tick.probed.iter().any(|id| id.as_str() == b),
        "tenant B's heartbeat was not probed; probed {} of A's",
        tick.probed.len()
    );
    assert!(
        wait_for_a_run(&host, B, &b, Duration::from_secs(5)).await,
        "tenant B's probe never ran"
    );
    // A keeps its share and no more: it never holds every slot.
    host.clock.advance(Duration::from_millis(20));
    let again = host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert!(again.probed.iter().any(|id| id.as_str() == b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_fires_of_one_tenant_leave_fires_for_another() {
    let host = Harness::seams();
    let hanging = armed("schedule", "conformance:arm?runMs=600000&intervalMs=20");
    // More than one tenant's share of the fire slots.
    for _ in 0..(goalpost_host::scheduler::MAX_FIRES_PER_TENANT + 20) {
        create_as(&host, A, hanging.clone()).await;
    }
    host.clock.advance(Duration::from_millis(20));
    host.scheduler.tick(host.clock.now()).await.expect("tick");
    let b = create_as(&host, B, armed("schedule", "conformance:arm?intervalMs=20")).await;
    host.clock.advance(Duration::from_millis(20));
    host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert!(
        wait_for_a_run(&host, B, &b, Duration::from_secs(5)).await,
        "tenant B's due goal never fired behind tenant A's hanging ones"
    );
}

#[tokio::test]
async fn quiet_probes_slow_down() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(armed(
                "heartbeat",
                "conformance:arm?fireOn=1000000&heartbeatMs=20",
            ))
            .await,
    );
    let mut probes = 0;
    for _ in 0..400 {
        let tick = host.advance_and_tick(20).await;
        probes += tick
            .probed
            .iter()
            .filter(|probed| probed.as_str() == id)
            .count();
    }
    // 400 heartbeats' worth of time: 64 at full rate, then fewer and fewer.
    assert!(
        (64..=80).contains(&probes),
        "{probes} probes in 8 s of a goal whose probe never fires"
    );
}

#[tokio::test]
async fn intervals_have_a_floor_outside_conformance_mode() {
    let host = Harness::new(false);
    for arm in [
        "http://example.test/arm#intervalMs=1",
        "http://example.test/arm#heartbeatMs=1",
    ] {
        let mode = if arm.contains("interval") {
            "schedule"
        } else {
            "heartbeat"
        };
        let body = json!({
            "objective": "o",
            "completion": { "check": "verifier" },
            "continuation": { "mode": mode, "armRef": arm },
            "bounds": { "maxLoopIterations": 3 },
        });
        let reply = host.post(BASE, Some(body)).await;
        let refused = reply.refused(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(refused["details"]["pointer"], "/continuation/armRef");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_patches_cannot_arm_past_the_quota() {
    let settings = EngineSettings {
        conformance_seams: true,
        quotas: Quotas {
            goals_per_tenant: 1_000,
            active_arms_per_tenant: 5,
            ..Quotas::default()
        },
        ..EngineSettings::default()
    };
    let host = Arc::new(Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    ));
    let mut manual = Vec::new();
    for _ in 0..40 {
        manual.push(id_of(&host.create(support::plain_body()).await));
    }
    let patches: Vec<_> = manual
        .iter()
        .map(|id| {
            let host = Arc::clone(&host);
            let path = format!("{BASE}/{id}");
            tokio::spawn(async move {
                host.patch(&path, json!({ "continuation": { "mode": "schedule" } }))
                    .await
                    .status
            })
        })
        .collect();
    let mut armed = 0;
    for patch in patches {
        match patch.await.expect("the PATCH finishes") {
            StatusCode::OK => armed += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}"),
        }
    }
    let mut scheduled = 0;
    for id in &manual {
        if host.goal(id).await["continuation"]["mode"] == "schedule" {
            scheduled += 1;
        }
    }
    assert_eq!((armed, scheduled), (5, 5), "the quota is 5");
}

fn from(source: [u8; 4], token: Option<&str>, path: &str) -> Request<Body> {
    let mut request = Request::builder().method(Method::GET).uri(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut request = request.body(Body::empty()).expect("a request");
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from((source, 40_000))));
    request
}

#[tokio::test]
async fn failed_credentials_are_throttled_per_source() {
    let host = Harness::seams();
    let guesser = [10, 0, 0, 1];
    // Requests without a credential guess nothing and are not counted.
    for _ in 0..200 {
        host.send(from(guesser, None, BASE))
            .await
            .refused(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    for n in 0..goalpost_host::http::throttle::MAX_FAILURES {
        let token = format!("guess-{n}");
        host.send(from(guesser, Some(&token), BASE))
            .await
            .refused(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    // Its next guess is refused before anything else is said about it...
    let throttled = host.send(from(guesser, Some("guess-again"), BASE)).await;
    throttled.refused(StatusCode::TOO_MANY_REQUESTS, "too_many_failures");
    let wait: u64 = throttled
        .header("retry-after")
        .and_then(|value| value.parse().ok())
        .expect("a Retry-After in seconds");
    assert!((1..=60).contains(&wait), "{wait}");
    // ...but a known token from the same address is served: the guesses
    // of one client behind a shared address (a proxy's) lock out no
    // valid tenant behind it.
    host.send(from(guesser, Some(A), BASE))
        .await
        .expect(StatusCode::OK, "goal-list");
    // Another address is not affected.
    host.send(from([10, 0, 0, 2], Some(A), BASE))
        .await
        .expect(StatusCode::OK, "goal-list");
}

/// Behind a trusted proxy, the throttle is per client address the proxy
/// names; from anyone else, `X-Forwarded-For` is ignored.
#[tokio::test]
async fn the_throttle_reads_forwarded_addresses_from_trusted_proxies_only() {
    let host = Harness::seams();
    let tokens =
        goalpost_host::Tokens::new(&[(A.to_string(), "tenant-a".to_string())]).expect("tokens");
    let proxy = goalpost_host::domain::egress::Cidr::parse("10.9.0.1").expect("cidr");
    let app = goalpost_host::app(
        goalpost_host::AppState::new(Arc::clone(&host.engine), tokens)
            .with_trusted_proxies(vec![proxy]),
    );
    let send = |source: [u8; 4], forwarded: &str, token: &str| {
        let mut request = from(source, Some(token), BASE);
        request
            .headers_mut()
            .insert("x-forwarded-for", forwarded.parse().expect("a header"));
        let app = app.clone();
        async move {
            use tower::ServiceExt;
            app.oneshot(request).await.expect("infallible").status()
        }
    };
    for n in 0..goalpost_host::http::throttle::MAX_FAILURES {
        let status = send([10, 9, 0, 1], "203.0.113.7", &format!("guess-{n}")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    // The guesser behind the proxy is throttled...
    assert_eq!(
        send([10, 9, 0, 1], "203.0.113.7", "guess-more").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // ...another client behind it is not, and neither is the proxy's own
    // address for clients it names otherwise.
    assert_eq!(
        send([10, 9, 0, 1], "203.0.113.8", "guess-other").await,
        StatusCode::UNAUTHORIZED
    );
    // An untrusted peer naming the throttled client is judged by its own
    // address.
    assert_eq!(
        send([10, 9, 0, 2], "203.0.113.7", "guess-spoofed").await,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn verifiers_per_tenant_are_capped() {
    let host = Harness::seams();
    let limit = goalpost_host::engine::MAX_VERIFIERS_PER_TENANT;
    let verifier = |n: u64| {
        json!({ "name": format!("v{n}"), "criteria": [
            { "id": "done", "pointer": "/done", "op": "equals", "value": true }
        ] })
    };
    for n in 0..limit {
        host.post(VERIFIERS, Some(verifier(n)))
            .await
            .expect(StatusCode::CREATED, "verifier-definition");
    }
    let refused = host.post(VERIFIERS, Some(verifier(limit))).await;
    let body = refused.refused(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded");
    assert_eq!(
        body["details"],
        json!({ "quota": "verifiersPerTenant", "limit": limit })
    );
    // A taken name is still a conflict, and another tenant has its own room.
    host.post(VERIFIERS, Some(verifier(0)))
        .await
        .refused(StatusCode::CONFLICT, "verifier_exists");
    host.call(Method::POST, VERIFIERS, Some(B), Some(verifier(limit)))
        .await
        .expect(StatusCode::CREATED, "verifier-definition");
}

#[tokio::test]
async fn expired_idempotency_keys_are_purged_while_the_host_runs() {
    let host = Harness::seams();
    let request = Request::builder()
        .method(Method::POST)
        .uri(BASE)
        .header("authorization", format!("Bearer {A}"))
        .header("content-type", "application/json")
        .header("idempotency-key", "k-1")
        .body(Body::from(support::plain_body().to_string()))
        .expect("a request");
    host.send(request).await.expect(StatusCode::CREATED, "goal");
    let tenant = goalpost_host::domain::Tenant::parse("tenant-a").expect("tenant");
    let stored_since =
        goalpost_host::domain::Timestamp::from_unix_ms(host.clock.now().unix_ms() - 1)
            .expect("a time");
    let stored = |host: &Harness| {
        host.store
            .idempotency_key(&tenant, "k-1", stored_since)
            .expect("the store reads")
            .is_some()
    };
    host.tick().await;
    assert!(stored(&host), "a fresh key is kept");
    // A day and an hour later, with no restart in between.
    host.advance_and_tick(25 * 3_600_000).await;
    assert!(!stored(&host), "the expired key was purged by a tick");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_starts_outbound_work_at_a_bounded_rate() {
    let settings = EngineSettings {
        conformance_seams: true,
        outbound_per_tenant_per_sec: Some(10),
        ..EngineSettings::default()
    };
    let host = Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    );
    let mut goals = Vec::new();
    for _ in 0..50 {
        goals.push(create_as(&host, A, armed("schedule", "conformance:arm?intervalMs=20")).await);
    }
    let b = create_as(&host, B, armed("schedule", "conformance:arm?intervalMs=20")).await;
    host.advance_and_tick(20).await;
    let mut ran = 0;
    for id in &goals {
        if host.goal(id).await["progress"]["iterations"] != 0 {
            ran += 1;
        }
    }
    assert_eq!(ran, 10, "one second's worth of tenant A's fires");
    assert!(
        wait_for_a_run(&host, B, &b, Duration::from_secs(5)).await,
        "tenant B has its own allowance"
    );
    // The rest start as the allowance refills, a tenth of a second each.
    host.advance_and_tick(100).await;
    let mut ran = 0;
    for id in &goals {
        if host.goal(id).await["progress"]["iterations"] != 0 {
            ran += 1;
        }
    }
    assert_eq!(ran, 11);
}

/// Reported runs and `continue`s draw from the tenant's outbound rate, as
/// its fires do: past it they are 429 `rate_limited` with a time to wait,
/// nothing is judged or dispatched, and another tenant is not affected.
#[tokio::test]
async fn reported_runs_and_continues_share_the_tenants_outbound_rate() {
    let settings = EngineSettings {
        conformance_seams: true,
        outbound_per_tenant_per_sec: Some(10),
        ..EngineSettings::default()
    };
    let host = Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    );
    let manual = json!({
        "objective": "o",
        "completion": { "check": "verifier", "verifierRef": "conformance:verifier" },
        "continuation": { "mode": "manual", "armRef": "conformance:arm" },
        "bounds": { "maxLoopIterations": 1000 },
    });
    let a = create_as(&host, A, manual.clone()).await;
    let b = create_as(&host, B, manual).await;
    let report = |n: u32| json!({ "runId": format!("r-{n}"), "output": { "n": n } });
    let mut accepted = 0;
    let mut refused = None;
    for n in 0..30 {
        let reply = host
            .call(
                Method::POST,
                &format!("{BASE}/{a}/runs"),
                Some(A),
                Some(report(n)),
            )
            .await;
        match reply.status {
            StatusCode::OK => accepted += 1,
            StatusCode::TOO_MANY_REQUESTS => refused = Some(reply),
            other => panic!("unexpected {other}: {}", reply.body),
        }
    }
    assert_eq!(accepted, 10, "one second's worth of reported runs");
    let refused = refused.expect("the rest were refused");
    refused.refused(StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_eq!(refused.header("retry-after"), Some("1"));
    // A report sent again is answered again, at no cost.
    host.call(
        Method::POST,
        &format!("{BASE}/{a}/runs"),
        Some(A),
        Some(report(0)),
    )
    .await
    .expect(StatusCode::OK, "run-report-response");
    // A continue shares the same rate.
    host.call(Method::POST, &format!("{BASE}/{a}/continue"), Some(A), None)
        .await
        .refused(StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_eq!(
        host.goal(&a).await["progress"]["iterations"],
        10,
        "nothing more ran"
    );
    // Another tenant has its own.
    host.call(Method::POST, &format!("{BASE}/{b}/continue"), Some(B), None)
        .await
        .expect(StatusCode::OK, "continue-response");
    // A second later, a second's worth again.
    host.clock.advance(Duration::from_secs(1));
    host.call(Method::POST, &format!("{BASE}/{a}/continue"), Some(A), None)
        .await
        .expect(StatusCode::OK, "continue-response");
}
