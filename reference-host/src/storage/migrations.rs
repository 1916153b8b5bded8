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
    // `Idempotency-Key` on create, kept with the goal it made so a
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
    // The scheduler's two questions every tick, answered from an
    // index in time proportional to the answer rather than to the active
    // goals. At 100k schedule goals the due query took 62.8 ms on the old
    // index (a row lookup per active goal) and 0.027 ms on this one, the
    // deadline query 57.2 ms and 0.006 ms, and an idle host's CPU fell from
    // 32% of a core to 0.7%. Partial, so goals that are not scheduled or
    // have no deadline cost nothing more to write.
    r"
CREATE INDEX goals_due ON goals (state, paused, COALESCE(next_fire_ms, 0)) WHERE mode = 'schedule';
CREATE INDEX goals_deadline ON goals (state, deadline_ms) WHERE deadline_ms IS NOT NULL;
",
    // A goal's contributing run ids move out of its JSON record
    // into rows of their own. In the record, every iteration rewrote the
    // whole list (a goal 500 runs old wrote 20 KB per iteration and parsed
    // it on every read); as rows, an iteration appends one.
    r"
CREATE TABLE goal_runs (
    goal_id  TEXT NOT NULL REFERENCES goals (id),
    position INTEGER NOT NULL,
    run_id   TEXT NOT NULL,
    PRIMARY KEY (goal_id, position)
) WITHOUT ROWID;
INSERT INTO goal_runs (goal_id, position, run_id)
    SELECT goals.id, CAST(ids.key AS INTEGER), ids.value
    FROM goals, json_each(goals.record, '$.run_ids') AS ids;
UPDATE goals SET record = json_remove(record, '$.run_ids');
",
    // The due listing reads the index alone. It named each due
    // goal's row to get its id and creation time: one random page read per
    // due goal, which at 100k goals firing in no particular order was a
    // quarter of the scheduler's time.
    r"
DROP INDEX goals_due;
CREATE INDEX goals_due ON goals (state, paused, COALESCE(next_fire_ms, 0), created_ms, id, mode)
    WHERE mode = 'schedule';
",
    // A goal's run ids, events and evaluations become entries of
    // one log, clustered by goal in the order they were written, so an
    // iteration's three entries share one index leaf (`goal_log.rs`). The
    // JSON of events and evaluations moves out of the tree, to
    // `log_records`, so entries stay small. Each entry carries the goal's
    // event and run counts so far.
    r"
CREATE TABLE log_records (
    id     INTEGER PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE goal_log (
    goal_id   TEXT NOT NULL REFERENCES goals (id),
    entry     INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('run', 'event', 'evaluation')),
    events    INTEGER NOT NULL,
    runs      INTEGER NOT NULL,
    run_id    TEXT,
    iteration INTEGER,
    at_ms     INTEGER,
    record_id INTEGER,
    PRIMARY KEY (goal_id, entry)
) WITHOUT ROWID;
CREATE TEMP TABLE counts AS
    SELECT goals.id AS goal_id,
           (SELECT COUNT(*) FROM goal_runs WHERE goal_runs.goal_id = goals.id) AS runs,
           (SELECT COUNT(*) FROM events WHERE events.goal_id = goals.id) AS logged_events,
           (SELECT COALESCE(MAX(sequence), 0) FROM events WHERE events.goal_id = goals.id) AS events
    FROM goals;
INSERT INTO log_records (id, record) SELECT rowid, record FROM events;
INSERT INTO log_records (id, record)
    SELECT rowid + (SELECT COALESCE(MAX(rowid), 0) FROM events), record FROM evaluations;
INSERT INTO goal_log (goal_id, entry, kind, events, runs, run_id)
    SELECT goal_id, ROW_NUMBER() OVER (PARTITION BY goal_id ORDER BY position),
           'run', 0, ROW_NUMBER() OVER (PARTITION BY goal_id ORDER BY position), run_id
    FROM goal_runs;
INSERT INTO goal_log (goal_id, entry, kind, events, runs, at_ms, record_id)
    SELECT events.goal_id,
           counts.runs + ROW_NUMBER() OVER (PARTITION BY events.goal_id ORDER BY sequence),
           'event', sequence, counts.runs, at_ms, events.rowid
    FROM events JOIN counts ON counts.goal_id = events.goal_id;
