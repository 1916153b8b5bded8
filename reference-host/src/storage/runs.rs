//! The runs aggregate: the [`Runs`] trait and the reservation types.

use crate::domain::{GoalId, RunId, Timestamp};
use crate::storage::{Pending, StoreError, Written};

/// A run the host dispatched, reserved before dispatch so a crash can never
/// hand out an extra run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReservation {
    pub run_id: RunId,
    pub goal_id: GoalId,
    pub iteration: u64,
    pub started_at: Timestamp,
    /// For a run reported through `POST {base}/{id}/runs` with a `runId`:
    /// the fingerprint of the report, so the same report sent again is
    /// recognised and a different one under the same `runId` refused.
    pub report: Option<String>,
}

/// A reserved run as stored, read back to answer a report sent again.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub goal_id: GoalId,
    pub iteration: u64,
    /// `None` while in flight.
    pub end: Option<RunEnd>,
    pub report: Option<String>,
}

/// What becomes of a reserved run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Its verdict or escalation was recorded.
    Recorded,
    /// The goal closed while it was in flight; nothing was recorded.
    Discarded,
}

impl RunEnd {
    /// How a run ended, from its stored `status` (the same words in both
    /// stores): `None` while `in-flight`.
    pub(crate) fn from_status(status: &str) -> Result<Option<RunEnd>, StoreError> {
        match status {
            "in-flight" => Ok(None),
            "recorded" => Ok(Some(RunEnd::Recorded)),
            "discarded" => Ok(Some(RunEnd::Discarded)),
            other => Err(StoreError::Corrupt(format!("run status {other:?}"))),
        }
    }
}

/// Runs the host reserved before dispatch, and how each ended.
pub trait Runs {
    /// Reserves a run if the stored goal is still at `expected_version`.
    /// Holds the goal's row lock (on SQLite, the one writer) from that
    /// check until the run is stored ([`Goals::apply_unless_run_in_flight`](crate::storage::Goals::apply_unless_run_in_flight)
    /// depends on it).
    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>>;

    /// Ends a reserved run without recording anything for it.
    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()>;

    /// A reserved run, however it ended.
    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError>;

    /// Runs reserved but never ended (a crash or shutdown in flight).
    /// On a database several replicas share: only those of replicas that
    /// are gone.
    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError>;

    /// Runs a replica reserved and left in flight when it died, found
    /// while this one runs (its lease lapsed). A store only one process
    /// uses has none: that process finds its own at start
    /// ([`Runs::runs_in_flight`]).
    fn runs_orphaned(&self) -> Result<Vec<RunReservation>, StoreError> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_status_reads_as_its_end_and_an_unknown_one_is_corrupt() {
        assert_eq!(RunEnd::from_status("in-flight").expect("known"), None);
        assert_eq!(
            RunEnd::from_status("recorded").expect("known"),
            Some(RunEnd::Recorded)
        );
        assert_eq!(
            RunEnd::from_status("discarded").expect("known"),
            Some(RunEnd::Discarded)
        );
        assert!(matches!(
            RunEnd::from_status("Recorded"),
            Err(StoreError::Corrupt(_))
        ));
    }
}
