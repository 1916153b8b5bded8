//! Runs on SQLite ([`Runs`]): reservations and how they ended.

use rusqlite::{params, OptionalExtension};

use super::{int, unsigned, SqliteStore};
use crate::domain::{GoalId, RunId, Timestamp};
use crate::storage::group_commit::Pending;
use crate::storage::prepared::failed;
use crate::storage::{RunEnd, RunReservation, Runs, StoreError, StoredRun, Written};

impl Runs for SqliteStore {
    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>> {
        let run_id = run.run_id.as_str().to_string();
        let goal_id = run.goal_id.as_str().to_string();
        let started_ms = run.started_at.unix_ms();
        let report = run.report.clone();
        let (iteration, expected_version) = match (int(run.iteration), int(expected_version)) {
            (Ok(iteration), Ok(expected)) => (iteration, expected),
            (Err(error), _) | (_, Err(error)) => return failed(error),
        };
        self.writer.submit(move |connection| {
            let version: Option<i64> = connection
                .prepare_cached("SELECT version FROM goals WHERE id = ?1")?
                .query_row(params![goal_id], |row| row.get(0))
                .optional()?;
            if version != Some(expected_version) {
                return Ok(Written::Conflict);
            }
            connection
                .prepare_cached(
                    "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, report) VALUES (?1, ?2, ?3, 'in-flight', ?4, ?5)",
                )?
                .execute(params![run_id, goal_id, iteration, started_ms, report])?;
            Ok(Written::Done(()))
        })
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()> {
        let run = run.as_str().to_string();
        let at_ms = at.unix_ms();
        self.writer.submit(move |connection| {
            connection
                .prepare_cached(
                    "UPDATE runs SET status = 'discarded', ended_ms = ?2 WHERE run_id = ?1 AND status = 'in-flight'",
                )?
                .execute(params![run, at_ms])?;
            Ok(())
        })
    }

    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError> {
        self.read(|connection| {
            let row = connection
                .prepare_cached(
                    "SELECT goal_id, iteration, status, report FROM runs WHERE run_id = ?1",
                )?
                .query_row(params![run.as_str()], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                    ))
                })
                .optional()?;
            let Some((goal_id, iteration, status, report)) = row else {
                return Ok(None);
            };
            let end = RunEnd::from_status(&status)?;
            Ok(Some(StoredRun {
                goal_id: GoalId::parse(&goal_id)
                    .ok_or_else(|| StoreError::Corrupt(format!("goal id {goal_id:?}")))?,
                iteration: unsigned(iteration)?,
                end,
                report,
            }))
        })
    }

    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.read(|connection| {
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
                    // Recovery records the run; its report is not needed.
                    report: None,
                })
            })
            .collect()
        })
    }
}
