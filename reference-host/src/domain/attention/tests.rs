//! The attention rules, checked on goals built in memory.

use serde_json::json;

use super::*;
use crate::domain::bounds::CostReading;
use crate::domain::fixture::{at, goal};
use crate::domain::transition::{record_run, Change, FinishedRun};
use crate::domain::{
    ArmRef, BindingId, EventPayload, Goal, GoalState, Judgement, MicroUsd, Objective, RunId,
    RunOutcome, Verdict,
};

const COST: CostReading = CostReading::Budget;

fn arm(fragment: &str) -> ArmRef {
    ArmRef::parse(&format!("https://agents.example/run{fragment}"), false).expect("an arm")
}

fn apply(change: Change) -> Goal {
    change.goal
}

fn bound(goal: &Goal, mode: AttentionMode) -> (Goal, BindingId) {
    let new = NewBinding { mode, arm: arm("") };
    let (change, id) = create_binding(goal, &new, at(1), AttentionState::holder_id).expect("bound");
    (apply(change), id)
}

fn state(goal: &Goal) -> &AttentionState {
    goal.notes.attention.as_deref().expect("attention")
}

fn decide(state: &AttentionState, revision: u64) -> Result<(), Vec<Missing>> {
    closure(state, revision, approvals(state, Some(revision)))
}

fn kinds(change: &Change) -> Vec<&'static str> {
    change.events.iter().map(EventPayload::kind).collect()
}

/// A binding's run, recorded as the engine records it: counted, then
/// its answer admitted by its mode.
fn run(goal: &Goal, binding: &BindingId, answer: serde_json::Value) -> Change {
    let mode = state(goal).binding(binding).expect("binding").mode;
    let answer = BindingAnswer::from_json(&answer).expect("a readable answer");
    let admitted = answer.admit(mode.powers(), false);
    let run_id = RunId::generate();
    let counted = count_run(goal, &run_id, answer.cost, at(5), COST).expect("open");
    let run = BindingRun {
        binding: binding.clone(),
        run_id,
        cost: answer.cost,
        admitted: Some(admitted),
    };
    record_binding_run(goal, counted, &run, at(5), COST, decide).expect("recorded")
}

#[test]
fn a_mode_is_held_by_one_live_binding_of_a_goal() {
    let goal = goal(Some(10), None, None);
    let (goal, first) = bound(&goal, AttentionMode::Falsify);
    let twice = NewBinding {
        mode: AttentionMode::Falsify,
        arm: arm(""),
    };
    assert!(matches!(
        create_binding(&goal, &twice, at(2), AttentionState::holder_id),
        Err(AttentionError::ModeTaken { holder, .. }) if holder == first
    ));
    // Paused still holds it; stopped frees it.
    let paused = change_status(
        &goal,
        &first,
        &StatusChange::Pause { until: None },
        at(2),
        PauseWake::Tick,
    )
    .expect("paused")
    .expect("changed");
    assert!(create_binding(&paused.goal, &twice, at(3), AttentionState::holder_id).is_err());
    let stopped = change_status(
        &paused.goal,
        &first,
        &StatusChange::Stop,
        at(3),
        PauseWake::Tick,
    )
    .expect("stopped")
    .expect("changed");
    assert!(create_binding(&stopped.goal, &twice, at(4), AttentionState::holder_id).is_ok());
}

#[test]
fn binding_transitions_never_touch_the_goal_and_final_is_final() {
    let goal = goal(Some(10), None, None);
    let (goal, id) = bound(&goal, AttentionMode::Review);
    let paused = change_status(
        &goal,
        &id,
        &StatusChange::Pause { until: None },
        at(2),
        PauseWake::Tick,
    )
    .expect("paused")
    .expect("changed");
    assert_eq!(paused.goal.state, GoalState::Active);
    assert!(!paused.goal.paused);
    assert_eq!(paused.goal.updated_at, goal.updated_at);
    assert_eq!(kinds(&paused), ["attention.binding.paused"]);
    let stopped = change_status(
        &paused.goal,
        &id,
        &StatusChange::Stop,
        at(3),
        PauseWake::Tick,
    )
    .expect("stopped")
    .expect("changed");
    assert!(matches!(
        change_status(
            &stopped.goal,
            &id,
            &StatusChange::Resume,
            at(4),
            PauseWake::Tick
        ),
        Err(AttentionError::BindingFinal { status: "stopped" })
    ));
    let mut closed = stopped.goal.clone();
    closed.state = GoalState::Abandoned;
    assert_eq!(
        change_status(&closed, &id, &StatusChange::Resume, at(4), PauseWake::Tick),
        Err(AttentionError::Terminal)
    );
}