INSERT INTO goal_log (goal_id, entry, kind, events, runs, run_id, iteration, record_id)
    SELECT evaluations.goal_id,
           counts.runs + counts.logged_events
               + ROW_NUMBER() OVER (PARTITION BY evaluations.goal_id ORDER BY iteration, evaluations.rowid),
           'evaluation', counts.events, counts.runs, run_id, iteration,
           evaluations.rowid + (SELECT COALESCE(MAX(rowid), 0) FROM events)
    FROM evaluations JOIN counts ON counts.goal_id = evaluations.goal_id;
DROP TABLE counts;
DROP TABLE goal_runs;
DROP TABLE events;
DROP TABLE evaluations;
",
    // The same checks without a three-value `IN` list. SQLite
    // evaluates `x IN (a, b, c)` of constants by building a temporary
    // B-tree of the list on every run of the statement, so every insert
    // into `goal_log` and every insert or update of `runs` built one: five
    // per iteration, 14% of a `continue`'s instructions (5.7 temporary
    // B-trees a request). A chain of `=` checks the same values: 432k →
    // 332k instructions per `continue`, and 12.7k–12.9k → 13.8k–14.8k
    // fires/s at 100k goals. A CHECK cannot be altered, so both tables
    // are rebuilt.
    r"
CREATE TABLE runs_checked (
    run_id      TEXT PRIMARY KEY,
    goal_id     TEXT NOT NULL REFERENCES goals (id),
    iteration   INTEGER NOT NULL,
    status      TEXT NOT NULL
                CHECK (status = 'in-flight' OR status = 'recorded' OR status = 'discarded'),
    started_ms  INTEGER NOT NULL,
    ended_ms    INTEGER
);
INSERT INTO runs_checked (run_id, goal_id, iteration, status, started_ms, ended_ms)
    SELECT run_id, goal_id, iteration, status, started_ms, ended_ms FROM runs ORDER BY rowid;
DROP TABLE runs;
ALTER TABLE runs_checked RENAME TO runs;
CREATE INDEX runs_in_flight ON runs (status);

CREATE TABLE goal_log_checked (
    goal_id   TEXT NOT NULL REFERENCES goals (id),
    entry     INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind = 'run' OR kind = 'event' OR kind = 'evaluation'),
    events    INTEGER NOT NULL,
    runs      INTEGER NOT NULL,
    run_id    TEXT,
    iteration INTEGER,
    at_ms     INTEGER,
    record_id INTEGER,
    PRIMARY KEY (goal_id, entry)
) WITHOUT ROWID;
INSERT INTO goal_log_checked
    (goal_id, entry, kind, events, runs, run_id, iteration, at_ms, record_id)
    SELECT goal_id, entry, kind, events, runs, run_id, iteration, at_ms, record_id
    FROM goal_log;
DROP TABLE goal_log;
ALTER TABLE goal_log_checked RENAME TO goal_log;
",
    // What each tenant holds open, kept beside the goals by
    // triggers, so a create's quota check reads one row instead of
    // counting the tenant's goals (a create at 34k goals in one tenant ran
    // at a fifth of the speed of one on an empty tenant). The triggers run
    // inside the statement that changes the goal, so the counts commit or
    // roll back with it: exact across crashes and concurrent creates. The
    // update trigger fires only when an `UPDATE` sets `state`, `mode` or
    // `tenant`, and does nothing unless what counts changed, so an
    // iteration (which sets neither) pays nothing. `=` chains rather than
    // `IN` lists: see migration 8.
    //
    // Lists page in id order (UUID version 7: creation order); the two
    // indexes below answer a page, filtered by state or not, from where
    // the cursor left off. They replace the two whose only readers were
    // the list's creation-time order and the counts.
    r"
CREATE TABLE tenant_counts (
    tenant TEXT PRIMARY KEY,
    open   INTEGER NOT NULL CHECK (open >= 0),
    armed  INTEGER NOT NULL CHECK (armed >= 0)
) WITHOUT ROWID;
INSERT INTO tenant_counts (tenant, open, armed)
    SELECT tenant,
           SUM(state = 'active' OR state = 'escalated'),
           SUM((state = 'active' OR state = 'escalated') AND (mode = 'schedule' OR mode = 'heartbeat'))
    FROM goals GROUP BY tenant;
