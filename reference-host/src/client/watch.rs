//! `goals watch`: follow a goal until it stops running by itself.
//!
//! With the `events` seam the client polls `GET {base}/{id}/events?after=SEQ`
//! and prints each event once. A `goal.closed` event makes it read the goal:
//! an escalation that a person already resumed is history, not the end. A
//! host without the seam (or answering 404 for it) is followed by polling the
//! goal and printing each visible change.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use super::discovery::Advertised;
use super::exit;
use super::http::{segment, ClientError, HostClient};
use super::render;

pub struct Watch<'a> {
    pub client: &'a HostClient,
    pub advertised: &'a Advertised,
    pub id: &'a str,
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
        format!("{}/{}", self.advertised.base, segment(self.id))
    }

    /// Returns the exit code of the goal's state once it is not `active`.
    pub async fn run(&self, out: &mut dyn Write) -> Result<u8, WatchError> {
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
