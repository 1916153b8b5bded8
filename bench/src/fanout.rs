//! The live event stream's cost: `continue` throughput while 1,000
//! Server-Sent-Events subscribers follow goals (or, as a stress
//! measurement, their whole tenants), as a ratio to the same load without
//! them in the phases just before and after, and how long an event takes
//! from its commit to a subscriber.
//!
//! Each of the `CONNECTIONS` load connections is its own tenant; the
//! subscribers are spread evenly over those tenants (and their goals).
//! An event's `at` is taken when its write is prepared, just before the
//! commit, so "after commit" below is, if anything, a little long.
//!
//! The subscribers are the host's clients, not the host: each is a plain
//! TCP connection with a hand-written HTTP/1.1 GET, reading the chunked
//! body into one buffer and finding message ends (`\n\n`) and the
//! `"at":"` timestamp in the bytes, all 1,000 on one thread of their own.
//! They still share the machine's cores with the host.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use goalpost_host::domain::{Tenant, Timestamp};
use goalpost_host::engine::FeedSettings;
use goalpost_host::{Config, DbLocation, RunningHost};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::load::{self, MakeRequest, Outcome, Spec};
use crate::stats::{duration, Samples};
use crate::table::{thousands, Row};
use crate::throughput::{create_goal, goal_body, runtime, tenant, token};

const GOALS: &str = "/v1/host/sample/goals";
const STREAM: &str = "/v1/host/sample/goals/events";
const CONNECTIONS: usize = 16;
/// Whom the subscribers follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Every subscriber follows its whole tenant: each event goes to
    /// `SUBSCRIBERS / CONNECTIONS` streams. A stress measurement, reported
    /// and not judged by the targets: its cost is per delivery, and 62
    /// deliveries of every event is not what 1,000 subscribers are
    /// (BENCHMARKS.md, "What the targets cover").
    TenantWide,
    /// Every subscriber follows one goal (`?goal=`, what `goals watch
    /// --goal` does), spread over the phase's goals: each event goes to the
    /// one or two streams that follow its goal. The shape the targets are
    /// for.
    GoalFollowers,
}

impl Shape {
    fn describe(self) -> String {
        match self {
            Shape::TenantWide => format!("following their {CONNECTIONS} tenants"),
            Shape::GoalFollowers => format!(
                "each following one of {} goals (`?goal=`)",
                CONNECTIONS * GOALS_PER_PHASE
            ),
        }
    }

    /// Whether the targets judge this shape's throughput and delivery time.
    fn judged(self) -> bool {
        self == Shape::GoalFollowers
    }
}

/// How the subscribers' thread competes with the host for the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Priority {
    /// The lowest (nice 19): the subscribers run on what the host leaves.
    /// Clients on other machines take none of the host's cores; here,
    /// at the host's priority, every read they wake for preempts it. The
    /// throughput rounds run so.
    Lowest,
    /// The host's own. Delivery is timed so: a subscriber starved of the
    /// cores would time its own wait, not the host's.
    Same,
}

/// What a phase runs. Every phase has tenants of its own (`CONNECTIONS`
/// each): the subscribers follow the tenants of the phase they are timed
/// in, which have no events before it, so a new stream has no stored events
/// to catch up on and what is timed is the live fan-out alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The load alone.
    Baseline,
    Subscribed(Shape, Priority),
}

/// Throughput rounds of each subscriber shape. The machine's speed drifts
/// from second to second (it is shared), so one phase against one baseline
/// says little: every phase with subscribers runs between two baselines
/// and is compared with their mean, and a shape's ratio is the median of
/// its rounds.
const ROUNDS: usize = 7;

const SHAPES: [Shape; 2] = [Shape::TenantWide, Shape::GoalFollowers];

/// The phases in order: a baseline; then each shape followed by another
/// baseline, `ROUNDS` times with the subscribers at the lowest priority,
/// and once more at the host's own.
fn phases() -> Vec<Phase> {
    let mut phases = vec![Phase::Baseline];
    let rounds = std::iter::repeat_n(Priority::Lowest, ROUNDS).chain([Priority::Same]);
    for priority in rounds {
        for shape in SHAPES {
            phases.push(Phase::Subscribed(shape, priority));
            phases.push(Phase::Baseline);
        }
    }
    phases
}

