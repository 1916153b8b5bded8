//! The state machine: every transition from every state, and recording runs.

use super::bounds::CostReading;
use super::event::EventPayload;
use super::fixture::{at, goal, in_state, satisfied, unsatisfied, usd, with_progress};
use super::goal::{Attention, GoalState, Mode};
use super::ids::{Objective, RunId};
use super::money::MicroUsd;
use super::request::GoalPatch;
use super::transition::{
    abandon, close_if_exhausted, patch, pause, record_run, resume, FinishedRun, TransitionError,
};
use super::verdict::{RunOutcome, Verdict};

const TERMINAL: [GoalState; 3] = [
    GoalState::Satisfied,
    GoalState::Abandoned,
    GoalState::BoundExceeded,
];

fn closed(state: GoalState, events: &[EventPayload]) -> bool {
    matches!(events, [.., EventPayload::Closed { final_state, .. }] if *final_state == state)
}

fn run(cost: f64, outcome: RunOutcome) -> FinishedRun {
    FinishedRun {
        run_id: RunId::generate(),
        cost: usd(cost),
        outcome,
        commitment_ms: None,
    }
}

#[test]
fn terminal_states_refuse_every_transition() {
    let edit = GoalPatch {
        objective: Some(Objective::new("new".into())),
        ..GoalPatch::default()
    };
    for state in TERMINAL {
        let goal = in_state(goal(Some(3), None, None), state);
        assert_eq!(
            pause(&goal, at(1)),
            Err(TransitionError::Terminal),
            "{state:?}"
        );
        assert_eq!(
            resume(&goal, at(1), CostReading::Budget),
            Err(TransitionError::Terminal),
            "{state:?}"
        );
        assert_eq!(
            abandon(&goal, at(1)),
            Err(TransitionError::Terminal),
            "{state:?}"
        );
        assert_eq!(
            patch(&goal, &edit, at(1)),
            Err(TransitionError::Terminal),
            "{state:?}"
        );
        assert_eq!(
            close_if_exhausted(&goal, at(1), CostReading::Budget),
            None,
            "{state:?}"
        );
        assert_eq!(
            record_run(&goal, &run(0.1, satisfied()), at(1), CostReading::Budget),
            None,
            "{state:?}"
        );
    }
}

#[test]
fn pause_is_attention_not_state() {
    let active = goal(Some(3), None, None);
    let change = pause(&active, at(5)).expect("allowed").expect("a change");
    assert_eq!(change.goal.state, GoalState::Active);
    assert!(change.goal.paused);
    assert_eq!(change.goal.attention(), Attention::Paused);
    assert!(change.events.is_empty());
    assert_eq!(change.goal.version, active.version + 1);
    assert_eq!(change.goal.updated_at, at(5));
    assert_eq!(
        pause(&change.goal, at(6)),
        Ok(None),
        "pausing twice is a no-op"
    );
}

#[test]
fn pause_on_an_escalated_goal_is_refused() {
    let escalated = in_state(goal(Some(3), None, None), GoalState::Escalated);
    assert_eq!(pause(&escalated, at(1)), Err(TransitionError::Escalated));
}

#[test]
fn resume_re_arms_a_paused_goal_at_once() {
    let mut paused = goal(Some(3), None, None);
    paused.paused = true;
    paused.next_fire_at = Some(at(60_000));
    let change = resume(&paused, at(10), CostReading::Budget)
        .expect("allowed")
        .expect("a change");
    assert!(!change.goal.paused);
    assert_eq!(change.goal.next_fire_at, None);
    assert_eq!(change.goal.attention(), Attention::Active);
    assert_eq!(
        resume(&change.goal, at(11), CostReading::Budget),
        Ok(None),
        "resuming an armed goal is a no-op"
    );
}

#[test]
fn resume_of_an_escalated_goal_keeps_progress_and_spent_cost() {
    let escalated = in_state(
        with_progress(goal(Some(5), None, Some(10.0)), 2, 0.8),
        GoalState::Escalated,
    );
    let change = resume(&escalated, at(10), CostReading::Budget)
        .expect("allowed")
        .expect("a change");
    assert_eq!(change.goal.state, GoalState::Active);
    assert_eq!(change.goal.progress, escalated.progress);
    assert_eq!(change.goal.spent, usd(0.8));
    assert!(change.events.is_empty());
}

