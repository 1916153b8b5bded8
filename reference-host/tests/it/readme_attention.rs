//! The multi-agent example in reference-host/README.md ("Several agents on
//! one goal") runs as written: its worker and its shell script are taken
//! from the README, only their two ports moved to free ones, and run from
//! an empty folder with the built `goalpost-host` first on the `PATH`. What
//! the README says happens is what is checked: four bindings in four
//! modes run, the falsifier's blocking evidence holds closure until a
//! person resolves it, two approvals of the current revision make the
//! quorum, the pursuer's request then closes the goal, and the watch shows
//! it all through the event stream, content-free.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const SECTION: &str = "### Several agents on one goal (the attention extension)";
/// The whole example takes a few seconds; past this it is stuck, not slow.
const LIMIT: Duration = Duration::from_secs(120);

/// The first two fenced blocks after the section heading: the worker
/// (Python) and the script (shell).
fn example() -> (String, String) {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("reference-host/README.md");
    let start = readme.find(SECTION).expect("the README has the example");
    let mut blocks = readme[start..].split("```").skip(1).step_by(2);
    let mut body = |language: &str| {
        let block = blocks.next().expect("a fenced block");
        block
            .strip_prefix(language)
            .unwrap_or_else(|| panic!("a {language} block, got {block:.40}"))
            .to_string()
    };
    let worker = body("python\n");
    let script = body("sh\n");
    (worker, script)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

fn missing_tools() -> Vec<&'static str> {
    ["python3", "curl", "bash", "timeout", "grep"]
        .into_iter()
        .filter(|tool| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .collect()
}

#[test]
fn the_multi_agent_example_runs_as_written() {
    let missing = missing_tools();
    if !missing.is_empty() {
        eprintln!(
            "skipped: the README example needs {} on the PATH (install them to run it)",
            missing.join(", ")
        );
        return;
    }
    let (worker, script) = example();
    assert!(worker.contains("9000") && script.contains("9000") && script.contains("8080"));
    let (host_port, worker_port) = (free_port().to_string(), free_port().to_string());
    let worker = worker.replace("9000", &worker_port);
    let script = script
        .replace("8080", &host_port)
        .replace("9000", &worker_port);

    let dir = tempfile::tempdir().expect("an empty folder");
    std::fs::write(dir.path().join("agents.py"), worker).expect("agents.py");
    // One line ahead of the README's: a script that stops early still
    // stops its host and worker, so nothing outlives the test.
    let script = format!("trap 'kill $(jobs -p) 2>/dev/null' EXIT\n{script}");
    std::fs::write(dir.path().join("run.sh"), &script).expect("run.sh");
    let bin = Path::new(env!("CARGO_BIN_EXE_goalpost-host"))
        .parent()
        .expect("the binary's folder");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("timeout")
        .args([
            "--kill-after=5",
            &LIMIT.as_secs().to_string(),
            "bash",
            "run.sh",
        ])
        .current_dir(dir.path())
        .env("PATH", path)
        .env_remove("GOALPOST_HOST_DB")
        .output()
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let host_log = std::fs::read_to_string(dir.path().join("host.log")).unwrap_or_default();
    let agents_log = std::fs::read_to_string(dir.path().join("agents.log")).unwrap_or_default();
    let context = format!(
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}\nagents.log:\n{agents_log}\nhost.log (tail):\n{}",
        output.status,
        host_log
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The last command is `kill %1 %2`: the script ends 0 when both were
    // still running, i.e. the host and the worker lasted the whole example.
    assert!(output.status.success(), "{context}");
    // Every agent ran, each told its own mode and authority.
    for line in [
        "falsify revision 1 may ['add-evidence', 'add-blocking-evidence']",
        "review revision 1 may ['add-evidence', 'add-blocking-evidence', 'give-verdict']",
        "judge revision 1 may ['add-evidence', 'give-verdict', 'request-closure']",
        "pursue revision 1 may ['add-evidence', 'request-closure']",
    ] {
        assert!(agents_log.contains(line), "{line}\n{context}");
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
        assert!(stdout.contains(event), "{event}\n{context}");
    }
    // The closing request was granted, and only one was.
    assert_eq!(stdout.matches(r#""granted":true"#).count(), 1, "{context}");
    // Content-free: the label the falsifier wrote is in no event.
    assert!(
        !stdout.contains("2 EU tests fail on stale fixtures"),
        "{context}"
    );
    // The closure state at the end: the quorum's two approvals, nothing
    // left unresolved.
    assert!(stdout.contains(r#""approvals":2"#), "{context}");
    assert!(stdout.contains(r#""unresolved":[]"#), "{context}");
}
