//! The PostgreSQL the tests share: the URL in `GOALPOST_TEST_POSTGRES`
//! (`scripts/start-postgres.sh` prints one), and a fresh schema per test so
//! tests never see one another's tables. Both come from
//! `goalpost-test-postgres`, which the suite's cluster runs use too; here a
//! test that cannot make or drop its schema panics, as a test should.

#![allow(dead_code)]

/// The server's URL, or `None` after printing why the test is skipped.
pub fn server() -> Option<String> {
    goalpost_test_postgres::server("this PostgreSQL test")
}

/// A schema made for one test, dropped by [`Schema::drop`].
pub struct Schema {
    /// The server's URL with this schema first on the search path: every
    /// store opened with it (every replica) shares these tables.
    pub url: String,
    shared: goalpost_test_postgres::Schema,
}

impl Schema {
    pub async fn fresh(server: &str) -> Schema {
        let shared = goalpost_test_postgres::Schema::fresh(server, "test")
            .await
            .expect("GOALPOST_TEST_POSTGRES makes a schema");
        Schema {
            url: shared.url.clone(),
            shared,
        }
    }

    pub async fn drop(self) {
        self.shared.drop().await.expect("the schema drops");
    }

    /// A connection of its own in this schema, for a test that holds a
    /// lock or a transaction open while the stores work.
    pub async fn client(&self) -> tokio_postgres::Client {
        goalpost_test_postgres::connect(&self.url)
            .await
            .expect("GOALPOST_TEST_POSTGRES accepts connections")
    }

    /// The rows `sql` answers, each as text columns, read in this schema.
    pub async fn query(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        let client = self.client().await;
        let rows = client.simple_query(sql).await.expect("the query runs");
        rows.into_iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|index| row.get(index).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }

    /// Polls `sql` (one count) in this schema until it answers at least
    /// `at_least`, or fails the test after ten seconds.
    pub async fn wait_for_count(&self, sql: &str, at_least: i64, what: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let rows = self.query(sql).await;
            let count: i64 = rows[0][0]
                .as_deref()
                .expect("a count")
                .parse()
                .expect("an integer");
            if count >= at_least {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{what} did not happen within 10 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Makes every insert into `table` of a row of goal `goal` wait, at
    /// the end of its statement and so inside its transaction, for the
    /// advisory lock `key`, which the returned connection holds until it
    /// runs `pg_advisory_unlock(key)`: a test holds a store's write there
    /// (its locks taken, nothing committed) while other writes go on.
    pub async fn hold_inserts(&self, table: &str, goal: &str, key: i64) -> tokio_postgres::Client {
        self.query(&format!(
            "CREATE FUNCTION held_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN PERFORM pg_advisory_xact_lock_shared({key}); RETURN NULL; END $$;
             CREATE TRIGGER held_{table} AFTER INSERT ON {table} FOR EACH ROW
                 WHEN (NEW.goal_id = '{goal}') EXECUTE FUNCTION held_{table}();"
        ))
        .await;
        let holder = self.client().await;
        holder
            .execute("SELECT pg_advisory_lock($1)", &[&key])
            .await
            .expect("locks");
        holder
    }
}
