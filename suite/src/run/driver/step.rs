//! What every kind of step shares: the rules of the one repeat loop (once,
//! `poll`, `observe`) around a step's look at its answer, and the one way a
//! step takes its captures from what it saw last.
//!
//! A request, a `parallel` request and a `mockLog` step differ only in how
//! they fetch what they look at and how they check it; the loop and the
//! captures are written here once so a rule about repeating (a poll waits
//! for the blocking checks, an observation keeps the first miss of each
//! claim) or capturing (a missing value always stops the scenario) cannot
//! hold for one kind of step and not another.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::attribution::FailedCheck;
use super::check::{named, Seen};
use super::{Driver, Place, Tally};
use crate::error::RunError;
use crate::http::Outgoing;
use crate::model::{Capture, Repeat};
use crate::run::outcome::{CheckKind, CheckResult};
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

/// The one repeat loop's rules, for a step that looks at its answer once,
/// polls until its blocking checks hold or its (scaled) timeout passes, or
/// observes for a whole window, stopping at the first blocking miss and
/// keeping the first miss of every other claim. The step's own loop fetches
/// and checks; `look` and `settle` decide everything else:
///
/// ```text
/// loop {
///     let seen = fetch().await?;
///     let context = repeater.look();
///     let tally = check(&seen, context)?;
///     if let Some(tally) = repeater.settle(tally).await { break (seen, tally) }
/// }
/// ```
///
/// (A loop over closures would say it once more briefly, but its future
/// is not `Send`, and the benchmarks spawn the driver's.)
pub(super) struct Repeater {
    repeat: Repeat,
    subject: Subject,
    /// When the first look started.
    started: Instant,
    /// The poll's deadline or the observation's end.
    until: Instant,
    attempt: u32,
    /// The poll's latest look was its last.
    last: bool,
    /// When the poll's latest look came back.
    looked: Instant,
    /// An observation's misses so far, the first of each claim.
    advisories: Vec<FailedCheck>,
}

impl Repeater {
    pub(super) fn new(repeat: Repeat, subject: Subject, poll_scale: f64) -> Repeater {
        let started = Instant::now();
        let until = match repeat {
            Repeat::Once => started,
            Repeat::Poll { timeout_ms, .. } => {
                started + Duration::from_millis(timeout_ms).mul_f64(poll_scale)
            }
            Repeat::Observe { for_ms, .. } => started + Duration::from_millis(for_ms),
        };
        Repeater {
            repeat,
            subject,
            started,
            until,
            attempt: 0,
            last: true,
            looked: started,
            advisories: Vec::new(),
        }
    }

    /// Call when a look's answer is in: the context line its misses carry.
    pub(super) fn look(&mut self) -> Option<String> {
        self.attempt += 1;
        match self.repeat {
            Repeat::Once => None,
            Repeat::Poll { .. } => {
                self.looked = Instant::now();
                self.last = self.looked >= self.until;
                self.last.then(|| {
                    self.subject
                        .polled((self.looked - self.started).as_millis(), self.attempt)
                })
            }
            Repeat::Observe { for_ms, .. } => Some(self.subject.observed(for_ms, self.attempt)),
        }
    }

    /// The step's verdict when this look ends it, else `None` after waiting
    /// for the next look.
    pub(super) async fn settle(&mut self, mut tally: Tally) -> Option<Tally> {
        match self.repeat {
            Repeat::Once => Some(tally),
            Repeat::Poll { interval_ms, .. } => {
                // Polling waits for every blocking check to hold; a
                // non-blocking miss of that answer is its verdict.
                if !tally.blocked() || self.last {
                    return Some(tally);
                }
                let interval = Duration::from_millis(interval_ms);
                tokio::time::sleep(interval.min(self.until - self.looked)).await;
                None
            }
            Repeat::Observe { interval_ms, .. } => {
                tally.absorb(std::mem::take(&mut self.advisories));
                let now = Instant::now();
                if tally.blocked() || now >= self.until {
                    return Some(tally);
                }
                self.advisories = tally.missed;
                let interval = Duration::from_millis(interval_ms);
                tokio::time::sleep(interval.min(self.until - now)).await;
                None
            }
        }
    }
}

impl Driver {
    /// Sets each capture's variable from what the step saw. A missing value
    /// is a blocking miss (a later step needs it) and ends the captures;
    /// captures are not taken at all after a blocking miss, since the steps
    /// they feed will not run.
    pub(super) fn capture(
        &self,
        place: &Place<'_>,
        request: Option<&Outgoing>,
        captures: &BTreeMap<String, Capture>,
        seen: &impl Seen,
        vars: &mut Vars,
        mut tally: Tally,
    ) -> Result<Tally, RunError> {
        if tally.blocked() {
            return Ok(tally);
        }
        for (name, source) in captures {
            let value = match source {
                Capture::Clock(format) => Some(self.clock_value(place.started, *format)),
                Capture::Later(format, ms) => Some(self.later_value(place.started, *format, *ms)),
                Capture::Pointer(pointer) => seen.value(pointer)?,
                Capture::Header(header) => seen
                    .header(header)
                    .map_err(|why| RunError::Scenario(format!("capture `{name}`: {why}")))?,
            };
            let Some(value) = value else {
                let (expected, pointer) = match source {
                    Capture::Pointer(pointer) => (seen.absent(pointer), Some(pointer.clone())),
                    Capture::Header(header) => (format!("header {header}"), None),
                    Capture::Clock(_) | Capture::Later(..) => ("the time".to_string(), None),
                };
                let result = named(
                    seen,
                    CheckResult {
                        kind: CheckKind::Capture,
                        at: format!("{}/capture/{name}", place.step.pointer),
                        what: format!("capture `{name}`"),
                        expected,
                        actual: "(absent)".to_string(),
                        pointer,
                        proves: place.scenario.step_proves(place.step).to_vec(),
                        blocking: true,
                        ..CheckResult::default()
                    },
                );
                tally
                    .missed
                    .push(self.record(place, request, seen, 0, result));
                return Ok(tally);
            };
            vars.set(name, value);
        }
        Ok(tally)
    }
}
