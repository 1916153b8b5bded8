//! Goals on PostgreSQL ([`Goals`]): the versioned change (goal, runs,
//! events, evaluation in one transaction), the guarded create under the
//! tenant's locked counts, and retention.

use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio_postgres::Row;

use super::cached::Cached;
use super::keys::stored_key;
use super::{ids, int, pool_error, unsigned, PostgresStore};
use crate::domain::{
    Change, Event, EventPayload, Goal, GoalId, GoalState, RunId, RunIds, Tenant, Timestamp,
};
use crate::storage::group_commit::Pending;
use crate::storage::prepared::{failed, GoalRow, PreparedChange, PreparedCreate};
use crate::storage::record::{from_json, GoalRecord};
use crate::storage::{CreateGuard, Goals, Inserted, StoreError, WriteGuard, WrittenIfIdle};

/// A goal's record, its run ids in order and the position of the first
/// (the runs before it were forgotten with their history), read in one
/// statement.
const SELECT_GOALS: &str = "SELECT g.record,
        COALESCE((SELECT array_agg(r.run_id ORDER BY r.position) FROM goal_runs r
                  WHERE r.goal_id = g.id), '{}'),
        COALESCE((SELECT MIN(r.position) FROM goal_runs r WHERE r.goal_id = g.id), 0)
     FROM goals g ";

fn into_goal(row: &Row) -> Result<Goal, StoreError> {
    let record: String = row.try_get(0)?;
    let run_ids: Vec<String> = row.try_get(1)?;
    let skipped = usize::try_from(row.try_get::<_, i64>(2)?).unwrap_or(0);
    from_json::<GoalRecord>(&record)?.into_goal(skipped, &run_ids)
}

async fn insert_goal_row(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    row: &GoalRow,
) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO goals (id, tenant, state, paused, mode, deadline_ms, next_fire_ms,
                                created_ms, version, record, closed_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &row.id,
                &row.tenant,
                &row.state,
                &row.paused,
                &row.mode,
                &row.deadline_ms,
                &row.next_fire_ms,
                &row.created_ms,
                &row.version,
                &row.record,
                &row.closed_ms,
            ],
        )
        .await?;
    append_runs(client, &row.id, &row.run_ids, 0).await
}

/// Stores the run ids from position `from` (of the whole list) on.
async fn append_runs(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    goal: &str,
    run_ids: &RunIds,
    from: usize,
) -> Result<(), StoreError> {
    let first = from.max(run_ids.skipped());
    for (offset, run_id) in run_ids.iter_from(first).enumerate() {
        let position = int((first + offset) as u64)?;
        client
            .execute(
                "INSERT INTO goal_runs (goal_id, position, run_id) VALUES ($1, $2, $3)",
                &[&goal, &position, &run_id.as_str()],
            )
            .await?;
    }
    Ok(())
}

/// What a tenant holds: open goals, open goals on an arm (`schedule` and
/// `heartbeat`), and goals in any state (the quota definitions of
/// `engine::quota`), as its counts row keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Held {
    open: u64,
    armed: u64,
    total: u64,
}

/// Locks the tenant's counts row (creating it if the tenant has none yet)
/// until the transaction ends, and reads it. Every write that checks a
/// tenant quota takes this lock first (creates, arming writes, verifier
/// registrations), so such writes of one tenant queue here on every
/// replica and each counts what the last one committed.
pub(super) async fn lock_tenant_counts(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    tenant: &str,
) -> Result<Held, StoreError> {
    client
        .execute(
            "INSERT INTO tenant_counts (tenant, open, armed) VALUES ($1, 0, 0)
             ON CONFLICT (tenant) DO NOTHING",
            &[&tenant],
        )
        .await?;
    let held = client
        .query_one(
            "SELECT open, armed, total FROM tenant_counts WHERE tenant = $1 FOR UPDATE",
            &[&tenant],
        )
        .await?;
    Ok(Held {
        open: unsigned(held.try_get(0)?)?,
        armed: unsigned(held.try_get(1)?)?,
        total: unsigned(held.try_get(2)?)?,
    })
}

