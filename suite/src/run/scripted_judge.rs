//! Scripted verdicts on a host that judges with its own evaluator.
//!
//! A scenario whose rule is not about the judge kind but that scripts the
//! judge's verdicts (`needs.judge: "scripted"`) is written for a verifier
//! host: each goal it creates names its judge in
//! `completion.verifierRef` (a verifier fixture or the suite's webhook
//! URL). On a host advertising `judge: "host"` there is no verifierRef to
//! write, so [`through_seam`] rewrites the scenario for the seam
//! `scriptedJudge` (PROFILE.md#seam-scripted-judge): each such create names
//! `completion: {check: host}`, and the step right after it puts the same
//! ref on the goal with `PUT {base}/{id}/judge`, before anything can run
//! it. Everything else the scenario sends and checks is unchanged, so the
//! same rule is judged on either kind of host.

use serde_json::{json, Value};

use crate::model::{
    Action, Body, Capture, Expect, Principal, Repeat, Request, RequestStep, Scenario, Step, Target,
};

/// `needs.judge` of a scenario that scripts verdicts on either judge kind.
pub const SCRIPTED: &str = "scripted";
/// The seam flag a `judge: host` host advertises for it.
pub const SEAM: &str = "scriptedJudge";
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

/// Whether a goal the scenario creates may run before the client asks:
/// its create names a continuation mode other than `manual` (literally,
/// not the host's first mode; a `manual` goal's arm runs only on
/// `continue`). On a host that judges itself the
/// seam scripts the judge one request after the create, so such a goal's
/// first run could be judged by the host's own evaluator instead of the
/// script: the scenario cannot script that host's verdicts and does not
/// run there (PROFILE.md#seam-scripted-judge).
pub fn runs_unbidden(scenario: &Scenario) -> bool {
    scenario.steps.iter().any(|step| {
        let Action::Request(request) = &step.action else {
            return false;
        };
        let is_create = request.request.method == "POST" && request.request.path == "{base}";
        let Body::Json(body) = &request.request.body else {
            return false;
        };
        let mode = body.pointer("/continuation/mode").and_then(Value::as_str);
        is_create && mode.is_some_and(|m| m != "manual" && !m.starts_with('{'))
    })
}

/// The scenario as it runs against a host that judges with its own
/// evaluator. Fails where the scenario's verdicts cannot be scripted that
/// way (the loader refuses such a file): a ref written anywhere but in a
/// create whose goal id is captured, or a check that reads the judge's
/// ref or kind back.
pub fn through_seam(scenario: &Scenario) -> Result<Scenario, NotScriptable> {
    let mut steps: Vec<Step> = Vec::with_capacity(scenario.steps.len() + 2);
    // Old index -> new index, for the `when`s that name earlier steps.
    let mut moved = Vec::with_capacity(scenario.steps.len());
    let mut scripted = 0usize;
    for step in &scenario.steps {
        check_reads(step)?;
        moved.push(steps.len());
        let Action::Request(request) = &step.action else {
            steps.push(step.clone());
            continue;
        };
        let Some((rewritten, verifier_ref, id)) = script(step, request)? else {
            steps.push(step.clone());
            continue;
        };
        steps.push(Step {
            action: Action::Request(Box::new(rewritten)),
            ..step.clone()
        });
        steps.push(judge_step(step, verifier_ref, &id));
        scripted += 1;
    }
    if scripted == 0 {
        return Err(refuse(
            "/needs/judge",
            "`scripted` is for scenarios that script their judge: no create names a completion.verifierRef",
        ));
    }
    for (index, step) in steps.iter_mut().enumerate() {
        step.index = index;
        if let Some(when) = &mut step.when {
            when.step = moved[when.step];
        }
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

/// The create rewritten for a host judge, the ref it carried and the
/// variable its goal id is captured in; `None` when the step writes no
/// verifierRef.
fn script(
    step: &Step,
    request: &RequestStep,
) -> Result<Option<(RequestStep, Value, String)>, NotScriptable> {
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
    let Some(verifier_ref) = verifier_ref.filter(|value| value.is_string()) else {
        return Err(refuse(
            at,
            "a create of a scenario that scripts its judge names completion.verifierRef: a goal without one has no verdicts to script",
        ));
    };
    let id = request
        .capture
        .iter()
        .find_map(|(name, capture)| match capture {
            Capture::Pointer(pointer) if pointer == "/id" => Some(name.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            refuse(
                format!("{}/capture", step.pointer),
                "a create of a scenario that scripts its judge captures its goal's id (`/id`): the seam names the goal",
            )
        })?;
    if !request.expect.status.iter().all(|status| status / 100 == 2) {
        return Err(refuse(
            format!("{}/expect/status", step.pointer),
            "a create of a scenario that scripts its judge expects a 2xx: its goal is scripted next",
        ));
    }
    let mut body = body.clone();
    body["completion"] = json!({"check": HOST});
    let mut rewritten = request.clone();
    rewritten.request.body = Body::Json(body);
    Ok(Some((rewritten, verifier_ref.clone(), id)))
}

/// The step that scripts the goal `create` made: right after it, under the
/// same `when`, proving what the create's scenario proves (an advertised
/// seam that does not answer fails the scenario's requirements).
fn judge_step(create: &Step, verifier_ref: Value, id: &str) -> Step {
    Step {
        name: format!("script the judge of `{id}` through the seam scriptedJudge"),
        index: create.index,
        pointer: format!("{}/request/body/completion/verifierRef", create.pointer),
        proves: None,
        when: create.when.clone(),
        action: Action::Request(Box::new(RequestStep {
            request: Request {
                method: "PUT".to_string(),
                path: format!("{{base}}/{{{id}}}/judge"),
                principal: match &create.action {
                    Action::Request(request) => request.request.principal,
                    _ => Principal::A,
                },
                headers: Default::default(),
                body: Body::Json(json!({ "verifierRef": verifier_ref })),
                content_type: None,
                seam: Some(SEAM.to_string()),
                endpoint: match &create.action {
                    Action::Request(request) => request.request.endpoint,
                    _ => None,
                },
                stream_ms: None,
            },
            expect: Expect {
                status: vec![200, 204],
                ..Expect::default()
            },
            capture: Default::default(),
            repeat: Repeat::Once,
            parallel: None,
        })),
    }
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
