//! A goal's history on PostgreSQL ([`Events`]): its events, the tenant
//! feed and evaluations; the relay tells this replica's sink.

use std::sync::Arc;

use tokio_postgres::Row;

use super::{timestamp, unsigned, PostgresStore};
use crate::domain::{Evaluation, Event, GoalId, Tenant};
use crate::storage::record::{from_json, EvaluationRecord, EventRecord};
use crate::storage::{ClosedWatcher, EventSink, Events, StoreError};

/// An event row: `sequence, at_ms, record, cursor`.
pub(super) fn event_from_row(row: &Row) -> Result<Event, StoreError> {
    let record: String = row.try_get(2)?;
    Ok(Event {
        sequence: unsigned(row.try_get(0)?)?,
        at: timestamp(row.try_get(1)?)?,
        payload: from_json::<EventRecord>(&record)?.into_payload()?,
        cursor: unsigned(row.try_get(3)?)?,
    })
}

impl Events for PostgresStore {
    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.rows(
            "SELECT sequence, at_ms, record, cursor FROM events
             WHERE goal_id = $1 AND sequence > $2 ORDER BY sequence",
            vec![Box::new(goal.as_str().to_string()), Box::new(after)],
            event_from_row,
        )
    }

    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.rows(
            "SELECT sequence, at_ms, record, cursor FROM events
             WHERE goal_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3",
            vec![
                Box::new(goal.as_str().to_string()),
                Box::new(after),
                Box::new(limit),
            ],
            event_from_row,
        )
    }

    fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        self.relay.set_sink(sink);
    }

    fn watch_closes(&self, watcher: ClosedWatcher) {
        self.relay.watch_closes(watcher);
    }

    /// In cursor order, which is the order the tenant's events committed
    /// in (`take_cursors`): a page never skips an event that commits later.
    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        match goal {
            Some(goal) => self.rows(
                "SELECT sequence, at_ms, record, cursor FROM events
                 WHERE tenant = $1 AND goal_id = $2 AND cursor > $3 ORDER BY cursor LIMIT $4",
                vec![
                    Box::new(tenant.as_str().to_string()),
                    Box::new(goal.as_str().to_string()),
                    Box::new(after),
                    Box::new(limit),
                ],
                event_from_row,
            ),
            None => self.rows(
                "SELECT sequence, at_ms, record, cursor FROM events
                 WHERE tenant = $1 AND cursor > $2 ORDER BY cursor LIMIT $3",
                vec![
                    Box::new(tenant.as_str().to_string()),
                    Box::new(after),
                    Box::new(limit),
                ],
                event_from_row,
            ),
        }
    }

    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError> {
        self.rows(
            "SELECT record FROM evaluations WHERE goal_id = $1 ORDER BY iteration, run_id",
            vec![Box::new(goal.as_str().to_string())],
            |row| from_json::<EvaluationRecord>(&row.try_get::<_, String>(0)?)?.into_evaluation(),
        )
    }

    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.rows(
            "SELECT record FROM evaluations WHERE goal_id = $1 AND iteration > $2
             ORDER BY iteration, run_id LIMIT $3",
            vec![
                Box::new(goal.as_str().to_string()),
                Box::new(after),
                Box::new(limit),
            ],
            |row| from_json::<EvaluationRecord>(&row.try_get::<_, String>(0)?)?.into_evaluation(),
        )
    }
}