/// The tenant's open `commitment` goals: armed too ([`crate::domain::Mode::is_armed`]),
/// counted apart from the counts row, whose trigger (migration 2) counts
/// `schedule` and `heartbeat` only; a count here keeps the schema as it is.
/// Read only for a write that arms a goal, after the tenant's row is
/// locked.
async fn open_commitments(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    tenant: &str,
) -> Result<u64, StoreError> {
    let count: i64 = client
        .query_one(
            "SELECT COUNT(*) FROM goals WHERE tenant = $1
             AND state IN ('active', 'escalated') AND mode = 'commitment'",
            &[&tenant],
        )
        .await?
        .try_get(0)?;
    unsigned(count)
}

/// The statement a change writes the goal's row with: only while the row
/// is still at the version the change was decided on.
const UPDATE_GOAL: &str = "UPDATE goals SET state = $3, paused = $4, mode = $5, deadline_ms = $6,
                      next_fire_ms = $7, version = $8, record = $9, closed_ms = $10
     WHERE id = $1 AND version = $2";

/// What a store wrapping this one builds its own statements on: the
/// PostgreSQL replicas of the kill matrix (crate `goalpost-host-builds`)
/// replace one statement each and keep the rest of this store.
impl PostgresStore {
    /// The connections, for statements of a wrapping store's own.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// [`Goals::apply_guarded`] with `update` writing the goal's row: the
    /// store passes [`UPDATE_GOAL`], a deliberately broken build its own
    /// (the rest of the transaction is this store's). The guard is looked
    /// at under the goal's row lock in the same transaction.
    pub fn write_change_with(
        &self,
        update: &'static str,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let prepared = PreparedChange::new(change, expected_version, run, at);
        let PreparedChange {
            row,
            expected_version,
            records,
            evaluation,
            run,
            at_ms,
            payloads,
            tenant,
        } = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return failed(error),
        };
        let closes = payloads
            .iter()
            .any(|payload| matches!(payload, EventPayload::Closed { .. }));
        let relay = Arc::clone(&self.relay);
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            if let WriteGuard::ArmedBelow(most) = guard {
                // The owner's counts locked first, as a create locks them.
                let armed = lock_tenant_counts(&transaction, &row.tenant).await?.armed
                    + open_commitments(&transaction, &row.tenant).await?;
                if armed >= most {
                    return Ok(WrittenIfIdle::TooManyArmed);
                }
            }
            if guard == WriteGuard::NoRunInFlight {
                // The goal's row lock first: a reservation holds it until
                // its run is stored, so one that took it first has
                // committed by the time the runs are read below (under
                // READ COMMITTED, the default this store keeps, each
                // statement reads what committed before it began), and one
                // that comes later waits, then finds the goal closed.
                transaction
                    .query_opt("SELECT 1 FROM goals WHERE id = $1 FOR UPDATE", &[&row.id])
                    .await?;
                let in_flight = transaction
                    .query_opt(
                        "SELECT 1 FROM runs WHERE goal_id = $1 AND status = 'in-flight' LIMIT 1",
                        &[&row.id],
                    )
                    .await?;
                if in_flight.is_some() {
                    return Ok(WrittenIfIdle::RunInFlight);
                }
            }
            let updated = transaction
                .execute(
                    update,
                    &[
                        &row.id,
                        &expected_version,
                        &row.state,
                        &row.paused,
                        &row.mode,
                        &row.deadline_ms,
                        &row.next_fire_ms,
                        &row.version,
                        &row.record,
                        &row.closed_ms,
                    ],
                )
                .await?;
            if updated != 1 {
                return Ok(WrittenIfIdle::Conflict);
            }
            if let Some(run) = &run {
                // One verdict per run: a run another replica already
                // closed (its lease lapsed) gets none from here, and
                // nothing of this change is written.
                let ended = transaction
                    .execute(
                        "UPDATE runs SET status = 'recorded', ended_ms = $2
                         WHERE run_id = $1 AND status = 'in-flight'",
                        &[run, &at_ms],
                    )
                    .await?;
                if ended != 1 {
                    return Err(StoreError::RunEnded(run.clone()));
                }
            }
            // Where the stored ids end: one seek, however many there are
            // (a count grew with the goal's age).
            let stored: i64 = transaction
                .query_one(
                    "SELECT COALESCE(MAX(position) + 1, 0) FROM goal_runs WHERE goal_id = $1",
                    &[&row.id],
                )
                .await?
                .try_get(0)?;
            let stored = usize::try_from(stored).unwrap_or(0);
            append_runs(&transaction, &row.id, &row.run_ids, stored).await?;
            let last: i64 = transaction
                .query_one(
                    "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE goal_id = $1",
                    &[&row.id],
                )
                .await?
                .try_get(0)?;
            if let Some((run_id, iteration, record)) = &evaluation {
                transaction
                    .execute(
                        "INSERT INTO evaluations (goal_id, run_id, iteration, record)
                         VALUES ($1, $2, $3, $4)",
                        &[&row.id, run_id, iteration, record],
                    )
                    .await?;
            }
            if row.run_ids.trimmed() {
                // The oldest runs' history goes with their ids
                // (`--max-history-per-goal`): their evaluations, and as
                // many of the oldest events as there are runs forgotten
                // past the ones kept.
                let through = int(row.run_ids.skipped() as u64)?;
                let events_through = last - int(row.run_ids.kept() as u64)?;
                transaction
                    .execute(
                        "DELETE FROM goal_runs WHERE goal_id = $1 AND position < $2",
                        &[&row.id, &through],
                    )
                    .await?;
                transaction
                    .execute(
                        "DELETE FROM evaluations WHERE goal_id = $1 AND iteration <= $2",
                        &[&row.id, &through],
                    )
                    .await?;
                transaction
                    .execute(
                        "DELETE FROM events WHERE goal_id = $1 AND sequence <= $2",
                        &[&row.id, &events_through],
                    )
                    .await?;
            }
            if closes {
                // Every replica hears of the close once it committed; one
                // with a run of the goal in flight cancels it (`relay.rs`).
                transaction
                    .execute("SELECT pg_notify('goalpost_closes', $1)", &[&row.id])
                    .await?;
            }
            // Last before the commit: the cursors lock the tenant's row
            // until then, and the tenant's other event writers wait.
            let newest = take_cursors(&transaction, &row, last, at_ms, &records).await?;
            transaction.commit().await?;
            let (mut sequence, mut cursor) = (unsigned(last)?, newest - records.len() as u64);
            let events: Vec<Event> = payloads
                .into_iter()
                .map(|payload| {
                    sequence += 1;
                    cursor += 1;
                    Event {
                        sequence,
                        cursor,
                        at,
                        payload,
                    }
                })
                .collect();
            if !events.is_empty() {
                relay.committed(&tenant, &events);
            }
            Ok(WrittenIfIdle::Done(events))
        })
    }
}

