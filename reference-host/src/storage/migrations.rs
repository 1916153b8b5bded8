//! Schema migrations, applied in order on open; `PRAGMA user_version` counts
//! the ones already applied. Append only: never edit a shipped migration.

use rusqlite::Connection;

use super::StoreError;

const MIGRATIONS: &[&str] = &[
    r"
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
",
    r"
CREATE TABLE verifiers (
    tenant     TEXT NOT NULL,
    name       TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
);
",
    // Issue 6: `Idempotency-Key` on create, kept with the goal it made so a
    // replay survives a restart.
    r"
CREATE TABLE idempotency_keys (
    tenant      TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    goal_id     TEXT NOT NULL REFERENCES goals (id),
    answer      TEXT NOT NULL,
    etag        TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_ms);
CREATE INDEX goals_open_by_tenant ON goals (tenant, state, mode);
",
    // Issue 7: the scheduler's two questions every tick, answered from an
    // index in time proportional to the answer rather than to the active
    // goals (a scan of 100k goals took longer than the 100 ms tick).
    // Partial, so goals that are not scheduled or have no deadline cost
    // nothing more to write.
    r"
CREATE INDEX goals_due ON goals (state, paused, COALESCE(next_fire_ms, 0)) WHERE mode = 'schedule';
CREATE INDEX goals_deadline ON goals (state, deadline_ms) WHERE deadline_ms IS NOT NULL;
",
];

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
