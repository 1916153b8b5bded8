//! Per-tenant limits: how many open goals, how many of them on an arm the
//! scheduler drives, and how many goals in any state one tenant may hold.
//! Beyond them a create (or a PATCH into such a mode) is 429
//! `quota_exceeded`.

use crate::domain::Mode;

pub const DEFAULT_MAX_GOALS_PER_TENANT: u64 = 10_000;
pub const DEFAULT_MAX_ACTIVE_ARMS_PER_TENANT: u64 = 1_000;
/// Goals in any state, closed ones included. Only open goals counted
/// before, so create and abandon in a loop grew storage without bound; ten
/// times the open quota leaves room for a tenant's history until retention
/// (`--retain-closed`) forgets the oldest closed goals.
pub const DEFAULT_MAX_STORED_GOALS_PER_TENANT: u64 = 100_000;
/// Criteria verifiers one tenant may register. Each holds up to 64 KiB of
/// criteria, and unlimited, 1,000 of them were registered in 0.77 s.
pub const MAX_VERIFIERS_PER_TENANT: u64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Open goals (`active` or `escalated`, paused or not).
    pub goals_per_tenant: u64,
    /// Open goals whose mode is `schedule` or `heartbeat`: the ones the
    /// scheduler spends work on without a client asking.
    pub active_arms_per_tenant: u64,
    /// Goals in any state, closed ones included, until retention forgets
    /// them.
    pub stored_goals_per_tenant: u64,
}

impl Default for Quotas {
    fn default() -> Quotas {
        Quotas {
            goals_per_tenant: DEFAULT_MAX_GOALS_PER_TENANT,
            active_arms_per_tenant: DEFAULT_MAX_ACTIVE_ARMS_PER_TENANT,
            stored_goals_per_tenant: DEFAULT_MAX_STORED_GOALS_PER_TENANT,
        }
    }
}

/// Which quota a refusal is about (its name on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    GoalsPerTenant,
    ActiveArmsPerTenant,
    StoredGoalsPerTenant,
    VerifiersPerTenant,
}

impl Quota {
    pub fn as_str(self) -> &'static str {
        match self {
            Quota::GoalsPerTenant => "goalsPerTenant",
            Quota::ActiveArmsPerTenant => "activeArmsPerTenant",
            Quota::StoredGoalsPerTenant => "storedGoalsPerTenant",
            Quota::VerifiersPerTenant => "verifiersPerTenant",
        }
    }
}

/// A mode the scheduler drives on its own.
pub fn is_armed(mode: Mode) -> bool {
    mode.is_armed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scheduler_driven_modes_are_armed() {
        assert!(is_armed(Mode::Schedule));
        assert!(is_armed(Mode::Heartbeat));
        // A commitment goal's runs start on their own too, whenever the
        // last run committed to a check-in: it escaped the quota.
        assert!(is_armed(Mode::Commitment));
        assert!(!is_armed(Mode::Manual));
    }
}
