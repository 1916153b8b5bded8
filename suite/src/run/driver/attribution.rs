//! Per-requirement attribution: from the checks of one scenario run that
//! failed, and where the run stopped, what the run says about each
//! requirement the scenario names.
//!
//! A failed check fails only the requirements it proves (what a failure
//! means at a requirement's level is the ledger's to say: a SHOULD
//! requirement's is an advisory). A requirement whose checks were
//! still to come when a blocking check stopped the run is not reached, and
//! its reason names the step and what failed there; one whose checks all
//! ran and held passes.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::Scenario;
use crate::run::outcome::{Attributed, CheckResult, FailedStep, RequirementOutcome};

/// One check of the run that did not hold, where in the run and with the
/// story and the exchange the reports tell of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCheck {
    /// Index of its step in the scenario.
    pub step: usize,
    pub result: CheckResult,
    /// The complete failure message (file, step, request, expected, actual).
    pub message: String,
    /// Its step with the exchange the claim was about; `None` for a step
    /// that sent nothing (the mock log).
    pub failed_step: Option<Box<FailedStep>>,
}

impl FailedCheck {
    /// The requirements it proves; empty for a setup check.
    pub fn proves(&self) -> &[String] {
        &self.result.proves
    }

    /// Whether it stopped the run (see [`Scenario::blocks`]).
    pub fn blocking(&self) -> bool {
        self.result.blocking
    }
}

/// Where a scenario run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Every step ran and made at least the checks the scenario declares.
    Completed,
    /// Every step ran but the run made fewer checks than the scenario
    /// declares: nothing it names is proven.
    Short(String),
    /// A blocking check failed at this step (index); `unchecked` are the
    /// requirements whose checks at that step could not be read (a body
    /// that is not JSON behind a failed status).
    Blocked {
        step: usize,
        unchecked: BTreeSet<String>,
    },
    /// The host could not be used at this step (index).
    Errored {
        step: usize,
        message: String,
        failed_step: Option<Box<FailedStep>>,
    },
}

/// What the run says about each requirement the scenario names.
pub fn attribute(
    scenario: &Scenario,
    failed: &[FailedCheck],
    end: &End,
) -> BTreeMap<String, RequirementOutcome> {
    // Requirements with checks in each step, so "still had checks to make"
    // can be answered per step.
    let checked: Vec<BTreeSet<&str>> = scenario
        .steps
        .iter()
        .map(|step| scenario.step_requirements(step))
        .collect();
    let pending_from =
        |id: &str, from: usize| checked.iter().skip(from).any(|ids| ids.contains(id));
    scenario
        .requirements
        .iter()
        .map(|id| {
            let broken = failed
                .iter()
                .find(|check| check.proves().iter().any(|proven| proven == id));
            let outcome = if let Some(check) = broken {
                RequirementOutcome::Fail(Attributed {
                    message: check.message.clone(),
                    failed_step: check.failed_step.clone(),
                })
            } else {
                match end {
                    End::Completed => RequirementOutcome::Pass,
                    End::Short(message) => RequirementOutcome::Fail(Attributed {
                        message: message.clone(),
                        failed_step: None,
                    }),
                    End::Blocked { step, unchecked } => {
                        if unchecked.contains(id) || pending_from(id, step + 1) {
                            RequirementOutcome::NotReached(not_reached(scenario, failed, *step))
                        } else {
                            RequirementOutcome::Pass
                        }
                    }
                    End::Errored {
                        step,
                        message,
                        failed_step,
                    } => {
                        if pending_from(id, *step) {
                            RequirementOutcome::Error(Attributed {
                                message: message.clone(),
                                failed_step: failed_step.clone(),
                            })
                        } else {
                            RequirementOutcome::Pass
                        }
                    }
                }
            };
            (id.clone(), outcome)
        })
        .collect()
}