/// Takes the next cursors of the goal's tenant for `records` and inserts
/// them as the goal's events after sequence `last`; returns the newest
/// cursor. Updating the tenant's `event_cursors` row locks it until the
/// transaction ends, so the tenant's cursors commit in the order they were
/// taken (migration 4). Every replica is notified of the cursors if the
/// transaction commits (`relay.rs`).
async fn take_cursors(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    row: &GoalRow,
    last: i64,
    at_ms: i64,
    records: &[String],
) -> Result<u64, StoreError> {
    if records.is_empty() {
        return Ok(0);
    }
    let count = int(records.len() as u64)?;
    let newest: i64 = client
        .query_one(
            "WITH taken AS (
                 INSERT INTO event_cursors (tenant, newest) VALUES ($1, $2)
                 ON CONFLICT (tenant) DO UPDATE SET newest = event_cursors.newest + EXCLUDED.newest
                 RETURNING newest
             )
             SELECT newest, pg_notify('goalpost_events',
                                      (newest - $2 + 1)::text || ' ' || newest::text || ' '
                                      || 'events'::regclass::oid::text || ' ' || $1)
             FROM taken",
            &[&row.tenant, &count],
        )
        .await?
        .try_get(0)?;
    client
        .execute(
            "INSERT INTO events (goal_id, sequence, at_ms, record, tenant, cursor)
             SELECT $1, $2 + n, $3, record, $4, $5 + n
             FROM unnest($6::text[]) WITH ORDINALITY AS taken (record, n)",
            &[
                &row.id,
                &last,
                &at_ms,
                &row.tenant,
                &(newest - count),
                &records,
            ],
        )
        .await?;
    unsigned(newest)
}

