//! `goalpost doctor` against the reference host started in-process, with its
//! conformance seams on and off: what it advertises, what is missing, the
//! PROFILE.md section for each, the exit code, and that it changes nothing.

use crate::support;

use std::process::{Command, Output};

const TOKEN_A: &str = "doctor-a";
const TOKEN_B: &str = "doctor-b";

/// A running reference host and the runtime that serves it.
struct Host {
    runtime: tokio::runtime::Runtime,
    host: Option<goalpost_host::RunningHost>,
}

impl Host {
    fn start(seams: bool) -> Host {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let mut config = goalpost_host::Config::conformance_in_memory(vec![
            (TOKEN_A.to_string(), "tenant-a".to_string()),
            (TOKEN_B.to_string(), "tenant-b".to_string()),
        ]);
        config.conformance_seams = seams;
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

    /// The goals tenant A sees, through the host's own list route.
    fn goal_count(&self) -> usize {
        let url = format!("{}/v1/host/sample/goals", self.url());
        let body: serde_json::Value = self.runtime.block_on(async {
            goalpost::http::client()
                .get(url)
                .bearer_auth(TOKEN_A)
                .send()
                .await
                .expect("list")
                .json()
                .await
                .expect("JSON")
        });
        body["goals"]
            .as_array()
            .or_else(|| body["items"].as_array())
            .map_or(0, Vec::len)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(host) = self.host.take() {
            self.runtime.block_on(host.shutdown());
        }
    }
}

fn doctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .arg("doctor")
        .args(args)
        .env_remove("GOALPOST_HOST")
        .env_remove("GOALPOST_TOKEN")
        .env_remove("GOALPOST_TOKEN_B")
        .env_remove("GOALPOST_BASE_PATH")
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn all(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_host_with_its_seams_is_ready_for_every_profile() {
    let host = Host::start(true);
    let output = doctor(&[
        "--host",
        &host.url(),
        "--token",
        TOKEN_A,
        "--token-b",
        TOKEN_B,
    ]);
    let text = all(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("conformance seams: continue, events, fixtures, webhooks"),
        "{text}"
    );
    // The verdict a run would reach, with the scope it would cover.
    for profile in ["core", "behavior", "observed", "hardening", "attention"] {
        assert!(
            text.contains(&format!(
                "  {profile}: would be certified — judge verifier; modes manual, schedule, heartbeat, commitment"
            )),
            "{profile}: {text}"
        );
    }
    // The reference host advertises the attention extension: its scope
    // names it.
    assert!(
        text.contains(
            "  attention: would be certified — judge verifier; modes manual, schedule, heartbeat, commitment; attention\n"
        ),
        "{text}"
    );
    assert_eq!(text.matches("    ready: ").count(), 6, "{text}");
    assert!(
        text.contains(
            "  cluster: not attempted — needs 2+ endpoints of one deployment (--host once per replica)"
        ),
        "{text}"
    );
    assert!(
        text.contains("A run would certify: core, behavior, observed, hardening, attention; it would not attempt cluster"),
        "{text}"
    );
    // One endpoint cannot show a cluster: a run option, not a gap.
    assert!(
        text.contains("    run option: one endpoint: needs two or more endpoints"),
        "{text}"
    );
    assert!(text.contains("PROFILE.md#skip-needs-endpoints"), "{text}");
    assert!(!text.contains("    missing: "), "{text}");
    assert!(!text.contains("WRONG"), "{text}");
}

#[test]
fn a_host_without_seams_is_told_which_sections_to_implement_and_nothing_is_written() {
    let host = Host::start(false);
    let before = host.goal_count();
    let output = doctor(&["--host", &host.url(), "--token", TOKEN_A]);
    let text = all(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("conformance seams: none"), "{text}");
    // Core needs no seam: only the tenancy scenarios wait for --token-b,
    // and the prediction names them.
    assert!(
        text.contains(
            "  core: cannot be certified — 2 MUST requirements would skip `needs-second-tenant`"
        ),
        "{text}"
    );
    // Behavior needs the seams but for three scenarios that ride on host
    // API alone (the reported run's claims, `POST {base}/{id}/runs`, and the
    // host's own event list and stream of such runs, `host.events`): its
    // minimum scope is not met, and doctor says what it needs.
    assert!(
        text.contains("  behavior: not attempted — needs the `continue` seam"),
        "{text}"
    );
    assert!(text.contains("    partly: 3 of "), "{text}");
    assert!(
        text.contains("  hardening: not attempted — needs a second tenant's token (--token-b)"),
        "{text}"
    );
    for seam in ["continue", "events", "fixtures", "webhooks"] {
        assert!(
            text.contains(&format!(
                "missing: seam `{seam}` is not in conformanceSeams.goals"
            )) && text.contains(&format!("implement: PROFILE.md#seam-{seam}")),
            "{seam}: {text}"
        );
    }
    // No second tenant: said, with its section, but it is not the host's.
    assert!(
        text.contains("no --token-b") && text.contains("PROFILE.md#skip-needs-second-tenant"),
        "{text}"
    );
    assert!(text.contains("ok    GET /v1/host/sample/goals/"), "{text}");
    assert_eq!(host.goal_count(), before, "doctor created something");
}

#[test]
fn probe_write_creates_one_goal_and_abandons_it() {
    let host = Host::start(true);
    let before = host.goal_count();
    let output = doctor(&[
        "--host",
        &host.url(),
        "--token",
        TOKEN_A,
        "--token-b",
        TOKEN_B,
        "--probe-write",
    ]);
    let text = all(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("(create one goal)"), "{text}");
    assert!(text.contains("(abandon the probe goal)"), "{text}");
    // The seams discovery advertises are probed, and answer.
    for probe in [
        "ok    GET /v1/host/sample/goals/",
        "/events (the probe goal's events)",
        "/evaluations (the probe goal's evaluations)",
        "/continue (continue the abandoned probe goal)",
    ] {
        assert!(text.contains(probe), "{probe}: {text}");
    }
    assert!(!text.contains("WRONG"), "{text}");
    assert_eq!(host.goal_count(), before + 1, "{text}");
}

#[test]
fn a_wrong_answer_is_named_with_its_section() {
    let host = Host::start(true);
    // A collection that is not there: the list and lookup probes fail.
    let output = doctor(&[
        "--host",
        &host.url(),
        "--token",
        TOKEN_A,
        "--base-path",
        "/nowhere/goals",
    ]);
    let text = all(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("WRONG GET /nowhere/goals (tenant A): answered 404, expected 200"),
        "{text}"
    );
    assert!(text.contains("PROFILE.md#wire-list"), "{text}");
}

#[test]
fn nobody_listening_cannot_start() {
    // A port nobody listens on: bind one, note it, let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let output = doctor(&[
        "--host",
        &format!("http://127.0.0.1:{port}"),
        "--token",
        TOKEN_A,
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", all(&output));
}

#[test]
fn a_seam_advertised_but_absent_is_found_by_the_write_probe() {
    // The fake host advertises `continue` and answers it 404.
    let url = support::start_in_background(support::FakeOptions {
        advertise_seams: true,
        advertise_goals: true,
    });
    let output = doctor(&["--host", &url, "--token", support::TOKEN_A, "--probe-write"]);
    let text = all(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "WRONG POST /v1/host/sample/goals/goal-1/continue (continue the abandoned probe goal): answered 404, expected 409"
        ) && text.contains("(see PROFILE.md#seam-continue)"),
        "{text}"
    );
}
