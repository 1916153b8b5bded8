//! Outbound event webhooks (`--event-webhook TENANT=URL`): every committed
//! event of a subscribed tenant reaches its receiver (a local one on
//! 127.0.0.1, allowed by the egress policy) in cursor order, signed for the
//! tenant, with the cursor as `Idempotency-Key`; failures retry the same
//! event with a growing, capped backoff; a restart resumes from the stored
//! cursor (resending an event whose 2xx was lost, skipping none); tenants
//! never see each other's events; a hanging receiver holds up only its own
//! tenant; retention keeps what is not delivered; bad configurations are
//! refused at start. The worker is ticked by the test on a manual clock:
//! no sleeps, only polling with a deadline where a call is in flight.

use crate::pg;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use goalpost_host::clock::{Clock, ManualClock};
use goalpost_host::domain::egress::{AllowEntry, EgressPolicy};
use goalpost_host::domain::event_webhook::{EventWebhook, FIRST_RETRY_MS, MAX_RETRY_MS};
use goalpost_host::domain::{Tenant, Timestamp};
use goalpost_host::engine::EngineSettings;
use goalpost_host::event_webhooks::{EventWebhooks, Settings, Status};
use goalpost_host::storage::DbLocation;
use goalpost_host::webhook::WebhookSecret;
use goalpost_host::{Config, RunningHost};
use serde_json::{json, Value};
use support::receiver::{Answer, Call, Receiver};
use support::{goal_body, id_of, Harness, B, BASE, SECRET};

const TENANT_A: &str = "tenant-a";
const TENANT_B: &str = "tenant-b";
/// How long a test waits for something it expects to happen soon.
const LIMIT: Duration = Duration::from_secs(10);

fn settings(retain: Option<Duration>) -> EngineSettings {
    EngineSettings {
        conformance_seams: true,
        webhook_secret: WebhookSecret::new(SECRET).expect("a valid secret"),
        egress: EgressPolicy::new(vec![AllowEntry::parse("127.0.0.1").expect("entry")]),
        retain_closed: retain,
        ..EngineSettings::default()
    }
}

fn host_at(location: &DbLocation, clock: Arc<ManualClock>) -> Harness {
    Harness::with_settings(location, settings(None), clock)
}

fn host() -> Harness {
    host_at(&DbLocation::Memory, Arc::new(ManualClock::fixed()))
}

/// An in-memory host that forgets closed goals `retain` after they closed.
fn host_retaining(retain: Duration) -> Harness {
    Harness::with_settings(
        &DbLocation::Memory,
        settings(Some(retain)),
        Arc::new(ManualClock::fixed()),
    )
}

/// A file database that outlives the hosts a test opens on it (a
/// restart), on one manual clock.
struct FileDatabase {
    _dir: tempfile::TempDir,
    location: DbLocation,
    clock: Arc<ManualClock>,
}

impl FileDatabase {
    fn new() -> FileDatabase {
        let dir = tempfile::tempdir().expect("a temporary directory");
        FileDatabase {
            location: DbLocation::File(dir.path().join("host.db")),
            _dir: dir,
            clock: Arc::new(ManualClock::fixed()),
        }
    }

    /// A host on the database, as started anew.
    fn host(&self) -> Harness {
        host_at(&self.location, Arc::clone(&self.clock))
    }
}

fn tenant(name: &str) -> Tenant {
    Tenant::parse(name).expect("a tenant")
}

fn hook(name: &str, url: &str) -> EventWebhook {
    EventWebhook::parse(&format!("{name}={url}")).expect("a subscription")
}

async fn worker(host: &Harness, hooks: Vec<EventWebhook>, timeout: Duration) -> EventWebhooks {
    EventWebhooks::start(
        Arc::clone(&host.engine),
        hooks,
        Settings {
            timeout,
            ..Settings::default()
        },
    )
    .await
    .expect("the subscriptions are stored")
}

/// A goal of tenant A (or B) that never converges and allows `runs` runs.
async fn goal_of(host: &Harness, token: &str, runs: u64) -> String {
    let body = goal_body(
        "conformance:verifier?satisfyOn=1000",
        None,
        json!({ "maxLoopIterations": runs }),
    );
    let reply = host.call(Method::POST, BASE, Some(token), Some(body)).await;
    id_of(reply.expect(StatusCode::CREATED, "goal"))
}