#[test]
fn resume_of_an_escalated_goal_past_its_bounds_closes_it() {
    let late = in_state(goal(Some(5), Some(1000), None), GoalState::Escalated);
    let change = resume(&late, at(1000), CostReading::Budget)
        .expect("allowed")
        .expect("a change");
    assert_eq!(change.goal.state, GoalState::BoundExceeded);
    assert!(closed(GoalState::BoundExceeded, &change.events));
    let spent = in_state(
        with_progress(goal(Some(2), None, None), 2, 0.0),
        GoalState::Escalated,
    );
    let change = resume(&spent, at(0), CostReading::Budget)
        .expect("allowed")
        .expect("a change");
    assert_eq!(change.goal.state, GoalState::BoundExceeded);
}

#[test]
fn abandon_closes_active_and_escalated_goals_once() {
    for state in [GoalState::Active, GoalState::Escalated] {
        let goal = in_state(goal(Some(3), None, None), state);
        let change = abandon(&goal, at(3)).expect("allowed");
        assert_eq!(change.goal.state, GoalState::Abandoned);
        assert_eq!(change.events.len(), 1);
        assert!(closed(GoalState::Abandoned, &change.events));
    }
}

#[test]
fn patch_edits_only_what_it_names() {
    let active = goal(Some(3), None, None);
    let edit = GoalPatch {
        objective: Some(Objective::new("new text".into())),
        mode: Some(Mode::Schedule),
        ..GoalPatch::default()
    };
    let change = patch(&active, &edit, at(4))
        .expect("allowed")
        .expect("a change");
    assert_eq!(change.goal.objective.as_str(), "new text");
    assert_eq!(change.goal.continuation.mode, Mode::Schedule);
    assert_eq!(change.goal.bounds, active.bounds);
    assert_eq!(change.goal.progress, active.progress);
    assert_eq!(patch(&active, &GoalPatch::default(), at(4)), Ok(None));
    let escalated = in_state(active, GoalState::Escalated);
    assert!(patch(&escalated, &edit, at(4)).expect("allowed").is_some());
}

#[test]
fn a_switch_to_schedule_plans_within_the_new_interval() {
    use super::refs::ArmRef;
    // A run recorded while the goal was manual planned its next fire a
    // default interval away; switched (back) to a 50 ms schedule, it fires
    // at once, as a new schedule goal does.
    let mut manual = goal(Some(100), None, None);
    manual.next_fire_at = Some(at(60_000));
    let arm = ArmRef::parse("conformance:arm?intervalMs=50", true).expect("an arm");
    let to_schedule = GoalPatch {
        mode: Some(Mode::Schedule),
        arm_ref: Some(Some(arm.clone())),
        ..GoalPatch::default()
    };
    let change = patch(&manual, &to_schedule, at(10))
        .expect("allowed")
        .expect("a change");
    assert_eq!(change.goal.next_fire_at, None);
    // A schedule goal whose arm gets a shorter interval waits at most that.
    let mut slow = manual.clone();
    slow.continuation.mode = Mode::Schedule;
    let shorter = GoalPatch {
        arm_ref: Some(Some(arm)),
        ..GoalPatch::default()
    };
    let change = patch(&slow, &shorter, at(10))
        .expect("allowed")
        .expect("a change");
    assert_eq!(change.goal.next_fire_at, Some(at(60)));
}

#[test]
fn deadline_closes_active_goals_paused_or_not_but_not_escalated_ones() {
    let active = goal(None, Some(1000), None);
    assert_eq!(
        close_if_exhausted(&active, at(999), CostReading::Budget),
        None
    );
    let change = close_if_exhausted(&active, at(1000), CostReading::Budget).expect("closes");
    assert_eq!(change.goal.state, GoalState::BoundExceeded);
    assert!(closed(GoalState::BoundExceeded, &change.events));
    let mut paused = active.clone();
    paused.paused = true;
    assert!(close_if_exhausted(&paused, at(1000), CostReading::Budget).is_some());
    let escalated = in_state(active, GoalState::Escalated);
    assert_eq!(
        close_if_exhausted(&escalated, at(5000), CostReading::Budget),
        None
    );
}

