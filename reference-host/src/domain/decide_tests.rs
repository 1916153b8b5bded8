//! One test per row of SPEC §3's decision order.

use super::bounds::CostReading;
use super::decide::{decide, exhausted, may_dispatch, run_outcome, Bound, Decision, Refusal};
use super::fixture::{at, goal, in_state, satisfied, unsatisfied, usd, with_progress};
use super::goal::GoalState;
use super::verdict::{RunOutcome, Verdict};

/// The verdict of a judged outcome.
fn verdict_of(outcome: RunOutcome) -> Verdict {
    match outcome {
        RunOutcome::Judged(verdict) => verdict,
        RunOutcome::Escalated => panic!("a judged outcome"),
    }
}

#[test]
fn row1_escalation_comes_first_even_when_satisfied_or_bounded() {
    // An escalated run ends escalated even beside a satisfied verdict, and
    // escalates even a goal whose bounds are used up.
    let spent = with_progress(goal(Some(3), Some(1000), Some(1.0)), 3, 2.0);
    let outcome = run_outcome(true, Some(verdict_of(satisfied()))).expect("decided");
    assert_eq!(outcome, RunOutcome::Escalated);
    assert_eq!(
        decide(&spent, &outcome, at(5000), CostReading::Budget),
        Decision::Escalate
    );
    let fresh = with_progress(goal(Some(3), None, None), 1, 0.0);
    assert_eq!(
        decide(&fresh, &RunOutcome::Escalated, at(0), CostReading::Budget),
        Decision::Escalate
    );
}

#[test]
fn an_escalated_run_needs_no_verdict_and_another_awaits_one() {
    assert_eq!(run_outcome(true, None), Some(RunOutcome::Escalated));
    assert_eq!(run_outcome(false, None), None);
    let verdict = verdict_of(unsatisfied());
    assert_eq!(
        run_outcome(false, Some(verdict.clone())),
        Some(RunOutcome::Judged(verdict))
    );
}

#[test]
fn next_iteration_and_remaining_follow_progress() {
    let fresh = goal(Some(3), Some(1000), Some(1.0));
    assert_eq!(fresh.next_iteration(), 1);
    let used = with_progress(fresh, 2, 0.25);
    assert_eq!(used.next_iteration(), 3);
    let remaining = used.remaining();
    assert_eq!(remaining.iterations, Some(1));
    assert_eq!(remaining.cost, Some(usd(0.75)));
    assert_eq!(remaining.deadline, used.deadline());
    // Only a deadline: no count and no budget to run down.
    let timed = goal(None, Some(1000), None);
    let remaining = timed.remaining();
    assert_eq!((remaining.iterations, remaining.cost), (None, None));
    assert_eq!(remaining.deadline, Some(at(1000)));
}

#[test]
fn open_means_not_closed() {
    let open: Vec<GoalState> = GoalState::ALL
        .into_iter()
        .filter(|state| state.is_open())
        .collect();
    assert_eq!(open, vec![GoalState::Active, GoalState::Escalated]);
}

#[test]
fn row2_satisfied_verdict_satisfies() {
    let goal = with_progress(goal(Some(5), None, None), 2, 0.0);
    assert_eq!(
        decide(&goal, &satisfied(), at(0), CostReading::Budget),
        Decision::Satisfy
    );
}

#[test]
fn row2_satisfied_on_the_last_allowed_iteration_beats_the_bound() {
    let last = with_progress(goal(Some(3), None, None), 3, 0.0);
    assert_eq!(
        decide(&last, &satisfied(), at(0), CostReading::Budget),
        Decision::Satisfy
    );
    let over_budget = with_progress(goal(None, None, Some(1.0)), 3, 1.2);
    assert_eq!(
        decide(&over_budget, &satisfied(), at(0), CostReading::Budget),
        Decision::Satisfy
    );
    let late = with_progress(goal(None, Some(1000), None), 1, 0.0);
    assert_eq!(
        decide(&late, &satisfied(), at(2000), CostReading::Budget),
        Decision::Satisfy
    );
}

#[test]
fn row3_iterations_reached_without_satisfaction_exceeds() {
    let reached = with_progress(goal(Some(3), None, None), 3, 0.0);
    assert_eq!(
        decide(&reached, &unsatisfied(), at(0), CostReading::Budget),
        Decision::Exceed(Bound::Iterations)
    );
    let below = with_progress(goal(Some(3), None, None), 2, 0.0);
    assert_eq!(
        decide(&below, &unsatisfied(), at(0), CostReading::Budget),
        Decision::Continue
    );
}

#[test]
fn row3_cost_over_the_cap_exceeds() {
    let over = with_progress(goal(None, None, Some(1.0)), 3, 1.2);
    assert_eq!(
        decide(&over, &unsatisfied(), at(0), CostReading::Budget),
        Decision::Exceed(Bound::Cost)
    );
    let under = with_progress(goal(None, None, Some(1.0)), 2, 0.8);
    assert_eq!(
        decide(&under, &unsatisfied(), at(0), CostReading::Budget),
        Decision::Continue
    );
}

