//! A goal's history on SQLite ([`Events`]): its events, the tenant feed
//! and evaluations, and the sink told about commits.

use std::sync::Arc;

use rusqlite::{params, Connection};

use super::{unsigned, SqliteStore};
use crate::domain::{Evaluation, Event, GoalId, Tenant, Timestamp};
use crate::storage::goal_log;
use crate::storage::record::{from_json, EvaluationRecord, EventRecord};
use crate::storage::{EventSink, Events, StoreError};

impl Events for SqliteStore {
    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError> {
        self.read(|connection| {
            // Sequences past i64 cannot exist, so clamping keeps the meaning.
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            event_rows(
                connection,
                goal_log::EVENTS_AFTER,
                params![goal.as_str(), after],
            )
        })
    }

    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.read(|connection| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            event_rows(
                connection,
                goal_log::EVENTS_PAGE,
                params![goal.as_str(), after, limit],
            )
        })
    }

    fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        let mut slot = match self.sink.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *slot = Some(sink);
    }

    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        // Cursors past i64 cannot exist, so clamping keeps the meaning.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|connection| match goal {
            // The caller checked the goal is the tenant's.
            Some(goal) => event_rows(
                connection,
                goal_log::GOAL_EVENTS_AFTER_CURSOR,
                params![goal.as_str(), after, limit],
            ),
            None => event_rows(
                connection,
                goal_log::TENANT_EVENTS_AFTER,
                params![tenant.as_str(), after, limit],
            ),
        })
    }

    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(goal_log::EVALUATIONS)?;
            let rows =
                statement.query_map(params![goal.as_str()], |row| row.get::<_, String>(0))?;
            rows.map(|row| from_json::<EvaluationRecord>(&row?)?.into_evaluation())
                .collect()
        })
    }

    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|connection| {
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut statement = connection.prepare_cached(goal_log::EVALUATIONS_PAGE)?;
            let rows = statement.query_map(params![goal.as_str(), after, limit], |row| {
                row.get::<_, String>(0)
            })?;
            rows.map(|row| from_json::<EvaluationRecord>(&row?)?.into_evaluation())
                .collect()
        })
    }
}

/// Events from a query answering `sequence, at_ms, record, cursor`.
fn event_rows(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Event>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let rows = statement.query_map(params, |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
        ))
    })?;
    rows.map(|row| {
        let (sequence, at_ms, record, cursor) = row?;
        Ok(Event {
            sequence: unsigned(sequence)?,
            cursor: unsigned(cursor)?,
            at: Timestamp::from_unix_ms(at_ms)
                .ok_or_else(|| StoreError::Corrupt(format!("timestamp {at_ms}")))?,
            payload: from_json::<EventRecord>(&record)?.into_payload()?,
        })
    })
    .collect()
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use crate::domain::{RunId, Tenant};
    use crate::storage::{DbLocation, Events, Goals, Written};
    use rusqlite::params;

    /// A resume reads one range of the tenant's feed, in cursor order,
    /// however many tenants and goals there are.
    #[test]
    fn the_tenant_feed_is_read_from_its_index_in_order() {
        let text = crate::storage::query_plan(goal_log::TENANT_EVENTS_AFTER, params!["t", 0, 10]);
        assert!(
            text.contains("SEARCH feed USING PRIMARY KEY (tenant=? AND cursor>?)"),
            "{text}"
        );
        assert!(!text.contains("TEMP B-TREE"), "sorts: {text}");
    }

    /// The tenant's events after a cursor: in commit order across goals,
    /// at most `limit`, one goal's when asked, never another tenant's, and
    /// each with the cursor the write reported.
    #[tokio::test]
    async fn tenant_events_follow_the_cursor() {
        use crate::domain::fixture::{at, goal, unsatisfied};
        use crate::domain::transition::record_run;
        use crate::domain::{CostReading, FinishedRun, MicroUsd};
        let store = SqliteStore::open(&DbLocation::Memory).expect("opens");
        let (mut first, mut second) = (goal(Some(10), None, None), goal(Some(10), None, None));
        let mut other = goal(Some(10), None, None);
        let stranger = Tenant::parse("other").expect("a tenant");
        other.owner = stranger.clone();
        store
            .insert_goals(&[first.clone(), second.clone(), other.clone()])
            .expect("stored");
        let mut written = Vec::new();
        for round in 0..3 {
            for current in [&mut first, &mut other, &mut second] {
                let finished = FinishedRun {
                    run_id: RunId::generate(),
                    cost: MicroUsd::ZERO,
                    outcome: unsatisfied(),
                    commitment_ms: None,
                };
                let now = at(round * 10);
                let change =
                    record_run(current, &finished, now, CostReading::Budget).expect("a change");
                let Written::Done(events) = store
                    .apply(&change, current.version, None, now)
                    .await
                    .expect("applies")
                else {
                    panic!("no conflict here");
                };
                if current.owner != stranger {
                    written.extend(events);
                }
                *current = change.goal;
            }
        }
        let tenant = first.owner.clone();
        let all = store
            .tenant_events_after(&tenant, None, 0, 100)
            .expect("reads");
        assert_eq!(all, written, "the tenant's, in commit order, as written");
        assert!(all.windows(2).all(|pair| pair[0].cursor < pair[1].cursor));
        let page = store
            .tenant_events_after(&tenant, None, all[1].cursor, 2)
            .expect("reads");
        assert_eq!(page, all[2..4].to_vec());
        let mine = store
            .tenant_events_after(&tenant, Some(&second.id), all[0].cursor, 100)
            .expect("reads");
        let expected: Vec<Event> = all
            .iter()
            .filter(|event| {
                matches!(&event.payload, crate::domain::EventPayload::Evaluated { goal_id, .. } if *goal_id == second.id)
            })
            .cloned()
            .collect();
        assert_eq!(mine, expected);
        let last = all.last().expect("some").cursor;
        assert!(store
            .tenant_events_after(&tenant, None, last, 100)
            .expect("reads")
            .is_empty());
    }
}
