//! How a scenario run ends: what its steps collected, and the one pure
//! decision from that to the scenario's outcome, its failed step and what
//! it says about each requirement it names.

use std::collections::BTreeMap;
use std::time::Duration;

use super::attribution::{self, End, FailedCheck};
use crate::model::{Scenario, Step};
use crate::run::outcome::observation;
use crate::run::outcome::{FailedStep, NotTaken, Outcome, RequirementOutcome, ScenarioResult};
use crate::template::Vars;

/// What the steps of one run collected so far.
pub(super) struct Collected {
    pub checks: u32,
    /// Time spent in `quietMs` steps.
    pub quiet: Duration,
    pub failed: Vec<FailedCheck>,
    /// Where the run stopped; `Completed` while it goes on.
    pub end: End,
    /// The status of each request step's final answer, for the `when` of
    /// later steps.
    pub answered: Vec<Option<u16>>,
    pub not_taken: Vec<NotTaken>,
}

impl Collected {
    pub(super) fn new(scenario: &Scenario) -> Collected {
        Collected {
            checks: 0,
            quiet: Duration::ZERO,
            failed: Vec::new(),
            end: End::Completed,
            answered: vec![None; scenario.steps.len()],
            not_taken: Vec::new(),
        }
    }

    /// Whether `step` runs: a step with a `when` runs only when the step it
    /// names answered a status it lists; one that does not is recorded.
    pub(super) fn taken(&mut self, scenario: &Scenario, step: &Step) -> bool {
        let Some(when) = &step.when else {
            return true;
        };
        // The loader made it an earlier request step that always runs, so
        // it has answered unless it got no answer at all (which ended the
        // run).
        let status = self.answered.get(when.step).copied().flatten();
        if status.is_some_and(|status| when.holds(status)) {
            return true;
        }
        self.not_taken.push(NotTaken {
            step: step.index + 1,
            name: step.name.clone(),
            when_step: scenario
                .steps
                .get(when.step)
                .map(|earlier| earlier.name.clone())
                .unwrap_or_default(),
            answered: status,
        });
        false
    }

    /// The scenario's result once its run is over.
    pub(super) fn finish(
        self,
        scenario: &Scenario,
        duration: Duration,
        vars: &Vars,
    ) -> ScenarioResult {
        let decided = decide(scenario, self.checks, &self.failed, self.end);
        ScenarioResult {
            name: scenario.name.clone(),
            duration,
            outcome: decided.outcome,
            checks: self.checks,
            quiet: self.quiet,
            failed_step: decided.failed_step,
            observations: observation::fill(&scenario.observations, vars),
            requirements: decided.requirements,
            not_taken: self.not_taken,
        }
    }
}

/// The result of a run that could not start its first step.
pub(super) fn unopened(
    scenario: &Scenario,
    message: String,
    duration: Duration,
    vars: &Vars,
) -> ScenarioResult {
    ScenarioResult {
        name: scenario.name.clone(),
        duration,
        outcome: Outcome::Error(message),
        checks: 0,
        quiet: Duration::ZERO,
        failed_step: None,
        observations: observation::fill(&scenario.observations, vars),
        requirements: BTreeMap::new(),
        not_taken: Vec::new(),
    }
}

/// What a finished run says.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Decided {
    pub outcome: Outcome,
    /// The step that failed or errored the scenario, with its exchange.
    pub failed_step: Option<Box<FailedStep>>,
    pub requirements: BTreeMap<String, RequirementOutcome>,
}

