//! The goals aggregate: the [`Goals`] trait and the types its writes answer with.

use crate::domain::{Change, Event, Goal, GoalId, GoalState, RunId, Tenant, Timestamp};
use crate::storage::{Pending, StoreError, StoredKey};

/// Whether a versioned write happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Written<T> {
    Done(T),
    /// The goal changed (or vanished) since it was read; nothing was written.
    Conflict,
}

/// Whether a write that waits for the goal's runs
/// ([`Goals::apply_unless_run_in_flight`]) happened.
#[derive(Debug, Clone, PartialEq)]
pub enum WrittenIfIdle<T> {
    Done(T),
    /// The goal changed (or vanished) since it was read; nothing was written.
    Conflict,
    /// A run of the goal is in flight; nothing was written.
    RunInFlight,
    /// Only from [`Goals::apply_arming`]: the goal's owner holds as many
    /// open armed goals as it may; nothing was written.
    TooManyArmed,
}

/// What a write checks in its own transaction besides the goal's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteGuard {
    Nothing,
    /// No run of the goal is in flight ([`Goals::apply_unless_run_in_flight`]).
    NoRunInFlight,
    /// The owner holds fewer open armed goals than this ([`Goals::apply_arming`]).
    ArmedBelow(u64),
}

/// What a guarded create checks and writes in the same transaction as the
/// insert, so concurrent creates can neither share a key nor overshoot a
/// quota, and no run of the goal comes before its scripted judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateGuard {
    /// Most open (`active`/`escalated`) goals the owner may have, this one
    /// included.
    pub max_open_goals: u64,
    /// Most open `schedule`/`heartbeat` goals the owner may have, this one
    /// included; checked only when the new goal is in such a mode.
    pub max_open_armed: u64,
    /// Most goals the owner may hold in any state, closed ones included,
    /// this one included.
    pub max_stored_goals: u64,
    /// The key to remember with the goal.
    pub key: Option<(String, String)>,
    /// Keys stored at or before this have expired and are replaced.
    pub keys_expire_at_or_before: Timestamp,
    /// The verifier ref the seam `scriptedJudge` names for the goal
    /// ([`Verifiers::put_judge_script`](crate::storage::Verifiers::put_judge_script)), stored with it.
    pub judge_script: Option<String>,
}

#[cfg(test)]
impl CreateGuard {
    /// A guard of these quotas, remembering no key and scripting no judge.
    pub fn quotas(max_open_goals: u64, max_open_armed: u64, max_stored_goals: u64) -> CreateGuard {
        CreateGuard {
            max_open_goals,
            max_open_armed,
            max_stored_goals,
            key: None,
            keys_expire_at_or_before: crate::domain::fixture::at(-1),
            judge_script: None,
        }
    }

    /// This guard remembering the `n`th test key.
    pub fn keyed(self, n: usize) -> CreateGuard {
        CreateGuard {
            key: Some((format!("key-{n}"), format!("print-{n}"))),
            ..self
        }
    }
}

/// The outcome of a guarded create.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    Done,
    /// The key is already in use (unexpired); nothing was written.
    KeyTaken(StoredKey),
    /// The owner holds `max_open_goals` open goals already.
    TooManyGoals,
    /// The owner holds `max_open_armed` open armed goals already.
    TooManyArmed,
    /// The owner holds `max_stored_goals` goals already, open or closed.
    TooManyStored,
}

/// Goals: created, read, listed, changed (each change with its events,
/// evaluation and run in one transaction), counted per tenant, and forgotten
/// once closed long enough.
pub trait Goals {
    /// Whether this store can serve the attention extension
    /// (`domain::attention`). Attention is kept in the goal's record, which
    /// every store persists; what it needs beyond that is one process that
    /// sees every attention write (its due timers are kept in memory), so a
    /// store several replicas share says no, and discovery then does not
    /// advertise it.
    fn serves_attention(&self) -> bool {
        false
    }

    /// Stores new goals (version 1), all or none, with no quota or key
    /// check: for tests and the benchmarks (which seed a million goals with
    /// it). Creates go through [`Goals::insert_goal_guarded`].
    fn insert_goals(&self, goals: &[Goal]) -> Result<(), StoreError>;

    fn goal(&self, id: &GoalId) -> Result<Option<Goal>, StoreError>;

