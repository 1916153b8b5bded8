//! `PATCH {base}/{id}`: edits `objective`, `completion.verifierRef` and
//! `continuation` (mode and arm), nothing else.

use serde_json::{Map, Value};

use super::fields;
use super::reader::{object, only_keys};
use super::{refuse_judge_owned, RequestContext, RequestError, Unappliable, JUDGE_OWNED_TOP};
use crate::domain::goal::Mode;
use crate::domain::ids::Objective;
use crate::domain::refs::{ArmRef, VerifierRef};

/// An edit; `None` leaves a field as it is, `Some(None)` clears a ref.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoalPatch {
    pub objective: Option<Objective>,
    pub verifier_ref: Option<Option<VerifierRef>>,
    pub mode: Option<Mode>,
    pub arm_ref: Option<Option<ArmRef>>,
}

const TOP: [&str; 3] = ["objective", "completion", "continuation"];
const IMMUTABLE_TOP: [&str; 3] = ["bounds", "createdAt", "updatedAt"];
const COMPLETION: [&str; 1] = ["verifierRef"];
const CONTINUATION: [&str; 2] = ["mode", "armRef"];

/// Parses a patch body. Judge-owned fields are refused first (422
/// `judge_owned_field`), then immutable ones (422 `immutable_field`), then
/// unknown keys and types (400). A host that drops what it may not change
/// ([`Unappliable::Dropped`]) parses the body without those members.
pub fn parse_patch(body: &Value, context: RequestContext) -> Result<GoalPatch, RequestError> {
    let kept;
    let top = match context.unappliable {
        Unappliable::Refused => object(body, "")?,
        Unappliable::Dropped => {
            kept = without_unappliable(object(body, "")?);
            &kept
        }
    };
    refuse_judge_owned(top)?;
    if let Some(field) = IMMUTABLE_TOP.into_iter().find(|key| top.contains_key(*key)) {
        return Err(RequestError::Immutable {
            field,
            pointer: format!("/{field}"),
        });
    }
    let completion = top
        .get("completion")
        .map(|value| object(value, "/completion"))
        .transpose()?;
    if completion.is_some_and(|completion| completion.contains_key("check")) {
        return Err(RequestError::Immutable {
            field: "completion.check",
            pointer: "/completion/check".to_string(),
        });
    }
    only_keys(top, "", &TOP)?;

    let mut edit = GoalPatch::default();
    if let Some(value) = top.get("objective") {
        edit.objective = Some(fields::objective(value, "/objective")?);
    }
    if let Some(completion) = completion {
        only_keys(completion, "/completion", &COMPLETION)?;
        if let Some(value) = completion.get("verifierRef") {
            edit.verifier_ref = Some(fields::verifier_ref(
                value,
                "/completion/verifierRef",
                context,
            )?);
        }
    }
    if let Some(value) = top.get("continuation") {
        let continuation = object(value, "/continuation")?;
        only_keys(continuation, "/continuation", &CONTINUATION)?;
        if let Some(value) = continuation.get("mode") {
            edit.mode = Some(fields::mode(value, "/continuation/mode", context)?);
        }
        if let Some(value) = continuation.get("armRef") {
            edit.arm_ref = Some(fields::arm_ref(value, "/continuation/armRef", context)?);
        }
    }
    if let Some(objective) = &edit.objective {
        fields::objective_fits(objective)?;
    }
    Ok(edit)
}

/// The body without the members a PATCH may not change, but a `state` of
/// `satisfied`: RFC 0097 §E.1 has a client's claim of success refused, not
/// ignored (PROFILE.md#core.judge-only.patch-state).
fn without_unappliable(top: &Map<String, Value>) -> Map<String, Value> {
    let mut kept = top.clone();
    for field in JUDGE_OWNED_TOP.into_iter().chain(IMMUTABLE_TOP) {
        if field == "state" && kept.get(field) == Some(&Value::from("satisfied")) {
            continue;
        }
        kept.remove(field);
    }
    if let Some(Value::Object(completion)) = kept.get_mut("completion") {
        completion.remove("lastVerdict");
    }
    kept
}
