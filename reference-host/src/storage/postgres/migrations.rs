//! The PostgreSQL schema, versioned like the SQLite one: `goalpost_schema`
//! counts the migrations applied. Append only: never edit a shipped
//! migration. Replicas that start together migrate one at a time (an
//! advisory lock held by the migrating transaction), so none sees half a
//! schema.

use deadpool_postgres::Client;

use crate::storage::StoreError;

/// Any constant both replicas agree on: it names the migration lock.
const MIGRATION_LOCK: i64 = 0x676f_616c_706f_7374;

const MIGRATIONS: &[&str] = &[
    r#"
-- Leases are measured on the database's clock, the one clock every
-- replica shares.
CREATE FUNCTION goalpost_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- Ids and names compare byte by byte (COLLATE "C") as in SQLite: pages
-- follow the id order whatever the database's locale.
CREATE TABLE goals (
    id             text COLLATE "C" PRIMARY KEY,
    tenant         text COLLATE "C" NOT NULL,
    state          text NOT NULL,
    paused         boolean NOT NULL,
    mode           text NOT NULL,
    deadline_ms    bigint,
    next_fire_ms   bigint,
    created_ms     bigint NOT NULL,
    version        bigint NOT NULL,
    record         text NOT NULL,
    -- The replica whose scheduler took this due goal, until when: the
    -- other replicas' schedulers leave it alone meanwhile.
    claimed_by     text,
    claim_until_ms bigint
);
CREATE INDEX goals_by_tenant_id ON goals (tenant, id);
CREATE INDEX goals_by_tenant_state_id ON goals (tenant, state, id);
CREATE INDEX goals_due ON goals ((COALESCE(next_fire_ms, 0)), created_ms)
    WHERE mode = 'schedule' AND state = 'active' AND NOT paused;
CREATE INDEX goals_deadline ON goals (deadline_ms)
    WHERE state = 'active' AND deadline_ms IS NOT NULL;
CREATE INDEX goals_heartbeat ON goals (created_ms, id)
    WHERE mode = 'heartbeat' AND state = 'active' AND NOT paused;

CREATE TABLE goal_runs (
    goal_id  text COLLATE "C" NOT NULL REFERENCES goals (id),
    position bigint NOT NULL,
    run_id   text NOT NULL,
    PRIMARY KEY (goal_id, position)
);

CREATE TABLE events (
    goal_id  text COLLATE "C" NOT NULL REFERENCES goals (id),
    sequence bigint NOT NULL,
    at_ms    bigint NOT NULL,
    record   text NOT NULL,
    PRIMARY KEY (goal_id, sequence)
);

CREATE TABLE evaluations (
    goal_id   text COLLATE "C" NOT NULL REFERENCES goals (id),
    run_id    text NOT NULL,
    iteration bigint NOT NULL,
    record    text NOT NULL,
    PRIMARY KEY (goal_id, run_id)
);

-- A replica that runs: it renews `alive_until_ms` while it lives. Its
-- runs in flight are orphaned once it lapses.
CREATE TABLE replicas (
    id            text PRIMARY KEY,
    alive_until_ms bigint NOT NULL
);

-- One run per (goal, iteration), ever: a second reservation of an
-- iteration is impossible whatever any replica believes.
CREATE TABLE runs (
    run_id     text PRIMARY KEY,
    goal_id    text COLLATE "C" NOT NULL REFERENCES goals (id),
    iteration  bigint NOT NULL,
    status     text NOT NULL CHECK (status IN ('in-flight', 'recorded', 'discarded')),
    started_ms bigint NOT NULL,
    ended_ms   bigint,
    replica    text NOT NULL,
    UNIQUE (goal_id, iteration)
);
CREATE INDEX runs_in_flight ON runs (replica) WHERE status = 'in-flight';

CREATE TABLE verifiers (
    tenant     text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    created_ms bigint NOT NULL,
    record     text NOT NULL,
    PRIMARY KEY (tenant, name)
);

CREATE TABLE idempotency_keys (
    tenant      text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    fingerprint text NOT NULL,
    goal_id     text COLLATE "C" NOT NULL REFERENCES goals (id),
    answer      text NOT NULL,
    etag        text NOT NULL,
    created_ms  bigint NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_ms);

-- What each tenant holds open, kept by a trigger in the transaction of
-- every goal write (as SQLite's migration 9 does), so a create's quota
-- check locks and reads one row: creates of one tenant on different
-- replicas queue on that row and the quota holds exactly.
CREATE TABLE tenant_counts (
    tenant text COLLATE "C" PRIMARY KEY,
    open   bigint NOT NULL CHECK (open >= 0),
    armed  bigint NOT NULL CHECK (armed >= 0)
);
CREATE FUNCTION goalpost_open(state text) RETURNS bigint LANGUAGE sql IMMUTABLE AS
    $$ SELECT CASE WHEN state IN ('active', 'escalated') THEN 1 ELSE 0 END $$;
CREATE FUNCTION goalpost_armed(state text, mode text) RETURNS bigint LANGUAGE sql IMMUTABLE AS
    $$ SELECT CASE WHEN state IN ('active', 'escalated') AND mode IN ('schedule', 'heartbeat')
                   THEN 1 ELSE 0 END $$;
CREATE FUNCTION goalpost_count_goal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' OR TG_OP = 'DELETE' THEN
        UPDATE tenant_counts
        SET open = open - goalpost_open(OLD.state),
            armed = armed - goalpost_armed(OLD.state, OLD.mode)
        WHERE tenant = OLD.tenant;
    END IF;
    IF TG_OP = 'UPDATE' OR TG_OP = 'INSERT' THEN
        INSERT INTO tenant_counts (tenant, open, armed)
        VALUES (NEW.tenant, goalpost_open(NEW.state), goalpost_armed(NEW.state, NEW.mode))
        ON CONFLICT (tenant) DO UPDATE
        SET open = tenant_counts.open + EXCLUDED.open,
            armed = tenant_counts.armed + EXCLUDED.armed;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER goals_counted_on_insert_or_delete AFTER INSERT OR DELETE ON goals
    FOR EACH ROW EXECUTE FUNCTION goalpost_count_goal();
-- Only when what counts changed: an iteration touches no tenant row, so
-- replicas iterating one tenant's goals do not queue on it.
CREATE TRIGGER goals_counted_on_update AFTER UPDATE OF state, mode, tenant ON goals
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.mode IS DISTINCT FROM NEW.mode
          OR OLD.tenant IS DISTINCT FROM NEW.tenant)
    EXECUTE FUNCTION goalpost_count_goal();
"#,
    // What each tenant stores at all, closed goals included (the quota on
    // stored goals), kept by the same trigger; and when a goal closed, so
    // retention finds the longest closed from an index. Both as SQLite's
    // migrations 10 and 11 have them.
    r#"
ALTER TABLE tenant_counts ADD COLUMN total bigint NOT NULL DEFAULT 0 CHECK (total >= 0);
UPDATE tenant_counts
SET total = (SELECT COUNT(*) FROM goals WHERE goals.tenant = tenant_counts.tenant);
CREATE OR REPLACE FUNCTION goalpost_count_goal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' OR TG_OP = 'DELETE' THEN
        UPDATE tenant_counts
        SET open = open - goalpost_open(OLD.state),
            armed = armed - goalpost_armed(OLD.state, OLD.mode),
            total = total - 1
        WHERE tenant = OLD.tenant;
    END IF;
    IF TG_OP = 'UPDATE' OR TG_OP = 'INSERT' THEN
        INSERT INTO tenant_counts (tenant, open, armed, total)
        VALUES (NEW.tenant, goalpost_open(NEW.state), goalpost_armed(NEW.state, NEW.mode), 1)
        ON CONFLICT (tenant) DO UPDATE
        SET open = tenant_counts.open + EXCLUDED.open,
            armed = tenant_counts.armed + EXCLUDED.armed,
            total = tenant_counts.total + EXCLUDED.total;
    END IF;
    RETURN NULL;
END $$;
ALTER TABLE goals ADD COLUMN closed_ms bigint;
CREATE INDEX goals_closed ON goals (closed_ms) WHERE closed_ms IS NOT NULL;
CREATE INDEX runs_by_goal ON runs (goal_id);
CREATE INDEX idempotency_keys_by_goal ON idempotency_keys (goal_id);
"#,
    // Reported runs keep the fingerprint of their report; every event gets
    // a tenant-wide cursor (the live stream's `id:`), numbered in insert
    // order by a sequence, and the goal's tenant for the stream's reads.
    r#"
ALTER TABLE runs ADD COLUMN report text;
ALTER TABLE events ADD COLUMN cursor bigserial;
ALTER TABLE events ADD COLUMN tenant text COLLATE "C";
UPDATE events SET tenant = goals.tenant FROM goals WHERE goals.id = events.goal_id;
ALTER TABLE events ALTER COLUMN tenant SET NOT NULL;
CREATE UNIQUE INDEX events_by_tenant_cursor ON events (tenant, cursor);
CREATE INDEX goals_committed ON goals (next_fire_ms)
    WHERE mode = 'commitment' AND next_fire_ms IS NOT NULL;
"#,
    // Cursors commit in order per tenant. A sequence numbered events when
    // they were inserted, so a transaction holding cursor 10 could commit
    // after one holding 11, and a stream that resumed after 11 missed 10
    // for good. Now a transaction takes its cursors by updating its
    // tenant's row here and holds that row locked until it commits: the
    // tenant's event writers queue on it, and whoever sees cursor N sees
    // every cursor of the tenant below N. Cursors go on from each tenant's
    // newest. The sequence goes: a replica still running an older build
    // fails its event writes loudly instead of numbering out of order.
    r#"
CREATE TABLE event_cursors (
    tenant text COLLATE "C" PRIMARY KEY,
    newest bigint NOT NULL CHECK (newest >= 0)
);
INSERT INTO event_cursors (tenant, newest)
    SELECT tenant, MAX(cursor) FROM events GROUP BY tenant;
ALTER TABLE events ALTER COLUMN cursor DROP DEFAULT;
DROP SEQUENCE events_cursor_seq;
"#,
    // Outbound event webhooks, as SQLite's migration 16 has them, with a
    // claim: the replica delivering a tenant holds its row until
    // `claim_until_ms` (the database's clock) and renews it with every
    // attempt, so exactly one replica delivers a tenant at a time, in
    // cursor order; a replica that dies lets the claim lapse and another
    // goes on from the stored cursor.
    r#"
CREATE TABLE event_deliveries (
    tenant         text COLLATE "C" PRIMARY KEY,
    url            text NOT NULL,
    delivered      bigint NOT NULL CHECK (delivered >= 0),
    failures       integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    retry_at_ms    bigint,
    claimed_by     text,
    claim_until_ms bigint
);
"#,
    // The conformance seam `scriptedJudge`, as SQLite's migration 17 has
    // it: shared by every replica, as the goal is.
    r#"
CREATE TABLE judge_scripts (
    goal_id      text COLLATE "C" PRIMARY KEY REFERENCES goals (id),
    verifier_ref text NOT NULL
);
"#,
];

/// Applies the migrations this database has not had, in one transaction
/// under the migration lock.
pub(super) async fn migrate(client: &mut Client) -> Result<usize, StoreError> {
    let transaction = client.transaction().await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    transaction
        .batch_execute("CREATE TABLE IF NOT EXISTS goalpost_schema (version integer NOT NULL)")
        .await?;
    let row = transaction
        .query_opt("SELECT version FROM goalpost_schema", &[])
        .await?;
    let applied = match row {
        Some(row) => row.get::<_, i32>(0),
        None => {
            transaction
                .execute("INSERT INTO goalpost_schema (version) VALUES (0)", &[])
                .await?;
            0
        }
    };
    let applied = crate::storage::applied_migrations(applied.into(), MIGRATIONS.len())?;
    for sql in &MIGRATIONS[applied..] {
        transaction.batch_execute(sql).await?;
    }
    let version = i32::try_from(MIGRATIONS.len())
        .map_err(|_| StoreError::Corrupt("too many migrations".to_string()))?;
    transaction
        .execute("UPDATE goalpost_schema SET version = $1", &[&version])
        .await?;
    transaction.commit().await?;
    Ok(MIGRATIONS.len() - applied)
}
