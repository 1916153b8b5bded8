//! `POST {base}`: `{objective, completion, continuation, bounds}`.

use serde_json::{Map, Value};

use super::fields;
use super::reader::{
    child, integer_at_least, invalid, non_negative_number, object, only_keys, required,
};
use super::{refuse_judge_owned, RequestContext, RequestError};
use crate::domain::bounds::{Bounds, CostCap};
use crate::domain::goal::{Check, Completion, Continuation, Goal, GoalState, Mode, Progress};
use crate::domain::ids::{GoalId, Objective, Tenant};
use crate::domain::money::MicroUsd;
use crate::domain::refs::{ArmRef, VerifierRef};
use crate::domain::timestamp::Timestamp;

/// A valid create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewGoal {
    pub objective: Objective,
    pub check: Check,
    pub verifier_ref: Option<VerifierRef>,
    pub mode: Mode,
    pub arm_ref: Option<ArmRef>,
    pub bounds: Bounds,
}

impl NewGoal {
    /// The goal as first stored: active, no progress, owned by `owner`.
    pub fn into_goal(self, id: GoalId, owner: Tenant, now: Timestamp) -> Goal {
        Goal {
            id,
            objective: self.objective,
            state: GoalState::Active,
            completion: Completion {
                check: self.check,
                verifier_ref: self.verifier_ref,
                last_verdict: None,
            },
            continuation: Continuation {
                mode: self.mode,
                arm_ref: self.arm_ref,
            },
            bounds: self.bounds,
            owner,
            created_at: now,
            updated_at: now,
            progress: Progress::default(),
            paused: false,
            spent: MicroUsd::ZERO,
            notes: crate::domain::Notes::default(),
            // A commitment goal asks its agent at once for the first
            // check-in; after that only what a run commits to is armed.
            next_fire_at: (self.mode == Mode::Commitment).then_some(now),
            version: 1,
        }
    }
}

const TOP: [&str; 4] = ["objective", "completion", "continuation", "bounds"];
const COMPLETION: [&str; 2] = ["check", "verifierRef"];
const CONTINUATION: [&str; 2] = ["mode", "armRef"];
const BOUNDS: [&str; 3] = ["maxLoopIterations", "runTimeoutMs", "maxCostUsd"];

/// Parses a create body. Refusals come in a fixed order: judge-owned fields
/// (422), unknown keys and types (400), missing bounds (422), then what this
/// host does not support (422).
pub fn parse_create(body: &Value, context: RequestContext) -> Result<NewGoal, RequestError> {
    let top = object(body, "")?;
    refuse_judge_owned(top)?;
    only_keys(top, "", &TOP)?;

    let objective = fields::objective(required(top, "", "objective")?, "/objective")?;

    let completion = object(required(top, "", "completion")?, "/completion")?;
    only_keys(completion, "/completion", &COMPLETION)?;
    let continuation = object(required(top, "", "continuation")?, "/continuation")?;
    only_keys(continuation, "/continuation", &CONTINUATION)?;
    let bounds = bounds(top)?;

    let check = fields::check(
        required(completion, "/completion", "check")?,
        "/completion/check",
        context,
    )?;
    let mode = fields::mode(
        required(continuation, "/continuation", "mode")?,
        "/continuation/mode",
        context,
    )?;
    let verifier_ref = match completion.get("verifierRef") {
        Some(value) => fields::verifier_ref(value, "/completion/verifierRef", context)?,
        None => None,
    };
    let arm_ref = match continuation.get("armRef") {
        Some(value) => fields::arm_ref(value, "/continuation/armRef", context)?,
        None => None,
    };
    fields::objective_fits(&objective)?;
    Ok(NewGoal {
        objective,
        check,
        verifier_ref,
        mode,
        arm_ref,
        bounds,
    })
}

fn bounds(top: &Map<String, Value>) -> Result<Bounds, RequestError> {
    let value = match top.get("bounds") {
        None | Some(Value::Null) => return Err(RequestError::BoundsRequired),
        Some(value) => value,
    };
    let map = object(value, "/bounds")?;
    only_keys(map, "/bounds", &BOUNDS)?;
    if map.is_empty() {
        return Err(RequestError::BoundsRequired);
    }
    let pointer = |key: &str| child("/bounds", key);
    let iterations = map
        .get("maxLoopIterations")
        .map(|value| integer_at_least(value, &pointer("maxLoopIterations"), 1))
        .transpose()?;
    let timeout = map
        .get("runTimeoutMs")
        .map(|value| integer_at_least(value, &pointer("runTimeoutMs"), 0))
        .transpose()?;
    let cost = map
        .get("maxCostUsd")
        .map(|value| {
            let at = pointer("maxCostUsd");
            let number = non_negative_number(value, &at)?;
            CostCap::from_number(number).ok_or_else(|| invalid(&at, "must be a number >= 0"))
        })
        .transpose()?;
    Bounds::new(iterations, timeout, cost).ok_or(RequestError::BoundsRequired)
}
