//! The multi-agent example in reference-host/README.md ("Several agents on
//! one goal") runs as written: its worker and its shell script are taken
//! from the README, only their two ports moved to free ones, and run from
//! an empty folder with the built `goalpost-host` first on the `PATH`. What
//! the README says happens is what is checked: four bindings in four
//! modes run, the falsifier's blocking evidence holds closure until a
//! person resolves it, two approvals of the current revision make the
//! quorum, the pursuer's request then closes the goal, and the watch shows
//! it all through the event stream, content-free.

use std::time::Duration;

use crate::support::readme::Example;

const EXAMPLE: Example = Example {
    section: "### Several agents on one goal (the attention extension)",
    worker_file: "agents.py",
    worker_log: "agents.log",
    tools: &["python3", "curl", "bash", "timeout", "grep"],
    // The whole example takes a few seconds.
    limit: Duration::from_secs(120),
};

#[test]
fn the_multi_agent_example_runs_as_written() {
    let Some(ran) = EXAMPLE.run() else {
        return;
    };
    let context = &ran.context;
    // Every agent ran, each told its own mode and authority.
    for line in [
        "falsify revision 1 may ['add-evidence', 'add-blocking-evidence']",
        "review revision 1 may ['add-evidence', 'add-blocking-evidence', 'give-verdict']",
        "judge revision 1 may ['add-evidence', 'give-verdict', 'request-closure']",
        "pursue revision 1 may ['add-evidence', 'request-closure']",
    ] {
        assert!(ran.worker_log.contains(line), "{line}\n{context}");
    }
    // The reviewers saw the falsifier's finding as blocking before it was
    // resolved, or only after: either way the watch shows the story.
    for event in [
        "attention.binding.created",
        "attention.evidence.added",
        "attention.evidence.resolved",
        "attention.verdict.recorded",
        "attention.closure.requested",
        "goal.closed finalState=satisfied",
    ] {
        assert!(ran.stdout.contains(event), "{event}\n{context}");
    }
    // The closing request was granted, and only one was.
    assert_eq!(
        ran.stdout.matches(r#""granted":true"#).count(),
        1,
        "{context}"
    );
    // Content-free: the label the falsifier wrote is in no event.
    assert!(
        !ran.stdout.contains("2 EU tests fail on stale fixtures"),
        "{context}"
    );
    // The closure state at the end: the quorum's two approvals, nothing
    // left unresolved.
    assert!(ran.stdout.contains(r#""approvals":2"#), "{context}");
    assert!(ran.stdout.contains(r#""unresolved":[]"#), "{context}");
}
