//! A small closed-loop load generator: `concurrency` workers, each on its
//! own keep-alive connection, send a request, read the whole answer, send
//! the next. Loopback only; bounded by time and by a request count.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::stats::Samples;

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub concurrency: usize,
    /// Sent before the window opens and not counted: connections opened,
    /// caches warm.
    pub warmup: Duration,
    pub window: Duration,
    /// No more than this many requests are sent in the window.
    pub max_requests: u64,
}

#[derive(Debug, Default)]
pub struct Outcome {
    /// Answers with the expected status that completed in the window.
    pub ok: u64,
    /// Other answers and transport errors in the window.
    pub errors: u64,
    pub first_error: Option<String>,
    /// From the window's start to its end, or to the last answer when the
    /// request count ran out first.
    pub elapsed: Duration,
    pub latencies: Samples,
}

impl Outcome {
    pub fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

/// Builds worker `w`'s `n`-th request.
pub type MakeRequest =
    Arc<dyn Fn(&reqwest::Client, usize, u64) -> reqwest::RequestBuilder + Send + Sync>;

/// One keep-alive client for `concurrency` connections to loopback.
pub fn client(concurrency: usize) -> reqwest::Result<reqwest::Client> {
    goalpost::http::client_builder()
        .pool_max_idle_per_host(concurrency)
        .tcp_nodelay(true)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
}

struct Worker {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    last_done: Option<Instant>,
    latencies: Samples,
}

pub async fn run(client: &reqwest::Client, spec: Spec, expect: u16, make: MakeRequest) -> Outcome {
    let started = Instant::now();
    let open = started + spec.warmup;
    let close = open + spec.window;
    let budget = Arc::new(AtomicU64::new(spec.max_requests));
    let mut tasks = Vec::with_capacity(spec.concurrency);
    for worker in 0..spec.concurrency {
        let client = client.clone();
        let make = Arc::clone(&make);
        let budget = Arc::clone(&budget);
        tasks.push(tokio::spawn(async move {
            let mut stats = Worker {
                ok: 0,
                errors: 0,
                first_error: None,
                last_done: None,
                latencies: Samples::default(),
            };
            let mut n = 0u64;
            loop {
                let sent = Instant::now();
                if sent >= close {
                    break;
                }
                let counted = sent >= open;
                if counted
                    && budget
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                            left.checked_sub(1)
                        })
                        .is_err()
                {
                    break;
                }
                let result = make(&client, worker, n).send().await;
                n += 1;
                let answer = match result {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        match response.bytes().await {
                            Ok(_) if status == expect => Ok(()),
                            Ok(body) => Err(format!(
                                "status {status}: {}",
                                String::from_utf8_lossy(&body[..body.len().min(300)])
                            )),
                            Err(error) => Err(error.to_string()),
                        }
                    }
                    Err(error) => Err(error.to_string()),
                };
                let done = Instant::now();
                if !counted || done > close {
                    continue;
                }
                stats.last_done = Some(done);
                match answer {
                    Ok(()) => {
                        stats.ok += 1;
                        stats.latencies.push(done - sent);
                    }
                    Err(error) => {
                        stats.errors += 1;
                        stats.first_error.get_or_insert(error);
                    }
                }
            }
            stats
        }));
    }
    let mut outcome = Outcome::default();
    let mut last_done = None;
    for task in tasks {
        let Ok(stats) = task.await else {
            outcome.errors += 1;
            continue;
        };
        outcome.ok += stats.ok;
        outcome.errors += stats.errors;
        if outcome.first_error.is_none() {
            outcome.first_error = stats.first_error;
        }
        last_done = last_done.max(stats.last_done);
        outcome.latencies.extend(stats.latencies);
    }
    let end = if budget.load(Ordering::Relaxed) == 0 {
        last_done.unwrap_or(close)
    } else {
        close
    };
    outcome.elapsed = end.saturating_duration_since(open);
    outcome
}
