//! A fixed, hand-made run report with every verdict, disposition and kind of
//! failing step (and a hostile host's body), for the golden files and the
//! browser test. Fixed timestamps and version, so the output never drifts.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;

use goalpost::report::{
    FailedCheck, HostInfo, ProfileReport, RequirementReport, RunReport, ScenarioReport, SuiteInfo,
};
use goalpost::run::outcome::exchange::{
    FailedStep, Header, RecordedBody, RecordedRequest, RecordedResponse,
};
use goalpost::run::outcome::{CheckKind, CheckResult, DispositionKind, OutcomeKind};
use goalpost::run::scope::{Scope, Status};

/// What the hostile host answers: markup and script that must stay text.
pub const HOSTILE_BODY: &str = r#"{"id":"goal-1","state":"active","objective":"</pre><script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"}"#;

fn header(name: &str, value: &str) -> Header {
    Header {
        name: name.to_string(),
        value: value.to_string(),
    }
}

fn body(text: &str) -> RecordedBody {
    RecordedBody {
        text: text.to_string(),
        bytes: text.len(),
        truncated: false,
    }
}

fn profile(pass: u32, fail: u32, skip: u32, error: u32, selected: bool) -> ProfileReport {
    ProfileReport {
        certified: selected && pass > 0 && fail + skip + error == 0,
        pass,
        fail,
        skip,
        error,
        selected,
        ..ProfileReport::default()
    }
}

fn requirement(
    id: &str,
    clause: &str,
    disposition: &str,
    reason: Option<&str>,
    scenarios: &[&str],
    message: Option<&str>,
) -> RequirementReport {
    RequirementReport {
        id: id.to_string(),
        profile: id.split('.').next().unwrap_or_default().to_string(),
        level: if id.starts_with("observed") || disposition == "advisory" {
            "SHOULD"
        } else {
            "MUST"
        }
        .to_string(),
        clause: clause.to_string(),
        section: format!("PROFILE.md#{id}"),
        text: format!("What {id} asks of a host."),
        disposition: DispositionKind::parse(disposition).expect("a disposition"),
        reason: reason.map(str::to_string),
        scenarios: scenarios.iter().map(|s| s.to_string()).collect(),
        message: message.map(str::to_string),
        ..RequirementReport::default()
    }
}

fn scenario(name: &str, title: &str, outcome: &str, checks: u32) -> ScenarioReport {
    ScenarioReport {
        name: name.to_string(),
        outcome: OutcomeKind::parse(outcome).expect("an outcome"),
        reason: None,
        checks,
        duration_ms: 42,
        message: None,
        failed_step: None,
        title: title.to_string(),
        profile: name.split("::").next().unwrap_or_default().to_string(),
        ..ScenarioReport::default()
    }
}

const FAIL_MESSAGE: &str = "scenarios/core/create-bounds-required.json step 2 \"create without bounds\" (/steps/1): status did not hold\n  request:  POST http://127.0.0.1:40123/v1/host/sample/goals\n  at:       /steps/1/expect/status\n  expected: 422\n  actual:   201";
const ERROR_MESSAGE: &str = "scenarios/core/discovery.json step 1 \"read discovery\" (/steps/0): GET http://127.0.0.1:40123/.well-known/openwop: transport failure: connection reset by peer";

/// The failing step: a create without bounds that the host accepted, and
/// whose answer carries markup.
pub fn failing_step() -> FailedStep {
    FailedStep {
        step: 2,
        name: "create without bounds".to_string(),
        file: "scenarios/core/create-bounds-required.json".to_string(),
        pointer: "/steps/1".to_string(),
        check: Some(CheckResult {
            kind: CheckKind::Status,
            at: "/steps/1/expect/status".to_string(),
            what: "status".to_string(),
            pointer: None,
            expected: "422".to_string(),
            actual: "201".to_string(),
            note: None,
            context: None,
            proves: Vec::new(),
            blocking: true,
        }),
        error: None,
        request: RecordedRequest {
            method: "POST".to_string(),
            url: "http://127.0.0.1:40123/v1/host/sample/goals".to_string(),
            headers: vec![
                header("content-type", "application/json"),
                header("authorization", "Bearer $TOKEN"),
            ],
            body: Some(body(
                r#"{"objective":"goalpost 0123456789abcdef it's done","completion":{"check":"verifier"},"continuation":{"mode":"manual"}}"#,
            )),
        },
        response: Some(RecordedResponse {
            status: 201,
            headers: vec![
                header("content-type", "application/json"),
                header("etag", "\"1\""),
                header("x-goalpost-webhook-secret", "[redacted]"),
            ],
            body: body(HOSTILE_BODY),
        }),
    }
}

