//! The operator example in reference-host/README.md ("Operating it: a goal
//! from start to finish") runs as written: its worker and its shell script
//! are taken from the README, only their two ports moved to free ones, and
//! run from an empty folder with the built `goalpost-host` first on the
//! `PATH`. What the README says happens is what is checked: the goal
//! escalates with its reason, a resume carries the note to the worker's
//! next run, and the goal ends satisfied.

use std::time::Duration;

use crate::support::readme::Example;

const EXAMPLE: Example = Example {
    section: "### Operating it: a goal from start to finish",
    worker_file: "arm.py",
    worker_log: "arm.log",
    tools: &["python3", "curl", "openssl", "bash", "timeout"],
    // The whole example takes about 2 s.
    limit: Duration::from_secs(90),
};

#[test]
fn the_operator_example_runs_as_written() {
    let Some(ran) = EXAMPLE.run() else {
        return;
    };
    let context = &ran.context;
    // The first watch ends on the escalation; the escalation shows its
    // reason; the second watch ends on satisfied.
    assert!(
        ran.stdout.contains("goal.closed finalState=escalated"),
        "{context}"
    );
    assert!(
        ran.stdout.contains(r#""kind":"clarification""#)
            && ran
                .stdout
                .contains("2 tests fail on EU data: skip them or fix the fixtures?"),
        "{context}"
    );
    assert!(
        ran.stdout.contains("goal.closed finalState=satisfied"),
        "{context}"
    );
    // The worker saw the failed verdict as feedback, and the note on the
    // run after the resume.
    assert!(
        ran.worker_log.contains("'failingCriteria': ['tests']"),
        "{context}"
    );
    assert!(
        ran.worker_log
            .contains("'note': 'skip the 2 EU fixtures, fix them in ticket 42'"),
        "{context}"
    );
}
