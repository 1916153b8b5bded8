//! Runs on PostgreSQL ([`Runs`]): reservations under the goal's row lock,
//! and the runs orphaned by replicas whose lease lapsed.

use tokio_postgres::Row;

use super::cached::Cached;
use super::{goal_id, int, pool_error, timestamp, unsigned, PostgresStore};
use crate::domain::{RunId, Timestamp};
use crate::storage::group_commit::Pending;
use crate::storage::prepared::failed;
use crate::storage::{RunEnd, RunReservation, Runs, StoreError, StoredRun, Written};

/// A run reserved: (run id, goal id, iteration, started ms, replica,
/// report), as `runs` stores them.
type RunRow = (String, String, i64, i64, String, Option<String>);

/// Inserts an in-flight run unless the goal has one in flight already
/// (another replica's) or the iteration is taken: false when it did not.
async fn insert_run_row(
    client: &Cached<impl deadpool_postgres::GenericClient>,
    (run_id, goal, iteration, started_ms, replica, report): &RunRow,
) -> Result<bool, StoreError> {
    let busy = client
        .query_opt(
            "SELECT 1 FROM runs WHERE goal_id = $1 AND status = 'in-flight' LIMIT 1",
            &[goal],
        )
        .await?;
    if busy.is_some() {
        return Ok(false);
    }
    let inserted = client
        .execute(
            "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, replica, report)
             VALUES ($1, $2, $3, 'in-flight', $4, $5, $6)
             ON CONFLICT DO NOTHING",
            &[run_id, goal, iteration, started_ms, replica, report],
        )
        .await?;
    Ok(inserted == 1)
}

fn reservation_from_row(row: &Row) -> Result<RunReservation, StoreError> {
    let run_id: String = row.try_get(0)?;
    let goal: String = row.try_get(1)?;
    Ok(RunReservation {
        run_id: RunId::parse(&run_id)
            .ok_or_else(|| StoreError::Corrupt(format!("run id {run_id:?}")))?,
        goal_id: goal_id(&goal)?,
        iteration: unsigned(row.try_get(2)?)?,
        started_at: timestamp(row.try_get(3)?)?,
        // Runs found in flight are closed by the restart rule, which never
        // reads what was reported.
        report: None,
    })
}

/// In-flight runs of replicas whose lease lapsed.
const ORPHANED_RUNS: &str = "SELECT run_id, goal_id, iteration, started_ms FROM runs r
     WHERE status = 'in-flight'
       AND NOT EXISTS (SELECT 1 FROM replicas p
                       WHERE p.id = r.replica AND p.alive_until_ms > goalpost_now_ms())
     ORDER BY started_ms";

impl Runs for PostgresStore {
    /// The fail-closed re-read and the reservation in one transaction: the
    /// goal's row is locked, must be active at `expected_version`, and
    /// must have no run in flight (another replica's); the insert cannot
    /// take an iteration twice (`UNIQUE (goal_id, iteration)`). Any of
    /// these failing is a conflict: the engine re-reads, and a goal whose
    /// version did not move is held by a run elsewhere.
    fn reserve_run(&self, run: &RunReservation, expected_version: u64) -> Pending<Written<()>> {
        let run_id = run.run_id.as_str().to_string();
        let goal = run.goal_id.as_str().to_string();
        let report = run.report.clone();
        let started_ms = run.started_at.unix_ms();
        let (iteration, expected_version) = match (int(run.iteration), int(expected_version)) {
            (Ok(iteration), Ok(expected)) => (iteration, expected),
            (Err(error), _) | (_, Err(error)) => return failed(error),
        };
        let (pool, replica) = (self.pool.clone(), self.replica.clone());
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            let current = transaction
                .query_opt(
                    "SELECT version FROM goals WHERE id = $1 AND state = 'active' FOR UPDATE",
                    &[&goal],
                )
                .await?;
            if current.map(|row| row.get::<_, i64>(0)) != Some(expected_version) {
                return Ok(Written::Conflict);
            }
            let row = (run_id, goal, iteration, started_ms, replica, report);
            if !insert_run_row(&transaction, &row).await? {
                return Ok(Written::Conflict);
            }
            transaction.commit().await?;
            Ok(Written::Done(()))
        })
    }

    fn discard_run(&self, run: &RunId, at: Timestamp) -> Pending<()> {
        let run = run.as_str().to_string();
        let at_ms = at.unix_ms();
        let pool = self.pool.clone();
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            client
                .execute(
                    "UPDATE runs SET status = 'discarded', ended_ms = $2
                     WHERE run_id = $1 AND status = 'in-flight'",
                    &[&run, &at_ms],
                )
                .await?;
            Ok(())
        })
    }

    /// Only the runs of replicas that are gone: another live replica's
    /// runs in flight are its own to finish.
    fn runs_in_flight(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.rows(ORPHANED_RUNS, Vec::new(), reservation_from_row)
    }

    fn runs_orphaned(&self) -> Result<Vec<RunReservation>, StoreError> {
        self.rows(ORPHANED_RUNS, Vec::new(), reservation_from_row)
    }

    fn run(&self, run: &RunId) -> Result<Option<StoredRun>, StoreError> {
        let found = self.rows(
            "SELECT goal_id, iteration, status, report FROM runs WHERE run_id = $1",
            vec![Box::new(run.as_str().to_string())],
            |row| {
                let status: String = row.try_get(2)?;
                let end = RunEnd::from_status(&status)?;
                Ok(StoredRun {
                    goal_id: goal_id(&row.try_get::<_, String>(0)?)?,
                    iteration: unsigned(row.try_get(1)?)?,
                    end,
                    report: row.try_get(3)?,
                })
            },
        )?;
        Ok(found.into_iter().next())
    }
}