/// The end decision. A run whose steps all ran passes when it made at
/// least the checks the scenario declares (fewer: it fails, since a
/// scenario that checks less than it claims proves nothing); a run a
/// blocking check stopped fails with that check's message and step; a run
/// the host could not be used for errors. Each requirement is attributed
/// on its own (see [`attribution::attribute`]).
pub(super) fn decide(
    scenario: &Scenario,
    checks: u32,
    failed: &[FailedCheck],
    end: End,
) -> Decided {
    let end = match end {
        End::Completed if checks < scenario.checks => End::Short(format!(
            "{}: made {checks} checks but declares at least {}; a scenario that checks less than it claims never passes",
            scenario.path.display(),
            scenario.checks
        )),
        end => end,
    };
    let requirements = attribution::attribute(scenario, failed, &end);
    let (outcome, failed_step) = match end {
        End::Completed => (Outcome::Pass, None),
        End::Short(message) => (Outcome::Fail(message), None),
        End::Blocked { .. } => match failed.iter().find(|check| check.blocking()) {
            Some(check) => (
                Outcome::Fail(check.message.clone()),
                check.failed_step.clone(),
            ),
            None => (Outcome::Fail("a blocking check failed".to_string()), None),
        },
        End::Errored {
            message,
            failed_step,
            ..
        } => (Outcome::Error(message), failed_step),
    };
    Decided {
        outcome,
        failed_step,
        requirements,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;
    use crate::model::Needs;
    use crate::run::outcome::CheckResult;
    use crate::testing::assert_contains;

    fn scenario(checks: u32) -> Scenario {
        Scenario {
            name: "core::s".to_string(),
            profile: "core".to_string(),
            path: PathBuf::from("core/s.json"),
            title: "s".to_string(),
            requirements: vec!["core.a".to_string(), "core.s".to_string()],
            should: ["core.s".to_string()].into(),
            needs: Needs::default(),
            checks,
            steps: Vec::new(),
            mock: None,
            observations: Vec::new(),
            generated: Default::default(),
        }
    }

    fn failed(proves: &str, blocking: bool, message: &str) -> FailedCheck {
        FailedCheck {
            step: 0,
            result: CheckResult {
                proves: vec![proves.to_string()],
                blocking,
                ..CheckResult::default()
            },
            message: message.to_string(),
            failed_step: Some(Box::new(FailedStep {
                step: 1,
                name: message.to_string(),
                ..FailedStep::default()
            })),
        }
    }

    fn blocked() -> End {
        End::Blocked {
            step: 0,
            unchecked: BTreeSet::new(),
        }
    }

    #[test]
    fn a_completed_run_with_its_checks_passes() {
        let decided = decide(&scenario(2), 2, &[], End::Completed);
        assert_eq!(decided.outcome, Outcome::Pass);
        assert_eq!(decided.failed_step, None);
        assert_eq!(decided.requirements["core.a"], RequirementOutcome::Pass);
    }

    #[test]
    fn a_run_that_checks_less_than_it_declares_fails() {
        let decided = decide(&scenario(3), 2, &[], End::Completed);
        let Outcome::Fail(message) = &decided.outcome else {
            panic!("expected a failure: {decided:?}");
        };
        assert_contains(message, "made 2 checks but declares at least 3");
        assert_eq!(decided.requirements["core.a"].keyword(), "fail");
    }

    #[test]
    fn a_non_blocking_failure_leaves_the_scenario_passing() {
        let checks = [failed("core.s", false, "no Location")];
        let decided = decide(&scenario(1), 1, &checks, End::Completed);
        assert_eq!(decided.outcome, Outcome::Pass);
        assert_eq!(
            decided.failed_step, None,
            "only a blocking check is the step"
        );
        assert_ne!(decided.requirements["core.s"], RequirementOutcome::Pass);
    }

    #[test]
    fn a_blocked_run_fails_with_its_first_blocking_check() {
        let checks = [
            failed("core.s", false, "advisory first"),
            failed("core.a", true, "the blocking one"),
        ];
        let decided = decide(&scenario(1), 1, &checks, blocked());
        assert_eq!(
            decided.outcome,
            Outcome::Fail("the blocking one".to_string())
        );
        assert_eq!(
            decided
                .failed_step
                .as_deref()
                .map(|step| step.name.as_str()),
            Some("the blocking one")
        );
    }

    #[test]
    fn a_blocked_run_without_its_check_still_fails() {
        let decided = decide(&scenario(1), 5, &[], blocked());
        assert_eq!(
            decided.outcome,
            Outcome::Fail("a blocking check failed".to_string())
        );
    }

    #[test]
    fn an_errored_run_errors_even_with_enough_checks() {
        let end = End::Errored {
            step: 0,
            message: "garbage".to_string(),
            failed_step: None,
        };
        let decided = decide(&scenario(1), 9, &[], end);
        assert_eq!(decided.outcome, Outcome::Error("garbage".to_string()));
    }
}
