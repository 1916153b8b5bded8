//! The live event stream `GET {base}/events` through the real router:
//! what it delivers, resume without gap or repeat, the goal filter and
//! tenancy, the per-tenant cap, heartbeats on an idle stream, and a slow
//! subscriber dropped with a final message while writes go on.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use goalpost_host::clock::ManualClock;
use goalpost_host::engine::{EngineSettings, FeedSettings};
use goalpost_host::http::{CHUNK_BYTES, CHUNK_MESSAGES};
use goalpost_host::storage::DbLocation;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use support::{assert_valid, goal_body, id_of, Harness, A, B, BASE};
use tower::ServiceExt;

const STREAM: &str = "/v1/host/sample/goals/events";
/// How long a test waits for a message it expects.
const LIMIT: Duration = Duration::from_secs(10);

fn host(feed: FeedSettings) -> Harness {
    let settings = EngineSettings {
        conformance_seams: true,
        feed,
        ..EngineSettings::default()
    };
    Harness::with_settings(
        &DbLocation::Memory,
        settings,
        Arc::new(ManualClock::fixed()),
    )
}

/// A goal that never converges by itself and allows `runs` runs.
async fn goal(host: &Harness, runs: u64) -> String {
    id_of(
        &host
            .create(goal_body(
                "conformance:verifier",
                None,
                json!({ "maxLoopIterations": runs }),
            ))
            .await,
    )
}

async fn run(host: &Harness, id: &str) {
    assert_eq!(host.continue_once(id).await.status, StatusCode::OK);
}

/// One SSE message: its fields, or a comment.
#[derive(Debug, Clone, PartialEq)]
enum Message {
    Event {
        id: Option<String>,
        kind: String,
        data: Value,
    },
    Comment(String),
}

struct Stream {
    body: Body,
    buffer: String,
}

impl Stream {
    /// The next message, or `None` when the stream ended.
    async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                return Some(parse(&block));
            }
            let frame = tokio::time::timeout(LIMIT, self.body.frame())
                .await
                .expect("a message within the limit");
            match frame {
                None => return None,
                Some(frame) => {
                    let frame = frame.expect("the body reads");
                    if let Ok(data) = frame.into_data() {
                        self.buffer
                            .push_str(std::str::from_utf8(&data).expect("UTF-8"));
                    }
                }
            }
        }
    }

    /// The messages of the next body chunk (one write of the host), each
    /// parsed on its own; the chunk holds whole messages only.
    async fn chunk(&mut self) -> Option<(usize, Vec<Message>)> {
        assert!(
            self.buffer.is_empty(),
            "a message left over: {:?}",
            self.buffer
        );
        let frame = tokio::time::timeout(LIMIT, self.body.frame())
            .await
            .expect("a chunk within the limit")?
            .expect("the body reads");
        let data = frame.into_data().expect("a data frame");
        let text = std::str::from_utf8(&data).expect("UTF-8");
        assert!(
            text.ends_with("\n\n"),
            "a chunk ends with a whole message: {text:?}"
        );
        let messages = text
            .strip_suffix("\n\n")
            .expect("ends with a blank line")
            .split("\n\n")
            .map(|block| parse(&format!("{block}\n\n")))
            .collect();
        Some((data.len(), messages))
    }

    /// The next message that is not a comment.
    async fn event(&mut self) -> Option<Message> {
        loop {
            match self.next().await? {
                Message::Comment(_) => continue,
                event => return Some(event),
            }
        }
    }
}

fn parse(block: &str) -> Message {
    let (mut id, mut kind, mut data) = (None, String::from("message"), String::new());
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            return Message::Comment(comment.trim().to_string());
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => id = Some(value.to_string()),
            "event" => kind = value.to_string(),
            "data" => data.push_str(value),
            _ => {}
        }
    }
    Message::Event {
        id,
        kind,
        data: serde_json::from_str(&data).expect("data is JSON"),
    }
}

/// Opens the stream as `token`; `Err` is the refusal (status, body).
async fn open(
    host: &Harness,
    token: &str,
    query: &str,
    last_event_id: Option<&str>,
) -> Result<Stream, (StatusCode, Value)> {
    let mut request = Request::builder()
        .method(Method::GET)
        .uri(format!("{STREAM}{query}"))
        .header("authorization", format!("Bearer {token}"));
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = host
        .app
        .clone()
        .oneshot(request.body(Body::empty()).expect("a request"))
        .await
        .expect("the router answers");
    if response.status() != StatusCode::OK {
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("reads")
            .to_bytes();
        return Err((status, serde_json::from_slice(&bytes).expect("an envelope")));
    }
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    Ok(Stream {
        body: response.into_body(),
        buffer: String::new(),
    })
}

