//! The SQLite [`Store`]: one connection behind a mutex (SQLite serialises
//! writers anyway), WAL for file databases, one transaction per change.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::migrations::migrate;
use super::record::{from_json, to_json, EvaluationRecord, EventRecord, GoalRecord};
use super::{DbLocation, RunReservation, Store, StoreError, Written};
use crate::domain::{
    Change, Evaluation, Event, Goal, GoalId, GoalState, Mode, RunId, Tenant, Timestamp,
};

pub struct SqliteStore {
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

fn int(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{value} does not fit SQLite")))
}

fn unsigned(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("negative count {value}")))
}

impl SqliteStore {
    /// Opens (creating if needed) and migrates the database.
    pub fn open(location: &DbLocation) -> Result<SqliteStore, StoreError> {
        let opened = match location {
            DbLocation::Memory => Connection::open_in_memory(),
            DbLocation::File(path) => Connection::open(path),
        };
        let mut connection = opened.map_err(|source| StoreError::Open {
            location: location.to_string(),
            source,
        })?;
        connection.busy_timeout(Duration::from_secs(5))?;
        if let DbLocation::File(_) = location {
            // `journal_mode` answers with the mode in effect.
            let mode: String =
                connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                tracing::warn!(mode, "SQLite refused WAL mode");
            }
            connection.pragma_update(None, "synchronous", "NORMAL")?;
        }
        connection.pragma_update(None, "foreign_keys", "ON")?;
        migrate(&mut connection)?;
        Ok(SqliteStore {
            connection: Mutex::new(connection),
        })
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no half-written transaction
        // (it rolls back on drop), so the connection is still usable.
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn deadline_ms(goal: &Goal) -> Option<i64> {
    goal.deadline().map(Timestamp::unix_ms)
}

fn write_goal_columns(
    transaction: &Transaction<'_>,
    goal: &Goal,
    expected_version: u64,
) -> Result<usize, StoreError> {
    let record = to_json(&GoalRecord::from_goal(goal))?;
    Ok(transaction.execute(
        "UPDATE goals SET state = ?2, paused = ?3, mode = ?4, deadline_ms = ?5, next_fire_ms = ?6,
                          version = ?7, record = ?8
         WHERE id = ?1 AND version = ?9",
        params![
            goal.id.as_str(),
            goal.state.as_str(),
            goal.paused,
            goal.continuation.mode.as_str(),
            deadline_ms(goal),
            goal.next_fire_at.map(Timestamp::unix_ms),
            int(goal.version)?,
            record,
            int(expected_version)?,
        ],
    )?)
}

fn goal_from_row(record: &str) -> Result<Goal, StoreError> {
    from_json::<GoalRecord>(record)?.into_goal()
}

fn ids(connection: &Connection, sql: &str, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
    let mut statement = connection.prepare(sql)?;
    let rows = statement.query_map(params![now.unix_ms()], |row| row.get::<_, String>(0))?;
    rows.map(|row| {
        let text = row?;
        GoalId::parse(&text).ok_or_else(|| StoreError::Corrupt(format!("goal id {text:?}")))
    })
    .collect()
}

impl Store for SqliteStore {
    fn insert_goal(&self, goal: &Goal) -> Result<(), StoreError> {
        let record = to_json(&GoalRecord::from_goal(goal))?;
        self.connection().execute(
            "INSERT INTO goals (id, tenant, state, paused, mode, deadline_ms, next_fire_ms, created_ms, version, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                goal.id.as_str(),
                goal.owner.as_str(),
                goal.state.as_str(),
                goal.paused,
                goal.continuation.mode.as_str(),
                deadline_ms(goal),
                goal.next_fire_at.map(Timestamp::unix_ms),
                goal.created_at.unix_ms(),
                int(goal.version)?,
                record,
            ],
        )?;
        Ok(())
    }

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError> {
        let record: Option<String> = self
            .connection()
            .query_row(
                "SELECT record FROM goals WHERE id = ?1",
                params![id.as_str()],
                |row| row.get(0),
            )
            .optional()?;
        record.as_deref().map(goal_from_row).transpose()
    }

