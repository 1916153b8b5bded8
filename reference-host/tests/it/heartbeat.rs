//! The `heartbeat` continuation: probes on the goal's interval, a run only
//! when the probe says fire, driven by the scheduler's `tick` on a manual
//! clock.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use goalpost_host::clock::Clock;
use serde_json::{json, Value};
use support::receiver::{Answer, Call, Receiver};
use support::{assert_valid, id_of, Harness, BASE, SECRET};

const ARM: &str = "/arm";
const VERIFIER: &str = "/verifier";

fn heartbeat_body(verifier: &str, arm: &str, bounds: Value) -> Value {
    json!({
        "objective": "watch the queue",
        "completion": { "check": "verifier", "verifierRef": verifier },
        "continuation": { "mode": "heartbeat", "armRef": arm },
        "bounds": bounds,
    })
}

/// Probes answer `fire` as `fires(probe number)`; runs and verdicts are
/// plain.
async fn receiver(fires: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Receiver {
    let probes = AtomicUsize::new(0);
    Receiver::start(move |call: &Call, _| {
        if call.path == VERIFIER {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        } else if call.is_probe() {
            fires(probes.fetch_add(1, Ordering::SeqCst) + 1)
        } else {
            Answer::Json(json!({ "output": { "ran": call.body["iteration"] } }))
        }
    })
    .await
}

fn runs(receiver: &Receiver) -> Vec<Call> {
    receiver
        .calls_to(ARM)
        .into_iter()
        .filter(|call| !call.is_probe())
        .collect()
}

fn probes(receiver: &Receiver) -> Vec<Call> {
    receiver
        .calls_to(ARM)
        .into_iter()
        .filter(Call::is_probe)
        .collect()
}

#[tokio::test]
async fn a_webhook_heartbeat_runs_only_when_the_probe_says_fire() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver(|n| Answer::Json(json!({ "fire": n == 3 }))).await;
    let id = id_of(
        &host
            .create(heartbeat_body(
                &receiver.url(VERIFIER),
                &format!("{}#heartbeatMs=1000", receiver.url(ARM)),
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    let tick = host.tick().await;
    assert_eq!(tick.probed.len(), 1, "the first probe goes at once");
    assert_eq!(probes(&receiver).len(), 1);
    assert!(runs(&receiver).is_empty(), "fire: false dispatches nothing");

    host.tick().await;
    host.advance_and_tick(999).await;
    assert_eq!(probes(&receiver).len(), 1, "not due before heartbeatMs");
    host.advance_and_tick(1).await;
    assert_eq!(probes(&receiver).len(), 2);
    assert!(runs(&receiver).is_empty());

    host.advance_and_tick(1000).await;
    assert_eq!(probes(&receiver).len(), 3);
    assert_eq!(runs(&receiver).len(), 1, "fire: true dispatches one run");
    assert_eq!(receiver.calls_to(VERIFIER).len(), 1);
    assert_eq!(host.evaluations(&id).await.len(), 1);

    host.advance_and_tick(1000).await;
    assert_eq!(probes(&receiver).len(), 4);
    assert_eq!(runs(&receiver).len(), 1);

    for (index, probe) in probes(&receiver).iter().enumerate() {
        assert_valid("webhook-heartbeat-request", &probe.body);
        assert!(probe.signed_for(SECRET, "tenant-a"), "{:?}", probe.headers);
        assert_eq!(probe.body["goalId"], json!(id));
        let next = if index < 3 { 1 } else { 2 };
        assert_eq!(probe.body["iteration"], next, "probe {}", index + 1);
        assert_eq!(probe.body["remaining"]["iterations"], 6 - next);
    }
    assert_valid("webhook-arm-request", &runs(&receiver)[0].body);
}

#[tokio::test]
async fn the_fixture_heartbeat_fires_from_the_kth_probe_on() {
    let host = Harness::seams();
    let id = id_of(
        &host
            .create(heartbeat_body(
                "conformance:verifier?satisfyOn=2",
                "conformance:arm?heartbeatMs=50&fireOn=2",
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    host.tick().await;
    assert!(host.evaluations(&id).await.is_empty(), "probe 1 is quiet");
    host.advance_and_tick(49).await;
    assert!(host.evaluations(&id).await.is_empty());
    host.advance_and_tick(1).await;
    assert_eq!(host.evaluations(&id).await.len(), 1, "probe 2 fires");
    host.advance_and_tick(50).await;
    assert_eq!(host.evaluations(&id).await.len(), 2, "probe 3 fires too");
    assert_eq!(host.goal(&id).await["state"], "satisfied");
    host.advance_and_tick(50).await;
    assert_eq!(
        host.evaluations(&id).await.len(),
        2,
        "a closed goal is not probed"
    );
}

#[tokio::test]
async fn a_failed_probe_fires_nothing() {
    let host = Harness::webhooks(Duration::from_millis(300));
    let receiver = receiver(|n| match n {
        1 => Answer::Status(500, json!({ "fire": true })),
        2 => Answer::Raw("{\"fire\": tru".into()),
        3 => Answer::Json(json!({ "fire": "yes" })),
        4 => Answer::Delayed(
            Duration::from_secs(3),
            Box::new(Answer::Json(json!({ "fire": true }))),
        ),
        _ => Answer::Json(json!({ "fire": true })),
    })
    .await;
    let id = id_of(
        &host
            .create(heartbeat_body(
                &receiver.url(VERIFIER),
                &format!("{}#heartbeatMs=10", receiver.url(ARM)),
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    host.tick().await;
    for _ in 0..3 {
        host.advance_and_tick(10).await;
    }
    assert_eq!(probes(&receiver).len(), 4);
    assert!(runs(&receiver).is_empty(), "no failed probe fired");
    let goal = host.goal(&id).await;
    assert_eq!(
        goal["progress"]["iterations"], 0,
        "probes are not iterations"
    );
    host.advance_and_tick(10).await;
    assert_eq!(runs(&receiver).len(), 1);
}

#[tokio::test]
async fn a_paused_heartbeat_is_not_probed_and_resume_probes_at_once() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver = receiver(|_| Answer::Json(json!({ "fire": false }))).await;
    let id = id_of(
        &host
            .create(heartbeat_body(
                &receiver.url(VERIFIER),
                &format!("{}#heartbeatMs=10", receiver.url(ARM)),
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    host.tick().await;
    host.post(&format!("{BASE}/{id}/pause"), None)
        .await
        .expect(StatusCode::OK, "goal");
    for _ in 0..3 {
        host.advance_and_tick(10).await;
    }
    assert_eq!(probes(&receiver).len(), 1);
    host.post(&format!("{BASE}/{id}/resume"), None)
        .await
        .expect(StatusCode::OK, "goal");
    host.tick().await;
    assert_eq!(probes(&receiver).len(), 2);
}

#[tokio::test]
async fn a_slow_probe_holds_up_neither_the_tick_nor_a_second_probe() {
    let host = Harness::webhooks(Duration::from_secs(5));
    let receiver =
        receiver(|_| Answer::Held(Box::new(Answer::Json(json!({ "fire": false }))))).await;
    let bounds = json!({ "maxLoopIterations": 5 });
    let arm = format!("{}#heartbeatMs=10", receiver.url(ARM));
    let slow = id_of(
        &host
            .create(heartbeat_body(
                &receiver.url(VERIFIER),
                &arm,
                bounds.clone(),
            ))
            .await,
    );
    let tick = tokio::time::timeout(
        Duration::from_secs(2),
        host.scheduler.tick(host.clock.now()),
    )
    .await
    .expect("the tick does not wait for the probe")
    .expect("tick");
    assert_eq!(tick.probed.len(), 1);
    receiver.wait_for_calls(ARM, 1).await;
    host.clock.advance(Duration::from_millis(50));
    let again = host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert!(again.probed.is_empty(), "one probe in flight per goal");

    let other = id_of(
        &host
            .create(heartbeat_body(&receiver.url(VERIFIER), &arm, bounds))
            .await,
    );
    let third = host.scheduler.tick(host.clock.now()).await.expect("tick");
    assert_eq!(third.probed.len(), 1);
    assert_eq!(third.probed[0].as_str(), other);
    receiver.release();
    host.scheduler.settle().await;
    assert_eq!(probes(&receiver).len(), 2);
    assert!(host.evaluations(&slow).await.is_empty());
}

#[tokio::test]
async fn abandon_cancels_a_probe_in_flight() {
    let host = Arc::new(Harness::webhooks(Duration::from_secs(5)));
    let receiver =
        receiver(|_| Answer::Held(Box::new(Answer::Json(json!({ "fire": true }))))).await;
    let id = id_of(
        &host
            .create(heartbeat_body(
                &receiver.url(VERIFIER),
                &format!("{}#heartbeatMs=10", receiver.url(ARM)),
                json!({ "maxLoopIterations": 5 }),
            ))
            .await,
    );
    host.scheduler.tick(host.clock.now()).await.expect("tick");
    receiver.wait_for_calls(ARM, 1).await;
    let reply = tokio::time::timeout(
        Duration::from_secs(2),
        host.post(&format!("{BASE}/{id}/abandon"), None),
    )
    .await
    .expect("abandon answers at once");
    reply.expect(StatusCode::OK, "goal");
    tokio::time::timeout(Duration::from_secs(2), host.scheduler.settle())
        .await
        .expect("the probe was cancelled");
    receiver.release();
    assert!(runs(&receiver).is_empty(), "the probe's fire came too late");
    assert_eq!(host.goal(&id).await["progress"]["iterations"], 0);
}