/// (id, type, goalId, sequence) of an event message.
fn fields(message: &Message) -> (String, String, String, u64) {
    let Message::Event { id, kind, data } = message else {
        panic!("not an event: {message:?}");
    };
    assert_valid("event-envelope", data);
    assert_eq!(data["type"], kind.as_str());
    (
        id.clone().expect("an id"),
        kind.clone(),
        data["payload"]["goalId"]
            .as_str()
            .expect("goalId")
            .to_string(),
        data["sequence"].as_u64().expect("sequence"),
    )
}

#[tokio::test]
async fn events_stream_in_commit_order_and_resume_without_gap_or_repeat() {
    let host = host(FeedSettings::default());
    let first = goal(&host, 3).await;
    run(&host, &first).await;
    let mut stream = open(&host, A, "", None).await.expect("opens");
    // What was stored before the connect comes first.
    let stored = fields(&stream.event().await.expect("the stored event"));
    assert_eq!(
        (stored.1.as_str(), stored.2.as_str(), stored.3),
        ("goal.evaluated", first.as_str(), 1)
    );
    let second = goal(&host, 1).await;
    run(&host, &second).await;
    run(&host, &first).await;
    let mut seen = vec![stored];
    for _ in 0..3 {
        seen.push(fields(&stream.event().await.expect("a live event")));
    }
    let order: Vec<(String, String, u64)> = seen
        .iter()
        .map(|(_, kind, goal, sequence)| (kind.clone(), goal.clone(), *sequence))
        .collect();
    assert_eq!(
        order,
        vec![
            ("goal.evaluated".into(), first.clone(), 1),
            ("goal.evaluated".into(), second.clone(), 1),
            ("goal.closed".into(), second.clone(), 2),
            ("goal.evaluated".into(), first.clone(), 2),
        ]
    );
    let cursors: Vec<u64> = seen
        .iter()
        .map(|(id, ..)| id.parse().expect("a cursor"))
        .collect();
    assert!(
        cursors.windows(2).all(|pair| pair[0] < pair[1]),
        "{cursors:?}"
    );
    drop(stream);

    // Resuming after the second message: exactly the two after it, then
    // what commits next, once.
    let mut resumed = open(&host, A, "", Some(&seen[1].0)).await.expect("opens");
    run(&host, &first).await;
    let mut again = Vec::new();
    for _ in 0..4 {
        again.push(fields(&resumed.event().await.expect("an event")).0);
    }
    let expected: Vec<String> = seen[2..].iter().map(|(id, ..)| id.clone()).collect();
    assert_eq!(again[..2], expected[..]);
    assert_eq!(
        again
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        4,
        "no repeat: {again:?}"
    );
    // `?after=` is the same cursor for clients that cannot set the header.
    let mut by_query = open(&host, A, &format!("?after={}", seen[3].0), None)
        .await
        .expect("opens");
    assert_eq!(
        fields(&by_query.event().await.expect("an event")).0,
        again[2]
    );
}

