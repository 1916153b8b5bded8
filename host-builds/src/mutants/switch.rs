//! The per-host switch: which mutant one host runs with, and the little
//! memory some bugs need (a scheduler's private timers, refs resolved once,
//! edits logged as events). One per engine, never a process global: the
//! kill matrix runs many hosts side by side in one process.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::Mutant;
use goalpost_host::domain::{
    ArmRef, Bounds, GoalId, Objective, RunId, Tenant, Timestamp, VerifierRef,
};

#[derive(Debug, Default)]
pub struct Switch {
    active: Option<Mutant>,
    /// The tenant whose lists show one schema-invalid goal nobody of the
    /// suite created (`--foreign-invalid-goal`).
    foreign_invalid_goal: Option<String>,
    memory: Mutex<Memory>,
    /// Signalled when a keyed create races one in flight (see
    /// `idempotency-not-atomic`).
    pub(crate) raced: tokio::sync::Notify,
}

/// What the stateful mutants remember, per host.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    /// Goals the scheduler has fired: its private timer list.
    pub timers: BTreeSet<GoalId>,
    /// Fires the scheduler had queued when pause or abandon answered, and
    /// when each is due.
    pub stale_fires: HashMap<GoalId, Timestamp>,
    /// Tenants that created goals (for a list that forgets the tenant).
    pub tenants: BTreeSet<Tenant>,
    /// The objective as first sent to the worker, per goal.
    pub objectives: HashMap<GoalId, Objective>,
    /// The output of each goal's latest run, as the verifier last got it.
    pub outputs: HashMap<GoalId, serde_json::Value>,
    /// Refs as first resolved, per goal.
    pub refs: HashMap<GoalId, (Option<VerifierRef>, Option<ArmRef>)>,
    /// The judge's own flag per run, before aggregation with criteria.
    pub flags: HashMap<RunId, bool>,
    /// Environmental failures per goal.
    pub environmental: HashMap<GoalId, u64>,
    /// Objectives set by PATCH, per goal, in order (logged as events).
    pub edits: BTreeMap<GoalId, Vec<String>>,
    /// The real bounds of goals whose fail-closed check saw other ones.
    pub bounds: HashMap<GoalId, Bounds>,
    /// Spend summed as binary floating point, per goal.
    pub float_spend: HashMap<GoalId, f64>,
    /// Idempotency-Keys as first used: (credential, key) → first body.
    pub keyed_bodies: HashMap<(String, String), Vec<u8>>,
    /// Idempotency-Keys as first used: key → first credential.
    pub key_owners: HashMap<String, String>,
    /// (credential, key) of keyed creates in flight.
    pub keys_in_flight: BTreeSet<(String, String)>,
    /// The scheduler's timers of schedule goals with a deadline: when the
    /// deadline is, and whether the fire it had queued at the deadline
    /// close went out (`deadline-close-leaves-queued-fire`).
    pub deadline_fires: HashMap<GoalId, (Timestamp, bool)>,
}

impl Switch {
    pub fn new(active: Option<Mutant>) -> Switch {
        Switch {
            active,
            foreign_invalid_goal: None,
            memory: Mutex::new(Memory::default()),
            raced: tokio::sync::Notify::new(),
        }
    }

    /// Serve a schema-invalid goal in `tenant`'s lists.
    pub fn with_foreign_invalid_goal(mut self, tenant: Option<String>) -> Switch {
        self.foreign_invalid_goal = tenant;
        self
    }

    /// The tenant whose lists show a foreign, schema-invalid goal.
    pub fn foreign_invalid_goal(&self) -> Option<&str> {
        self.foreign_invalid_goal.as_deref()
    }

    pub fn active(&self) -> Option<Mutant> {
        self.active
    }

    pub fn is(&self, mutant: Mutant) -> bool {
        self.active == Some(mutant)
    }

    pub(crate) fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The scheduler fired `goal`: remember its timer.
    pub fn remember_timer(&self, goal: &GoalId) {
        if self.is(Mutant::StaleTimerAfterPause)
            || self.is(Mutant::NoFailClosedCheck)
            || self.is(Mutant::ModeSwitchKeepsTimer)
        {
            self.memory().timers.insert(goal.clone());
        }
    }
}
