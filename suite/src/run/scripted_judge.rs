//! Scripted verdicts on a host that judges with its own evaluator.
//!
//! A scenario whose rule is not about the judge kind but that scripts the
//! judge's verdicts (`needs.judge: "scripted"`) is written for a verifier
//! host: each goal it creates names its judge in
//! `completion.verifierRef` (a verifier fixture or the suite's webhook
//! URL). On a host advertising `judge: "host"` there is no verifierRef to
//! write, so [`through_seam`] rewrites the scenario for the seam
//! `scriptedJudge` (PROFILE.md#seam-scripted-judge): each such create names
//! `completion: {check: host}` and carries the same ref in the seam's
//! header, which the host stores with the goal, so the script judges the
//! goal from its first run whatever its mode (a `schedule` goal may run
//! before any request after its create). Everything else the scenario
//! sends and checks is unchanged, so the same rule is judged on either
//! kind of host.

use serde_json::{json, Value};

use crate::model::{Action, Body, RequestStep, Scenario, Step, Target};

/// `needs.judge` of a scenario that scripts verdicts on either judge kind.
pub const SCRIPTED: &str = "scripted";
/// The seam flag a `judge: host` host advertises for it.
pub const SEAM: &str = "scriptedJudge";
/// The create header that carries the script (PROFILE.md#seam-scripted-judge).
pub const HEADER: &str = "x-goalpost-scripted-judge";
/// The judge kinds `agents.goals.judge` names.
pub const VERIFIER: &str = "verifier";
pub const HOST: &str = "host";

/// Where a scenario cannot be rewritten, and why: a JSON pointer into its
/// file and a message the loader reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotScriptable {
    pub pointer: String,
    pub message: String,
}

fn refuse(pointer: impl Into<String>, message: impl Into<String>) -> NotScriptable {
    NotScriptable {
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// Whether the scenario, as the gate let it through for a host advertising
/// `judge`, runs through the seam: it scripts verdicts and the host judges
/// itself.
pub fn applies(scenario: &Scenario, judge: Option<&str>) -> bool {
    scenario.needs.judge.as_deref() == Some(SCRIPTED) && judge == Some(HOST)
}

/// The scenario as it runs against a host that judges with its own
/// evaluator. Fails where the scenario's verdicts cannot be scripted that
/// way (the loader refuses such a file): a ref written anywhere but in a
/// create expecting a 2xx, or a check that reads the judge's ref or kind
/// back.
pub fn through_seam(scenario: &Scenario) -> Result<Scenario, NotScriptable> {
    let mut steps: Vec<Step> = Vec::with_capacity(scenario.steps.len());
    let mut scripted = 0usize;
    for step in &scenario.steps {
        check_reads(step)?;
        let Action::Request(request) = &step.action else {
            steps.push(step.clone());
            continue;
        };
        let Some(rewritten) = script(step, request)? else {
            steps.push(step.clone());
            continue;
        };
        steps.push(Step {
            action: Action::Request(Box::new(rewritten)),
            ..step.clone()
        });
        scripted += 1;
    }
    if scripted == 0 {
        return Err(refuse(
            "/needs/judge",
            "`scripted` is for scenarios that script their judge: no create names a completion.verifierRef",
        ));
    }
    let mut needs = scenario.needs.clone();
    if !needs.seams.iter().any(|seam| seam == SEAM) {
        needs.seams.push(SEAM.to_string());
    }
    Ok(Scenario {
        steps,
        needs,
        ..scenario.clone()
    })
}

/// The create rewritten for a host judge: `completion: {check: host}`,
/// and the ref it carried in the seam's header; `None` when the step
/// writes no verifierRef.
fn script(step: &Step, request: &RequestStep) -> Result<Option<RequestStep>, NotScriptable> {
    let Body::Json(body) = &request.request.body else {
        return Ok(None);
    };
    let completion = body.get("completion");
    let verifier_ref = completion.and_then(|completion| completion.get("verifierRef"));
    let names_verifier = completion
        .and_then(|completion| completion.get("check"))
        .is_some_and(|check| check == VERIFIER);
    if verifier_ref.is_none() && !names_verifier {
        return Ok(None);
    }
    let at = format!("{}/request/body/completion", step.pointer);
    let is_create = request.request.method == "POST" && request.request.path == "{base}";
    if !is_create || request.parallel.is_some() {
        return Err(refuse(
            at,
            "a scenario that scripts its judge names the judge only in a create (POST {base}, sent once): on a host that judges itself, the ref goes to the seam instead",
        ));
    }
    let Some(verifier_ref) = verifier_ref.and_then(Value::as_str) else {
        return Err(refuse(
            at,
            "a create of a scenario that scripts its judge names completion.verifierRef: a goal without one has no verdicts to script",
        ));
    };
    if !request.expect.status.iter().all(|status| status / 100 == 2) {
        return Err(refuse(
            format!("{}/expect/status", step.pointer),
            "a create of a scenario that scripts its judge expects a 2xx: its goal is the one scripted",
        ));
    }
    let mut body = body.clone();
    body["completion"] = json!({"check": HOST});
    let mut rewritten = request.clone();
    rewritten.request.body = Body::Json(body);
    rewritten
        .request
        .headers
        .insert(HEADER.to_string(), verifier_ref.to_string());
    Ok(Some(rewritten))
}

/// Refuses a check that reads the judge back: on a host that judges
/// itself, the goal shows `check: host` and no ref, so such a check is
/// about verifier refs and its scenario needs `judge: verifier`.
fn check_reads(step: &Step) -> Result<(), NotScriptable> {
    let expect = match &step.action {
        Action::Request(request) => &request.expect,
        Action::MockLog(mock) => &mock.expect,
        Action::Quiet { .. } => return Ok(()),
    };
    let reads_judge = |pointer: &str| {
        pointer.contains("verifierRef")
            || pointer.ends_with("/completion/check")
            || pointer.ends_with("/completion")
    };
    for assertion in &expect.assertions {
        let target = match &assertion.target {
            Target::Pointer(pointer) => Some(pointer.as_str()),
            Target::Header(_) => None,
        };
        let read = target
            .into_iter()
            .chain(assertion.map.as_deref())
            .chain(assertion.filter.iter().map(|(pointer, _)| pointer.as_str()));
        if read.into_iter().any(reads_judge) {
            return Err(refuse(
                assertion.pointer.clone(),
                "a scenario that scripts its judge does not read the judge back (completion.check, completion.verifierRef): that rule is about verifier refs and needs `judge: verifier`",
            ));
        }
    }
    Ok(())
}