#[tokio::test]
async fn the_goal_filter_and_tenancy() {
    let host = host(FeedSettings::default());
    let mine = goal(&host, 2).await;
    let other = goal(&host, 2).await;
    let mut filtered = open(&host, A, &format!("?goal={mine}"), None)
        .await
        .expect("opens");
    let mut tenant_b = open(&host, B, "", None).await.expect("B opens its own");
    run(&host, &other).await;
    run(&host, &mine).await;
    let (_, _, goal, _) = fields(&filtered.event().await.expect("mine"));
    assert_eq!(goal, mine, "only the filtered goal's events");
    // B's stream carries none of A's events: a goal of B's delivers first.
    let theirs = id_of(
        &host
            .call(
                Method::POST,
                BASE,
                Some(B),
                Some(goal_body(
                    "conformance:verifier",
                    None,
                    json!({ "maxLoopIterations": 1 }),
                )),
            )
            .await
            .expect(StatusCode::CREATED, "goal")
            .clone(),
    );
    let continued = host
        .call(
            Method::POST,
            &format!("{BASE}/{theirs}/continue"),
            Some(B),
            None,
        )
        .await;
    assert_eq!(continued.status, StatusCode::OK);
    let (_, _, goal, _) = fields(&tenant_b.event().await.expect("B's event"));
    assert_eq!(goal, theirs);
    // Another tenant's goal is not there to filter on.
    let (status, body) = open(&host, B, &format!("?goal={mine}"), None)
        .await
        .err()
        .expect("refused");
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn bad_cursors_are_refused_with_the_envelope() {
    let host = host(FeedSettings::default());
    for (query, header) in [("?after=-1", None), ("?after=x", None), ("", Some("12a"))] {
        let (status, body) = open(&host, A, query, header).await.err().expect("refused");
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query} {header:?}");
        assert_valid("error", &body);
    }
    let anonymous = host.call(Method::GET, STREAM, None, None).await;
    anonymous.refused(StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn a_tenant_holds_at_most_its_cap_of_streams() {
    let host = host(FeedSettings {
        max_subscribers_per_tenant: 2,
        ..FeedSettings::default()
    });
    let first = open(&host, A, "", None).await.expect("one");
    let _second = open(&host, A, "", None).await.expect("two");
    let (status, body) = open(&host, A, "", None).await.err().expect("the third");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["details"], json!({ "quota": "streams", "limit": 2 }));
    // The cap is per tenant.
    let _b = open(&host, B, "", None).await.expect("B's own");
    // A closed stream frees its place.
    drop(first);
    open(&host, A, "", None).await.expect("a freed place");
}

#[tokio::test(start_paused = true)]
async fn an_idle_stream_sends_heartbeats_on_its_interval() {
    let host = host(FeedSettings {
        // Under the read limit, which runs on the same paused clock.
        heartbeat: Duration::from_secs(4),
        ..FeedSettings::default()
    });
    let mut stream = open(&host, A, "", None).await.expect("opens");
    let before = tokio::time::Instant::now();
    assert_eq!(
        stream.next().await,
        Some(Message::Comment("heartbeat".into()))
    );
    assert_eq!(
        stream.next().await,
        Some(Message::Comment("heartbeat".into()))
    );
    // Two intervals of the paused clock, not of the wall.
    assert!(before.elapsed() >= Duration::from_secs(8));
}

/// The heartbeat's timer is set when it fires, not for every chunk: an
/// event written between two heartbeats still moves the next one to an
/// interval after it.
#[tokio::test(start_paused = true)]
async fn a_heartbeat_comes_an_interval_after_the_last_write() {
    let host = host(FeedSettings {
        heartbeat: Duration::from_secs(4),
        ..FeedSettings::default()
    });
    let id = goal(&host, 10).await;
    let mut stream = open(&host, A, "", None).await.expect("opens");
    assert_eq!(
        stream.next().await,
        Some(Message::Comment("heartbeat".into()))
    );
    let beat = tokio::time::Instant::now();
    tokio::time::advance(Duration::from_secs(3)).await;
    run(&host, &id).await;
    let event = stream.next().await.expect("the event");
    assert!(!matches!(event, Message::Comment(_)), "{event:?}");
    let written = tokio::time::Instant::now();
    assert!(
        written < beat + Duration::from_secs(4),
        "the event came after the next beat was due"
    );
    assert_eq!(
        stream.next().await,
        Some(Message::Comment("heartbeat".into()))
    );
    assert!(
        written.elapsed() >= Duration::from_secs(4),
        "a heartbeat {:?} after the event",
        written.elapsed()
    );
}

#[tokio::test]
async fn a_slow_subscriber_is_dropped_with_a_final_message_and_resumes_without_gap() {
    let host = host(FeedSettings {
        buffer: 2,
        ..FeedSettings::default()
    });
    let id = goal(&host, 10).await;
    let mut slow = open(&host, A, "", None).await.expect("opens");
    run(&host, &id).await;
    let first = fields(&slow.event().await.expect("the first event"));
    // The subscriber stops reading; writes go on without waiting for it.
    for _ in 0..6 {
        run(&host, &id).await;
    }
    let mut delivered = vec![first.0.clone()];
    let resume_after = loop {
        match slow.event().await.expect("an event or the drop") {
            Message::Event { kind, data, .. } if kind == "stream.dropped" => {
                break data["resumeAfter"].as_str().expect("a cursor").to_string();
            }
            message => delivered.push(fields(&message).0),
        }
    };
    assert_eq!(slow.next().await, None, "the stream ends after the drop");
    assert_eq!(&resume_after, delivered.last().expect("one at least"));
    // Resuming after the last delivered cursor loses nothing.
    let mut resumed = open(&host, A, "", Some(&resume_after))
        .await
        .expect("opens");
    while delivered.len() < 7 {
        delivered.push(fields(&resumed.event().await.expect("the rest")).0);
    }
    let sequences: Vec<u64> = host
        .events(&id)
        .await
        .iter()
        .map(|event| event["sequence"].as_u64().expect("sequence"))
        .collect();
    assert_eq!(sequences, (1..=7).collect::<Vec<_>>());
    let unique: std::collections::BTreeSet<&String> = delivered.iter().collect();
    assert_eq!(unique.len(), 7, "{delivered:?}");
}

/// A subscriber far behind catches up across more than one stored page
/// (the stream reads 500 stored events at a time), then goes on live.
#[tokio::test]
async fn catching_up_pages_through_the_stored_events() {
    let host = host(FeedSettings::default());
    let id = goal(&host, 600).await;
    for _ in 0..510 {
        run(&host, &id).await;
    }
    let mut stream = open(&host, A, "", None).await.expect("opens");
    for expected in 1..=510 {
        let (_, _, goal, sequence) = fields(&stream.event().await.expect("a stored event"));
        assert_eq!((goal.as_str(), sequence), (id.as_str(), expected));
    }
    run(&host, &id).await;
    let (_, _, _, sequence) = fields(&stream.event().await.expect("the live event"));
    assert_eq!(sequence, 511);
}

/// The ids of event messages, as cursors.
fn cursors(messages: &[Message]) -> Vec<u64> {
    messages
        .iter()
        .map(|message| fields(message).0.parse().expect("a cursor"))
        .collect()
}

/// Events ready when the stream wakes go out in one chunk, each still a
/// whole SSE message with its own id, in order; a reconnect with
/// `Last-Event-ID` in the middle of such a chunk resumes right after it.
#[tokio::test]
async fn ready_events_share_one_chunk_as_whole_messages_in_order() {
    // The longest coalescing wait: the three live runs below land well
    // within it of the first chunk and of each other, however loaded the
    // machine, so they share a chunk.
    let host = host(FeedSettings {
        coalesce: goalpost_host::engine::MAX_COALESCE,
        ..FeedSettings::default()
    });
    let id = goal(&host, 20).await;
    for _ in 0..5 {
        run(&host, &id).await;
    }
    // Opened, but not read until more has committed: the stored events
    // and the ones after the connect are all ready at the first read.
    let mut stream = open(&host, A, "", None).await.expect("opens");
    for _ in 0..5 {
        run(&host, &id).await;
    }
    let (_, first) = stream.chunk().await.expect("a chunk");
    assert_eq!(first.len(), 10, "one chunk: {first:?}");
    for _ in 0..3 {
        run(&host, &id).await;
    }
    let (_, second) = stream.chunk().await.expect("a chunk");
    assert_eq!(second.len(), 3, "the live ones in one chunk: {second:?}");
    let all: Vec<Message> = first.into_iter().chain(second).collect();
    let sequences: Vec<u64> = all.iter().map(|message| fields(message).3).collect();
    assert_eq!(sequences, (1..=13).collect::<Vec<_>>());
    let ids = cursors(&all);
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    drop(stream);

    // Resume after the 7th: the 8th to the 13th, in one chunk, then the
    // next commit; nothing twice, nothing missing.
    let mut resumed = open(&host, A, "", Some(&ids[6].to_string()))
        .await
        .expect("opens");
    let (_, rest) = resumed.chunk().await.expect("a chunk");
    assert_eq!(cursors(&rest), ids[7..].to_vec());
    run(&host, &id).await;
    let (_, next) = resumed.chunk().await.expect("a chunk");
    let (_, _, _, sequence) = fields(next.first().expect("the new event"));
    assert_eq!((next.len(), sequence), (1, 14));
    assert!(cursors(&next)[0] > ids[12]);
}

/// A subscriber with more stored events than one chunk may carry gets
/// them in chunks within the bounds, every one once and in order.
#[tokio::test]
async fn a_chunk_is_bounded_in_messages_and_bytes() {
    let host = host(FeedSettings::default());
    let id = goal(&host, 400).await;
    let total = 300;
    for _ in 0..total {
        run(&host, &id).await;
    }
    let mut stream = open(&host, A, "", None).await.expect("opens");
    let mut sizes = Vec::new();
    let mut all = Vec::new();
    while all.len() < total {
        let (bytes, messages) = stream.chunk().await.expect("a chunk");
        sizes.push((bytes, messages.len()));
        all.extend(messages);
    }
    assert_eq!(all.len(), total);
    let sequences: Vec<u64> = all.iter().map(|message| fields(message).3).collect();
    assert_eq!(sequences, (1..=total as u64).collect::<Vec<_>>());
    let largest = 2 * 1024; // far more than one event message here
    assert!(sizes.len() > 1, "{sizes:?}");
    for (index, &(bytes, count)) in sizes.iter().enumerate() {
        assert!(
            count <= CHUNK_MESSAGES && bytes < CHUNK_BYTES + largest,
            "{sizes:?}"
        );
        // Everything was ready: only a bound ends a chunk before the last.
        if index + 1 < sizes.len() {
            assert!(count == CHUNK_MESSAGES || bytes >= CHUNK_BYTES, "{sizes:?}");
        }
    }
}