pub const SUBSCRIBERS: usize = 1_000;
/// A connection moves to its next goal after this many runs, so every
/// phase runs goals of the same history (see `throughput.rs`).
const RUNS_PER_GOAL: u64 = 100;
const GOALS_PER_PHASE: usize = 40;
const WARMUP: Duration = Duration::from_millis(500);
const WINDOW: Duration = Duration::from_secs(3);
const RATIO_TARGET: f64 = 0.9;
const DELIVERY_P99: Duration = Duration::from_millis(50);
/// Milliseconds a stream waits for more events before it writes, instead
/// of the host's default (`FeedSettings::coalesce`).
const COALESCE_VAR: &str = "GOALPOST_BENCH_COALESCE_MS";

/// The load's runtime thread (one worker: a client of the host, apart
/// from the host's runtime, so its CPU time is told apart from the host's).
const LOAD_THREAD: &str = "bench-load";
/// The subscribers' thread (a client too).
const SUBSCRIBER_THREAD: &str = "fanout-subscribers";
/// `/proc` counts CPU time in clock ticks of 1/100 s on Linux (USER_HZ,
/// fixed by the kernel's ABI whatever the kernel's own tick).
const TICKS_PER_SECOND: u64 = 100;

/// CPU time spent so far, in clock ticks: by the whole process, and by the
/// clients' threads in it (the rest is the host's: its runtime workers,
/// its blocking threads and its checkpointer).
#[derive(Debug, Default, Clone, Copy)]
struct Cpu {
    process: u64,
    clients: u64,
}

/// `utime + stime` of a `/proc/…/stat` line, and its thread name.
fn stat_ticks(line: &str) -> Option<(&str, u64)> {
    let name = &line[line.find('(')? + 1..line.rfind(')')?];
    let fields: Vec<&str> = line[line.rfind(')')? + 1..].split_whitespace().collect();
    // After the name: state is the first field, utime the 12th, stime the 13th.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// Samples the process's CPU time (Linux `/proc`; zeros elsewhere, and the
/// row says it could not be measured). A thread name is cut to 15 bytes.
fn cpu() -> Cpu {
    let process = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|line| stat_ticks(&line).map(|(_, ticks)| ticks))
        .unwrap_or(0);
    let mut clients = 0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let Ok(line) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            if let Some((name, ticks)) = stat_ticks(&line) {
                let client = [LOAD_THREAD, SUBSCRIBER_THREAD]
                    .iter()
                    .any(|thread| thread.starts_with(name) && !name.is_empty());
                if client {
                    clients += ticks;
                }
            }
        }
    }
    Cpu { process, clients }
}

