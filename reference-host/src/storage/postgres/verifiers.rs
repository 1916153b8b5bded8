//! Criteria verifiers and scripted judges on PostgreSQL ([`Verifiers`]).

use tokio_postgres::Row;

use super::cached::Cached;
use super::goals::lock_tenant_counts;
use super::{pool_error, unsigned, PostgresStore};
use crate::domain::{CriteriaVerifier, GoalId, Tenant, VerifierName};
use crate::storage::group_commit::Pending;
use crate::storage::prepared::{failed, PreparedVerifier};
use crate::storage::record::verifier_from_record;
use crate::storage::{Registered, StoreError, Verifiers};

fn verifier_from_row(row: &Row) -> Result<CriteriaVerifier, StoreError> {
    verifier_from_record(&row.try_get::<_, String>(0)?, row.try_get(1)?)
}

impl Verifiers for PostgresStore {
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
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant, name) DO UPDATE SET created_ms = $3, record = $4"
        } else {
            "INSERT INTO verifiers (tenant, name, created_ms, record) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant, name) DO NOTHING"
        };
        let pool = self.pool.clone();
        self.pending(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = Cached(client.transaction().await?);
            if let Some(most) = max {
                // The tenant's counts row locked, as creates lock it: its
                // registrations on every replica queue here, and each
                // counts what the last one committed.
                lock_tenant_counts(&transaction, &tenant).await?;
                let taken = transaction
                    .query_opt(
                        "SELECT 1 FROM verifiers WHERE tenant = $1 AND name = $2",
                        &[&tenant, &name],
                    )
                    .await?
                    .is_some();
                let held: i64 = transaction
                    .query_one(
                        "SELECT COUNT(*) FROM verifiers WHERE tenant = $1",
                        &[&tenant],
                    )
                    .await?
                    .try_get(0)?;
                if !taken && unsigned(held)? >= most {
                    return Ok(Registered::Full);
                }
            }
            let written = transaction
                .execute(sql, &[&tenant, &name, &created_ms, &record])
                .await?;
            transaction.commit().await?;
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
        let mut found = self.rows(
            "SELECT record, created_ms FROM verifiers WHERE tenant = $1 AND name = $2",
            vec![
                Box::new(tenant.as_str().to_string()),
                Box::new(name.as_str().to_string()),
            ],
            verifier_from_row,
        )?;
        Ok(found.pop())
    }

    fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, StoreError> {
        self.rows(
            "SELECT record, created_ms FROM verifiers WHERE tenant = $1 ORDER BY name",
            vec![Box::new(tenant.as_str().to_string())],
            verifier_from_row,
        )
    }

    fn put_judge_script(&self, goal: &GoalId, verifier_ref: &str) -> Pending<bool> {
        let goal = goal.as_str().to_string();
        let verifier_ref = verifier_ref.to_string();
        let pool = self.pool.clone();
        self.pending(async move {
            let client = Cached(pool.get().await.map_err(pool_error)?);
            let written = client
                .execute(
                    "INSERT INTO judge_scripts (goal_id, verifier_ref)
                     SELECT id, $2 FROM goals WHERE id = $1
                     ON CONFLICT (goal_id) DO UPDATE SET verifier_ref = EXCLUDED.verifier_ref",
                    &[&goal, &verifier_ref],
                )
                .await?;
            Ok(written == 1)
        })
    }

    fn judge_script(&self, goal: &GoalId) -> Result<Option<String>, StoreError> {
        let mut found = self.rows(
            "SELECT verifier_ref FROM judge_scripts WHERE goal_id = $1",
            vec![Box::new(goal.as_str().to_string())],
            |row| Ok(row.try_get::<_, String>(0)?),
        )?;
        Ok(found.pop())
    }
}