#[test]
fn row3_cost_reaching_the_cap_exactly_exceeds_budget_reading() {
    // 0.1 + 0.2 + 0.7 summed in micro-dollars is exactly 1.0.
    let mut exact = with_progress(goal(None, None, Some(1.0)), 3, 0.0);
    exact.spent = usd(0.1).saturating_add(usd(0.2)).saturating_add(usd(0.7));
    assert_eq!(exact.spent.micros(), 1_000_000);
    assert_eq!(
        decide(&exact, &unsatisfied(), at(0), CostReading::Budget),
        Decision::Exceed(Bound::Cost)
    );
    let just_under = with_progress(goal(None, None, Some(1.0)), 3, 0.999_999);
    assert_eq!(
        decide(&just_under, &unsatisfied(), at(0), CostReading::Budget),
        Decision::Continue
    );
}

#[test]
fn row3_wall_clock_at_or_after_the_deadline_exceeds() {
    let goal = with_progress(goal(None, Some(1000), None), 1, 0.0);
    assert_eq!(
        decide(&goal, &unsatisfied(), at(999), CostReading::Budget),
        Decision::Continue
    );
    assert_eq!(
        decide(&goal, &unsatisfied(), at(1000), CostReading::Budget),
        Decision::Exceed(Bound::WallClock)
    );
    assert_eq!(
        decide(&goal, &unsatisfied(), at(60_000), CostReading::Budget),
        Decision::Exceed(Bound::WallClock)
    );
}

#[test]
fn row3_an_environmental_failure_counts_toward_the_bound() {
    let goal = with_progress(goal(Some(2), None, None), 2, 0.0);
    let failed = RunOutcome::Judged(Verdict::environmental());
    assert_eq!(
        decide(&goal, &failed, at(0), CostReading::Budget),
        Decision::Exceed(Bound::Iterations)
    );
}

#[test]
fn row4_otherwise_the_goal_continues() {
    let goal = with_progress(goal(Some(10), Some(60_000), Some(5.0)), 1, 0.4);
    assert_eq!(
        decide(&goal, &unsatisfied(), at(10), CostReading::Budget),
        Decision::Continue
    );
}

#[test]
fn decisions_map_to_closing_states() {
    assert_eq!(
        Decision::Escalate.closing_state(),
        Some(GoalState::Escalated)
    );
    assert_eq!(
        Decision::Satisfy.closing_state(),
        Some(GoalState::Satisfied)
    );
    assert_eq!(
        Decision::Exceed(Bound::Cost).closing_state(),
        Some(GoalState::BoundExceeded)
    );
    assert_eq!(Decision::Continue.closing_state(), None);
}

#[test]
fn exhausted_names_the_first_bound_used_up() {
    let all = with_progress(goal(Some(2), Some(10), Some(1.0)), 2, 1.0);
    assert_eq!(
        exhausted(&all, at(20), CostReading::Budget),
        Some(Bound::Iterations)
    );
    let cost_and_time = with_progress(goal(Some(5), Some(10), Some(1.0)), 2, 1.0);
    assert_eq!(
        exhausted(&cost_and_time, at(20), CostReading::Budget),
        Some(Bound::Cost)
    );
    assert_eq!(
        exhausted(&goal(Some(5), Some(10), None), at(10), CostReading::Budget),
        Some(Bound::WallClock)
    );
    assert_eq!(
        exhausted(
            &goal(Some(5), Some(10), Some(1.0)),
            at(9),
            CostReading::Budget
        ),
        None
    );
}

#[test]
fn zero_budgets_are_used_up_before_any_run() {
    assert_eq!(
        exhausted(&goal(None, None, Some(0.0)), at(0), CostReading::Budget),
        Some(Bound::Cost)
    );
    assert_eq!(
        exhausted(&goal(None, Some(0), None), at(0), CostReading::Budget),
        Some(Bound::WallClock)
    );
}

#[test]
fn dispatch_needs_an_active_unpaused_goal_with_budget() {
    let fresh = goal(Some(3), Some(1000), Some(1.0));
    assert_eq!(may_dispatch(&fresh, at(0), CostReading::Budget), Ok(()));
    for state in [
        GoalState::Satisfied,
        GoalState::Abandoned,
        GoalState::BoundExceeded,
    ] {
        assert_eq!(
            may_dispatch(&in_state(fresh.clone(), state), at(0), CostReading::Budget),
            Err(Refusal::Terminal)
        );
    }
    assert_eq!(
        may_dispatch(
            &in_state(fresh.clone(), GoalState::Escalated),
            at(0),
            CostReading::Budget
        ),
        Err(Refusal::Escalated)
    );
    let mut paused = fresh.clone();
    paused.paused = true;
    assert_eq!(
        may_dispatch(&paused, at(0), CostReading::Budget),
        Err(Refusal::Paused)
    );
    assert_eq!(
        may_dispatch(
            &with_progress(fresh.clone(), 3, 0.0),
            at(0),
            CostReading::Budget
        ),
        Err(Refusal::Exhausted(Bound::Iterations))
    );
    assert_eq!(
        may_dispatch(
            &with_progress(fresh.clone(), 1, 1.0),
            at(0),
            CostReading::Budget
        ),
        Err(Refusal::Exhausted(Bound::Cost))
    );
    assert_eq!(
        may_dispatch(&fresh, at(1000), CostReading::Budget),
        Err(Refusal::Exhausted(Bound::WallClock))
    );
    // A paused goal past its deadline is closed, not merely skipped.
    assert_eq!(
        may_dispatch(&paused, at(1000), CostReading::Budget),
        Err(Refusal::Exhausted(Bound::WallClock))
    );
}
