//! What the scheduler asks PostgreSQL ([`Schedule`]): due and heartbeat
//! goals claimed per replica, and deadlines.

use std::time::Duration;

use super::{ids, ms, timestamp, PostgresStore};
use crate::domain::{GoalId, Timestamp};
use crate::storage::{Schedule, StoreError};

/// How long a scheduler's claim on a due goal keeps the others away. The
/// claim only shares work: a goal whose claim lapsed while it was firing
/// is refused a second run by its reservation.
const CLAIM: Duration = Duration::from_secs(5);

/// A heartbeat claim is renewed once it has less than this left: well
/// before it lapses on a busy machine, yet a held goal's row is written
/// only every few seconds, not on every scheduler tick.
const RENEW_WITHIN: Duration = Duration::from_secs(2);

/// Most due goals one replica holds claimed: the rest are left to the
/// other replicas' schedulers.
const MOST_CLAIMED: i64 = 256;

impl Schedule for PostgresStore {
    /// The due goals this replica fires, longest due first, at most
    /// `limit`: its own unexpired claims (listed whether or not their row
    /// is locked at the moment, renewed only with less than
    /// [`RENEW_WITHIN`] left), and up to [`MOST_CLAIMED`] unclaimed (or
    /// lapsed) ones taken now, skipping rows another replica is claiming.
    /// The cap is on what one listing takes, not on what a replica holds:
    /// capping the holding made a replica whose 256 goals were still
    /// firing list only those and take nothing new until they were
    /// recorded, so it fired in bursts of 256 (about 270 fires/s whatever
    /// the machine, `goalpost-bench --only replicas`).
    fn due_schedule_goals(&self, now: Timestamp, limit: usize) -> Result<Vec<GoalId>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let taken = limit.min(MOST_CLAIMED);
        let mut due = self.rows(
            "WITH now AS (SELECT goalpost_now_ms() AS ms),
                     mine AS (
                         SELECT g.id, COALESCE(g.next_fire_ms, 0) AS fire, g.created_ms,
                                g.claim_until_ms
                         FROM goals g, now
                         WHERE (g.mode = 'schedule' OR (g.mode = 'commitment' AND g.next_fire_ms IS NOT NULL))
                           AND g.state = 'active' AND NOT g.paused
                           AND COALESCE(g.next_fire_ms, 0) <= $1
                           AND g.claimed_by = $3 AND g.claim_until_ms > now.ms
                         ORDER BY COALESCE(g.next_fire_ms, 0), g.created_ms, g.id
                         LIMIT $2
                     ),
                     renewing AS (
                         SELECT g.id FROM goals g, mine, now
                         WHERE g.id = mine.id AND mine.claim_until_ms <= now.ms + $6
                         FOR UPDATE OF g SKIP LOCKED
                     ),
                     renewed AS (
                         UPDATE goals SET claim_until_ms = (SELECT ms FROM now) + $4
                         FROM renewing WHERE goals.id = renewing.id
                     ),
                     fresh AS (
                         SELECT g.id FROM goals g, now
                         WHERE (g.mode = 'schedule' OR (g.mode = 'commitment' AND g.next_fire_ms IS NOT NULL))
                           AND g.state = 'active' AND NOT g.paused
                           AND COALESCE(g.next_fire_ms, 0) <= $1
                           AND (g.claimed_by IS NULL OR g.claim_until_ms <= now.ms)
                         ORDER BY COALESCE(g.next_fire_ms, 0), g.created_ms, g.id
                         LIMIT $5
                         FOR UPDATE OF g SKIP LOCKED
                     ),
                     claimed AS (
                         UPDATE goals SET claimed_by = $3,
                                          claim_until_ms = (SELECT ms FROM now) + $4
                         FROM fresh WHERE goals.id = fresh.id
                         RETURNING goals.id, COALESCE(goals.next_fire_ms, 0), goals.created_ms
                     )
                     SELECT id, fire, created_ms FROM mine
                     UNION ALL
                     SELECT * FROM claimed",
            vec![
                Box::new(now.unix_ms()),
                Box::new(limit),
                Box::new(self.replica.clone()),
                Box::new(ms(CLAIM)),
                Box::new(taken),
                Box::new(ms(RENEW_WITHIN)),
            ],
            |row| {
                Ok((
                    row.try_get::<_, i64>(1)?,
                    row.try_get::<_, i64>(2)?,
                    ids(row)?,
                ))
            },
        )?;
        due.sort_by(|a, b| (a.0, a.1, a.2.as_str()).cmp(&(b.0, b.1, b.2.as_str())));
        due.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(due.into_iter().map(|(_, _, id)| id).collect())
    }

    fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, StoreError> {
        self.rows(
            "SELECT id FROM goals WHERE state = 'active' AND deadline_ms IS NOT NULL
               AND deadline_ms <= $1 ORDER BY deadline_ms",
            vec![Box::new(now.unix_ms())],
            ids,
        )
    }

    fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let found = self.rows(
            "SELECT LEAST(
                 (SELECT MIN(COALESCE(next_fire_ms, 0)) FROM goals
                  WHERE (mode = 'schedule' OR (mode = 'commitment' AND next_fire_ms IS NOT NULL))
                   AND state = 'active' AND NOT paused
                    AND COALESCE(next_fire_ms, 0) > $1),
                 (SELECT MIN(deadline_ms) FROM goals
                  WHERE state = 'active' AND deadline_ms IS NOT NULL AND deadline_ms > $1))",
            vec![Box::new(after.unix_ms())],
            |row| row.try_get::<_, Option<i64>>(0).map_err(StoreError::from),
        )?;
        found
            .into_iter()
            .flatten()
            .next()
            .map(timestamp)
            .transpose()
    }

    /// The heartbeat goals this replica probes: its own unexpired claims,
    /// and unclaimed (or lapsed) ones, taken as due goals are. Each
    /// replica keeps its own probe cadence, so without the claim every
    /// replica probed every goal and fired a run on each answer (the
    /// suite's `observed.heartbeat.fires-on-probe`, run against three
    /// replicas, saw the extra runs). A replica that dies leaves its goals
    /// to the others once its claims lapse. Only claims with less than
    /// [`RENEW_WITHIN`] left are renewed: a tick writes a held goal's row
    /// about once per `CLAIM - RENEW_WITHIN`, not once per tick. A claim
    /// of this replica's whose row is locked at the moment (an iteration
    /// writing it) is still listed, renewed on a later tick.
    fn heartbeat_goals(&self) -> Result<Vec<GoalId>, StoreError> {
        let mut mine = self.rows(
            "WITH now AS (SELECT goalpost_now_ms() AS ms),
                     taken AS (
                         SELECT g.id FROM goals g, now
                         WHERE g.mode = 'heartbeat' AND g.state = 'active' AND NOT g.paused
                           AND (g.claimed_by IS NULL OR g.claim_until_ms <= now.ms
                                OR (g.claimed_by = $1 AND g.claim_until_ms <= now.ms + $3))
                         FOR UPDATE OF g SKIP LOCKED
                     ),
                     claimed AS (
                         UPDATE goals SET claimed_by = $1,
                                          claim_until_ms = (SELECT ms FROM now) + $2
                         FROM taken WHERE goals.id = taken.id
                         RETURNING goals.id, goals.created_ms
                     )
                     SELECT id, created_ms FROM claimed
                     UNION
                     SELECT g.id, g.created_ms FROM goals g, now
                     WHERE g.mode = 'heartbeat' AND g.state = 'active' AND NOT g.paused
                       AND g.claimed_by = $1 AND g.claim_until_ms > now.ms",
            vec![
                Box::new(self.replica.clone()),
                Box::new(ms(CLAIM)),
                Box::new(ms(RENEW_WITHIN)),
            ],
            |row| Ok((row.try_get::<_, i64>(1)?, ids(row)?)),
        )?;
        mine.sort_by(|a, b| (a.0, a.1.as_str()).cmp(&(b.0, b.1.as_str())));
        Ok(mine.into_iter().map(|(_, id)| id).collect())
    }
}