CREATE TRIGGER tenant_counts_insert AFTER INSERT ON goals
BEGIN
    INSERT OR IGNORE INTO tenant_counts (tenant, open, armed) VALUES (NEW.tenant, 0, 0);
    UPDATE tenant_counts
    SET open = open + (NEW.state = 'active' OR NEW.state = 'escalated'),
        armed = armed + ((NEW.state = 'active' OR NEW.state = 'escalated')
                         AND (NEW.mode = 'schedule' OR NEW.mode = 'heartbeat'))
    WHERE tenant = NEW.tenant;
END;
CREATE TRIGGER tenant_counts_update AFTER UPDATE OF state, mode, tenant ON goals
WHEN OLD.tenant IS NOT NEW.tenant
  OR (OLD.state = 'active' OR OLD.state = 'escalated') IS NOT (NEW.state = 'active' OR NEW.state = 'escalated')
  OR (OLD.mode = 'schedule' OR OLD.mode = 'heartbeat') IS NOT (NEW.mode = 'schedule' OR NEW.mode = 'heartbeat')
BEGIN
    UPDATE tenant_counts
    SET open = open - (OLD.state = 'active' OR OLD.state = 'escalated'),
        armed = armed - ((OLD.state = 'active' OR OLD.state = 'escalated')
                         AND (OLD.mode = 'schedule' OR OLD.mode = 'heartbeat'))
    WHERE tenant = OLD.tenant;
    INSERT OR IGNORE INTO tenant_counts (tenant, open, armed) VALUES (NEW.tenant, 0, 0);
    UPDATE tenant_counts
    SET open = open + (NEW.state = 'active' OR NEW.state = 'escalated'),
        armed = armed + ((NEW.state = 'active' OR NEW.state = 'escalated')
                         AND (NEW.mode = 'schedule' OR NEW.mode = 'heartbeat'))
    WHERE tenant = NEW.tenant;
END;
CREATE TRIGGER tenant_counts_delete AFTER DELETE ON goals
BEGIN
    UPDATE tenant_counts
    SET open = open - (OLD.state = 'active' OR OLD.state = 'escalated'),
        armed = armed - ((OLD.state = 'active' OR OLD.state = 'escalated')
                         AND (OLD.mode = 'schedule' OR OLD.mode = 'heartbeat'))
    WHERE tenant = OLD.tenant;
END;
DROP INDEX goals_by_tenant;
DROP INDEX goals_open_by_tenant;
CREATE INDEX goals_by_tenant_id ON goals (tenant, id);
CREATE INDEX goals_by_tenant_state_id ON goals (tenant, state, id);
",
    // Every goal a tenant holds, closed ones included, kept like the open
    // counts: the quota on stored goals reads it, so create and abandon
    // in a loop can no longer grow storage without bound (3,000 cycles in
    // 2 s were all kept), and the check costs one row however many goals
    // the tenant has. A column added with a default, then counted once.
    r"
ALTER TABLE tenant_counts ADD COLUMN total INTEGER NOT NULL DEFAULT 0 CHECK (total >= 0);
UPDATE tenant_counts
SET total = (SELECT COUNT(*) FROM goals WHERE goals.tenant = tenant_counts.tenant);
CREATE TRIGGER tenant_total_insert AFTER INSERT ON goals
BEGIN
    INSERT OR IGNORE INTO tenant_counts (tenant, open, armed) VALUES (NEW.tenant, 0, 0);
    UPDATE tenant_counts SET total = total + 1 WHERE tenant = NEW.tenant;
END;
CREATE TRIGGER tenant_total_update AFTER UPDATE OF tenant ON goals
WHEN OLD.tenant IS NOT NEW.tenant
BEGIN
    UPDATE tenant_counts SET total = total - 1 WHERE tenant = OLD.tenant;
    INSERT OR IGNORE INTO tenant_counts (tenant, open, armed) VALUES (NEW.tenant, 0, 0);
    UPDATE tenant_counts SET total = total + 1 WHERE tenant = NEW.tenant;
END;
CREATE TRIGGER tenant_total_delete AFTER DELETE ON goals
BEGIN
    UPDATE tenant_counts SET total = total - 1 WHERE tenant = OLD.tenant;
