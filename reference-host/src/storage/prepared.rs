//! What a write of a change stores, worked out before its transaction by
//! either store: the JSON and the conversions happen outside the shared
//! transaction (SQLite's group, PostgreSQL's row locks), and a change that
//! cannot be stored fails before anything is queued.

use super::group_commit::Pending;
use super::record::ChangeRecords;
use super::{StoreError, Written, WrittenIfIdle};
use crate::domain::{Change, EventPayload, Goal, RunId, Tenant, Timestamp};

/// A change as a store writes it; `Row` is the store's own goal columns.
pub(super) struct PreparedChange<Row> {
    pub row: Row,
    /// The version the stored goal must still be at.
    pub expected_version: i64,
    /// The new events' records, in order.
    pub records: Vec<String>,
    /// The evaluation's run id, iteration and record.
    pub evaluation: Option<(String, i64, String)>,
    /// The run the change records, ended in the same transaction.
    pub run: Option<String>,
    pub at_ms: i64,
    /// The new events as the writer is answered with them, numbered once
    /// committed.
    pub payloads: Vec<EventPayload>,
    pub tenant: Tenant,
}

impl<Row> PreparedChange<Row> {
    pub(super) fn new(
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        row: impl FnOnce(&Goal) -> Result<Row, StoreError>,
    ) -> Result<PreparedChange<Row>, StoreError> {
        let ChangeRecords { events, evaluation } = ChangeRecords::of(change)?;
        Ok(PreparedChange {
            row: row(&change.goal)?,
            expected_version: i64::try_from(expected_version).map_err(|_| {
                StoreError::Corrupt(format!("version {expected_version} does not fit"))
            })?,
            records: events,
            evaluation,
            run: run.map(|run| run.as_str().to_string()),
            at_ms: at.unix_ms(),
            payloads: change.events.clone(),
            tenant: change.goal.owner.clone(),
        })
    }
}

/// A write that failed before it was queued.
pub(super) fn failed<T: Send + 'static>(error: StoreError) -> Pending<T> {
    Box::pin(std::future::ready(Err(error)))
}

/// A write that was not asked to look at the goal's runs, as
/// [`super::Goals::apply`] answers it: it is written or in conflict.
pub(super) fn written_only<T: Send + 'static>(
    written: Pending<WrittenIfIdle<T>>,
) -> Pending<Written<T>> {
    Box::pin(async move {
        Ok(match written.await? {
            WrittenIfIdle::Done(done) => Written::Done(done),
            WrittenIfIdle::Conflict | WrittenIfIdle::RunInFlight | WrittenIfIdle::TooManyArmed => {
                Written::Conflict
            }
        })
    })
}