#[test]
fn recording_a_verdict_counts_it_and_emits_one_evaluated() {
    let active = goal(Some(3), None, None);
    let finished = run(0.4, unsatisfied());
    let change = record_run(&active, &finished, at(7), CostReading::Budget).expect("recorded");
    assert_eq!(change.goal.state, GoalState::Active);
    assert_eq!(change.goal.progress.iterations, 1);
    assert_eq!(
        change.goal.progress.contributing_run_ids,
        [finished.run_id.clone()].into_iter().collect()
    );
    assert_eq!(change.goal.spent, usd(0.4));
    let last = change
        .goal
        .completion
        .last_verdict
        .as_ref()
        .expect("lastVerdict");
    assert_eq!(last.run_id, finished.run_id);
    assert!(!last.satisfied);
    assert_eq!(change.events.len(), 1);
    assert!(matches!(
        &change.events[0],
        EventPayload::Evaluated { run_id, iterations: 1, satisfied: false, .. } if *run_id == finished.run_id
    ));
    let evaluation = change.evaluation.as_ref().expect("evaluation");
    assert_eq!(evaluation.iteration, 1);
    assert_eq!(evaluation.cost, usd(0.4));
    // A schedule arm waits the default interval after the run.
    assert_eq!(change.goal.next_fire_at, Some(at(7 + 60_000)));
}

#[test]
fn recording_a_satisfied_verdict_closes_once() {
    let active = with_progress(goal(Some(3), None, None), 2, 0.0);
    let change =
        record_run(&active, &run(0.0, satisfied()), at(1), CostReading::Budget).expect("recorded");
    assert_eq!(change.goal.state, GoalState::Satisfied);
    assert_eq!(change.events.len(), 2);
    assert!(closed(GoalState::Satisfied, &change.events));
}

#[test]
fn recording_the_last_allowed_unsatisfied_run_exceeds() {
    let active = with_progress(goal(Some(3), None, None), 2, 0.0);
    let change = record_run(
        &active,
        &run(0.0, unsatisfied()),
        at(1),
        CostReading::Budget,
    )
    .expect("recorded");
    assert_eq!(change.goal.state, GoalState::BoundExceeded);
    assert_eq!(change.goal.progress.iterations, 3);
    assert!(closed(GoalState::BoundExceeded, &change.events));
}

#[test]
fn cost_bound_stops_after_the_third_run_at_0_4_of_1_0() {
    let mut goal = goal(None, None, Some(1.0));
    let mut runs = 0;
    while goal.state == GoalState::Active {
        goal = record_run(
            &goal,
            &run(0.4, unsatisfied()),
            at(runs),
            CostReading::Budget,
        )
        .expect("recorded")
        .goal;
        runs += 1;
        assert!(runs <= 10, "never stopped");
    }
    assert_eq!(runs, 3);
    assert_eq!(goal.state, GoalState::BoundExceeded);
    assert_eq!(goal.spent, MicroUsd::from_micros(1_200_000));
}

#[test]
fn an_escalated_run_counts_and_costs_but_has_no_verdict() {
    let active = goal(Some(3), None, None);
    let finished = run(0.5, RunOutcome::Escalated);
    let change = record_run(&active, &finished, at(1), CostReading::Budget).expect("recorded");
    assert_eq!(change.goal.state, GoalState::Escalated);
    assert_eq!(change.goal.progress.iterations, 1);
    assert_eq!(change.goal.spent, usd(0.5));
    assert_eq!(change.goal.completion.last_verdict, None);
    assert!(change.evaluation.is_none());
    assert_eq!(change.events.len(), 1, "only the close");
    assert!(closed(GoalState::Escalated, &change.events));
}

#[test]
fn an_environmental_failure_is_an_unsatisfied_verdict() {
    let active = goal(Some(3), None, None);
    let change = record_run(
        &active,
        &run(0.0, RunOutcome::Judged(Verdict::environmental())),
        at(1),
        CostReading::Budget,
    )
    .expect("recorded");
    assert_eq!(change.goal.progress.iterations, 1);
    let evaluation = change.evaluation.expect("evaluation");
    assert!(!evaluation.verdict.satisfied());
    assert_eq!(change.events.len(), 1);
}

#[test]
fn a_run_finishing_after_the_goal_closed_records_nothing() {
    let abandoned = abandon(&goal(Some(3), None, None), at(1))
        .expect("allowed")
        .goal;
    assert_eq!(
        record_run(
            &abandoned,
            &run(0.1, satisfied()),
            at(2),
            CostReading::Budget
        ),
        None
    );
}

#[test]
fn a_run_finishing_while_paused_is_recorded_and_stays_paused() {
    let mut paused = goal(Some(3), None, None);
    paused.paused = true;
    let change = record_run(
        &paused,
        &run(0.1, unsatisfied()),
        at(2),
        CostReading::Budget,
    )
    .expect("recorded");
    assert!(change.goal.paused);
    assert_eq!(change.goal.progress.iterations, 1);
}
