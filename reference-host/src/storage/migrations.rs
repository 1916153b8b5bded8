//! Schema migrations, applied in order on open; `PRAGMA user_version` counts
//! the ones already applied. Append only: never edit a shipped migration.

use rusqlite::Connection;

use super::StoreError;

const MIGRATIONS: &[&str] = &[r"
CREATE TABLE goals (
    id           TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    state        TEXT NOT NULL,
    paused       INTEGER NOT NULL,
    mode         TEXT NOT NULL,
    deadline_ms  INTEGER,
    next_fire_ms INTEGER,
    created_ms   INTEGER NOT NULL,
    version      INTEGER NOT NULL,
    record       TEXT NOT NULL
);
CREATE INDEX goals_by_tenant ON goals (tenant, created_ms);
CREATE INDEX goals_by_state ON goals (state, mode, paused);

CREATE TABLE events (
    goal_id  TEXT NOT NULL REFERENCES goals (id),
    sequence INTEGER NOT NULL,
    at_ms    INTEGER NOT NULL,
    record   TEXT NOT NULL,
    PRIMARY KEY (goal_id, sequence)
);

CREATE TABLE evaluations (
    goal_id   TEXT NOT NULL REFERENCES goals (id),
    run_id    TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    record    TEXT NOT NULL,
    PRIMARY KEY (goal_id, run_id)
);

CREATE TABLE runs (
    run_id      TEXT PRIMARY KEY,
    goal_id     TEXT NOT NULL REFERENCES goals (id),
    iteration   INTEGER NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('in-flight', 'recorded', 'discarded')),
    started_ms  INTEGER NOT NULL,
    ended_ms    INTEGER
);
CREATE INDEX runs_in_flight ON runs (status);
"];

pub(super) fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let applied: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let applied = usize::try_from(applied)
        .map_err(|_| StoreError::Corrupt(format!("negative schema version {applied}")))?;
    if applied > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "the database has schema version {applied}, newer than this host ({})",
            MIGRATIONS.len()
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
        let transaction = connection.transaction()?;
        transaction.execute_batch(sql)?;
        let version = i64::try_from(index + 1)
            .map_err(|_| StoreError::Corrupt("too many migrations".to_string()))?;
        transaction.pragma_update(None, "user_version", version)?;
        transaction.commit()?;
    }
    Ok(())
}
