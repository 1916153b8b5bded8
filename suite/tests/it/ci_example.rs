//! docs/ci.md's job steps, as scripts/ci-example.sh runs them, against the
//! reference host started in-process: a clean run passes and publishes its
//! step summary and artifacts; a run that breaks what the baseline passed
//! fails the gate with `goalpost diff`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TOKEN_A: &str = "ci-a";
const TOKEN_B: &str = "ci-b";
const SECRET: &str = "ci-secret";

struct Host {
    runtime: tokio::runtime::Runtime,
    host: Option<goalpost_host::RunningHost>,
}

impl Host {
    fn start() -> Host {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let mut config = goalpost_host::Config::conformance_in_memory(vec![
            (TOKEN_A.to_string(), "tenant-a".to_string()),
            (TOKEN_B.to_string(), "tenant-b".to_string()),
        ]);
        config.webhook_secret = Some(SECRET.to_string());
        let host = runtime
            .block_on(goalpost_host::RunningHost::start(config))
            .expect("the reference host starts");
        Host {
            runtime,
            host: Some(host),
        }
    }

    fn url(&self) -> String {
        self.host.as_ref().expect("running").base_url()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(host) = self.host.take() {
            self.runtime.block_on(host.shutdown());
        }
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ci-example.sh")
}

fn run_script(url: &str, out: &Path, args: &str, baseline: Option<&Path>) -> Output {
    let mut command = Command::new("bash");
    command
        .arg(script())
        .env("GOALPOST", env!("CARGO_BIN_EXE_goalpost"))
        .env("GOALPOST_HOST_URL", url)
        .env("TOKEN_A", TOKEN_A)
        .env("TOKEN_B", TOKEN_B)
        .env("WEBHOOK_SECRET", SECRET)
        .env("GOALPOST_ARGS", args)
        .env("OUT", out)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("BASELINE")
        .env_remove("GOALPOST_HOST")
        .env_remove("GOALPOST_TOKEN")
        .env_remove("GOALPOST_TOKEN_B");
    if let Some(baseline) = baseline {
        command.env("BASELINE", baseline);
    }
    command.output().expect("bash runs")
}

fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_ci_steps_pass_a_clean_run_and_fail_a_regression() {
    let host = Host::start();
    let dir = tempfile::tempdir().expect("temp dir");

    let baseline_run = dir.path().join("baseline");
    let clean = run_script(&host.url(), &baseline_run, "--profile core", None);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));
    let summary = std::fs::read_to_string(baseline_run.join("step-summary.md")).expect("summary");
    let report_md = std::fs::read_to_string(baseline_run.join("report.md")).expect("report.md");
    assert_eq!(summary, report_md);
    for artifact in ["report.html", "junit.xml", "report.json"] {
        assert!(
            text(&clean).contains(&format!(
                "artifact: {}",
                baseline_run.join(artifact).display()
            )),
            "{}",
            text(&clean)
        );
    }
    let baseline = baseline_run.join("report.json");

    // The same host judged again against the baseline: no regression.
    let again = run_script(
        &host.url(),
        &dir.path().join("again"),
        "--profile core",
        Some(&baseline),
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains("no MUST requirement regressed"),
        "{}",
        text(&again)
    );

    // A collection that is not there breaks what the baseline passed.
    let broken = run_script(
        &host.url(),
        &dir.path().join("broken"),
        "--profile core --base-path /nowhere/goals",
        Some(&baseline),
    );
    assert_eq!(broken.status.code(), Some(1), "{}", text(&broken));
    assert!(
        text(&broken).contains("regressed, MUST"),
        "{}",
        text(&broken)
    );
}