/// A pointer assertion that failed after polling.
pub fn polled_step() -> FailedStep {
    FailedStep {
        step: 3,
        name: "wait for the close".to_string(),
        file: "scenarios/behavior/bound-iterations.json".to_string(),
        pointer: "/steps/2".to_string(),
        check: Some(CheckResult {
            kind: CheckKind::Assertion,
            at: "/steps/2/expect/assert/0".to_string(),
            what: "pointer /state".to_string(),
            pointer: Some("/state".to_string()),
            expected: "\"bound-exceeded\"".to_string(),
            actual: "\"active\"".to_string(),
            note: None,
            context: Some(
                "still failing after polling for 5000 ms (51 attempts); the last response"
                    .to_string(),
            ),
            proves: Vec::new(),
            blocking: true,
        }),
        error: None,
        request: RecordedRequest {
            method: "GET".to_string(),
            url: "http://127.0.0.1:40123/v1/host/sample/goals/goal-2".to_string(),
            headers: vec![header("authorization", "Bearer $TOKEN_B")],
            body: None,
        },
        response: Some(RecordedResponse {
            status: 200,
            headers: vec![header("content-type", "application/json")],
            body: body(r#"{"id":"goal-2","state":"active","progress":{"iterations":3}}"#),
        }),
    }
}

/// A step whose request never got an answer.
pub fn erroring_step() -> FailedStep {
    FailedStep {
        step: 1,
        name: "read discovery".to_string(),
        file: "scenarios/core/discovery.json".to_string(),
        pointer: "/steps/0".to_string(),
        check: None,
        error: Some(
            "GET http://127.0.0.1:40123/.well-known/openwop: transport failure: connection reset by peer"
                .to_string(),
        ),
        request: RecordedRequest {
            method: "GET".to_string(),
            url: "http://127.0.0.1:40123/.well-known/openwop".to_string(),
            headers: Vec::new(),
            body: None,
        },
        response: None,
    }
}

pub fn report() -> RunReport {
    let mut failing = scenario(
        "core::create-bounds-required",
        "A create without bounds is refused",
        "fail",
        3,
    );
    failing.message = Some(FAIL_MESSAGE.to_string());
    failing.failed_step = Some(Box::new(failing_step()));
    let mut erroring = scenario(
        "core::discovery",
        "Discovery advertises standing goals",
        "error",
        0,
    );
    erroring.message = Some(ERROR_MESSAGE.to_string());
    erroring.failed_step = Some(Box::new(erroring_step()));
    let mut polled = scenario(
        "behavior::bound-iterations",
        "The iteration bound closes the goal",
        "fail",
        4,
    );
    polled.message = Some(
        "scenarios/behavior/bound-iterations.json step 3 \"wait for the close\" (/steps/2): pointer /state did not hold"
            .to_string(),
    );
    polled.failed_step = Some(Box::new(polled_step()));
    let mut skipped = scenario(
        "observed::arm-calls",
        "The suite counts every arm call",
        "skip",
        0,
    );
    skipped.reason = Some("seam-absent".to_string());
    let mut opted_out = scenario("strict::created-201", "Create answers 201", "skip", 0);
    opted_out.reason = Some("opted-out".to_string());
    let mut quiet = scenario(
        "behavior::bound-wall-clock",
        "The deadline closes an idle goal",
        "pass",
        6,
    );
    quiet.quiet_ms = 2000;
    let mut filtered = scenario("behavior::pause", "Pause stops the arm", "skip", 0);
    filtered.reason = Some("filtered".to_string());
    // The reference host's judge and modes, less `commitment`.
    let scope = |offered: &[&str], not_offered: &[&str]| Scope {
        judge: Some("verifier".to_string()),
        modes: ["manual", "schedule", "heartbeat"]
            .map(String::from)
            .to_vec(),
        offered: offered.iter().map(|t| t.to_string()).collect(),
        not_offered: not_offered.iter().map(|t| t.to_string()).collect(),
    };
    let mut core = profile(1, 1, 0, 1, true);
    (core.advisory, core.not_reached) = (1, 1);
    core.status = Some(Status::NotCertified);
    core.reason =
        Some("3 MUST requirements did not pass: 1 error, 1 fail, 1 not-reached".to_string());
    core.scope = scope(&["requires-bounds"], &[]);
    let mut behavior = profile(1, 1, 1, 0, true);
    behavior.certified = false;
    behavior.status = Some(Status::NotCertified);
    behavior.reason =
        Some("2 MUST requirements did not pass: 1 fail, 1 skip (filtered)".to_string());
    behavior.not_applicable = 1;
    behavior.scope = scope(&["reported-runs"], &["mode:commitment"]);
    // Certified although a SHOULD requirement was not met.
    let mut hardening = profile(1, 0, 0, 0, true);
    hardening.advisory = 1;
    hardening.status = Some(Status::Certified);
    hardening.scope = scope(&["egress-policy"], &[]);
    // No webhooks seam: the run could not attempt it, and says what it
    // needs.
    let mut observed = profile(0, 0, 1, 0, true);
    observed.status = Some(Status::NotAttempted);
    observed.reason =
        Some("needs the `webhooks` seam (`conformanceSeams.goals.webhooks`)".to_string());
    observed.scope = scope(&[], &[]);
    let mut strict = profile(0, 0, 1, 0, false);
    strict.status = Some(Status::OptedOut);
    let mut report = RunReport {
        suite: SuiteInfo {
            name: "goalpost".to_string(),
            version: "0.1.0".to_string(),
        },
        host: HostInfo {
            url: "http://127.0.0.1:40123".to_string(),
            discovery_sha256: "3f".repeat(32),
            bundled: false,
        },
        started_at: "2026-06-13T09:30:00.000Z".to_string(),
        finished_at: "2026-06-13T09:30:04.250Z".to_string(),
        duration_ms: 4250,
        profiles: BTreeMap::from([
            ("behavior".to_string(), behavior),
            ("core".to_string(), core),
            ("hardening".to_string(), hardening),
            ("observed".to_string(), observed),
            ("strict".to_string(), strict),
        ]),
        requirements: vec![
            requirement(
                "behavior.bound.iterations",
                "§3 Bounds",
                "fail",
                None,
                &["behavior::bound-iterations"],
                polled.message.as_deref(),
            ),
            requirement(
                "behavior.pause.stops",
                "PROFILE.md#behavior.pause.stops",
                "skip",
                Some("filtered"),
                &["behavior::pause"],
                None,
            ),
            requirement(
                "behavior.commitment.fires",
                "PROFILE.md#behavior.commitment.fires",
                "not-applicable",
                Some("mode:commitment"),
                &["behavior::pause"],
                Some("not applicable: the host does not advertise the `commitment` continuation mode (`mode:commitment`)"),
            ),
            requirement(
                "behavior.bound.wall-clock",
                "§3 Bounds",
                "pass",
                None,
                &["behavior::bound-wall-clock"],
                None,
            ),
            requirement(
                "core.create.bounds-required",
                "§2 Bounds required",
                "fail",
                None,
                &["core::create-bounds-required"],
                Some(FAIL_MESSAGE),
            ),
            requirement(
                "core.create.location",
                "PROFILE.md#core.create.location",
                "advisory",
                None,
                &["core::create"],
                Some("scenarios/core/create.json step 1 \"create\" (/steps/0): header location is absent (SHOULD: never blocks certification)"),
            ),
            requirement(
                "core.create.returns-active-goal",
                "§1 Create request",
                "pass",
                None,
                &["core::create"],
                None,
            ),
            requirement(
                "core.discovery.shape",
                "§1 Capabilities",
                "error",
                None,
                &["core::discovery"],
                Some(ERROR_MESSAGE),
            ),
            requirement(
                "core.lifecycle.abandon",
                "PROFILE.md#core.lifecycle.abandon",
                "not-reached",
                None,
                &["core::create-bounds-required"],
                Some("not reached: step 2 \"create without bounds\" failed on core.create.bounds-required"),
            ),
            requirement(
                "hardening.input.duplicate-keys",
                "PROFILE.md#hardening.input.duplicate-keys",
                "pass",
                None,
                &["hardening::duplicate-keys"],
                None,
            ),
            requirement(
                "hardening.input.text-plain",
                "PROFILE.md#hardening.input.text-plain",
                "advisory",
                None,
                &["hardening::duplicate-keys"],
                Some("scenarios/hardening/duplicate-keys.json step 2 \"post as text/plain\" (/steps/1): status did not hold: expected 415, actual 400"),
            ),
            requirement(
                "observed.arm.counted",
                "§4 Conformance seams",
                "skip",
                Some("seam-absent"),
                &["observed::arm-calls"],
                None,
            ),
            requirement(
                "strict.create.status-201",
                "§2 Endpoints",
                "skip",
                Some("opted-out"),
                &["strict::created-201"],
                None,
            ),
        ],
        scenarios: vec![
            polled,
            quiet,
            filtered,
            scenario("core::create", "Create returns an active goal", "pass", 7),
            failing,
            erroring,
            scenario(
                "hardening::duplicate-keys",
                "Duplicate keys are refused",
                "pass",
                5,
            ),
            skipped,
            opted_out,
        ],
        legend: BTreeMap::new(),
        order: None,
        profile_version: Some("1.0".to_string()),
        profile_href: Some("../../PROFILE.md".to_string()),
    };
    // The advisory's own check, apart from any failing scenario.
    if let Some(advisory) = report
        .requirements
        .iter_mut()
        .find(|r| r.id == "core.create.location")
    {
        let mut step = failing_step();
        step.step = 1;
        step.name = "create".to_string();
        step.pointer = "/steps/0".to_string();
        step.file = "scenarios/core/create.json".to_string();
        if let Some(check) = step.check.as_mut() {
            check.at = "/steps/0/expect/headers/location".to_string();
            check.what = "header location".to_string();
            check.expected = "present".to_string();
            check.actual = "absent".to_string();
        }
        advisory.failed_check = Some(FailedCheck {
            scenario: "core::create".to_string(),
            step: 1,
            name: "create".to_string(),
            at: Some("/steps/0/expect/headers/location".to_string()),
        });
        advisory.failed_step = Some(Box::new(step));
    }
    report.refresh_legend();
    report
}