END;
",
    // Retention: when a goal closed, so the oldest closed goals can be
    // found from an index and forgotten in bounded batches. A closed goal
    // never changes again, so its last update is when it closed. The
    // indexes on `goal_id` let a goal's runs and keys be deleted without
    // a scan, and with foreign keys on, deleting a goal looks for rows
    // that still name it: without them, each purged goal read all of
    // `runs`.
    r"
ALTER TABLE goals ADD COLUMN closed_ms INTEGER;
UPDATE goals SET closed_ms = json_extract(record, '$.updated_ms')
WHERE state = 'satisfied' OR state = 'abandoned' OR state = 'bound-exceeded';
CREATE INDEX goals_closed ON goals (closed_ms) WHERE closed_ms IS NOT NULL;
CREATE INDEX runs_by_goal ON runs (goal_id);
CREATE INDEX idempotency_keys_by_goal ON idempotency_keys (goal_id);
",
    // Reported runs (`POST {base}/{id}/runs`): the fingerprint of the
    // report a run was reserved for, so a report sent again is answered as
    // before and a different one under the same `runId` is refused. NULL
    // for the runs the host dispatched itself.
    r"
ALTER TABLE runs ADD COLUMN report TEXT;
",
    // `commitment` goals: only the ones whose run committed to a check-in
    // have a next fire, and only those are ever due, so the index holds
    // them alone; due and next-due lookups seek it as they seek
    // `goals_due` for schedule goals.
    r"
CREATE INDEX goals_committed ON goals (state, paused, next_fire_ms, created_ms, id)
    WHERE mode = 'commitment' AND next_fire_ms IS NOT NULL;
",
    // The live event stream (`GET {base}/events`) resumes a tenant's
    // events after a cursor: the id of the event's record, which grows in
    // commit order across goals. This index of the tenant's events by
    // cursor answers a resume with one range read, however many other
    // tenants there are; events already stored are indexed too, so a
    // stream can resume from before the upgrade.
    r"
CREATE TABLE tenant_feed (
    tenant   TEXT NOT NULL,
    cursor   INTEGER NOT NULL,
    goal_id  TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    at_ms    INTEGER NOT NULL,
    PRIMARY KEY (tenant, cursor)
) WITHOUT ROWID;
INSERT INTO tenant_feed (tenant, cursor, goal_id, sequence, at_ms)
    SELECT goals.tenant, log.record_id, log.goal_id, log.events, log.at_ms
    FROM goal_log AS log JOIN goals ON goals.id = log.goal_id
    WHERE log.kind = 'event';
",
    // One run per (goal, iteration), as the PostgreSQL schema has it: the
    // per-goal lock already serialises a process's iterations, and the
    // database now refuses a second reservation of an iteration whatever
    // the process believes.
    r"
CREATE UNIQUE INDEX runs_one_per_iteration ON runs (goal_id, iteration);
",
    // Outbound event webhooks (`event_webhooks/`): one row per subscribed
    // tenant, the URL its events go to and the newest cursor delivered
    // there, plus the backoff of the next event, so a restart resumes
    // where delivery stood (and does not hammer a receiver that was
    // failing). The claim columns are the PostgreSQL store's (one replica
    // delivers a tenant at a time); here one process owns the file.
    r"
CREATE TABLE event_deliveries (
    tenant      TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    delivered   INTEGER NOT NULL CHECK (delivered >= 0),
    failures    INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    retry_at_ms INTEGER
) WITHOUT ROWID;
",
    // The conformance seam `scriptedJudge` (PROFILE.md "Seam contract"):
    // the verifier ref a goal judged by the host is judged by, kept beside
    // the goal and not in it, so scripting a judge changes neither the
    // goal's record nor its version.
    r"
CREATE TABLE judge_scripts (
    goal_id      TEXT PRIMARY KEY REFERENCES goals (id),
    verifier_ref TEXT NOT NULL
) WITHOUT ROWID;
",
];

