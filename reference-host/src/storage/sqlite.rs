//! The SQLite [`Store`]: one connection behind a mutex (SQLite serialises
//! writers anyway), WAL for file databases, one transaction per change.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::migrations::migrate;
use super::record::{from_json, to_json, EvaluationRecord, EventRecord, GoalRecord};
use super::{
    CreateGuard, DbLocation, Inserted, RunReservation, Store, StoreError, StoredKey, Written,
};
use crate::domain::{
    parse_verifier, wire, Change, CriteriaVerifier, Evaluation, Event, Goal, GoalId, GoalState,
    Mode, RunId, Tenant, Timestamp, VerifierName,
};

/// More than the distinct statements this store runs.
const STATEMENT_CACHE: usize = 64;

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
        // Every statement below is prepared once and reused: parsing SQL on
        // each call was a quarter of a `continue` (docs/PROFILING.md).
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
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
    Ok(transaction
        .prepare_cached(
            "UPDATE goals SET state = ?2, paused = ?3, mode = ?4, deadline_ms = ?5, next_fire_ms = ?6,
                              version = ?7, record = ?8
             WHERE id = ?1 AND version = ?9",
        )?
        .execute(params![
            goal.id.as_str(),
            goal.state.as_str(),
            goal.paused,
            goal.continuation.mode.as_str(),
            deadline_ms(goal),
            goal.next_fire_at.map(Timestamp::unix_ms),
            int(goal.version)?,
            record,
            int(expected_version)?,
        ])?)
}

fn goal_from_row(record: &str) -> Result<Goal, StoreError> {
    from_json::<GoalRecord>(record)?.into_goal()
}

fn verifier_from_row(record: &str, created_ms: i64) -> Result<CriteriaVerifier, StoreError> {
    let value: serde_json::Value = from_json(record)?;
    let created_at = Timestamp::from_unix_ms(created_ms)
        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {created_ms}")))?;
    parse_verifier(&value)
        .map(|new| new.into_verifier(created_at))
        .map_err(|error| StoreError::Corrupt(format!("verifier: {error}")))
}

/// Modes the scheduler drives and states that count as open, as SQL lists
/// (the quota definitions of `engine::quota`).
const ARMED_MODES: &str = "('schedule', 'heartbeat')";
const OPEN_STATES: &str = "('active', 'escalated')";

fn count(connection: &Connection, sql: &str, tenant: &Tenant) -> Result<u64, StoreError> {
    let value: i64 = connection
        .prepare_cached(sql)?
        .query_row(params![tenant.as_str()], |row| row.get(0))?;
    unsigned(value)
}

fn open_goals(connection: &Connection, tenant: &Tenant) -> Result<u64, StoreError> {
    count(
        connection,
        &format!("SELECT COUNT(*) FROM goals WHERE tenant = ?1 AND state IN {OPEN_STATES}"),
        tenant,
    )
}

fn open_armed(connection: &Connection, tenant: &Tenant) -> Result<u64, StoreError> {
    count(
        connection,
        &format!(
            "SELECT COUNT(*) FROM goals WHERE tenant = ?1 AND state IN {OPEN_STATES} AND mode IN {ARMED_MODES}"
        ),
        tenant,
    )
}

fn stored_key(
    connection: &Connection,
    tenant: &Tenant,
    key: &str,
    expired_at_or_before: Timestamp,
) -> Result<Option<StoredKey>, StoreError> {
    let row: Option<(String, String, String, String)> = connection
        .prepare_cached(
            "SELECT goal_id, fingerprint, answer, etag FROM idempotency_keys
             WHERE tenant = ?1 AND key = ?2 AND created_ms > ?3",
        )?
        .query_row(
            params![tenant.as_str(), key, expired_at_or_before.unix_ms()],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()?;
    row.map(|(goal_id, fingerprint, answer, etag)| {
        Ok(StoredKey {
            goal_id: GoalId::parse(&goal_id)
                .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
            fingerprint,
            answer: from_json(&answer)?,
            etag,
        })
    })
    .transpose()
}

fn insert_goal_row(connection: &Connection, goal: &Goal) -> Result<(), StoreError> {
    let record = to_json(&GoalRecord::from_goal(goal))?;
    connection
        .prepare_cached(
            "INSERT INTO goals (id, tenant, state, paused, mode, deadline_ms, next_fire_ms, created_ms, version, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
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
        ])?;
    Ok(())
}