    fn goals(&self, tenant: &Tenant, state: Option<GoalState>) -> Result<Vec<Goal>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare(
            "SELECT record FROM goals WHERE tenant = ?1 AND (?2 IS NULL OR state = ?2)
             ORDER BY created_ms, rowid",
        )?;
        let rows = statement.query_map(
            params![tenant.as_str(), state.map(GoalState::as_str)],
            |row| row.get::<_, String>(0),
        )?;
        rows.map(|row| goal_from_row(&row?)).collect()
    }

    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Result<Written<Vec<Event>>, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        if write_goal_columns(&transaction, &change.goal, expected_version)? != 1 {
            return Ok(Written::Conflict);
        }
        let goal_id = change.goal.id.as_str();
        let last: i64 = transaction.query_row(
            "SELECT COALESCE(MAX(sequence), 0) FROM events WHERE goal_id = ?1",
            params![goal_id],
            |row| row.get(0),
        )?;
        let mut sequence = unsigned(last)?;
        let mut events = Vec::with_capacity(change.events.len());
        for payload in &change.events {
            sequence += 1;
            transaction.execute(
                "INSERT INTO events (goal_id, sequence, at_ms, record) VALUES (?1, ?2, ?3, ?4)",
                params![
                    goal_id,
                    int(sequence)?,
                    at.unix_ms(),
                    to_json(&EventRecord::from_payload(payload))?
                ],
            )?;
            events.push(Event {
                sequence,
                at,
                payload: payload.clone(),
            });
        }
        if let Some(evaluation) = &change.evaluation {
            transaction.execute(
                "INSERT INTO evaluations (goal_id, run_id, iteration, record) VALUES (?1, ?2, ?3, ?4)",
                params![
                    goal_id,
                    evaluation.run_id.as_str(),
                    int(evaluation.iteration)?,
                    to_json(&EvaluationRecord::from_evaluation(evaluation))?,
                ],
            )?;
        }
        if let Some(run) = run {
            transaction.execute(
                "UPDATE runs SET status = 'recorded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
                params![run.as_str(), at.unix_ms()],
            )?;
        }
        transaction.commit()?;
        Ok(Written::Done(events))
    }

    fn reserve_run(
        &self,
        run: &RunReservation,
        expected_version: u64,
    ) -> Result<Written<()>, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        let version: Option<i64> = transaction
            .query_row(
                "SELECT version FROM goals WHERE id = ?1",
                params![run.goal_id.as_str()],
                |row| row.get(0),
            )
            .optional()?;
        if version != Some(int(expected_version)?) {
            return Ok(Written::Conflict);
        }
        transaction.execute(
            "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms) VALUES (?1, ?2, ?3, 'in-flight', ?4)",
            params![
                run.run_id.as_str(),
                run.goal_id.as_str(),
                int(run.iteration)?,
                run.started_at.unix_ms()
            ],
        )?;
        transaction.commit()?;
        Ok(Written::Done(()))
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Result<(), StoreError> {
        self.connection().execute(
            "UPDATE runs SET status = 'discarded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
            params![run.as_str(), at.unix_ms()],
        )?;
        Ok(())
    }

    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare(
            "SELECT run_id, goal_id, iteration, started_ms FROM runs WHERE status = 'in-flight' ORDER BY started_ms",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })?;
        rows.map(|row| {
            let (run_id, goal_id, iteration, started_ms) = row?;
            Ok(RunReservation {
                run_id: RunId::parse(&run_id)
                    .ok_or_else(|| StoreError::Corrupt(format!("run id {run_id:?}")))?,
                goal_id: GoalId::parse(&goal_id)
                    .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
                iteration: unsigned(iteration)?,
                started_at: Timestamp::from_unix_ms(started_ms)
                    .ok_or_else(|| StoreError::Corrupt(format!("timestamp {started_ms}")))?,
            })
        })
        .collect()
    }

    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare(
            "SELECT sequence, at_ms, record FROM events WHERE goal_id = ?1 AND sequence > ?2 ORDER BY sequence",
        )?;
        // Sequences past i64 cannot exist, so clamping keeps the meaning.
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows = statement.query_map(params![goal.as_str(), after], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        rows.map(|row| {
            let (sequence, at_ms, record) = row?;
            Ok(Event {
                sequence: unsigned(sequence)?,
                at: Timestamp::from_unix_ms(at_ms)
                    .ok_or_else(|| StoreError::Corrupt(format!("timestamp {at_ms}")))?,
                payload: from_json::<EventRecord>(&record)?.into_payload()?,
            })
        })
        .collect()
    }

    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT record FROM evaluations WHERE goal_id = ?1 ORDER BY iteration")?;
        let rows = statement.query_map(params![goal.as_str()], |row| row.get::<_, String>(0))?;
        rows.map(|row| from_json::<EvaluationRecord>(&row?)?.into_evaluation())
            .collect()
    }

    fn due_schedule_goals(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        let sql = format!(
            "SELECT id FROM goals
             WHERE state = 'active' AND paused = 0 AND mode = '{}'
               AND (next_fire_ms IS NULL OR next_fire_ms <= ?1)
             ORDER BY COALESCE(next_fire_ms, 0), created_ms",
            Mode::Schedule.as_str()
        );
        ids(&self.connection(), &sql, now)
    }

    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        ids(
            &self.connection(),
            "SELECT id FROM goals WHERE state = 'active' AND deadline_ms IS NOT NULL AND deadline_ms <= ?1
             ORDER BY deadline_ms",
            now,
        )
    }
}