#[test]
fn a_superseded_binding_is_replaced_in_its_mode_and_never_eligible() {
    let goal = goal(Some(10), None, None);
    let (goal, old) = bound(&goal, AttentionMode::Pursue);
    let (change, new) = supersede(&goal, &old, arm(""), None, at(2), AttentionState::holder_id)
        .expect("superseded");
    let state = state(&change.goal);
    let replacement = state.binding(&new).expect("new");
    assert_eq!(replacement.mode, AttentionMode::Pursue);
    assert_eq!(replacement.supersedes.as_ref(), Some(&old));
    let old_binding = state.binding(&old).expect("old");
    assert_eq!(
        old_binding.status,
        BindingStatus::Superseded { by: new.clone() }
    );
    assert!(!AttentionState::eligible(
        &change.goal,
        old_binding,
        at(3),
        PauseWake::Tick
    ));
    assert!(AttentionState::eligible(
        &change.goal,
        replacement,
        at(3),
        PauseWake::Tick
    ));
    assert_eq!(
        kinds(&change),
        ["attention.binding.superseded", "attention.binding.created"]
    );
}

#[test]
fn a_timed_pause_wakes_by_the_tick_or_reads_active_by_the_clock() {
    let goal = goal(Some(10), None, None);
    let (goal, id) = bound(&goal, AttentionMode::Observe);
    let paused = change_status(
        &goal,
        &id,
        &StatusChange::Pause {
            until: Some(at(1_000)),
        },
        at(2),
        PauseWake::Tick,
    )
    .expect("paused")
    .expect("changed")
    .goal;
    let binding = state(&paused).binding(&id).expect("binding").clone();
    // Before the instant: paused on both readings; due then.
    for wake in [PauseWake::Tick, PauseWake::Clock] {
        assert!(!AttentionState::eligible(&paused, &binding, at(999), wake));
        assert_eq!(
            state(&paused).next_due(&paused, at(10), wake),
            Some(at(1_000))
        );
    }
    // From it on, the clock reading says active without a write...
    assert!(AttentionState::eligible(
        &paused,
        &binding,
        at(1_000),
        PauseWake::Clock
    ));
    assert!(!AttentionState::eligible(
        &paused,
        &binding,
        at(1_000),
        PauseWake::Tick
    ));
    // ...and the tick writes it, with its event.
    assert!(wake(&paused, at(999)).is_none());
    let woken = wake(&paused, at(1_000)).expect("woken");
    assert_eq!(kinds(&woken), ["attention.binding.resumed"]);
    let binding = state(&woken.goal).binding(&id).expect("binding");
    assert_eq!(binding.status, BindingStatus::Active);
    // The goal was never touched.
    assert_eq!(woken.goal.state, GoalState::Active);
    assert!(!woken.goal.paused);
}

#[test]
fn every_binding_run_counts_toward_the_goals_one_bound() {
    let goal = goal(Some(2), None, None);
    let (goal, falsifier) = bound(&goal, AttentionMode::Falsify);
    let (goal, reviewer) = bound(&goal, AttentionMode::Review);
    let first = run(&goal, &falsifier, json!({"output": null}));
    assert_eq!(first.goal.progress.iterations, 1);
    assert_eq!(first.goal.state, GoalState::Active);
    assert!(first.evaluation.is_none(), "nothing judged it");
    let second = run(
        &first.goal,
        &reviewer,
        json!({"output": null, "costUsd": 0.5}),
    );
    assert_eq!(second.goal.progress.iterations, 2);
    assert_eq!(second.goal.spent, MicroUsd::from_micros(500_000));
    assert_eq!(second.goal.state, GoalState::BoundExceeded);
    assert!(kinds(&second).contains(&"goal.closed"));
}

#[test]
fn modes_limit_what_an_answer_may_do_and_over_claims_are_named() {
    let claims = json!({
        "output": {"done": true},
        "evidence": [{"kind": "test", "ref": "t-1", "blocking": true}],
        "verdict": {"approve": true},
        "requestClose": true,
    });
    let answer = BindingAnswer::from_json(&claims).expect("readable");
    let observe = answer.admit(AttentionMode::Observe.powers(), false);
    assert!(observe.evidence.is_empty() && observe.verdict.is_none() && !observe.request_close);
    assert_eq!(observe.refused, ["evidence", "verdict", "request-closure"]);
    let falsify = answer.admit(AttentionMode::Falsify.powers(), false);
    assert_eq!(falsify.evidence.len(), 1);
    assert_eq!(falsify.refused, ["verdict", "request-closure"]);
    let review = answer.admit(AttentionMode::Review.powers(), false);
    assert_eq!(review.verdict, Some(true));
    assert_eq!(review.refused, ["request-closure"]);
    let pursue = answer.admit(AttentionMode::Pursue.powers(), false);
    assert!(
        pursue.evidence.is_empty(),
        "a pursuer adds no blocking evidence"
    );
    assert!(pursue.request_close);
    assert_eq!(pursue.refused, ["blocking-evidence", "verdict"]);
    // A coordinate binding gives a verdict only as the goal's supervisor.
    let coordinate = answer.admit(AttentionMode::Coordinate.powers(), true);
    assert_eq!(coordinate.verdict, Some(true));
}

