//! Runs an example of reference-host/README.md as written: its worker and
//! its shell script are taken from the section's first two fenced blocks,
//! only their two ports moved to free ones, and run from an empty folder
//! with the built `goalpost-host` first on the `PATH`. The tests that use
//! it check what the README says happens.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One example of the README.
pub struct Example {
    /// The heading of the section that holds it.
    pub section: &'static str,
    /// The file the README's script starts the worker from.
    pub worker_file: &'static str,
    /// The file the worker logs to.
    pub worker_log: &'static str,
    /// The tools the example calls.
    pub tools: &'static [&'static str],
    /// Past this the example is stuck, not slow.
    pub limit: Duration,
}

/// What a finished example left behind.
pub struct Ran {
    pub stdout: String,
    pub worker_log: String,
    /// Everything a failed assertion should show.
    pub context: String,
}

impl Example {
    /// Runs the example and checks it ended well; `None` (said on stderr)
    /// when the machine lacks a tool it calls.
    pub fn run(&self) -> Option<Ran> {
        let missing = self.missing_tools();
        if !missing.is_empty() {
            eprintln!(
                "skipped: the README example needs {} on the PATH (install them to run it)",
                missing.join(", ")
            );
            return None;
        }
        let (worker, script) = self.blocks();
        assert!(worker.contains("9000") && script.contains("9000") && script.contains("8080"));
        let (host_port, worker_port) = (free_port().to_string(), free_port().to_string());
        let worker = worker.replace("9000", &worker_port);
        let script = script
            .replace("8080", &host_port)
            .replace("9000", &worker_port);

        let dir = tempfile::tempdir().expect("an empty folder");
        std::fs::write(dir.path().join(self.worker_file), worker).expect("the worker's file");
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
                &self.limit.as_secs().to_string(),
                "bash",
                "run.sh",
            ])
            .current_dir(dir.path())
            .env("PATH", path)
            .env_remove("GOALPOST_HOST_DB")
            .output()
            .expect("the script runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let host_log = std::fs::read_to_string(dir.path().join("host.log")).unwrap_or_default();
        let worker_log =
            std::fs::read_to_string(dir.path().join(self.worker_log)).unwrap_or_default();
        let context = format!(
            "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}\n{}:\n{worker_log}\nhost.log (tail):\n{}",
            output.status,
            self.worker_log,
            host_log
                .lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        );
        // The last command is `kill %1 %2`: the script ends 0 when both
        // were still running, i.e. the host and the worker lasted the whole
        // example.
        assert!(output.status.success(), "{context}");
        Some(Ran {
            stdout,
            worker_log,
            context,
        })
    }

    /// The first two fenced blocks after the section heading: the worker
    /// (Python) and the script (shell).
    fn blocks(&self) -> (String, String) {
        let readme =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
                .expect("reference-host/README.md");
        let start = readme
            .find(self.section)
            .expect("the README has the example");
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

    fn missing_tools(&self) -> Vec<&'static str> {
        self.tools
            .iter()
            .copied()
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
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}