/// `not reached: step 3 "abandon the goal" failed on core.a, core.b` (or
/// `... on a setup check`): what blocked the run at `step`.
pub fn not_reached(scenario: &Scenario, failed: &[FailedCheck], step: usize) -> String {
    let blocking: Vec<&FailedCheck> = failed
        .iter()
        .filter(|check| check.step == step && check.blocking())
        .collect();
    let ids: BTreeSet<&str> = blocking
        .iter()
        .flat_map(|check| check.proves().iter().map(String::as_str))
        .collect();
    let mut what: Vec<String> = ids.into_iter().map(str::to_string).collect();
    if blocking.iter().any(|check| check.proves().is_empty()) || what.is_empty() {
        what.push("a setup check".to_string());
    }
    let name = scenario
        .steps
        .get(step)
        .map(|s| s.name.as_str())
        .unwrap_or("?");
    format!(
        "not reached: step {} \"{name}\" failed on {}",
        step + 1,
        what.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Action, Assertion, Expect, Needs, Predicate, Repeat, Request, RequestStep};
    use crate::model::{Body, Principal, Step, Target};
    use std::path::PathBuf;

    /// A request step with a status check proving `proves` (None: every
    /// requirement) and one assertion per entry of `assertions` (its own
    /// `proves`).
    fn step(
        index: usize,
        proves: Option<&[&str]>,
        status: bool,
        assertions: &[Option<&[&str]>],
    ) -> Step {
        let own = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
        Step {
            name: format!("step {}", index + 1),
            index,
            pointer: format!("/steps/{index}"),
            proves: proves.map(own),
            when: None,
            action: Action::Request(Box::new(RequestStep {
                request: Request {
                    method: "GET".to_string(),
                    path: "{base}".to_string(),
                    principal: Principal::A,
                    headers: Default::default(),
                    body: Body::None,
                    content_type: None,
                    endpoint: None,
                    seam: None,
                    stream_ms: None,
                },
                expect: Expect {
                    status: if status { vec![200] } else { Vec::new() },
                    schema: None,
                    assertions: assertions
                        .iter()
                        .enumerate()
                        .map(|(n, proves)| Assertion {
                            pointer: format!("/steps/{index}/expect/assert/{n}"),
                            target: Target::Pointer("/x".to_string()),
                            filter: Vec::new(),
                            map: None,
                            predicate: Predicate::Exists(true),
                            proves: proves.map(own),
                        })
                        .collect(),
                    schemas: Default::default(),
                },
                capture: Default::default(),
                repeat: Repeat::Once,
                parallel: None,
            })),
        }
    }

    fn scenario(requirements: &[&str], should: &[&str], steps: Vec<Step>) -> Scenario {
        Scenario {
            name: "core::s".to_string(),
            profile: "core".to_string(),
            path: PathBuf::from("core/s.json"),
            title: "s".to_string(),
            requirements: requirements.iter().map(|r| r.to_string()).collect(),
            should: should.iter().map(|r| r.to_string()).collect(),
            needs: Needs::default(),
            checks: 1,
            steps,
            mock: None,
            observations: Vec::new(),
            generated: Default::default(),
        }
    }

    fn failed(scenario: &Scenario, step: usize, proves: &[&str]) -> FailedCheck {
        let proves: Vec<String> = proves.iter().map(|p| p.to_string()).collect();
        FailedCheck {
            step,
            result: CheckResult {
                blocking: scenario.blocks(&proves),
                proves,
                ..CheckResult::default()
            },
            message: format!("step {} failed", step + 1),
            failed_step: None,
        }
    }

    fn blocked_at(step: usize) -> End {
        End::Blocked {
            step,
            unchecked: BTreeSet::new(),
        }
    }

    fn keywords(outcomes: &BTreeMap<String, RequirementOutcome>) -> Vec<(&str, &str)> {
        outcomes
            .iter()
            .map(|(id, outcome)| (id.as_str(), outcome.keyword()))
            .collect()
    }

    #[test]
    fn a_failed_check_fails_only_what_it_proves() {
        let s = scenario(
            &["core.a", "core.b"],
            &[],
            vec![
                step(0, None, true, &[Some(&["core.b"])]),
                step(1, Some(&["core.a"]), true, &[]),
            ],
        );
        let checks = [failed(&s, 0, &["core.b"])];
        let outcomes = attribute(&s, &checks, &blocked_at(0));
        assert_eq!(
            keywords(&outcomes),
            [("core.a", "not-reached"), ("core.b", "fail")]
        );
        assert_eq!(
            outcomes["core.a"].message(),
            Some("not reached: step 1 \"step 1\" failed on core.b")
        );
        assert_eq!(outcomes["core.b"].message(), Some("step 1 failed"));
    }

    #[test]
    fn a_non_blocking_failure_fails_only_what_it_proves_and_the_rest_pass() {
        let s = scenario(
            &["core.create", "core.get", "core.location"],
            &["core.location"],
            vec![
                step(0, Some(&["core.create"]), true, &[Some(&["core.location"])]),
                step(1, Some(&["core.get"]), true, &[]),
            ],
        );
        let check = failed(&s, 0, &["core.location"]);
        assert!(
            !check.blocking(),
            "a check proving only SHOULD does not block"
        );
        let outcomes = attribute(&s, &[check], &End::Completed);
        assert_eq!(
            keywords(&outcomes),
            [
                ("core.create", "pass"),
                ("core.get", "pass"),
                ("core.location", "fail")
            ]
        );
    }

    #[test]
    fn a_blocking_check_fails_every_requirement_it_proves_whatever_its_level() {
        let s = scenario(
            &["core.a", "core.s"],
            &["core.s"],
            vec![step(0, None, true, &[])],
        );
        let check = failed(&s, 0, &["core.a", "core.s"]);
        assert!(check.blocking());
        let outcomes = attribute(&s, &[check], &blocked_at(0));
        assert_eq!(
            keywords(&outcomes),
            [("core.a", "fail"), ("core.s", "fail")]
        );
    }

    #[test]
    fn requirements_whose_checks_all_held_pass_even_when_a_later_step_blocks() {
        let s = scenario(
            &["core.a", "core.b", "core.c"],
            &[],
            vec![
                step(0, Some(&["core.a"]), true, &[]),
                step(1, Some(&[]), true, &[Some(&["core.b"])]),
                step(2, Some(&["core.c"]), true, &[]),
            ],
        );
        // The setup status of step 2 failed; its core.b assertion held.
        let checks = [failed(&s, 1, &[])];
        let outcomes = attribute(&s, &checks, &blocked_at(1));
        assert_eq!(
            keywords(&outcomes),
            [
                ("core.a", "pass"),
                ("core.b", "pass"),
                ("core.c", "not-reached")
            ]
        );
        assert_eq!(
            outcomes["core.c"].message(),
            Some("not reached: step 2 \"step 2\" failed on a setup check")
        );
        let unread = attribute(
            &s,
            &checks,
            &End::Blocked {
                step: 1,
                unchecked: ["core.b".to_string()].into(),
            },
        );
        assert_eq!(
            unread["core.b"].keyword(),
            "not-reached",
            "an unread check proves nothing"
        );
    }

    #[test]
    fn an_error_errors_what_was_still_to_check() {
        let s = scenario(
            &["core.a", "core.b"],
            &[],
            vec![
                step(0, Some(&["core.a"]), true, &[]),
                step(1, Some(&["core.b"]), true, &[]),
            ],
        );
        let end = End::Errored {
            step: 1,
            message: "garbage".to_string(),
            failed_step: None,
        };
        let outcomes = attribute(&s, &[], &end);
        assert_eq!(
            keywords(&outcomes),
            [("core.a", "pass"), ("core.b", "error")]
        );
    }

    #[test]
    fn without_proves_every_check_proves_every_requirement() {
        let s = scenario(
            &["core.a", "core.b"],
            &[],
            vec![step(0, None, true, &[None]), step(1, None, true, &[])],
        );
        let every: Vec<&str> = vec!["core.a", "core.b"];
        let checks = [failed(&s, 1, &every)];
        let outcomes = attribute(&s, &checks, &blocked_at(1));
        assert_eq!(
            keywords(&outcomes),
            [("core.a", "fail"), ("core.b", "fail")]
        );
        let short = attribute(&s, &[], &End::Short("too few checks".to_string()));
        assert_eq!(keywords(&short), [("core.a", "fail"), ("core.b", "fail")]);
    }
}