#[test]
fn a_falsifier_asking_to_close_never_closes_a_goal_the_policy_would_close() {
    let goal = goal(Some(10), None, None);
    let goal = apply(
        set_policy(&goal, &Policy::HostConfirmed)
            .expect("set")
            .expect("changed"),
    );
    let goal = apply(confirm(&goal, Authority::Host, None, at(1)).expect("confirmed"));
    assert!(decide(state(&goal), 1).is_ok());
    let (goal, falsifier) = bound(&goal, AttentionMode::Falsify);
    let change = run(
        &goal,
        &falsifier,
        json!({"output": null, "requestClose": true}),
    );
    assert_eq!(change.goal.state, GoalState::Active);
    assert!(!kinds(&change).contains(&"attention.closure.requested"));
    // A client's request is the policy's to grant.
    let closed = request_close(&change.goal, at(6), decide).expect("granted");
    assert_eq!(closed.goal.state, GoalState::Satisfied);
    assert!(kinds(&closed).ends_with(&["attention.closure.requested", "goal.closed"]));
}

#[test]
fn confirmations_count_only_for_their_authority_and_revision() {
    let goal = goal(Some(10), None, None);
    let goal = apply(
        set_policy(&goal, &Policy::PrincipalConfirmed)
            .expect("set")
            .expect("changed"),
    );
    let goal = apply(confirm(&goal, Authority::Host, None, at(1)).expect("confirmed"));
    assert_eq!(
        request_close(&goal, at(2), decide).err(),
        Some(AttentionError::ClosureRefused(vec![Missing::Confirmation(
            Authority::Principal
        )]))
    );
    let confirmed = apply(confirm(&goal, Authority::Principal, None, at(2)).expect("confirmed"));
    let mut edited = confirmed.clone();
    edited.objective = Objective::new("ship the release checklist, signed".into());
    assert_eq!(state(&edited).revision_of(&edited), 2);
    assert!(
        request_close(&edited, at(3), decide).is_err(),
        "revision 1 was confirmed"
    );
    assert!(request_close(&confirmed, at(3), decide).is_ok());
}

#[test]
fn a_quorum_counts_distinct_approvals_of_the_current_revision() {
    let goal = goal(Some(10), None, None);
    let goal = apply(
        set_policy(&goal, &Policy::Quorum { threshold: 2 })
            .expect("set")
            .expect("changed"),
    );
    assert!(set_policy(&goal, &Policy::Quorum { threshold: 3 }).is_err());
    let (goal, reviewer) = bound(&goal, AttentionMode::Review);
    let (goal, judge) = bound(&goal, AttentionMode::Judge);
    let approve = json!({"output": null, "verdict": {"approve": true}});
    let goal = run(&goal, &reviewer, approve.clone()).goal;
    // The same reviewer again is still one approval.
    let goal = run(&goal, &reviewer, approve.clone()).goal;
    assert_eq!(approvals(state(&goal), Some(1)), 1);
    let mut edited = goal.clone();
    edited.objective = Objective::new("ship the release checklist, edited".into());
    let edited = run(&edited, &judge, approve.clone()).goal;
    let revision = state(&edited).revision_of(&edited);
    assert_eq!(revision, 2);
    assert_eq!(approvals(state(&edited), Some(2)), 1);
    assert_eq!(
        approvals(state(&edited), None),
        2,
        "what a faulty host counts"
    );
    assert!(request_close(&edited, at(7), decide).is_err());
    let both = run(&edited, &reviewer, approve).goal;
    assert!(request_close(&both, at(8), decide).is_ok());
}

#[test]
fn blocking_evidence_holds_a_request_and_a_judges_satisfied_verdict() {
    let goal = goal(Some(10), None, None);
    let (goal, falsifier) = bound(&goal, AttentionMode::Falsify);
    let blocked = run(
        &goal,
        &falsifier,
        json!({"output": null, "evidence": [{"kind": "test", "ref": "t-1", "blocking": true}]}),
    )
    .goal;
    let evidence = state(&blocked).unresolved_blocking();
    assert_eq!(evidence.len(), 1);
    // The judge's satisfied verdict is recorded, the close held.
    let finished = FinishedRun {
        run_id: RunId::generate(),
        cost: MicroUsd::ZERO,
        outcome: RunOutcome::Judged(Verdict::aggregate(Judgement {
            satisfied: true,
            confidence: 1.0,
            criteria: None,
        })),
        commitment_ms: None,
    };
    let mut judged = record_run(&blocked, &finished, at(6), COST).expect("recorded");
    assert_eq!(judged.goal.state, GoalState::Satisfied);
    hold_own_run(&mut judged, at(6), COST);
    assert_eq!(judged.goal.state, GoalState::Active);
    assert!(judged.evaluation.is_some());
    assert!(kinds(&judged).contains(&"attention.closure.held"));
    assert!(!kinds(&judged).contains(&"goal.closed"));
    let resolved = apply(
        resolve_evidence(&judged.goal, &evidence[0])
            .expect("resolved")
            .expect("changed"),
    );
    let mut again = record_run(&resolved, &finished, at(7), COST).expect("recorded");
    hold_own_run(&mut again, at(7), COST);
    assert_eq!(again.goal.state, GoalState::Satisfied);
}