    /// Reads the goals of `ids` that are not in memory, in one read
    /// transaction, and keeps them in memory for the reads that follow
    /// (the scheduler, before it fires them). Only a speed-up: a later
    /// [`Goals::goal`] answers as it would have without it. Returns how
    /// many it read.
    fn warm(&self, ids: &[GoalId]) -> Result<usize, StoreError>;

    /// A tenant's goals in id order (creation order: ids are time-ordered),
    /// optionally of one state.
    fn goals(&self, tenant: &Tenant, state: Option<GoalState>) -> Result<Vec<Goal>, StoreError> {
        self.goals_page(tenant, state, None, usize::MAX)
    }

    /// At most `limit` of a tenant's goals in id order, optionally of one
    /// state, starting after the id `after` (which need not be a goal):
    /// a page costs the same wherever it starts.
    fn goals_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<&GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, StoreError>;

    /// Writes `change` if the stored goal is still at `expected_version`
    /// and `guard` holds, appending its events (each with the next per-goal
    /// sequence) and its evaluation, and ending `run` as recorded, in one
    /// transaction. The guard is checked in that transaction, after the
    /// goal's row lock is taken, so writes on any number of replicas cannot
    /// slip past it together. The three writes below are this one with
    /// each guard.
    fn apply_guarded(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
        guard: WriteGuard,
    ) -> Pending<WrittenIfIdle<Vec<Event>>>;

    /// [`Goals::apply_guarded`] with no guard but the version.
    fn apply(
        &self,
        change: &Change,
        expected_version: u64,
        run: Option<&RunId>,
        at: Timestamp,
    ) -> Pending<Written<Vec<Event>>> {
        written_only(self.apply_guarded(change, expected_version, run, at, WriteGuard::Nothing))
    }

    /// [`Goals::apply`] of a change that records no run, unless a run of
    /// the goal is in flight (reserved and not ended) in any process that
    /// shares the store, a dead one's included.
    /// [`Runs::reserve_run`](crate::storage::Runs::reserve_run) holds the
    /// goal's row lock until its run is stored: a reservation that
    /// committed first is seen here, and one that comes after finds the
    /// goal changed. Nothing is written when a run is in flight.
    fn apply_unless_run_in_flight(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        self.apply_guarded(
            change,
            expected_version,
            None,
            at,
            WriteGuard::NoRunInFlight,
        )
    }

    /// [`Goals::apply`] of a change that puts the goal on an arm (a PATCH
    /// into an armed mode), only if its owner holds fewer than `max_armed`
    /// open armed goals, counted in the write's own transaction with the
    /// owner's counts locked: arming PATCHes on any number of replicas
    /// cannot overshoot the quota together.
    fn apply_arming(
        &self,
        change: &Change,
        expected_version: u64,
        at: Timestamp,
        max_armed: u64,
    ) -> Pending<WrittenIfIdle<Vec<Event>>> {
        let guard = WriteGuard::ArmedBelow(max_armed);
        self.apply_guarded(change, expected_version, None, at, guard)
    }

    /// Stores a new goal (version 1) if `guard` allows it, remembering its
    /// idempotency key, in one transaction.
    fn insert_goal_guarded(&self, goal: &Goal, guard: &CreateGuard) -> Pending<Inserted>;

    /// The tenant's open goals in `schedule` or `heartbeat` mode.
    fn open_armed_goals(&self, tenant: &Tenant) -> Result<u64, StoreError>;

    /// Retention: forgets at most `limit` goals that closed at or before
    /// `closed_at_or_before`, longest closed first, with everything that
    /// names them (log entries and their records, runs, idempotency keys),
    /// in one transaction; their tenants' counts drop with them. Returns
    /// the forgotten ids. Bounded, so a backlog is worked off a batch at a
    /// time without holding the writer long. A goal with an event that its
    /// tenant's event webhook has not delivered yet is kept until it is
    /// (at-least-once: an event is never forgotten before it was sent).
    fn purge_closed_goals(
        &self,
        closed_at_or_before: Timestamp,
        limit: usize,
    ) -> Pending<Vec<GoalId>>;
}

/// A write that was not asked to look at the goal's runs, as
/// [`Goals::apply`] answers it: it is written or in conflict.
fn written_only<T: Send + 'static>(written: Pending<WrittenIfIdle<T>>) -> Pending<Written<T>> {
    Box::pin(async move {
        Ok(match written.await? {
            WrittenIfIdle::Done(done) => Written::Done(done),
            WrittenIfIdle::Conflict | WrittenIfIdle::RunInFlight | WrittenIfIdle::TooManyArmed => {
                Written::Conflict
            }
        })
    })
}