async fn continue_as(host: &Harness, token: &str, id: &str) {
    let reply = host
        .call(
            Method::POST,
            &format!("{BASE}/{id}/continue"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

/// Runs a goal of `runs` runs to `bound-exceeded`: `runs` evaluated events
/// and a closed one.
async fn events_for(host: &Harness, token: &str, runs: u64) -> String {
    let id = goal_of(host, token, runs).await;
    for _ in 0..runs {
        continue_as(host, token, &id).await;
    }
    id
}

/// The tenant's stored events after `after` as (cursor, wire JSON).
fn stored(host: &Harness, name: &str, after: u64) -> Vec<(u64, Value)> {
    host.store
        .tenant_events_after(&tenant(name), None, after, 1000)
        .expect("events")
        .iter()
        .map(|event| (event.cursor, goalpost_host::domain::wire::event(event)))
        .collect()
}

/// The cursors of all the tenant's stored events, in order.
fn cursors(host: &Harness, name: &str) -> Vec<u64> {
    stored(host, name, 0).iter().map(|event| event.0).collect()
}

fn key_of(call: &Call) -> u64 {
    call.header("idempotency-key")
        .expect("an Idempotency-Key")
        .parse()
        .expect("a cursor")
}

fn keys(calls: &[Call]) -> Vec<u64> {
    calls.iter().map(key_of).collect()
}

/// Ticks at the clock's time and waits for the tasks it started.
async fn tick(host: &Harness, hooks: &EventWebhooks) -> Vec<Tenant> {
    let tick = hooks.tick(host.clock.now()).await;
    hooks.settle().await;
    tick.started
}

fn status(hooks: &EventWebhooks, name: &str) -> Status {
    hooks.status(&tenant(name)).expect("subscribed")
}

fn always(status: u16) -> impl Fn(&Call, usize) -> Answer + Send + Sync + 'static {
    move |_, _| Answer::Status(status, json!({}))
}

/// A receiver's answers: 500 to the first `failures` calls, 200 after.
fn failing_first(failures: usize) -> impl Fn(&Call, usize) -> Answer + Send + Sync + 'static {
    move |_, n| {
        if n <= failures {
            Answer::Status(500, json!({}))
        } else {
            Answer::Status(200, json!({}))
        }
    }
}

/// The ids retention forgets at the host's next tick.
async fn forgotten_at_tick(host: &Harness) -> Vec<String> {
    host.tick()
        .await
        .forgotten
        .iter()
        .map(|id| id.as_str().to_string())
        .collect()
}

/// Events committed after the subscription arrive in cursor order, each
/// the envelope the events list shows, signed for the tenant, with its
/// cursor as `Idempotency-Key` and headers naming tenant, goal and type.
/// Events from before the subscription are not sent (it starts "now").
#[tokio::test]
async fn events_arrive_in_order_signed_with_the_cursor_as_idempotency_key() {
    let host = host();
    let before = events_for(&host, support::A, 1).await;
    let receiver = Receiver::start(always(204)).await;
    let hooks = worker(
        &host,
        vec![hook(TENANT_A, &receiver.url("/a"))],
        Duration::from_secs(5),
    )
    .await;
    let start = stored(&host, TENANT_A, 0).last().expect("events").0;
    let first = events_for(&host, support::A, 3).await;
    let second = events_for(&host, support::A, 1).await;
    let expected = stored(&host, TENANT_A, start);
    assert_eq!(expected.len(), 6, "3 + 1 evaluations, 2 closes");

    assert_eq!(tick(&host, &hooks).await, vec![tenant(TENANT_A)]);
    let calls = receiver.calls_to("/a");
    assert_eq!(
        keys(&calls),
        expected
            .iter()
            .map(|(cursor, _)| *cursor)
            .collect::<Vec<_>>()
    );
    for (call, (_, event)) in calls.iter().zip(&expected) {
        assert_eq!(&call.body, event);
        assert!(call.signed_for(SECRET, TENANT_A), "{:?}", call.headers);
        assert_eq!(call.header("content-type"), Some("application/json"));
        assert_eq!(call.header("x-goalpost-tenant"), Some(TENANT_A));
        assert_eq!(call.header("x-goalpost-event"), event["type"].as_str());
        assert_eq!(
            call.header("x-goalpost-goal"),
            event["payload"]["goalId"].as_str()
        );
        assert_ne!(call.header("x-goalpost-goal"), Some(before.as_str()));
    }
    // The bodies are exactly the per-goal events lists, in order.
    let mut listed = host.events(&first).await;
    listed.extend(host.events(&second).await);
    let bodies: Vec<Value> = calls.iter().map(|call| call.body.clone()).collect();
    assert_eq!(bodies, listed);
    let done = status(&hooks, TENANT_A);
    assert_eq!(done.delivered, expected.last().expect("events").0);
    assert_eq!((done.failures, done.retry_at, done.attempts), (0, None, 6));

    // Idle: another tick sends nothing more.
    tick(&host, &hooks).await;
    assert_eq!(receiver.calls_to("/a").len(), 6);
}

/// A receiver answering 500 twice gets the same event a second and a third
/// time (after the backoff, not before), then the rest: nothing skipped.
#[tokio::test]
async fn a_failing_receiver_gets_the_same_event_again_and_then_the_rest() {
    let host = host();
    let receiver = Receiver::start(failing_first(2)).await;
    let hooks = worker(
        &host,
        vec![hook(TENANT_A, &receiver.url("/a"))],
        Duration::from_secs(5),
    )
    .await;
    events_for(&host, support::A, 2).await;
    let cursors = cursors(&host, TENANT_A);
    assert_eq!(cursors.len(), 3);

    tick(&host, &hooks).await;
    assert_eq!(keys(&receiver.calls_to("/a")), [cursors[0]]);
    let failed = status(&hooks, TENANT_A);
    assert_eq!(failed.failures, 1);
    assert!(failed
        .last_error
        .as_deref()
        .is_some_and(|error| error.contains("500")));
    let retry_at = failed.retry_at.expect("backing off");
    // Not before the backoff is over.
    let just_before = Timestamp::from_unix_ms(retry_at.unix_ms() - 1).expect("a time");
    assert!(just_before >= host.clock.now());
    host.clock.set(just_before);
    assert!(tick(&host, &hooks).await.is_empty());
    assert_eq!(receiver.calls_to("/a").len(), 1);

    host.clock.set(retry_at);
    tick(&host, &hooks).await;
    assert_eq!(keys(&receiver.calls_to("/a")), [cursors[0], cursors[0]]);
    let again = status(&hooks, TENANT_A);
    assert_eq!(again.failures, 2);

    host.clock.set(again.retry_at.expect("backing off"));
    tick(&host, &hooks).await;
    assert_eq!(
        keys(&receiver.calls_to("/a")),
        [cursors[0], cursors[0], cursors[0], cursors[1], cursors[2]]
    );
    let calls = receiver.calls_to("/a");
    assert_eq!(calls[0].raw, calls[2].raw, "the same event, byte for byte");
    let done = status(&hooks, TENANT_A);
    assert_eq!(
        (done.delivered, done.failures, done.retry_at),
        (cursors[2], 0, None)
    );
}

/// The delay doubles from 1 s to the 5 min cap (jitter takes at most half
/// off), and stays there; a 410 goes to the cap at once.
#[tokio::test]
async fn the_backoff_grows_and_is_capped() {
    let host = host();
    let failing = Receiver::start(always(503)).await;
    let gone = Receiver::start(always(410)).await;
    let hooks = worker(
        &host,
        vec![
            hook(TENANT_A, &failing.url("/a")),
            hook(TENANT_B, &gone.url("/b")),
        ],
        Duration::from_secs(5),
    )
    .await;
    events_for(&host, support::A, 1).await;
    events_for(&host, B, 1).await;
    let mut delays = Vec::new();
    for failures in 1..=14u32 {
        let now = host.clock.now();
        tick(&host, &hooks).await;
        let state = status(&hooks, TENANT_A);
        assert_eq!(state.failures, failures);
        let retry_at = state.retry_at.expect("backing off");
        let delay = u64::try_from(retry_at.unix_ms() - now.unix_ms()).expect("ahead");
        let nominal = (FIRST_RETRY_MS << (failures - 1).min(20)).min(MAX_RETRY_MS);
        assert!(
            delay <= nominal && delay >= nominal / 2,
            "failure {failures}: {delay} ms, nominal {nominal} ms"
        );
        delays.push(delay);
        if failures == 1 {
            // 410 Gone: the cap at once.
            let gone_at = status(&hooks, TENANT_B).retry_at.expect("backing off");
            let gone_delay = u64::try_from(gone_at.unix_ms() - now.unix_ms()).expect("ahead");
            assert!((MAX_RETRY_MS / 2..=MAX_RETRY_MS).contains(&gone_delay));
        }
        host.clock.set(retry_at);
    }
    // Each attempt was one POST of the same event.
    let calls = failing.calls_to("/a");
    assert_eq!(calls.len(), 14);
    assert!(calls.iter().all(|call| key_of(call) == key_of(&calls[0])));
    assert!(delays[8..].iter().all(|delay| *delay <= MAX_RETRY_MS));
    assert!(delays[9..].iter().all(|delay| *delay >= MAX_RETRY_MS / 2));
}

/// A host on a file database that stops while a POST is in flight (the
/// receiver got the event, the host never learned) resends that event
/// after the restart, then the rest: at least once, none skipped. The
/// backoff is stored too.
#[tokio::test]
async fn a_restart_resumes_from_the_stored_cursor() {
    let database = FileDatabase::new();
    let clock = Arc::clone(&database.clock);
    // The third call is held: the host is stopped while it waits.
    let receiver = Receiver::start(|_, n| {
        if n == 3 {
            Answer::Held(Box::new(Answer::Status(200, json!({}))))
        } else {
            Answer::Status(200, json!({}))
        }
    })
    .await;
    let url = receiver.url("/a");
    let cursors = {
        let host = database.host();
        let hooks = worker(&host, vec![hook(TENANT_A, &url)], Duration::from_secs(30)).await;
        events_for(&host, support::A, 3).await;
        let cursors = cursors(&host, TENANT_A);
        assert_eq!(cursors.len(), 4);
        hooks.tick(clock.now()).await;
        receiver.wait_for_calls("/a", 3).await;
        // The "crash": the POST in flight is cut off.
        hooks.stop().await;
        assert_eq!(status(&hooks, TENANT_A).delivered, cursors[1]);
        cursors
    };
    receiver.release();

    let host = database.host();
    let hooks = worker(&host, vec![hook(TENANT_A, &url)], Duration::from_secs(30)).await;
    tick(&host, &hooks).await;
    assert_eq!(
        keys(&receiver.calls_to("/a")),
        [cursors[0], cursors[1], cursors[2], cursors[2], cursors[3]]
    );
    assert_eq!(status(&hooks, TENANT_A).delivered, cursors[3]);
}

/// A stored backoff survives a restart: a receiver that was failing is
/// not tried again before its retry time.
#[tokio::test]
async fn a_restart_keeps_the_backoff() {
    let database = FileDatabase::new();
    let clock = Arc::clone(&database.clock);
    let receiver = Receiver::start(failing_first(1)).await;
    let url = receiver.url("/a");
    let retry_at = {
        let host = database.host();
        let hooks = worker(&host, vec![hook(TENANT_A, &url)], Duration::from_secs(5)).await;
        events_for(&host, support::A, 1).await;
        tick(&host, &hooks).await;
        status(&hooks, TENANT_A).retry_at.expect("backing off")
    };
    let host = database.host();
    let hooks = worker(&host, vec![hook(TENANT_A, &url)], Duration::from_secs(5)).await;
    tick(&host, &hooks).await;
    assert_eq!(receiver.calls_to("/a").len(), 1, "still backing off");
    assert_eq!(status(&hooks, TENANT_A).retry_at, Some(retry_at));
    clock.set(retry_at);
    tick(&host, &hooks).await;
    assert_eq!(
        receiver.calls_to("/a").len(),
        3,
        "the event again, then the close"
    );
}

/// A changed URL starts from the tenant's newest event: what the old URL
/// had not taken is not sent to the new one.
#[tokio::test]
async fn a_new_url_starts_from_now() {
    let database = FileDatabase::new();
    let old = Receiver::start(always(500)).await;
    let new = Receiver::start(always(200)).await;
    {
        let host = database.host();
        let hooks = worker(&host, vec![hook(TENANT_A, &old.url("/a"))], LIMIT).await;
        events_for(&host, support::A, 1).await;
        tick(&host, &hooks).await;
        assert_eq!(old.calls_to("/a").len(), 1);
    }
    let host = database.host();
    let hooks = worker(&host, vec![hook(TENANT_A, &new.url("/a"))], LIMIT).await;
    let start = stored(&host, TENANT_A, 0).last().expect("events").0;
    assert_eq!(status(&hooks, TENANT_A).failures, 0);
    tick(&host, &hooks).await;
    assert!(
        new.calls_to("/a").is_empty(),
        "nothing from before the change"
    );
    events_for(&host, support::A, 1).await;
    tick(&host, &hooks).await;
    let expected: Vec<u64> = stored(&host, TENANT_A, start).iter().map(|e| e.0).collect();
    assert_eq!(keys(&new.calls_to("/a")), expected);
    assert_eq!(old.calls_to("/a").len(), 1);
}

/// Each tenant's receiver gets that tenant's events only, signed with that
/// tenant's key (which does not verify as the other's).
#[tokio::test]
async fn a_tenants_events_never_reach_another_tenants_url() {
    let host = host();
    let receiver = Receiver::start(always(200)).await;
    let hooks = worker(
        &host,
        vec![
            hook(TENANT_A, &receiver.url("/a")),
            hook(TENANT_B, &receiver.url("/b")),
        ],
        Duration::from_secs(5),
    )
    .await;
    let a = events_for(&host, support::A, 2).await;
    let b = events_for(&host, B, 1).await;
    tick(&host, &hooks).await;
    let to_a = receiver.calls_to("/a");
    let to_b = receiver.calls_to("/b");
    assert_eq!(to_a.len(), 3);
    assert_eq!(to_b.len(), 2);
    for call in &to_a {
        assert_eq!(call.body["payload"]["goalId"], a.as_str());
        assert!(call.signed_for(SECRET, TENANT_A));
        assert!(!call.signed_for(SECRET, TENANT_B));
    }
    for call in &to_b {
        assert_eq!(call.body["payload"]["goalId"], b.as_str());
        assert!(call.signed_for(SECRET, TENANT_B));
        assert!(!call.signed_for(SECRET, TENANT_A));
    }
    assert_eq!(keys(&to_b), cursors(&host, TENANT_B));
}

/// A receiver that never answers holds up its own tenant only: the other
/// tenant's events keep arriving, and `continue` keeps answering, while
/// the hanging POST is in flight (one, not one per tick).
#[tokio::test]
async fn a_hanging_receiver_slows_neither_another_tenant_nor_continue() {
    let host = host();
    let hanging =
        Receiver::start(|_, _| Answer::Held(Box::new(Answer::Status(200, json!({}))))).await;
    let fine = Receiver::start(always(200)).await;
    let hooks = worker(
        &host,
        vec![
            hook(TENANT_A, &hanging.url("/a")),
            hook(TENANT_B, &fine.url("/b")),
        ],
        // Longer than the test: the POST hangs until released.
        Duration::from_secs(60),
    )
    .await;
    let a = goal_of(&host, support::A, 20).await;
    continue_as(&host, support::A, &a).await;
    events_for(&host, B, 1).await;
    hooks.tick(host.clock.now()).await;
    hanging.wait_for_calls("/a", 1).await;
    fine.wait_for_calls("/b", 2).await;

    // While A's POST hangs: A's goal iterates, B's events go on.
    for _ in 0..5 {
        continue_as(&host, support::A, &a).await;
        events_for(&host, B, 1).await;
        let newest = stored(&host, TENANT_B, 0).last().expect("events").0;
        let deadline = Instant::now() + LIMIT;
        while status(&hooks, TENANT_B).delivered < newest {
            assert!(Instant::now() < deadline, "tenant B's events are stuck");
            let started = hooks.tick(host.clock.now()).await.started;
            assert!(!started.contains(&tenant(TENANT_A)), "A is busy");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    assert_eq!(
        hanging.calls_to("/a").len(),
        1,
        "one POST in flight, no more"
    );
    assert_eq!(keys(&fine.calls_to("/b")), cursors(&host, TENANT_B));
    assert_eq!(host.evaluations(&a).await.len(), 6);

    // Released: A's events follow, in order.
    hanging.release();
    hooks.settle().await;
    tick(&host, &hooks).await;
    assert_eq!(keys(&hanging.calls_to("/a")), cursors(&host, TENANT_A));
}

/// A task sends at most a page of events, and at most `max_in_flight`
/// subscriptions are served at once, taken in turn so none waits for
/// ever.
#[tokio::test]
async fn a_tick_is_bounded_by_the_page_and_the_slots() {
    let host = host();
    let receiver = Receiver::start(always(200)).await;
    let hooks = EventWebhooks::start(
        Arc::clone(&host.engine),
        vec![
            hook(TENANT_A, &receiver.url("/a")),
            hook(TENANT_B, &receiver.url("/b")),
        ],
        Settings {
            timeout: LIMIT,
            page: 2,
            max_in_flight: 1,
        },
    )
    .await
    .expect("the subscriptions are stored");
    events_for(&host, support::A, 4).await;
    events_for(&host, B, 4).await;
    let mut sent = Vec::new();
    let mut served = Vec::new();
    for _ in 0..6 {
        let started = tick(&host, &hooks).await;
        assert_eq!(started.len(), 1, "one slot");
        served.push(started[0].clone());
        sent.push((receiver.calls_to("/a").len(), receiver.calls_to("/b").len()));
    }
    // In turn, a page (2 events) per task: 5 events each in 3 turns.
    assert_eq!(
        served,
        [TENANT_A, TENANT_B, TENANT_A, TENANT_B, TENANT_A, TENANT_B].map(tenant)
    );
    assert_eq!(sent, [(2, 0), (2, 2), (4, 2), (4, 4), (5, 4), (5, 5)]);
    for (path, name) in [("/a", TENANT_A), ("/b", TENANT_B)] {
        assert_eq!(keys(&receiver.calls_to(path)), cursors(&host, name));
    }
}

/// A name that resolves to an address the egress policy denies passes
/// the start check (names are judged when they resolve) and is then an
/// ordinary failed attempt: nothing is sent, the same event is retried,
/// and it goes once the operator allows the address.
#[tokio::test]
async fn an_egress_denial_at_connect_time_is_retried() {
    let host = Harness::with_settings(
        &DbLocation::Memory,
        EngineSettings {
            egress: EgressPolicy::default(),
            ..settings(None)
        },
        Arc::new(ManualClock::fixed()),
    );
    let receiver = Receiver::start(always(200)).await;
    let url = format!("http://localhost:{}/a", receiver.addr.port());
    let hooks = worker(&host, vec![hook(TENANT_A, &url)], LIMIT).await;
    events_for(&host, support::A, 1).await;
    tick(&host, &hooks).await;
    let denied = status(&hooks, TENANT_A);
    assert_eq!((denied.failures, denied.delivered), (1, 0));
    assert!(
        denied
            .last_error
            .as_deref()
            .is_some_and(|error| error.contains("not called")),
        "{denied:?}"
    );
    assert!(receiver.calls().is_empty());

    host.engine
        .egress()
        .allow(AllowEntry::parse("127.0.0.1").expect("entry"));
    host.engine
        .egress()
        .allow(AllowEntry::parse("::1").expect("entry"));
    host.clock.set(denied.retry_at.expect("backing off"));
    tick(&host, &hooks).await;
    assert_eq!(keys(&receiver.calls_to("/a")), cursors(&host, TENANT_A));
}

/// Retention does not forget a closed goal whose events the tenant's
/// webhook has not delivered; once delivered, it goes. A tenant without a
/// subscription is forgotten on time, and a subscription removed at a
/// restart stops holding anything.
#[tokio::test]
async fn retention_keeps_what_is_not_delivered() {
    retention_case(&DbLocation::Memory).await;
}

/// The same on PostgreSQL, whose purge has its own query.
#[tokio::test]
async fn on_postgres_retention_keeps_what_is_not_delivered() {
    let Some(server) = pg::server() else {
        return;
    };
    let schema = pg::Schema::fresh(&server).await;
    retention_case(&DbLocation::Postgres(schema.url.clone())).await;
    schema.drop().await;
}

async fn retention_case(location: &DbLocation) {
    const HOUR_MS: u64 = 3_600_000;
    let host = Harness::with_settings(
        location,
        settings(Some(Duration::from_millis(HOUR_MS))),
        Arc::new(ManualClock::fixed()),
    );
    let receiver = Receiver::start(failing_first(1)).await;
    let hooks = worker(&host, vec![hook(TENANT_A, &receiver.url("/a"))], LIMIT).await;
    let held = events_for(&host, support::A, 1).await;
    let free = events_for(&host, B, 1).await;
    tick(&host, &hooks).await;
    assert_eq!(status(&hooks, TENANT_A).failures, 1);

    host.clock.advance(Duration::from_millis(2 * HOUR_MS));
    let forgotten = forgotten_at_tick(&host).await;
    assert_eq!(forgotten, [free], "B has no webhook; A's is behind");
    assert_eq!(host.events(&held).await.len(), 2);

    // Delivered (the event again, then the close), then forgotten at the
    // next look.
    tick(&host, &hooks).await;
    assert_eq!(receiver.calls_to("/a").len(), 3);
    assert_eq!(status(&hooks, TENANT_A).failures, 0);
    host.clock.advance(Duration::from_millis(HOUR_MS));
    let forgotten = forgotten_at_tick(&host).await;
    assert_eq!(forgotten, [held]);

    // A subscription that is no longer configured holds nothing back.
    let stuck = Receiver::start(always(500)).await;
    let hooks = worker(&host, vec![hook(TENANT_A, &stuck.url("/a"))], LIMIT).await;
    let waiting = events_for(&host, support::A, 1).await;
    tick(&host, &hooks).await;
    host.clock.advance(Duration::from_millis(2 * HOUR_MS));
    assert!(host.tick().await.forgotten.is_empty());
    let _removed = worker(&host, Vec::new(), LIMIT).await;
    host.clock.advance(Duration::from_millis(HOUR_MS));
    let forgotten = forgotten_at_tick(&host).await;
    assert_eq!(forgotten, [waiting]);
}

fn config(tokens: &[(&str, &str)], hooks: &[&str], allow: &[&str]) -> Config {
    let mut config = Config::conformance_in_memory(
        tokens
            .iter()
            .map(|(token, name)| (token.to_string(), name.to_string()))
            .collect(),
    );
    config.conformance_seams = false;
    config.webhook_allow = allow
        .iter()
        .map(|entry| AllowEntry::parse(entry).expect("entry"))
        .collect();
    config.event_webhooks = hooks
        .iter()
        .map(|text| EventWebhook::parse(text).expect("a subscription"))
        .collect();
    config
}

async fn refused(config: Config) -> String {
    RunningHost::start(config)
        .await
        .expect_err("the host refuses to start")
        .to_string()
}

/// The host refuses to start with a subscription it could never serve,
/// and says why; an internal URL the operator allowed is fine.
#[tokio::test]
async fn bad_subscriptions_are_refused_at_start() {
    let tokens = [("tok-a", "acme"), ("tok-b", "globex")];
    let unknown = refused(config(&tokens, &["initech=https://hooks.example/"], &[])).await;
    assert!(
        unknown.contains("initech") && unknown.contains("no token"),
        "{unknown}"
    );
    let twice = refused(config(
        &tokens,
        &["acme=https://a.example/", "acme=https://b.example/"],
        &[],
    ))
    .await;
    assert!(
        twice.contains("second URL") && twice.contains("acme"),
        "{twice}"
    );
    for internal in [
        "acme=http://127.0.0.1:9/hook",
        "acme=http://169.254.169.254/latest",
        "acme=http://10.1.2.3/hook",
    ] {
        let denied = refused(config(&tokens, &[internal], &[])).await;
        assert!(
            denied.contains("--webhook-allow") && denied.contains("does not call"),
            "{internal}: {denied}"
        );
    }
    let host = RunningHost::start(config(
        &tokens,
        &["acme=http://127.0.0.1:9/hook"],
        &["127.0.0.1"],
    ))
    .await
    .expect("an allowed internal URL starts");
    host.shutdown().await;
}

/// The command line refuses a malformed pair or a URL that is not http(s)
/// before anything starts, naming the flag.
#[test]
fn the_command_line_refuses_malformed_subscriptions() {
    for (bad, says) in [
        ("acme", "expected TENANT=URL"),
        ("acme=ftp://hooks.example/", "not an http or https URL"),
        ("acme=hooks.example", "is not a URL"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
            .args([
                "serve",
                "--db",
                ":memory:",
                "--listen",
                "127.0.0.1:0",
                "--token",
                "t=acme",
                "--event-webhook",
                bad,
            ])
            .output()
            .expect("the binary runs");
        assert!(!output.status.success(), "{bad} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--event-webhook") && stderr.contains(says),
            "{bad}: {stderr}"
        );
    }
    // A tenant without a token: refused once the credentials are known.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
        .args([
            "serve",
            "--db",
            ":memory:",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "t=acme",
            "--event-webhook",
            "globex=https://hooks.example/",
        ])
        .output()
        .expect("the binary runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tenant globex, which no token belongs to"),
        "{stderr}"
    );
}

/// On PostgreSQL, two replicas with the same subscription deliver each
/// event once between them, in order: one holds the claim, the other
/// leaves the tenant alone.
#[tokio::test]
async fn on_postgres_one_replica_delivers_a_tenant() {
    let Some(server) = pg::server() else {
        return;
    };
    let schema = pg::Schema::fresh(&server).await;
    let location = DbLocation::Postgres(schema.url.clone());
    let clock = Arc::new(ManualClock::fixed());
    let receiver = Receiver::start(always(200)).await;
    let url = receiver.url("/a");
    let one = host_at(&location, Arc::clone(&clock));
    let two = host_at(&location, Arc::clone(&clock));
    let first = worker(&one, vec![hook(TENANT_A, &url)], LIMIT).await;
    let second = worker(&two, vec![hook(TENANT_A, &url)], LIMIT).await;
    for round in 0..4 {
        events_for(&one, support::A, 1).await;
        events_for(&two, support::A, 1).await;
        // Both tick at once.
        let (a, b) = tokio::join!(first.tick(clock.now()), second.tick(clock.now()));
        first.settle().await;
        second.settle().await;
        assert!(
            !a.started.is_empty() || !b.started.is_empty(),
            "round {round}"
        );
    }
    // The replica without the claim looks again only later.
    clock.advance(Duration::from_secs(6));
    tick(&one, &first).await;
    tick(&two, &second).await;
    let expected = cursors(&one, TENANT_A);
    assert_eq!(expected.len(), 16);
    assert_eq!(
        keys(&receiver.calls_to("/a")),
        expected,
        "each once, in order"
    );

    // The holder dies (its worker stops, its claim lapses): the other
    // replica goes on from the stored cursor, and only then.
    let first_holds = status(&first, TENANT_A).attempts > 0;
    assert_ne!(first_holds, status(&second, TENANT_A).attempts > 0);
    let (dead, alive, dead_worker, alive_worker) = if first_holds {
        (&one, &two, &first, &second)
    } else {
        (&two, &one, &second, &first)
    };
    dead_worker.stop().await;
    events_for(dead, support::A, 1).await;
    clock.advance(Duration::from_secs(6));
    tick(alive, alive_worker).await;
    assert_eq!(
        receiver.calls_to("/a").len(),
        16,
        "the claim has not lapsed"
    );
    schema
        .query("UPDATE event_deliveries SET claim_until_ms = 0 RETURNING tenant")
        .await;
    clock.advance(Duration::from_secs(6));
    tick(alive, alive_worker).await;
    let expected = cursors(alive, TENANT_A);
    assert_eq!(expected.len(), 18);
    assert_eq!(
        keys(&receiver.calls_to("/a")),
        expected,
        "taken over, none skipped"
    );
    schema.drop().await;
}

/// Forgetting the newest goal does not hand its cursors out again: SQLite
/// numbers a record one past the largest id, so without care the next
/// event would reuse a cursor the webhook already delivered, and be
/// skipped.
#[tokio::test]
async fn an_event_after_the_newest_goal_was_forgotten_is_still_delivered() {
    const HOUR_MS: u64 = 3_600_000;
    let host = host_retaining(Duration::from_millis(HOUR_MS));
    let receiver = Receiver::start(always(200)).await;
    let hooks = worker(&host, vec![hook(TENANT_A, &receiver.url("/a"))], LIMIT).await;
    let first = events_for(&host, support::A, 2).await;
    tick(&host, &hooks).await;
    let delivered = status(&hooks, TENANT_A).delivered;
    assert_eq!(receiver.calls_to("/a").len(), 3);
    host.clock.advance(Duration::from_millis(2 * HOUR_MS));
    let forgotten = host.tick().await.forgotten;
    assert_eq!(forgotten.len(), 1);
    assert_eq!(forgotten[0].as_str(), first);

    let second = events_for(&host, support::A, 1).await;
    let fresh = stored(&host, TENANT_A, 0);
    assert_eq!(fresh.len(), 2);
    assert!(
        fresh.iter().all(|(cursor, _)| *cursor > delivered),
        "{fresh:?}"
    );
    tick(&host, &hooks).await;
    let calls = receiver.calls_to("/a");
    assert_eq!(calls.len(), 5);
    assert!(calls[3..]
        .iter()
        .all(|call| call.body["payload"]["goalId"] == second.as_str()));
}