fn ids(connection: &Connection, sql: &str, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let rows = statement.query_map(params![now.unix_ms()], |row| row.get::<_, String>(0))?;
    rows.map(|row| {
        let text = row?;
        GoalId::parse(&text).ok_or_else(|| StoreError::Corrupt(format!("goal id {text:?}")))
    })
    .collect()
}

impl Store for SqliteStore {
    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        for goal in goals {
            insert_goal_row(&transaction, goal)?;
        }
        transaction.commit()?;
        Ok(())
    }

    fn insert_goal(&self, goal: &Goal) -> Result<(), StoreError> {
        let record = to_json(&GoalRecord::from_goal(goal))?;
        self.connection()
            .prepare_cached(
                "INSERT INTO goals (id, tenant, state, paused, mode, deadline_ms, next_fire_ms, created_ms, version, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
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
            ])?;
        Ok(())
    }

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError> {
        let record: Option<String> = self
            .connection()
            .prepare_cached("SELECT record FROM goals WHERE id = ?1")?
            .query_row(params![id.as_str()], |row| row.get(0))
            .optional()?;
        record.as_deref().map(goal_from_row).transpose()
    }

    fn goals(&self, tenant: &Tenant, state: Option<GoalState>) -> Result<Vec<Goal>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare_cached(
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
        let last: i64 = transaction
            .prepare_cached("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE goal_id = ?1")?
            .query_row(params![goal_id], |row| row.get(0))?;
        let mut sequence = unsigned(last)?;
        let mut events = Vec::with_capacity(change.events.len());
        for payload in &change.events {
            sequence += 1;
            transaction
                .prepare_cached(
                    "INSERT INTO events (goal_id, sequence, at_ms, record) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    goal_id,
                    int(sequence)?,
                    at.unix_ms(),
                    to_json(&EventRecord::from_payload(payload))?
                ])?;
            events.push(Event {
                sequence,
                at,
                payload: payload.clone(),
            });
        }
        if let Some(evaluation) = &change.evaluation {
            transaction
                .prepare_cached(
                    "INSERT INTO evaluations (goal_id, run_id, iteration, record) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    goal_id,
                    evaluation.run_id.as_str(),
                    int(evaluation.iteration)?,
                    to_json(&EvaluationRecord::from_evaluation(evaluation))?,
                ])?;
        }
        if let Some(run) = run {
            transaction
                .prepare_cached(
                    "UPDATE runs SET status = 'recorded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
                )?
                .execute(params![run.as_str(), at.unix_ms()])?;
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
            .prepare_cached("SELECT version FROM goals WHERE id = ?1")?
            .query_row(params![run.goal_id.as_str()], |row| row.get(0))
            .optional()?;
        if version != Some(int(expected_version)?) {
            return Ok(Written::Conflict);
        }
        transaction
            .prepare_cached(
                "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms) VALUES (?1, ?2, ?3, 'in-flight', ?4)",
            )?
            .execute(params![
                run.run_id.as_str(),
                run.goal_id.as_str(),
                int(run.iteration)?,
                run.started_at.unix_ms()
            ])?;
        transaction.commit()?;
        Ok(Written::Done(()))
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Result<(), StoreError> {
        self.connection()
            .prepare_cached(
                "UPDATE runs SET status = 'discarded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
            )?
            .execute(params![run.as_str(), at.unix_ms()])?;
        Ok(())
    }

    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare_cached(
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
        let mut statement = connection.prepare_cached(
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
        let mut statement = connection.prepare_cached(
            "SELECT record FROM evaluations WHERE goal_id = ?1 ORDER BY iteration",
        )?;
        let rows = statement.query_map(params![goal.as_str()], |row| row.get::<_, String>(0))?;
        rows.map(|row| from_json::<EvaluationRecord>(&row?)?.into_evaluation())
            .collect()
    }

    fn due_schedule_goals(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        // `COALESCE` is the expression index `goals_due` holds: written as
        // `IS NULL OR <=`, SQLite would scan every active schedule goal.
        let sql = format!(
            "SELECT id FROM goals
             WHERE state = 'active' AND paused = 0 AND mode = '{}'
               AND COALESCE(next_fire_ms, 0) <= ?1
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

    fn heartbeat_goals(&self) -> Result<Vec<GoalId>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare_cached(
            "SELECT id FROM goals WHERE state = 'active' AND paused = 0 AND mode = ?1
             ORDER BY created_ms, rowid",
        )?;
        let rows = statement.query_map(params![Mode::Heartbeat.as_str()], |row| {
            row.get::<_, String>(0)
        })?;
        rows.map(|row| {
            let text = row?;
            GoalId::parse(&text).ok_or_else(|| StoreError::Corrupt(format!("goal id {text:?}")))
        })
        .collect()
    }

    fn put_verifier(
        &self,
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
        replace: bool,
    ) -> Result<Written<()>, StoreError> {
        let record = to_json(&wire::verifier_registration(verifier))?;
        let sql = if replace {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, name) DO UPDATE SET created_ms = ?3, record = ?4"
        } else {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, name) DO NOTHING"
        };
        let written = self.connection().prepare_cached(sql)?.execute(params![
            tenant.as_str(),
            verifier.name.as_str(),
            verifier.created_at.unix_ms(),
            record
        ])?;
        Ok(if written == 1 {
            Written::Done(())
        } else {
            Written::Conflict
        })
    }

    fn verifier(
        &self,
        tenant: &Tenant,
        name: &VerifierName,
    ) -> Result<Option<CriteriaVerifier>, StoreError> {
        let row: Option<(String, i64)> = self
            .connection()
            .prepare_cached(
                "SELECT record, created_ms FROM verifiers WHERE tenant = ?1 AND name = ?2",
            )?
            .query_row(params![tenant.as_str(), name.as_str()], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?;
        row.map(|(record, created_ms)| verifier_from_row(&record, created_ms))
            .transpose()
    }

    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError> {
        let connection = self.connection();
        let mut statement = connection.prepare_cached(
            "SELECT record, created_ms FROM verifiers WHERE tenant = ?1 ORDER BY name",
        )?;
        let rows = statement.query_map(params![tenant.as_str()], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })?;
        rows.map(|row| {
            let (record, created_ms) = row?;
            verifier_from_row(&record, created_ms)
        })
        .collect()
    }

    fn insert_goal_guarded(
        &self,
        goal: &Goal,
        guard: &CreateGuard,
    ) -> Result<Inserted, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        if let Some((key, _)) = &guard.key {
            if let Some(stored) = stored_key(
                &transaction,
                &goal.owner,
                key,
                guard.keys_expire_at_or_before,
            )? {
                return Ok(Inserted::KeyTaken(stored));
            }
        }
        if open_goals(&transaction, &goal.owner)? >= guard.max_open_goals {
            return Ok(Inserted::TooManyGoals);
        }
        let armed = matches!(goal.continuation.mode, Mode::Schedule | Mode::Heartbeat);
        if armed && open_armed(&transaction, &goal.owner)? >= guard.max_open_armed {
            return Ok(Inserted::TooManyArmed);
        }
        insert_goal_row(&transaction, goal)?;
        if let Some((key, fingerprint)) = &guard.key {
            // An expired row of the same key is replaced.
            transaction
                .prepare_cached(
                    "INSERT INTO idempotency_keys
                         (tenant, key, fingerprint, goal_id, answer, etag, created_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (tenant, key) DO UPDATE
                     SET fingerprint = ?3, goal_id = ?4, answer = ?5, etag = ?6, created_ms = ?7",
                )?
                .execute(params![
                    goal.owner.as_str(),
                    key,
                    fingerprint,
                    goal.id.as_str(),
                    to_json(&wire::goal(goal))?,
                    goal.etag(),
                    goal.created_at.unix_ms()
                ])?;
        }
        transaction.commit()?;
        Ok(Inserted::Done)
    }

    fn idempotency_key(
        &self,
        tenant: &Tenant,
        key: &str,
        expired_at_or_before: Timestamp,
    ) -> Result<Option<StoredKey>, StoreError> {
        stored_key(&self.connection(), tenant, key, expired_at_or_before)
    }

    fn purge_idempotency_keys(&self, at: Timestamp) -> Result<usize, StoreError> {
        Ok(self
            .connection()
            .prepare_cached("DELETE FROM idempotency_keys WHERE created_ms <= ?1")?
            .execute(params![at.unix_ms()])?)
    }

    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        open_armed(&self.connection(), tenant)
    }
}