pub(super) fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let applied: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let applied = super::applied_migrations(applied, MIGRATIONS.len())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The quota triggers count a goal as open exactly when the domain
    /// does: a change to the open states needs a new migration.
    #[test]
    fn the_quota_counts_use_the_domain_open_states() {
        let counts = MIGRATIONS
            .iter()
            .find(|sql| sql.contains("CREATE TABLE tenant_counts"))
            .expect("the migration that counts open goals");
        let generated: usize = ["state", "NEW.state", "OLD.state"]
            .iter()
            .map(|column| {
                counts
                    .matches(&crate::storage::open_state_sql(column))
                    .count()
            })
            .sum();
        assert_eq!(generated, counts.matches("'active' OR").count());
        assert!(generated > 0);
    }

    /// An in-memory database as a host with the first `applied`
    /// migrations left it.
    fn at_version(applied: usize) -> Connection {
        let connection = Connection::open_in_memory().expect("opens");
        for sql in &MIGRATIONS[..applied] {
            connection.execute_batch(sql).expect("an old migration");
        }
        connection
            .pragma_update(None, "user_version", i64::try_from(applied).expect("few"))
            .expect("the old version");
        connection
    }

    /// A database written before migration 5 keeps its goals' run ids:
    /// they move from the record into `goal_runs`, in order, and from
    /// there into the goal log (migration 7).
    #[test]
    fn run_ids_move_out_of_old_records() {
        let mut connection = at_version(4);
        connection
            .execute(
                "INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g1', 't', 'active', 0, 'manual', 0, 3, ?1)",
                [r#"{"id":"g1","iterations":2,"run_ids":["r-a","r-b"],"paused":false}"#],
            )
            .expect("an old goal");
        migrate(&mut connection).expect("migrates");
        let rows: Vec<(i64, String)> = crate::storage::rows(
            &connection,
            "SELECT runs - 1, run_id FROM goal_log WHERE goal_id = 'g1' AND kind = 'run'
                 ORDER BY entry",
            [],
        );
        assert_eq!(rows, vec![(0, "r-a".to_string()), (1, "r-b".to_string())]);
        let record: String = connection
            .query_row("SELECT record FROM goals WHERE id = 'g1'", [], |row| {
                row.get(0)
            })
            .expect("the record");
        assert!(!record.contains("run_ids"), "{record}");
        assert!(record.contains(r#""iterations":2"#), "{record}");
        let version: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .expect("the version");
        assert_eq!(version, i64::try_from(MIGRATIONS.len()).expect("fits"));
    }

    /// Migration 8 rebuilds `runs` and `goal_log`: their rows stay, their
    /// checks still refuse what they refused, and no insert or update the
    /// store runs on them builds a temporary B-tree any more.
    #[test]
    fn the_rebuilt_tables_keep_their_rows_and_checks_without_temporary_trees() {
        let mut connection = at_version(7);
        let seed = "INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                        VALUES ('g1', 't', 'active', 0, 'manual', 0, 1, '{}');
                    INSERT INTO runs (run_id, goal_id, iteration, status, started_ms, ended_ms)
                        VALUES ('r-a', 'g1', 1, 'recorded', 5, 6), ('r-b', 'g1', 2, 'in-flight', 7, NULL);
                    INSERT INTO goal_log (goal_id, entry, kind, events, runs, run_id)
                        VALUES ('g1', 1, 'run', 0, 1, 'r-a');";
        connection.execute_batch(seed).expect("old rows");
        let before = dump(&connection);
        migrate(&mut connection).expect("migrates");
        assert_eq!(dump(&connection), before);

        let refused = [
            "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms)
                 VALUES ('r-c', 'g1', 3, 'lost', 8)",
            "UPDATE runs SET status = 'lost' WHERE run_id = 'r-b'",
            "INSERT INTO goal_log (goal_id, entry, kind, events, runs) VALUES ('g1', 2, 'note', 0, 1)",
        ];
        for sql in refused {
            let error = connection.execute(sql, []).expect_err(sql);
            assert!(error.to_string().contains("CHECK"), "{sql}: {error}");
        }
        let writes = [
            "INSERT INTO runs (run_id, goal_id, iteration, status, started_ms)
                 VALUES (?1, ?2, ?3, 'in-flight', ?4)",
            "UPDATE runs SET status = 'recorded', ended_ms = ?2 WHERE run_id = ?1",
            "INSERT INTO goal_log (goal_id, entry, kind, events, runs, run_id)
                 VALUES (?1, ?2, 'run', ?3, ?4, ?5)",
        ];
        for sql in writes {
            let program = crate::storage::opcodes(&connection, sql);
            assert!(
                !program.iter().any(|op| op == "OpenEphemeral"),
                "{sql} builds a temporary B-tree: {program:?}"
            );
        }
    }

    /// Migration 9 counts what each tenant already holds open, so a
    /// database written before it keeps its quotas.
    #[test]
    fn the_tenant_counts_start_from_the_stored_goals() {
        let mut connection = at_version(8);
        connection
            .execute_batch(
                "INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g1', 'a', 'active', 0, 'schedule', 0, 1, '{}'),
                        ('g2', 'a', 'escalated', 1, 'heartbeat', 0, 1, '{}'),
                        ('g3', 'a', 'abandoned', 0, 'schedule', 0, 1, '{}'),
                        ('g4', 'a', 'active', 0, 'manual', 0, 1, '{}'),
                        ('g5', 'b', 'satisfied', 0, 'manual', 0, 1, '{}');",
            )
            .expect("old rows");
        migrate(&mut connection).expect("migrates");
        let counts: Vec<(String, i64, i64)> = crate::storage::rows(
            &connection,
            "SELECT tenant, open, armed FROM tenant_counts ORDER BY tenant",
            [],
        );
        assert_eq!(
            counts,
            vec![("a".to_string(), 3, 2), ("b".to_string(), 0, 0)]
        );
        // From here on the triggers keep them.
        connection
            .execute_batch(
                "UPDATE goals SET state = 'abandoned' WHERE id = 'g1';
                 UPDATE goals SET mode = 'schedule' WHERE id = 'g4';
                 INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g6', 'c', 'active', 0, 'heartbeat', 0, 1, '{}');",
            )
            .expect("writes");
        let counts: Vec<(String, i64, i64)> = crate::storage::rows(
            &connection,
            "SELECT tenant, open, armed FROM tenant_counts ORDER BY tenant",
            [],
        );
        assert_eq!(
            counts,
            vec![
                ("a".to_string(), 2, 2),
                ("b".to_string(), 0, 0),
                ("c".to_string(), 1, 1)
            ]
        );
    }

    /// Migration 10 counts every goal each tenant already holds, closed
    /// ones too, and its triggers keep the count through inserts, moves
    /// and deletes.
    #[test]
    fn the_total_counts_start_from_the_stored_goals() {
        let mut connection = at_version(9);
        connection
            .execute_batch(
                "INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g1', 'a', 'active', 0, 'manual', 0, 1, '{}'),
                        ('g2', 'a', 'abandoned', 0, 'manual', 0, 1, '{}'),
                        ('g3', 'b', 'satisfied', 0, 'manual', 0, 1, '{}');",
            )
            .expect("old rows");
        migrate(&mut connection).expect("migrates");
        let totals = |connection: &Connection| -> Vec<(String, i64)> {
            crate::storage::rows(
                connection,
                "SELECT tenant, total FROM tenant_counts ORDER BY tenant",
                [],
            )
        };
        assert_eq!(
            totals(&connection),
            vec![("a".to_string(), 2), ("b".to_string(), 1)]
        );
        connection
            .execute_batch(
                "DELETE FROM goals WHERE id = 'g2';
                 UPDATE goals SET tenant = 'c' WHERE id = 'g3';
                 INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g4', 'a', 'satisfied', 0, 'manual', 0, 1, '{}');",
            )
            .expect("writes");
        assert_eq!(
            totals(&connection),
            vec![
                ("a".to_string(), 2),
                ("b".to_string(), 0),
                ("c".to_string(), 1)
            ]
        );
    }

    /// Migration 11 dates the goals that were already closed by their
    /// last update, and leaves open ones undated.
    #[test]
    fn closed_goals_are_dated_by_their_last_update() {
        let mut connection = at_version(10);
        connection
            .execute_batch(
                r#"INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                 VALUES ('g1', 'a', 'active', 0, 'manual', 0, 1, '{"updated_ms": 5}'),
                        ('g2', 'a', 'abandoned', 0, 'manual', 0, 1, '{"updated_ms": 7}'),
                        ('g3', 'a', 'bound-exceeded', 0, 'manual', 0, 1, '{"updated_ms": 9}'),
                        ('g4', 'a', 'satisfied', 0, 'manual', 0, 1, '{"updated_ms": 11}');"#,
            )
            .expect("old rows");
        migrate(&mut connection).expect("migrates");
        let dated: Vec<(String, Option<i64>)> = crate::storage::rows(
            &connection,
            "SELECT id, closed_ms FROM goals ORDER BY id",
            [],
        );
        assert_eq!(
            dated,
            vec![
                ("g1".to_string(), None),
                ("g2".to_string(), Some(7)),
                ("g3".to_string(), Some(9)),
                ("g4".to_string(), Some(11)),
            ]
        );
    }

    /// Every row of `runs` and `goal_log`, in key order.
    fn dump(connection: &Connection) -> Vec<String> {
        let mut rows = Vec::new();
        for sql in [
            "SELECT json_array(run_id, goal_id, iteration, status, started_ms, ended_ms)
             FROM runs ORDER BY run_id",
            "SELECT json_array(goal_id, entry, kind, events, runs, run_id, iteration, at_ms, record_id)
             FROM goal_log ORDER BY goal_id, entry",
        ] {
            let mut statement = connection.prepare(sql).expect("prepares");
            let found = statement
                .query_map([], |row| row.get::<_, String>(0))
                .expect("queries");
            rows.extend(found.map(|row| row.expect("reads")));
        }
        rows
    }

    /// A database written before migration 7 keeps its run ids, events
    /// and evaluations, each kind in its order, and a goal's last entry
    /// carries its event and run counts.
    #[test]
    fn run_ids_events_and_evaluations_move_into_the_goal_log() {
        let mut connection = at_version(6);
        connection
            .execute_batch(
                "INSERT INTO goals (id, tenant, state, paused, mode, created_ms, version, record)
                     VALUES ('g1', 't', 'active', 0, 'manual', 0, 3, '{}'),
                            ('g2', 't', 'active', 0, 'manual', 0, 1, '{}'),
                            ('g3', 't', 'active', 0, 'manual', 0, 1, '{}');
                 INSERT INTO goal_runs (goal_id, position, run_id)
                     VALUES ('g1', 1, 'r-b'), ('g1', 0, 'r-a'), ('g3', 0, 'r-c');
                 INSERT INTO events (goal_id, sequence, at_ms, record)
                     VALUES ('g1', 2, 20, 'e2'), ('g1', 1, 10, 'e1'), ('g2', 1, 5, 'f1');
                 INSERT INTO evaluations (goal_id, run_id, iteration, record)
                     VALUES ('g1', 'r-b', 2, 'v2'), ('g1', 'r-a', 1, 'v1');",
            )
            .expect("old rows");
        migrate(&mut connection).expect("migrates");
        type Entry = (
            String,
            i64,
            String,
            i64,
            i64,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Entry> = connection
            .prepare(
                "SELECT goal_id, entry, kind, events, runs, run_id, record
                 FROM goal_log LEFT JOIN log_records ON log_records.id = goal_log.record_id
                 ORDER BY goal_id, entry",
            )
            .expect("prepares")
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                ))
            })
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads");
        let row = |goal: &str,
                   entry,
                   kind: &str,
                   events,
                   runs,
                   run: Option<&str>,
                   record: Option<&str>| {
            (
                goal.to_string(),
                entry,
                kind.to_string(),
                events,
                runs,
                run.map(str::to_string),
                record.map(str::to_string),
            )
        };
        assert_eq!(
            rows,
            vec![
                row("g1", 1, "run", 0, 1, Some("r-a"), None),
                row("g1", 2, "run", 0, 2, Some("r-b"), None),
                row("g1", 3, "event", 1, 2, None, Some("e1")),
                row("g1", 4, "event", 2, 2, None, Some("e2")),
                row("g1", 5, "evaluation", 2, 2, Some("r-a"), Some("v1")),
                row("g1", 6, "evaluation", 2, 2, Some("r-b"), Some("v2")),
                row("g2", 1, "event", 1, 0, None, Some("f1")),
                row("g3", 1, "run", 0, 1, Some("r-c"), None),
            ]
        );
    }
}
