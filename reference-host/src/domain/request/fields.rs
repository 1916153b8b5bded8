//! Fields that create and patch share.

use serde_json::Value;

use super::reader::{invalid, nullable_string, string};
use super::{RequestContext, RequestError};
use crate::domain::goal::{Check, Mode};
use crate::domain::ids::Objective;
use crate::domain::refs::{ArmRef, VerifierRef};

/// The longest objective accepted, in bytes of UTF-8.
pub const MAX_OBJECTIVE_BYTES: usize = 8 * 1024;

pub(super) fn objective(value: &Value, pointer: &str) -> Result<Objective, RequestError> {
    string(value, pointer).map(|text| Objective::new(text.to_string()))
}

/// Checked after every other field of the body, so a long objective never
/// hides a 400 elsewhere.
pub(super) fn objective_fits(objective: &Objective) -> Result<(), RequestError> {
    if objective.as_str().len() > MAX_OBJECTIVE_BYTES {
        return Err(RequestError::ObjectiveTooLong {
            max_bytes: MAX_OBJECTIVE_BYTES,
        });
    }
    Ok(())
}

/// The check this host judges with; the other known one is 422.
pub(super) fn check(
    value: &Value,
    pointer: &str,
    context: RequestContext,
) -> Result<Check, RequestError> {
    let text = string(value, pointer)?;
    match Check::parse(text) {
        Some(check) if check == context.judge => Ok(check),
        Some(_) => Err(RequestError::UnsupportedJudge {
            check: text.to_string(),
        }),
        None => Err(invalid(pointer, "must be one of verifier, host")),
    }
}

/// A known mode this host runs; known modes it does not run are 422.
pub(super) fn mode(
    value: &Value,
    pointer: &str,
    context: RequestContext,
) -> Result<Mode, RequestError> {
    let text = string(value, pointer)?;
    match Mode::parse(text) {
        Some(mode) if context.modes.contains(&mode) => Ok(mode),
        Some(_) => Err(RequestError::UnsupportedContinuation {
            mode: text.to_string(),
        }),
        None => Err(invalid(
            pointer,
            "must be one of schedule, commitment, heartbeat, manual",
        )),
    }
}

pub(super) fn verifier_ref(
    value: &Value,
    pointer: &str,
    context: RequestContext,
) -> Result<Option<VerifierRef>, RequestError> {
    nullable_string(value, pointer)?
        .map(|text| {
            VerifierRef::parse(text, context.fixtures_enabled)
                .map_err(|error| RequestError::from_verifier_ref(error, pointer))
        })
        .transpose()
}

pub(super) fn arm_ref(
    value: &Value,
    pointer: &str,
    context: RequestContext,
) -> Result<Option<ArmRef>, RequestError> {
    nullable_string(value, pointer)?
        .map(|text| {
            ArmRef::parse(text, context.fixtures_enabled)
                .map_err(|error| RequestError::from_arm_ref(error, pointer))
        })
        .transpose()
}
