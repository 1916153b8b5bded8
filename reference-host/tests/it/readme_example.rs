//! The operator example in reference-host/README.md ("Operating it: a goal
//! from start to finish") runs as written: its worker and its shell script
//! are taken from the README, only their two ports moved to free ones, and
//! run from an empty folder with the built `goalpost-host` first on the
//! `PATH`. What the README says happens is what is checked: the goal
//! escalates with its reason, a resume carries the note to the worker's
//! next run, and the goal ends satisfied.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const SECTION: &str = "### Operating it: a goal from start to finish";
/// The whole example takes about 2 s; past this it is stuck, not slow.
const LIMIT: Duration = Duration::from_secs(90);

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
    ["python3", "curl", "openssl", "bash", "timeout"]
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
fn the_operator_example_runs_as_written() {
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
    std::fs::write(dir.path().join("arm.py"), worker).expect("arm.py");
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
    // `timeout` bounds the script even if a `watch` never ends, and its
    // signal goes to the script's whole process group, host and worker
    // included.
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
    let arm_log = std::fs::read_to_string(dir.path().join("arm.log")).unwrap_or_default();
    let context = format!(
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}\narm.log:\n{arm_log}\nhost.log (tail):\n{}",
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
    // The first watch ends on the escalation; the escalation shows its
    // reason; the second watch ends on satisfied.
    assert!(
        stdout.contains("goal.closed finalState=escalated"),
        "{context}"
    );
    assert!(
        stdout.contains(r#""kind":"clarification""#)
            && stdout.contains("2 tests fail on EU data: skip them or fix the fixtures?"),
        "{context}"
    );
    assert!(
        stdout.contains("goal.closed finalState=satisfied"),
        "{context}"
    );
    // The worker saw the failed verdict as feedback, and the note on the
    // run after the resume.
    assert!(
        arm_log.contains("'failingCriteria': ['tests']"),
        "{context}"
    );
    assert!(
        arm_log.contains("'note': 'skip the 2 EU fixtures, fix them in ticket 42'"),
        "{context}"
    );
}
