//! Test goals built without going through HTTP.

use super::bounds::{Bounds, CostCap};
use super::criteria::{CriteriaVerifier, Predicate, Rule, VerifierName};
use super::event::{Event, EventPayload};
use super::goal::{Check, Completion, Continuation, Goal, GoalState, Mode, Progress};
use super::ids::{GoalId, Objective, RunId, Tenant};
use super::money::MicroUsd;
use super::timestamp::Timestamp;
use super::verdict::FailureClass;
use super::verdict::{Judgement, RunOutcome, Verdict};

pub const T0_MS: i64 = 1_781_308_800_000;

pub fn at(ms_after_t0: i64) -> Timestamp {
    Timestamp::from_unix_ms(T0_MS + ms_after_t0).expect("test time in range")
}

pub fn usd(amount: f64) -> MicroUsd {
    MicroUsd::from_usd(amount).expect("valid amount")
}

pub fn cap(amount: f64) -> CostCap {
    let number = serde_json::Number::from_f64(amount).expect("finite");
    CostCap::from_number(number).expect("valid cap")
}

/// An active manual goal created at `at(0)` with the given bounds.
pub fn goal(iterations: Option<u64>, timeout_ms: Option<u64>, cost: Option<f64>) -> Goal {
    let bounds = Bounds::new(iterations, timeout_ms, cost.map(cap)).expect("some bound");
    Goal {
        id: GoalId::generate(),
        objective: Objective::new("ship the release checklist".into()),
        state: GoalState::Active,
        completion: Completion {
            check: Check::Verifier,
            verifier_ref: None,
            last_verdict: None,
        },
        continuation: Continuation {
            mode: Mode::Manual,
            arm_ref: None,
        },
        bounds,
        owner: Tenant::parse("acme").expect("tenant"),
        created_at: at(0),
        updated_at: at(0),
        progress: Progress::default(),
        paused: false,
        spent: MicroUsd::ZERO,
        next_fire_at: None,
        version: 1,
        notes: crate::domain::Notes::default(),
    }
}

/// `goal` after `runs` counted runs costing `spent` in total.
pub fn with_progress(mut goal: Goal, runs: u64, spent: f64) -> Goal {
    goal.progress.iterations = runs;
    goal.progress.contributing_run_ids = (0..runs).map(|_| RunId::generate()).collect();
    goal.spent = usd(spent);
    goal
}

pub fn in_state(mut goal: Goal, state: GoalState) -> Goal {
    goal.state = state;
    goal
}

pub fn satisfied() -> RunOutcome {
    RunOutcome::Judged(Verdict::aggregate(Judgement {
        satisfied: true,
        confidence: 0.9,
        criteria: None,
    }))
}

pub fn unsatisfied() -> RunOutcome {
    RunOutcome::Judged(Verdict::aggregate(Judgement {
        satisfied: false,
        confidence: 0.4,
        criteria: None,
    }))
}

/// A verifier named `v` of one rule: the output's `tag` matches `pattern`.
pub fn tag_verifier(pattern: &str) -> CriteriaVerifier {
    CriteriaVerifier {
        name: VerifierName::parse("v").expect("name"),
        rules: vec![Rule {
            id: "tag".into(),
            pointer: "/tag".into(),
            predicate: Predicate::Matches(pattern.into()),
            failure_class: FailureClass::Logical,
        }],
        created_at: Timestamp::from_unix_ms(0).expect("epoch"),
    }
}

/// An event of `goal` numbered `cursor` in both its goal and its tenant
/// (a close, the plainest payload), at the epoch.
pub fn closed_event(cursor: u64, goal: &GoalId) -> Event {
    Event {
        sequence: cursor,
        cursor,
        at: Timestamp::from_unix_ms(0).expect("epoch"),
        payload: EventPayload::Closed {
            goal_id: goal.clone(),
            final_state: GoalState::Abandoned,
        },
    }
}

/// The tenant named `name`.
pub fn tenant(name: &str) -> Tenant {
    Tenant::parse(name).expect("a tenant")
}