impl Goals for PostgresStore {
    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError> {
        let rows = goals
            .iter()
            .map(GoalRow::new)
            .collect::<Result<Vec<_>, _>>()?;
        let pool = self.pool.clone();
        self.block(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            for row in &rows {
                insert_goal_row(&transaction, row).await?;
            }
            transaction.commit().await?;
            Ok(())
        })
    }

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError> {
        let id = id.as_str().to_string();
        let mut found = self.rows(const_format_goal_by_id(), vec![Box::new(id)], into_goal)?;
        Ok(found.pop())
    }

    /// Nothing is kept in memory: every replica reads the database.
    fn warm(&self, _ids: &[GoalId]) -> Result<usize, StoreError> {
        Ok(0)
    }

    fn goals_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<&GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = after.map_or(String::new(), |id| id.as_str().to_string());
        let tenant = tenant.as_str().to_string();
        match state {
            None => self.rows(
                goals_page_sql(false),
                vec![Box::new(tenant), Box::new(after), Box::new(limit)],
                into_goal,
            ),
            Some(state) => self.rows(
                goals_page_sql(true),
                vec![
                    Box::new(tenant),
                    Box::new(after),
                    Box::new(limit),
                    Box::new(state.as_str()),
                ],
                into_goal,
            ),
        }
    }

    fn apply_guarded(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        self.write_change_with(UPDATE_GOAL, change, expected_version, run, at, guard)
    }

    /// The tenant's count row is locked first: creates of one tenant queue
    /// on it whichever replica serves them, so neither a key nor a quota
    /// can be taken twice.
    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted> {
        let PreparedCreate { row, remembered } = match PreparedCreate::new(goal, guard) {
            Ok(prepared) => prepared,
            Err(error) => return failed(error),
        };
        let armed = goal.continuation.mode.is_armed();
        let guard = guard.clone();
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            let Held {
                open,
                armed: held_armed,
                total,
            } = lock_tenant_counts(&transaction, &row.tenant).await?;
            if let Some((key, _)) = &guard.key {
                let expired = guard.keys_expire_at_or_before.unix_ms();
                if let Some(stored) = stored_key(&transaction, &row.tenant, key, expired).await? {
                    return Ok(Inserted::KeyTaken(stored));
                }
            }
            if open >= guard.max_open_goals {
                return Ok(Inserted::TooManyGoals);
            }
            if total >= guard.max_stored_goals {
                return Ok(Inserted::TooManyStored);
            }
            if armed
                && held_armed + open_commitments(&transaction, &row.tenant).await?
                    >= guard.max_open_armed
            {
                return Ok(Inserted::TooManyArmed);
            }
            insert_goal_row(&transaction, &row).await?;
            if let Some(verifier_ref) = &guard.judge_script {
                transaction
                    .execute(
                        "INSERT INTO judge_scripts (goal_id, verifier_ref) VALUES ($1, $2)",
                        &[&row.id, verifier_ref],
                    )
                    .await?;
            }
            if let (Some((key, fingerprint)), Some((answer, etag))) = (&guard.key, &remembered) {
                transaction
                    .execute(
                        "INSERT INTO idempotency_keys
                             (tenant, key, fingerprint, goal_id, answer, etag, created_ms)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)
                         ON CONFLICT (tenant, key) DO UPDATE
                         SET fingerprint = $3, goal_id = $4, answer = $5, etag = $6,
                             created_ms = $7",
                        &[
                            &row.tenant,
                            key,
                            fingerprint,
                            &row.id,
                            answer,
                            etag,
                            &row.created_ms,
                        ],
                    )
                    .await?;
            }
            transaction.commit().await?;
            Ok(Inserted::Done)
        })
    }

    /// Rows another replica is purging at this moment are skipped, not
    /// waited for: replicas purge side by side.
    fn purge_closed_goals(
        &self,
        closed_at_or_before: Timestamp,
        limit: usize,
    ) -> Pending<Vec<GoalId>> {
        let at_ms = closed_at_or_before.unix_ms();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            // Not a goal with an event its tenant's event webhook has not
            // delivered (at-least-once): its newest event is its largest
            // cursor.
            let rows = transaction
                .query(
                    "SELECT id FROM goals g WHERE closed_ms <= $1
                       AND NOT EXISTS (
                           SELECT 1 FROM event_deliveries d
                           WHERE d.tenant = g.tenant
                             AND d.delivered < (SELECT MAX(e.cursor) FROM events e
                                                WHERE e.goal_id = g.id))
                     ORDER BY closed_ms LIMIT $2
                     FOR UPDATE OF g SKIP LOCKED",
                    &[&at_ms, &limit],
                )
                .await?;
            let purged = rows.iter().map(ids).collect::<Result<Vec<_>, _>>()?;
            // Children first: they name the goal. The goal's delete
            // trigger takes it off its tenant's counts.
            for id in &purged {
                let id = id.as_str();
                for sql in [
                    "DELETE FROM goal_runs WHERE goal_id = $1",
                    "DELETE FROM events WHERE goal_id = $1",
                    "DELETE FROM evaluations WHERE goal_id = $1",
                    "DELETE FROM runs WHERE goal_id = $1",
                    "DELETE FROM idempotency_keys WHERE goal_id = $1",
                    "DELETE FROM judge_scripts WHERE goal_id = $1",
                    "DELETE FROM goals WHERE id = $1",
                ] {
                    transaction.execute(sql, &[&id]).await?;
                }
            }
            transaction.commit().await?;
            Ok(purged)
        })
    }

    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        let found = self.rows(
            "SELECT COALESCE((SELECT armed FROM tenant_counts WHERE tenant = $1), 0)
                    + (SELECT COUNT(*) FROM goals WHERE tenant = $1
                       AND state IN ('active', 'escalated') AND mode = 'commitment')",
            vec![Box::new(tenant.as_str().to_string())],
            |row| unsigned(row.try_get(0)?),
        )?;
        Ok(found.into_iter().next().unwrap_or(0))
    }
}

fn const_format_goal_by_id() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| format!("{SELECT_GOALS} WHERE g.id = $1"))
}

/// A page of a tenant's goals after an id, optionally of one state.
fn goals_page_sql(with_state: bool) -> &'static str {
    static ALL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static ONE_STATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if with_state {
        ONE_STATE.get_or_init(|| {
            format!("{SELECT_GOALS} WHERE g.tenant = $1 AND g.id > $2 AND g.state = $4 ORDER BY g.id LIMIT $3")
        })
    } else {
        ALL.get_or_init(|| {
            format!("{SELECT_GOALS} WHERE g.tenant = $1 AND g.id > $2 ORDER BY g.id LIMIT $3")
        })
    }
}