/// The host's CPU time per `continue` between two samples.
fn host_cpu_per_continue(before: Cpu, after: Cpu, continues: u64) -> Option<Duration> {
    let process = after.process.checked_sub(before.process)?;
    let clients = after.clients.checked_sub(before.clients)?;
    let host = process.checked_sub(clients)?;
    (continues > 0 && process > 0)
        .then(|| Duration::from_micros(host * 1_000_000 / TICKS_PER_SECOND / continues))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// What the subscribers saw: delivery latencies of events recorded at or
/// after `since_ms`, and how many they received.
#[derive(Default)]
struct Seen {
    latencies: Mutex<Samples>,
    delivered: AtomicU64,
}

/// Bytes a subscriber reads at once.
const READ_BUFFER: usize = 16 * 1024;
/// A response head or an SSE message longer than this ends the subscriber
/// (the host sends neither).
const MAX_PENDING: usize = 1024 * 1024;

/// A subscriber's decoding of one SSE answer: the HTTP head, then the
/// chunked body, then messages split at blank lines. Bytes only: no text
/// is made of a message except the `at` timestamp it looks for.
#[derive(Default)]
struct Decoder {
    /// Bytes received and not yet decoded (head or chunk framing).
    raw: Vec<u8>,
    head_done: bool,
    /// Body bytes left in the current chunk; `None` while reading a
    /// chunk-size line.
    chunk_left: Option<usize>,
    /// Decoded body: the start of a message not yet complete.
    body: Vec<u8>,
}

/// Where `needle` first occurs in `haystack` (SIMD, as a real client's
/// parser would scan: the subscribers' time is the machine's, not the
/// host's).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

impl Decoder {
    /// Takes `bytes` in; calls `message` with the `at` of every whole
    /// event message now complete (`None` for a message without one, such
    /// as a heartbeat). `Err` when the answer is not a chunked 200 SSE
    /// answer or a bound is crossed.
    fn push(&mut self, bytes: &[u8], mut message: impl FnMut(Option<i64>)) -> Result<(), String> {
        self.raw.extend_from_slice(bytes);
        if !self.head_done {
            let Some(end) = find(&self.raw, b"\r\n\r\n") else {
                return if self.raw.len() > MAX_PENDING {
                    Err("a response head without an end".into())
                } else {
                    Ok(())
                };
            };
            let head = String::from_utf8_lossy(&self.raw[..end]).to_ascii_lowercase();
            if !head.starts_with("http/1.1 200") || !head.contains("transfer-encoding: chunked") {
                return Err(format!("not a chunked 200 answer: {head}"));
            }
            self.raw.drain(..end + 4);
            self.head_done = true;
        }
        let mut at = 0;
        loop {
            match self.chunk_left {
                None => {
                    let Some(line) = find(&self.raw[at..], b"\r\n") else {
                        break;
                    };
                    let text = String::from_utf8_lossy(&self.raw[at..at + line]);
                    let size = text.split(';').next().unwrap_or("").trim();
                    let size = usize::from_str_radix(size, 16)
                        .map_err(|_| format!("a bad chunk size {text:?}"))?;
                    if size == 0 {
                        return Err("the stream ended".into());
                    }
                    at += line + 2;
                    self.chunk_left = Some(size);
                }
                Some(0) => {
                    if self.raw.len() - at < 2 {
                        break;
                    }
                    at += 2;
                    self.chunk_left = None;
                }
                Some(left) => {
                    let take = left.min(self.raw.len() - at);
                    if take == 0 {
                        break;
                    }
                    self.body.extend_from_slice(&self.raw[at..at + take]);
                    at += take;
                    self.chunk_left = Some(left - take);
                }
            }
        }
        self.raw.drain(..at);
        let mut start = 0;
        while let Some(end) = find(&self.body[start..], b"\n\n") {
            let block = &self.body[start..start + end];
            message(timestamp(block));
            start += end + 2;
        }
        self.body.drain(..start);
        if self.body.len() > MAX_PENDING || self.raw.len() > MAX_PENDING {
            return Err("a message over the bound".into());
        }
        Ok(())
    }
}

/// The unix ms of the first `"at":"…"` in a message.
fn timestamp(block: &[u8]) -> Option<i64> {
    const KEY: &[u8] = b"\"at\":\"";
    let start = find(block, KEY)? + KEY.len();
    let end = start + block[start..].iter().position(|&byte| byte == b'"')?;
    let text = std::str::from_utf8(&block[start..end]).ok()?;
    Timestamp::parse(text).map(Timestamp::unix_ms)
}

/// One subscriber: a raw HTTP/1.1 GET of its tenant's stream on its own
/// connection, read until aborted, timing every event recorded at or
/// after `since_ms`. Raw, not reqwest: the subscribers share the cores
/// with the host, and what they cost is not the host's.
async fn subscribe(
    addr: SocketAddr,
    worker: usize,
    path: String,
    since_ms: Arc<AtomicU64>,
    seen: Arc<Seen>,
) {
    let Ok(mut socket) = TcpStream::connect(addr).await else {
        return;
    };
    let _ = socket.set_nodelay(true);
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\naccept: text/event-stream\r\n\r\n",
        token(worker)
    );
    if socket.write_all(request.as_bytes()).await.is_err() {
        return;
    }
    let mut decoder = Decoder::default();
    let mut buffer = vec![0; READ_BUFFER];
    let mut waits = Vec::new();
    loop {
        let read = match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let received = now_ms();
        let since = i64::try_from(since_ms.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        let pushed = decoder.push(&buffer[..read], |at| {
            if let Some(at) = at.filter(|&at| at >= since) {
                waits.push(received - at);
            }
        });
        if !waits.is_empty() {
            seen.delivered
                .fetch_add(waits.len() as u64, Ordering::Relaxed);
            if let Ok(mut latencies) = seen.latencies.lock() {
                for waited in waits.drain(..) {
                    latencies.push_ms(waited);
                }
            }
        }
        if let Err(error) = pushed {
            eprintln!("fanout: a subscriber stopped: {error}");
            return;
        }
    }
}

/// What a load phase did, and the host's CPU time per `continue` in it.
struct Loaded {
    outcome: Outcome,
    host_cpu: Option<Duration>,
}

/// The load's side: its own runtime, and one client made on it (as one
/// program would keep its connections), so its connections' tasks run
/// there too, not among the host's workers.
struct Load {
    runtime: tokio::runtime::Handle,
    client: reqwest::Client,
}

/// Runs `continue` on `pools` from the load's own runtime: load
/// worker `w` is tenant `first + w`. `sent[w * GOALS_PER_PHASE + g]` counts
/// the requests made on goal `g` of worker `w`.
async fn continues(
    load: &Load,
    base: &str,
    first: usize,
    pools: Arc<Vec<Vec<String>>>,
    sent: Arc<Vec<AtomicU64>>,
) -> Result<Loaded> {
    let base = base.to_string();
    let counted = Arc::clone(&sent);
    let make: MakeRequest = Arc::new(move |client, w, n| {
        let pool = &pools[w];
        let next = usize::try_from(n / RUNS_PER_GOAL).unwrap_or(usize::MAX) % pool.len();
        if let Some(count) = counted.get(w * GOALS_PER_PHASE + next) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        client
            .post(format!("{base}{GOALS}/{}/continue", pool[next]))
            .bearer_auth(token(first + w))
    });
    let spec = Spec {
        concurrency: CONNECTIONS,
        warmup: WARMUP,
        window: WINDOW,
        max_requests: 1_000_000,
    };
    let start = cpu();
    let client = load.client.clone();
    let outcome = load
        .runtime
        .spawn(async move { load::run(&client, spec, 200, make).await })
        .await
        .context("the load's task")?;
    let end = cpu();
    let made: u64 = sent.iter().map(|count| count.load(Ordering::Relaxed)).sum();
    Ok(Loaded {
        outcome,
        host_cpu: host_cpu_per_continue(start, end, made),
    })
}

fn counters() -> Arc<Vec<AtomicU64>> {
    Arc::new(
        (0..CONNECTIONS * GOALS_PER_PHASE)
            .map(|_| AtomicU64::new(0))
            .collect(),
    )
}

/// Open streams of the tenants from `first` on.
fn subscribers(host: &RunningHost, first: usize) -> Result<usize> {
    let mut total = 0;
    for worker in first..first + CONNECTIONS {
        let tenant = Tenant::parse(&tenant(worker)).context("tenant")?;
        total += host.feed().subscribers(&tenant);
    }
    Ok(total)
}

/// Polls until the host counts `want` open streams on the tenants from
/// `first` on, failing after 30 s.
async fn until_subscribers(host: &RunningHost, first: usize, want: usize) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let open = subscribers(host, first)?;
        if open == want {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{open} streams open, expected {want}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A phase with subscribers: what the load did, and what they received.
struct Followed {
    load: Outcome,
    /// The host's CPU time per `continue` (its threads only).
    host_cpu: Option<Duration>,
    delivered: u64,
    /// Deliveries the phase's `continue`s owe the subscribers (one event
    /// per `continue`, times the streams that follow its goal).
    expected: u64,
    /// `continue`s sent (one event each).
    events: u64,
    latencies: Samples,
}

/// Runs the load of phase `phase` while `SUBSCRIBERS` streams follow its
/// tenants (the whole tenant, or one goal each), then closes them and
/// waits until the host has let every one go.
async fn with_subscribers(
    host: &RunningHost,
    load: &Load,
    phase: usize,
    (shape, priority): (Shape, Priority),
    pools: Arc<Vec<Vec<String>>>,
) -> Result<Followed> {
    let first = phase * CONNECTIONS;
    // Subscriber `index` is on tenant `index % CONNECTIONS`; following
    // goals, it takes that tenant's goal `(index / CONNECTIONS) % GOALS`.
    let follows = |index: usize| (index % CONNECTIONS, (index / CONNECTIONS) % GOALS_PER_PHASE);
    let mut followers = vec![0u64; CONNECTIONS * GOALS_PER_PHASE];
    let mut streams = Vec::with_capacity(SUBSCRIBERS);
    for index in 0..SUBSCRIBERS {
        let (w, g) = follows(index);
        let path = if shape == Shape::GoalFollowers {
            followers[w * GOALS_PER_PHASE + g] += 1;
            format!("{STREAM}?goal={}", pools[w][g])
        } else {
            followers[w * GOALS_PER_PHASE..(w + 1) * GOALS_PER_PHASE]
                .iter_mut()
                .for_each(|count| *count += 1);
            STREAM.to_string()
        };
        streams.push((first + w, path));
    }
    let since = Arc::new(AtomicU64::new(u64::MAX));
    let seen = Arc::new(Seen::default());
    // The subscribers run on a thread of their own (one event loop for
    // all 1,000), as another program on the machine would, not among the
    // host's workers: they can take at most one core's time.
    let readers = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the subscribers' runtime")?;
    let on_readers = readers.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(SUBSCRIBER_THREAD.into())
        .spawn(move || {
            if priority == Priority::Lowest {
                // On Linux the nice value is the calling thread's alone.
                if let Err(error) = rustix::process::setpriority_process(None, 19) {
                    eprintln!("fanout: the subscribers keep the host's priority: {error}");
                }
            }
            readers.block_on(async {
                let _ = stopped.await;
            });
        })
        .context("cannot start the subscribers' thread")?;
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|(worker, path)| {
            on_readers.spawn(subscribe(
                host.addr(),
                worker,
                path,
                Arc::clone(&since),
                Arc::clone(&seen),
            ))
        })
        .collect();
    until_subscribers(host, first, SUBSCRIBERS).await?;
    since.store(u64::try_from(now_ms()).unwrap_or(0), Ordering::Relaxed);
    let sent = counters();
    let loaded = continues(load, &host.base_url(), first, pools, Arc::clone(&sent)).await?;
    let expected: u64 = sent
        .iter()
        .zip(&followers)
        .map(|(sent, followers)| sent.load(Ordering::Relaxed) * followers)
        .sum();
    let events: u64 = sent.iter().map(|sent| sent.load(Ordering::Relaxed)).sum();
    // Let the last events reach every subscriber before counting.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.delivered.load(Ordering::Relaxed) < expected
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for task in &tasks {
        task.abort();
    }
    // Dropping the runtime (on its thread) closes every connection.
    let _ = stop.send(());
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .context("the subscribers' thread")?
        .map_err(|_| anyhow::anyhow!("the subscribers' thread panicked"))?;
    until_subscribers(host, first, 0).await?;
    let latencies = seen.latencies.lock().map(|l| l.clone()).unwrap_or_default();
    Ok(Followed {
        load: loaded.outcome,
        host_cpu: loaded.host_cpu,
        delivered: seen.delivered.load(Ordering::Relaxed),
        expected,
        events,
        latencies,
    })
}

/// Phase `phase`'s goals: `GOALS_PER_PHASE` for each of its tenants, made
/// a tenant per task. A fresh pool per phase: every phase runs goals of
/// the same history.
async fn goal_pools(
    client: &reqwest::Client,
    base: &str,
    phase: usize,
) -> Result<Vec<Vec<String>>> {
    let mut making = tokio::task::JoinSet::new();
    for worker in phase * CONNECTIONS..(phase + 1) * CONNECTIONS {
        let (client, base) = (client.clone(), base.to_string());
        making.spawn(async move {
            let mut pool = Vec::with_capacity(GOALS_PER_PHASE);
            for _ in 0..GOALS_PER_PHASE {
                let body = goal_body("bench fan-out", true);
                pool.push(create_goal(&client, &base, worker, &body).await?);
            }
            Ok::<_, anyhow::Error>((worker, pool))
        });
    }
    let mut pools = Vec::with_capacity(CONNECTIONS);
    while let Some(made) = making.join_next().await {
        pools.push(made.context("making the phase's goals")??);
    }
    pools.sort_by_key(|(worker, _)| *worker);
    Ok(pools.into_iter().map(|(_, pool)| pool).collect())
}

/// The middle value (of an odd count; the upper middle of an even one).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn ratios(values: &[f64]) -> String {
    values
        .iter()
        .map(|ratio| format!("{ratio:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A phase with subscribers, and the baselines just before and after it.
struct Round<'a> {
    followed: &'a Followed,
    around: [&'a Loaded; 2],
}

impl Round<'_> {
    fn baseline_rate(&self) -> f64 {
        let [before, after] = self.around;
        (before.outcome.rate() + after.outcome.rate()) / 2.0
    }

    fn ratio(&self) -> f64 {
        self.followed.load.rate() / self.baseline_rate().max(f64::EPSILON)
    }

    /// The host's CPU per `continue`: with the subscribers, and the mean
    /// of the baselines'.
    fn host_cpu(&self) -> Option<(Duration, Duration)> {
        let [before, after] = self.around;
        Some((
            self.followed.host_cpu?,
            (before.host_cpu? + after.host_cpu?) / 2,
        ))
    }
}

/// A shape's rows: `continue` throughput over the `rounds` run with the
/// subscribers at the lowest priority (median of the rounds' ratios), and
/// in the `timed` phase run at the host's own; delivery time in the
/// `timed` phase; the host's CPU per `continue` over the rounds (median
/// ratio). Throughput and delivery time are judged by the targets if the
/// shape is (`Shape::judged`), reported otherwise. Every phase is judged by
/// whether every delivery owed arrived.
fn shape_rows(
    shape: Shape,
    coalesce: Duration,
    rounds: &[Round<'_>],
    timed: &[Round<'_>],
) -> Vec<Row> {
    let every = || rounds.iter().chain(timed).map(|round| round.followed);
    let expected: u64 = every().map(|followed| followed.expected).sum();
    let delivered: u64 = every().map(|followed| followed.delivered).sum();
    let events: u64 = every().map(|followed| followed.events).sum();
    let errors: u64 = every().map(|followed| followed.load.errors).sum();
    let first_error = every().find_map(|followed| followed.load.first_error.clone());
    let all_delivered = delivered >= expected;
    let errors_text = if errors > 0 {
        format!(
            ", {errors} errors: {}",
            first_error.as_deref().unwrap_or("?")
        )
    } else {
        String::new()
    };
    // Streams per event as measured: deliveries owed per `continue`.
    let per_event = expected as f64 / events.max(1) as f64;
    let what = format!("{}, {per_event:.1} streams per event", shape.describe());
    let subscribers = thousands(SUBSCRIBERS as f64);

    let throughput: Vec<f64> = rounds.iter().map(Round::ratio).collect();
    let ratio = median(throughput.clone());
    let value = format!(
        "median {} req/s over {} rounds (ratios {}){errors_text}",
        thousands(median(
            rounds
                .iter()
                .map(|round| round.followed.load.rate())
                .collect()
        )),
        rounds.len(),
        ratios(&throughput),
    );
    let baseline = format!(
        "no subscribers, before and after each round: median {} req/s",
        thousands(median(rounds.iter().map(Round::baseline_rate).collect()))
    );
    let throughput_metric = format!(
        "continue with {subscribers} SSE subscribers ({what}, coalescing {}, the subscribers at the lowest priority), {CONNECTIONS} connections",
        duration(coalesce),
    );
    let (target, met) = if shape.judged() {
        (
            format!("≥ {RATIO_TARGET} × baseline (median of the rounds)"),
            errors == 0 && ratio >= RATIO_TARGET,
        )
    } else {
        ("no errors".to_string(), errors == 0)
    };
    let mut rows =
        vec![Row::target(throughput_metric, value, target, met).with_baseline(baseline, ratio)];

    let mut latencies = Samples::default();
    for round in timed {
        latencies.extend(round.followed.latencies.clone());
    }
    let p50 = latencies.percentile(50.0).unwrap_or(Duration::MAX);
    let p99 = latencies.percentile(99.0).unwrap_or(Duration::MAX);
    let timed_ratio = median(timed.iter().map(Round::ratio).collect());
    rows.push(
        Row::info(
            format!(
                "continue with {subscribers} SSE subscribers ({what}), the subscribers at the host's priority"
            ),
            format!(
                "{} req/s",
                thousands(median(
                    timed.iter().map(|round| round.followed.load.rate()).collect()
                ))
            ),
        )
        .with_baseline(
            format!(
                "no subscribers, before and after: {} req/s",
                thousands(median(timed.iter().map(Round::baseline_rate).collect()))
            ),
            timed_ratio,
        ),
    );
    let delivery_metric = format!(
        "SSE delivery after commit (event `at` to a subscriber's read, the subscribers at the host's priority), {subscribers} subscribers {what}"
    );
    let delivery = format!(
        "p50 {}, p99 {} (every phase: {} deliveries of {} owed)",
        duration(p50),
        duration(p99),
        thousands(delivered as f64),
        thousands(expected as f64)
    );
    let (target, met) = if shape.judged() {
        (
            format!("p99 < {}, every event delivered", duration(DELIVERY_P99)),
            p99 < DELIVERY_P99 && all_delivered,
        )
    } else {
        ("every event delivered".to_string(), all_delivered)
    };
    rows.push(Row::target(delivery_metric, delivery, target, met));

    // What the host's own threads spent per `continue`: the share of the
    // cost that stays with the host when its clients run elsewhere (the
    // loopback's receiving side still counts: the kernel does it in the
    // sender's write).
    let metric = format!(
        "host CPU per continue (its own threads; the load's and the subscribers' left out), {subscribers} subscribers {what}, the subscribers at the lowest priority"
    );
    let cpu: Option<Vec<(Duration, Duration)>> = rounds.iter().map(Round::host_cpu).collect();
    rows.push(match cpu {
        Some(cpu) if !cpu.is_empty() => {
            let cpu_ratios: Vec<f64> = cpu
                .iter()
                .map(|(with, without)| without.as_secs_f64() / with.as_secs_f64().max(f64::EPSILON))
                .collect();
            let micros = |values: Vec<f64>| duration(Duration::from_secs_f64(median(values)));
            Row::info(
                metric,
                format!(
                    "median {} (ratios {})",
                    micros(cpu.iter().map(|(with, _)| with.as_secs_f64()).collect()),
                    ratios(&cpu_ratios)
                ),
            )
            .with_baseline(
                format!(
                    "no subscribers: median {}",
                    micros(
                        cpu.iter()
                            .map(|(_, without)| without.as_secs_f64())
                            .collect()
                    )
                ),
                median(cpu_ratios),
            )
        }
        _ => Row::info(metric, "could not be measured (no /proc/self)"),
    });
    rows
}

pub fn measure() -> Result<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let runtime = runtime()?;
    // The load runs on a runtime of its own, so the host's CPU time can be
    // told from its clients'.
    let load_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(LOAD_THREAD)
        .enable_all()
        .build()
        .context("cannot start the load's runtime")?;
    let on_load = load_runtime.handle().clone();
    let phases = phases();
    let rows = runtime.block_on(async {
        let client = load::client(CONNECTIONS)?;
        let mut config = Config::conformance_in_memory(
            (0..phases.len() * CONNECTIONS)
                .map(|w| (token(w), tenant(w)))
                .collect(),
        );
        config.db = DbLocation::File(dir.path().join("host.db"));
        config.connections.max_connections = SUBSCRIBERS + 4 * CONNECTIONS;
        // The host's own coalescing window unless the environment asks
        // for another (to compare; the table names the one used).
        let coalesce = match std::env::var(COALESCE_VAR) {
            Ok(text) => Duration::from_millis(
                text.parse()
                    .with_context(|| format!("{COALESCE_VAR} is not a whole number of ms"))?,
            ),
            Err(_) => FeedSettings::default().coalesce,
        };
        config.feed = FeedSettings {
            max_subscribers_per_tenant: SUBSCRIBERS.div_ceil(CONNECTIONS),
            coalesce,
            ..FeedSettings::default()
        };
        let host = RunningHost::start(config).await?;
        let base = host.base_url();
        let mut pools = Vec::with_capacity(phases.len());
        for phase in 0..phases.len() {
            pools.push(Arc::new(goal_pools(&client, &base, phase).await?));
        }
        let load_side = Load {
            client: on_load
                .spawn(async { load::client(CONNECTIONS) })
                .await
                .context("the load's client")??,
            runtime: on_load.clone(),
        };
        let mut baselines: Vec<Loaded> = Vec::new();
        // Each phase with subscribers, and the baselines it sits between
        // (`baselines[before]` and `baselines[before + 1]`).
        let mut rounds: Vec<((Shape, Priority), usize, Followed)> = Vec::new();
        for (phase, &kind) in phases.iter().enumerate() {
            let pool = Arc::clone(&pools[phase]);
            match kind {
                Phase::Baseline => {
                    let first = phase * CONNECTIONS;
                    baselines.push(continues(&load_side, &base, first, pool, counters()).await?);
                }
                Phase::Subscribed(shape, priority) => {
                    let followed =
                        with_subscribers(&host, &load_side, phase, (shape, priority), pool).await?;
                    rounds.push(((shape, priority), baselines.len() - 1, followed));
                }
            }
        }
        host.shutdown().await;

        let mut rows = Vec::new();
        for shape in SHAPES {
            let runs = |priority: Priority| -> Vec<Round<'_>> {
                rounds
                    .iter()
                    .filter(|(of, _, _)| *of == (shape, priority))
                    .map(|(_, before, followed)| Round {
                        followed,
                        around: [&baselines[*before], &baselines[before + 1]],
                    })
                    .collect()
            };
            rows.extend(shape_rows(
                shape,
                coalesce,
                &runs(Priority::Lowest),
                &runs(Priority::Same),
            ));
        }
        Ok::<_, anyhow::Error>(rows)
    });
    // Not inside the other runtime: a runtime is dropped where blocking
    // is allowed.
    drop(load_runtime);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the reads' boundaries, every message is found once, with
    /// its `at`, and the chunk framing never leaks into a message.
    #[test]
    fn the_decoder_finds_each_message_across_any_split() {
        let body = "id: 1\nevent: goal.evaluated\ndata: {\"at\":\"2026-01-01T00:00:00.001Z\"}\n\n: heartbeat\n\nid: 2\nevent: goal.closed\ndata: {\"at\":\"2026-01-01T00:00:00.002Z\"}\n\n";
        let (one, two) = body.split_at(40);
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{one}\r\n{:x}\r\n{two}\r\n",
            one.len(),
            two.len()
        );
        for step in 1..answer.len() {
            let mut decoder = Decoder::default();
            let mut seen = Vec::new();
            for piece in answer.as_bytes().chunks(step) {
                decoder.push(piece, |at| seen.push(at)).expect("decodes");
            }
            let epoch = 1_767_225_600_000;
            assert_eq!(
                seen,
                vec![Some(epoch + 1), None, Some(epoch + 2)],
                "reads of {step}"
            );
        }
    }
}
