//! Filling a file database with goals through the host's own `Store` (the
//! same rows a create would write), a thousand per transaction, in a
//! process of its own so the memory it touches is not counted against what
//! is measured next.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use goalpost_host::clock::{Clock, SystemClock};
use goalpost_host::domain::{parse_create, GoalId, GoalState, RequestContext, Tenant, Timestamp};
use goalpost_host::engine::{Engine, EngineSettings};
use goalpost_host::storage::{Goals, SqliteStore, Store};
use goalpost_host::DbLocation;
use serde_json::{json, Value};

/// Goals are spread over this many tenants.
pub const TENANTS: usize = 100;
/// Goals per transaction.
const BATCH: usize = 1000;

pub fn tenant(index: usize) -> Result<Tenant> {
    Tenant::parse(&format!("bench-tenant-{}", index % TENANTS)).context("tenant name")
}

pub fn new_goal(
    body: &Value,
    owner: Tenant,
    now: Timestamp,
) -> Result<goalpost_host::domain::Goal> {
    let parsed = parse_create(body, RequestContext::new(true))
        .map_err(|error| anyhow::anyhow!("the bench's goal is refused: {error:?}"))?;
    Ok(parsed.into_goal(GoalId::generate(), owner, now))
}

/// The due slot of the goal created `index`-th of `n`: a fixed shuffle of
/// creation order. Ids are time-ordered (UUID v7), so goals firing in
/// creation order would touch neighbouring pages of every index keyed by
/// goal id and flatter the store; goals made at different times fire in
/// no such order.
pub fn due_slot(index: usize, n: usize) -> usize {
    // Multiplying by a prime that does not divide `n` permutes 0..n.
    let prime = if n.checked_rem(7919) == Some(0) {
        7907
    } else {
        7919
    };
    ((index as u128 * prime as u128 + 13) % n.max(1) as u128) as usize
}

/// `n` active `schedule` goals (fixture arm every `interval_ms`, fixture
/// judge that never satisfies) whose first fires are due one after the
/// other, `interval_ms / n` apart from `first_due_ms`, in an order unrelated
/// to the order they were created in ([`due_slot`]): the steady state of
/// goals created at different times. Writes `goal-id due-ms` lines to
/// `dues`.
pub fn schedule_goals(
    db: &Path,
    n: usize,
    interval_ms: u64,
    first_due_ms: i64,
    dues: &Path,
) -> Result<Value> {
    let store = SqliteStore::open(&DbLocation::File(db.to_path_buf()))?;
    let body = json!({
        "objective": "bench: keep the scheduler busy",
        "completion": {"check": "verifier", "verifierRef": "conformance:verifier"},
        "continuation": {"mode": "schedule", "armRef": format!("conformance:arm?intervalMs={interval_ms}")},
        "bounds": {"maxLoopIterations": 1_000_000u64}
    });
    let mut out = std::io::BufWriter::new(std::fs::File::create(dues)?);
    let started = Instant::now();
    let now = SystemClock.now();
    let spacing = interval_ms as f64 / n.max(1) as f64;
    let mut batch = Vec::with_capacity(BATCH);
    for index in 0..n {
        let mut goal = new_goal(&body, tenant(index)?, now)?;
        let due = first_due_ms + (due_slot(index, n) as f64 * spacing) as i64;
        goal.next_fire_at = Some(Timestamp::from_unix_ms(due).context("due time")?);
        writeln!(out, "{} {due}", goal.id)?;
        batch.push(goal);
        if batch.len() == BATCH || index + 1 == n {
            store.insert_goals(&batch)?;
            batch.clear();
        }
    }
    out.flush()?;
    Ok(json!({"inserted": n, "secs": started.elapsed().as_secs_f64()}))
}

/// `n` goals as a host holds them after a while: four in five closed
/// (satisfied, abandoned, bound-exceeded), one in five active and idle
/// (`manual`, no deadline).
pub fn mixed_goals(db: &Path, n: usize) -> Result<Value> {
    let store = SqliteStore::open(&DbLocation::File(db.to_path_buf()))?;
    let body = json!({
        "objective": "bench: a goal among many, with an objective of ordinary length for a person to read",
        "completion": {"check": "verifier", "verifierRef": "conformance:verifier?satisfyOn=3"},
        "continuation": {"mode": "manual", "armRef": "conformance:arm"},
        "bounds": {"maxLoopIterations": 10, "maxCostUsd": 5}
    });
    let started = Instant::now();
    let now = SystemClock.now();
    const CLOSED: [GoalState; 4] = [
        GoalState::Satisfied,
        GoalState::Abandoned,
        GoalState::BoundExceeded,
        GoalState::Satisfied,
    ];
    let mut batch = Vec::with_capacity(BATCH);
    for index in 0..n {
        let mut goal = new_goal(&body, tenant(index)?, now)?;
        if index % 5 != 0 {
            goal.state = CLOSED[index % CLOSED.len()];
        }
        batch.push(goal);
        if batch.len() == BATCH || index + 1 == n {
            store.insert_goals(&batch)?;
            batch.clear();
        }
    }
    Ok(json!({"inserted": n, "secs": started.elapsed().as_secs_f64()}))
}

/// Reads back the `dues` file a seeding wrote: each goal's first due time
/// (unix ms) by its id.
pub(crate) fn read_dues(path: &Path) -> Result<std::collections::HashMap<String, i64>> {
    Ok(std::fs::read_to_string(path)?
        .lines()
        .filter_map(|line| {
            let (id, due) = line.split_once(' ')?;
            Some((id.to_string(), due.parse().ok()?))
        })
        .collect())
}

/// An engine with the conformance seams on the SQLite file `db`, with the
/// system clock (the scheduler benchmarks drive it without the HTTP layer).
pub(crate) async fn engine_on_file(db: &Path) -> Result<std::sync::Arc<Engine>> {
    let location = DbLocation::File(db.to_path_buf());
    let store = tokio::task::spawn_blocking(move || SqliteStore::open(&location)).await??;
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(store);
    let clock: std::sync::Arc<dyn Clock> = std::sync::Arc::new(SystemClock);
    let settings = EngineSettings {
        conformance_seams: true,
        ..EngineSettings::default()
    };
    Ok(std::sync::Arc::new(Engine::new(store, clock, settings)))
}

#[cfg(test)]
mod tests {
    use super::due_slot;

    #[test]
    fn due_slots_are_a_shuffle_of_creation_order() {
        for n in [1, 2, 1000, 7919, 100_000] {
            let mut slots: Vec<usize> = (0..n).map(|index| due_slot(index, n)).collect();
            let in_creation_order = slots.windows(2).filter(|w| w[1] == w[0] + 1).count();
            slots.sort_unstable();
            assert!(
                slots.iter().copied().eq(0..n),
                "not a permutation of 0..{n}"
            );
            assert!(
                n < 1000 || in_creation_order < n / 100,
                "{in_creation_order} in order"
            );
        }
    }
}
