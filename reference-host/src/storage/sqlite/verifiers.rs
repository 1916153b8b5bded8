//! Criteria verifiers and scripted judges on SQLite ([`Verifiers`]).

use rusqlite::{params, OptionalExtension};

use super::{unsigned, SqliteStore};
use crate::domain::{CriteriaVerifier, GoalId, Tenant, VerifierName};
use crate::storage::group_commit::Pending;
use crate::storage::prepared::{failed, PreparedVerifier};
use crate::storage::record::verifier_from_record;
use crate::storage::{Registered, StoreError, Verifiers};

impl Verifiers for SqliteStore {
    fn put_verifier(
        &self,
        tenant: &Tenant,
        verifier: &CriteriaVerifier,
        replace: bool,
        max: Option<u64>,
    ) -> Pending<Registered> {
        let PreparedVerifier {
            tenant,
            name,
            created_ms,
            record,
        } = match PreparedVerifier::new(tenant, verifier) {
            Ok(prepared) => prepared,
            Err(error) => return failed(error),
        };
        let sql = if replace {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, name) DO UPDATE SET created_ms = ?3, record = ?4"
        } else {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, name) DO NOTHING"
        };
        // The one writer serialises registrations: the count below is the
        // tenant's as it is when the row goes in.
        self.writer.submit(move |connection| {
            if let Some(most) = max {
                let taken = connection
                    .prepare_cached("SELECT 1 FROM verifiers WHERE tenant = ?1 AND name = ?2")?
                    .query_row(params![tenant, name], |_| Ok(()))
                    .optional()?
                    .is_some();
                let held: i64 = connection
                    .prepare_cached("SELECT COUNT(*) FROM verifiers WHERE tenant = ?1")?
                    .query_row(params![tenant], |row| row.get(0))?;
                if !taken && unsigned(held)? >= most {
                    return Ok(Registered::Full);
                }
            }
            let written = connection
                .prepare_cached(sql)?
                .execute(params![tenant, name, created_ms, record])?;
            Ok(if written == 1 {
                Registered::Done
            } else {
                Registered::Taken
            })
        })
    }

    fn verifier(
        &self,
        tenant: &Tenant,
        name: &VerifierName,
    ) -> Result<Option<CriteriaVerifier>, StoreError> {
        let row: Option<(String, i64)> = self.read(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT record, created_ms FROM verifiers WHERE tenant = ?1 AND name = ?2",
                )?
                .query_row(params![tenant.as_str(), name.as_str()], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()?)
        })?;
        row.map(|(record, created_ms)| verifier_from_record(&record, created_ms))
            .transpose()
    }

    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, created_ms FROM verifiers WHERE tenant = CAST(?1 AS TEXT) ORDER BY name",
            )?;
            let rows = statement.query_map(params![tenant.as_str()], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            rows.map(|row| {
                let (record, created_ms) = row?;
                verifier_from_record(&record, created_ms)
            })
            .collect()
        })
    }

    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool> {
        let goal = goal.as_str().to_string();
        let verifier_ref = verifier_ref.to_string();
        self.writer.submit(move |connection| {
            let written = connection
                .prepare_cached(
                    "INSERT INTO judge_scripts (goal_id, verifier_ref)
                     SELECT id, ?2 FROM goals WHERE id = ?1
                     ON CONFLICT (goal_id) DO UPDATE SET verifier_ref = excluded.verifier_ref",
                )?
                .execute(params![goal, verifier_ref])?;
            Ok(written == 1)
        })
    }

    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached("SELECT verifier_ref FROM judge_scripts WHERE goal_id = ?1")?
                .query_row(params![goal.as_str()], |row| row.get(0))
                .optional()?)
        })
    }
}
