//! Statements prepared once per connection: each connection of the pool
//! keeps the statements it prepared (deadpool's statement cache, kept
//! while the connection is recycled), so a statement costs one round trip
//! instead of two (parse, then bind and execute). The cache holds one
//! entry per distinct SQL text, and the store's texts are fixed, so it
//! stays as small as the store's list of statements.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row};

/// A pooled connection or a transaction whose statements are prepared
/// once and then reused.
pub(super) struct Cached<C>(pub C);

impl<C: GenericClient> Cached<C> {
    pub async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        let statement = self.0.prepare_cached(sql).await?;
        self.0.execute(&statement, params).await
    }

    pub async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        let statement = self.0.prepare_cached(sql).await?;
        self.0.query(&statement, params).await
    }

    pub async fn query_one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error> {
        let statement = self.0.prepare_cached(sql).await?;
        self.0.query_one(&statement, params).await
    }

    pub async fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        let statement = self.0.prepare_cached(sql).await?;
        self.0.query_opt(&statement, params).await
    }
}

impl Cached<deadpool_postgres::Transaction<'_>> {
    pub async fn commit(self) -> Result<(), Error> {
        self.0.commit().await
    }
}
