//! `goals watch`: print events as they come.
//!
//! A host that streams its events (`host.events.stream` in discovery) is
//! followed over that stream: every event once, in order, and after a
//! dropped connection (or a `stream.dropped` message) the client reconnects
//! with `Last-Event-ID`, so nothing is missed or repeated. Without a goal id
//! it follows the whole tenant until interrupted; with one, only that goal,
//! until it stops running by itself.
//!
//! Otherwise a goal is followed by polling: with the `events` seam
//! `GET {base}/{id}/events?after=SEQ`, each event once; without it the goal
//! itself, each visible change. A `goal.closed` event makes it read the
//! goal: an escalation that a person already resumed is history, not the
//! end.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use super::discovery::Advertised;
use super::exit;
use super::http::{printable, segment, ClientError, HostClient};
use super::render;
use super::stream::Messages;

/// A stream that says nothing (no event, no heartbeat) for this long is
/// taken for dead and reconnected; hosts send heartbeats well within it.
const STREAM_IDLE: Duration = Duration::from_secs(60);
/// Connection attempts in a row that may fail before the watch gives up.
const MAX_RECONNECTS: u32 = 5;

pub struct Watch<'a> {
    pub client: &'a HostClient,
    pub advertised: &'a Advertised,
    /// The goal to follow; `None`: the whole tenant (stream only).
    pub id: Option<&'a str>,
    pub interval: Duration,
    pub json: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

impl Watch<'_> {
    fn goal_path(&self) -> String {
        format!(
            "{}/{}",
            self.advertised.base,
            segment(self.id.unwrap_or_default())
        )
    }

    /// Returns the exit code of the goal's state once it is not `active`
    /// (a tenant-wide watch returns only on an error).
    pub async fn run(&self, out: &mut dyn Write) -> Result<u8, WatchError> {
        if let Some(stream) = &self.advertised.stream {
            return self.follow_stream(stream, out).await;
        }
        if self.id.is_none() {
            return Err(WatchError::Client(ClientError::BadAnswer {
                url: self.client.url(""),
                status: 200,
                reason: "no event stream advertised (host.events.stream); give a goal id to poll one goal".into(),
            }));
        }
        let goal = self.client.get(&self.goal_path()).await?;
        if self.advertised.events {
            if let Some(code) = self.follow_events(goal.clone(), out).await? {
                return Ok(code);
            }
        }
        self.follow_goal(goal, out).await
    }

    /// `None` when the events path is not there after all.
    async fn follow_events(
        &self,
        mut goal: Value,
        out: &mut dyn Write,
    ) -> Result<Option<u8>, WatchError> {
        let mut after: u64 = 0;
        loop {
            let path = format!("{}/events?after={after}", self.goal_path());
            let list = match self.client.get(&path).await {
                Ok(list) => list,
                Err(ClientError::Refused { status: 404, .. }) => return Ok(None),
                Err(other) => return Err(other.into()),
            };
            let mut closed = false;
            for event in list
                .get("events")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(sequence) = event.get("sequence").and_then(Value::as_u64) else {
                    continue;
                };
                if sequence <= after {
                    continue;
                }
                after = sequence;
                closed |= event.get("type").and_then(Value::as_str) == Some("goal.closed");
                if self.json {
                    writeln!(out, "{event}")?;
                } else {
                    out.write_all(render::event(event).as_bytes())?;
                }
                out.flush()?;
            }
            if closed {
                goal = self.client.get(&self.goal_path()).await?;
            }
            let state = goal.get("state").and_then(Value::as_str);
            if !exit::is_running(state) {
                return Ok(Some(exit::for_state(state)));
            }
            tokio::time::sleep(self.interval).await;
        }
    }

    /// Follows the host's live stream, reconnecting after the last event it
    /// printed.
    async fn follow_stream(&self, stream: &str, out: &mut dyn Write) -> Result<u8, WatchError> {
        let path = match self.id {
            // From the goal's first event: every way a goal stops emits a
            // `goal.closed`, so one that stopped already is seen to.
            Some(id) => format!("{stream}?goal={}", segment(id)),
            None => stream.to_string(),
        };
        let mut last: Option<String> = None;
        let mut failures = 0;
        loop {
            let response = match self
                .client
                .open_stream(&path, last.as_deref(), STREAM_IDLE)
                .await
            {
                Ok(response) => response,
                Err(error @ ClientError::Refused { .. }) => return Err(error.into()),
                Err(error) => {
                    failures += 1;
                    if failures > MAX_RECONNECTS {
                        return Err(error.into());
                    }
                    tokio::time::sleep(self.interval).await;
                    continue;
                }
            };
            let mut messages = Messages::new(response);
            loop {
                let message = match messages.next().await {
                    Ok(Some(message)) => message,
                    // Ended or broken: reconnect where it left off.
                    Ok(None) | Err(_) => break,
                };
                failures = 0;
                if message.id.is_none() {
                    // `stream.dropped` and the like: reconnect at once.
                    continue;
                }
                last.clone_from(&message.id);
                let Ok(event) = serde_json::from_str::<Value>(&message.data) else {
                    continue;
                };
                if self.json {
                    writeln!(out, "{event}")?;
                } else {
                    let goal = event
                        .pointer("/payload/goalId")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if self.id.is_none() {
                        write!(out, "{} ", printable(goal))?;
                    }
                    out.write_all(render::event(&event).as_bytes())?;
                }
                out.flush()?;
                if self.id.is_some()
                    && event.get("type").and_then(Value::as_str) == Some("goal.closed")
                {
                    let goal = self.client.get(&self.goal_path()).await?;
                    let state = goal.get("state").and_then(Value::as_str);
                    // A replayed close (an escalation resumed since) is
                    // history: the watch ends only at the goal's last event.
                    if !exit::is_running(state) && self.is_last(&event).await {
                        return Ok(exit::for_state(state));
                    }
                }
            }
            tokio::time::sleep(self.interval.min(Duration::from_millis(200))).await;
        }
    }

    /// Whether `event` is the goal's last one (asked of the goal's event
    /// list; a host that cannot say is taken at its word).
    async fn is_last(&self, event: &Value) -> bool {
        let Some(sequence) = event.get("sequence").and_then(Value::as_u64) else {
            return true;
        };
        let path = format!("{}/events?after={sequence}", self.goal_path());
        match self.client.get(&path).await {
            Ok(list) => list
                .get("events")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty),
            Err(_) => true,
        }
    }

    async fn follow_goal(&self, mut goal: Value, out: &mut dyn Write) -> Result<u8, WatchError> {
        let mut shown: Option<String> = None;
        loop {
            let line = render::progress(&goal);
            if shown.as_ref() != Some(&line) {
                if self.json {
                    writeln!(out, "{goal}")?;
                } else {
                    out.write_all(line.as_bytes())?;
                }
                out.flush()?;
                shown = Some(line);
            }
            let state = goal.get("state").and_then(Value::as_str);
            if !exit::is_running(state) {
                return Ok(exit::for_state(state));
            }
            tokio::time::sleep(self.interval).await;
            goal = self.client.get(&self.goal_path()).await?;
        }
    }
}