#[test]
fn the_projection_frames_the_objective_as_data_and_is_bounded() {
    let goal = goal(Some(10), None, None);
    let (mut goal, falsifier) = bound(&goal, AttentionMode::Falsify);
    let item = |n: usize| json!({"kind": "test", "ref": format!("t-{n}"), "label": "a label never projected"});
    for batch in 0..5 {
        let evidence: Vec<_> = (0..8).map(|n| item(batch * 8 + n)).collect();
        goal = run(
            &goal,
            &falsifier,
            json!({"output": null, "evidence": evidence}),
        )
        .goal;
    }
    let state = state(&goal);
    let binding = state.binding(&falsifier).expect("binding");
    let projection = wire::projection(&goal, state, binding, &RunId::generate(), 6);
    assert_eq!(projection["claim"]["objective"], goal.objective.as_str());
    assert!(!projection["stance"]
        .as_str()
        .expect("a stance")
        .contains(goal.objective.as_str()));
    assert_eq!(projection["mode"], "falsify");
    assert_eq!(projection["revision"], 1);
    let refs = projection["evidence"].as_array().expect("refs");
    assert_eq!(refs.len(), wire::MAX_PROJECTED_EVIDENCE);
    assert_eq!(refs.last().expect("newest")["ref"], "t-39");
    assert!(!projection.to_string().contains("a label never projected"));
}

#[test]
fn attention_events_are_content_free() {
    let mut goal = goal(Some(10), None, None);
    goal.objective = Objective::new("canary objective".into());
    let (goal, falsifier) = bound(&goal, AttentionMode::Falsify);
    let change = run(
        &goal,
        &falsifier,
        json!({"output": "canary output", "evidence": [
            {"kind": "test", "ref": "t-1", "label": "canary label", "summary": "canary summary", "blocking": true}
        ]}),
    );
    for event in &change.events {
        if let EventPayload::Attention(event) = event {
            assert!(!event.payload().to_string().contains("canary"), "{event:?}");
        }
    }
    assert!(kinds(&change).contains(&"attention.evidence.added"));
}

#[test]
fn a_supervisor_is_a_live_coordinate_binding_whose_approval_closes() {
    let goal = goal(Some(10), None, None);
    let (goal, reviewer) = bound(&goal, AttentionMode::Review);
    let refused = set_policy(
        &goal,
        &Policy::Supervisor {
            binding: reviewer.clone(),
        },
    );
    assert!(matches!(refused, Err(AttentionError::Invalid { .. })));
    let (goal, coordinator) = bound(&goal, AttentionMode::Coordinate);
    let goal = apply(
        set_policy(
            &goal,
            &Policy::Supervisor {
                binding: coordinator.clone(),
            },
        )
        .expect("set")
        .expect("changed"),
    );
    // A reviewer's approval is not the supervisor's.
    let goal = run(
        &goal,
        &reviewer,
        json!({"output": null, "verdict": {"approve": true}}),
    )
    .goal;
    assert_eq!(
        request_close(&goal, at(6), decide).err(),
        Some(AttentionError::ClosureRefused(vec![
            Missing::SupervisorApproval
        ]))
    );
    // The supervisor gives its verdict as the supervisor it is.
    let answer = BindingAnswer::from_json(&json!({"output": null, "verdict": {"approve": true}}))
        .expect("readable");
    let admitted = answer.admit(AttentionMode::Coordinate.powers(), true);
    let run_id = RunId::generate();
    let counted = count_run(&goal, &run_id, MicroUsd::ZERO, at(7), COST).expect("open");
    let recorded = record_binding_run(
        &goal,
        counted,
        &BindingRun {
            binding: coordinator,
            run_id,
            cost: MicroUsd::ZERO,
            admitted: Some(admitted),
        },
        at(7),
        COST,
        decide,
    )
    .expect("recorded");
    let closed = request_close(&recorded.goal, at(8), decide).expect("granted");
    assert_eq!(closed.goal.state, GoalState::Satisfied);
}
