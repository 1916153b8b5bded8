//! What every kind of step shares: the one repeat loop (once, `poll`,
//! `observe`) around a step's look at its answer, and the one way a step
//! takes its captures from what it saw last.
//!
//! A request, a `parallel` request and a `mockLog` step differ only in how
//! they fetch what they look at and how they check it; the loop and the
//! captures are written here once so a rule about repeating (a poll waits
//! for the blocking checks, an observation keeps the first miss of each
//! claim) or capturing (a missing value always stops the scenario) cannot
//! hold for one kind of step and not another.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::{Driver, Miss, Missed, Place, Tally};
use crate::error::{RunError, StepError};
use crate::model::{Capture, Repeat};
use crate::template::Vars;

/// What a repeated step looks at, as the context line of a miss names it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Subject {
    /// The host's answer to a request.
    Host,
    /// The webhook mock's call log.
    MockLog,
}

impl Subject {
    fn polled(self, elapsed_ms: u128, attempt: u32) -> String {
        match self {
            Subject::Host => format!(
                "still failing after polling for {elapsed_ms} ms ({attempt} attempts); the last response"
            ),
            Subject::MockLog => format!(
                "still failing after polling the mock log for {elapsed_ms} ms ({attempt} looks)"
            ),
        }
    }

    fn observed(self, for_ms: u64, attempt: u32) -> String {
        match self {
            Subject::Host => {
                format!("during the {for_ms} ms observation window, attempt {attempt}")
            }
            Subject::MockLog => {
                format!("during the {for_ms} ms observation of the mock log, look {attempt}")
            }
        }
    }
}

/// What a step's captures read: the answer its checks saw last.
pub(super) trait Captured {
    /// The value at a JSON pointer of what the step saw.
    fn pointer(&self, pointer: &str) -> Result<Option<Value>, StepError>;

    /// A header of the answer; `Err` says why this kind of step has none.
    fn header(&self, header: &str) -> Result<Option<Value>, &'static str>;

    /// The claim that a capture found nothing.
    fn absent(&self, absent: Absent<'_>) -> Result<Missed, StepError>;
}

/// A capture that found nothing: `miss` is filled with what every missing
/// capture says; the step kind adds what it expected.
pub(super) struct Absent<'a> {
    pub driver: &'a Driver,
    pub place: &'a Place<'a>,
    pub source: &'a Capture,
    pub miss: Miss,
}

impl Driver {
    /// Looks at a step's answer once, or again and again as `repeat` says:
    /// a `poll` looks until no blocking check misses or its (scaled)
    /// timeout passes, an `observe` looks for its whole window and stops at
    /// the first blocking miss, keeping the first miss of every other claim.
    /// `fetch` gets what to look at; `check` judges it, given the context
    /// line a miss of that look carries.
    pub(super) async fn repeat<T>(
        &self,
        repeat: Repeat,
        subject: Subject,
        mut fetch: impl AsyncFnMut() -> Result<T, StepError>,
        mut check: impl FnMut(&T, Option<String>) -> Result<Tally, StepError>,
    ) -> Result<(T, Tally), StepError> {
        match repeat {
            Repeat::Once => {
                let seen = fetch().await?;
                let tally = check(&seen, None)?;
                Ok((seen, tally))
            }
            Repeat::Poll {
                timeout_ms,
                interval_ms,
            } => {
                let timeout = Duration::from_millis(timeout_ms).mul_f64(self.poll_scale);
                let interval = Duration::from_millis(interval_ms);
                let started = Instant::now();
                let deadline = started + timeout;
                let mut attempt = 0u32;
                loop {
                    attempt += 1;
                    let seen = fetch().await?;
                    let now = Instant::now();
                    let last = now >= deadline;
                    let context =
                        last.then(|| subject.polled((now - started).as_millis(), attempt));
                    // Polling waits for every blocking check to hold; a
                    // non-blocking miss of that answer is its verdict.
                    let tally = check(&seen, context)?;
                    if !tally.blocked() || last {
                        return Ok((seen, tally));
                    }
                    tokio::time::sleep(interval.min(deadline - now)).await
                }
            }
            Repeat::Observe {
                for_ms,
                interval_ms,
            } => {
                let interval = Duration::from_millis(interval_ms);
                let end = Instant::now() + Duration::from_millis(for_ms);
                let mut attempt = 0u32;
                let mut advisories: Vec<Missed> = Vec::new();
                loop {
                    attempt += 1;
                    let seen = fetch().await?;
                    let mut tally = check(&seen, Some(subject.observed(for_ms, attempt)))?;
                    tally.absorb(std::mem::take(&mut advisories));
                    let now = Instant::now();
                    if tally.blocked() || now >= end {
                        return Ok((seen, tally));
                    }
                    advisories = tally.missed;
                    tokio::time::sleep(interval.min(end - now)).await;
                }
            }
        }
    }

    /// Sets each capture's variable from what the step saw. A missing value
    /// is a blocking miss (a later step needs it) and ends the captures;
    /// captures are not taken at all after a blocking miss, since the steps
    /// they feed will not run.
    pub(super) fn capture(
        &self,
        place: &Place<'_>,
        captures: &BTreeMap<String, Capture>,
        seen: &impl Captured,
        vars: &mut Vars,
        mut tally: Tally,
    ) -> Result<Tally, StepError> {
        if tally.blocked() {
            return Ok(tally);
        }
        for (name, source) in captures {
            let value = match source {
                Capture::Clock(format) => Some(self.clock_value(place.started, *format)),
                Capture::Pointer(pointer) => seen.pointer(pointer)?,
                Capture::Header(header) => seen.header(header).map_err(|why| {
                    StepError::from(RunError::Scenario(format!("capture `{name}`: {why}")))
                })?,
            };
            let Some(value) = value else {
                let miss = Miss {
                    at: format!("{}/capture/{name}", place.step.pointer),
                    what: format!("capture `{name}`"),
                    expected: String::new(),
                    actual: "(absent)".to_string(),
                    note: None,
                    pointer: None,
                };
                let mut missed = seen.absent(Absent {
                    driver: self,
                    place,
                    source,
                    miss,
                })?;
                missed.blocking = true;
                tally.missed.push(missed);
                return Ok(tally);
            };
            vars.set(name, value);
        }
        Ok(tally)
    }
}
