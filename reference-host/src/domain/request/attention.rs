//! Bodies of the attention extension (PROFILE.md "Profile `attention`"):
//! a binding, a pause, a supersession, a completion policy and a
//! confirmation. Unknown members are refused everywhere: a confirmation
//! body that names an authority is refused, never read (a body never
//! grants authority; the credential does).

use serde_json::Value;

use super::reader::{child, integer_at_least, invalid, object, only_keys, required, string};
use super::RequestError;
use crate::domain::attention::{AttentionMode, NewBinding, Policy};
use crate::domain::ids::BindingId;
use crate::domain::refs::{ArmRef, ArmSpec};
use crate::domain::timestamp::Timestamp;

const BINDING: [&str; 2] = ["mode", "armRef"];
const PAUSE: [&str; 1] = ["until"];
const POLICY: [&str; 3] = ["kind", "threshold", "binding"];
const CONFIRMATION: [&str; 1] = ["evidence"];
const CONFIRMATION_EVIDENCE: [&str; 2] = ["kind", "ref"];

/// Longest `kind` and `ref` a confirmation may point at, in characters.
pub const MAX_CONFIRMATION_TEXT_CHARS: usize = 256;

fn mode(value: &Value, pointer: &str) -> Result<AttentionMode, RequestError> {
    let text = string(value, pointer)?;
    AttentionMode::parse(text).ok_or_else(|| {
        invalid(
            pointer,
            "must be one of pursue, coordinate, review, falsify, judge, observe",
        )
    })
}

/// A binding's arm: an `http(s)` URL the host calls for each of its runs
/// (`#intervalMs=N` to have the host run it every N ms).
fn arm(value: &Value, pointer: &str, fixtures_enabled: bool) -> Result<ArmRef, RequestError> {
    let text = string(value, pointer)?;
    let arm = ArmRef::parse(text, fixtures_enabled)
        .map_err(|error| RequestError::from_arm_ref(error, pointer))?;
    match arm.spec() {
        ArmSpec::Webhook(_) => Ok(arm),
        ArmSpec::Fixture(_) => Err(invalid(pointer, "a binding's arm is an http(s) URL")),
    }
}

/// `POST {base}/{id}/attention/bindings`: `{mode, armRef}`.
pub fn parse_binding(body: &Value, fixtures_enabled: bool) -> Result<NewBinding, RequestError> {
    let map = object(body, "")?;
    only_keys(map, "", &BINDING)?;
    Ok(NewBinding {
        mode: mode(required(map, "", "mode")?, "/mode")?,
        arm: arm(required(map, "", "armRef")?, "/armRef", fixtures_enabled)?,
    })
}

/// `POST …/supersede`: `{armRef, mode?}`; the replacement keeps the old
/// binding's mode unless another is named.
pub fn parse_supersede(
    body: &Value,
    fixtures_enabled: bool,
) -> Result<(ArmRef, Option<AttentionMode>), RequestError> {
    let map = object(body, "")?;
    only_keys(map, "", &BINDING)?;
    let arm = arm(required(map, "", "armRef")?, "/armRef", fixtures_enabled)?;
    let mode = map
        .get("mode")
        .map(|value| mode(value, "/mode"))
        .transpose()?;
    Ok((arm, mode))
}

/// `POST …/pause`: no body, `{}`, or `{until}` (RFC 3339, or null for a
/// pause until resumed).
pub fn parse_pause(body: Option<&Value>) -> Result<Option<Timestamp>, RequestError> {
    let Some(body) = body else {
        return Ok(None);
    };
    let map = object(body, "")?;
    only_keys(map, "", &PAUSE)?;
    match map.get("until") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => {
            let text = string(value, "/until")?;
            Timestamp::parse(text)
                .map(Some)
                .ok_or_else(|| invalid("/until", "must be an RFC 3339 timestamp"))
        }
    }
}

/// Why a policy was not taken: a kind the host does not know or offer is
/// its own refusal (422), apart from a malformed body (400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyBody {
    Policy(Policy),
    Unsupported(String),
}

/// `PUT {base}/{id}/attention/policy`: `{kind, threshold?, binding?}`.
/// `offered` are the kinds this host offers.
pub fn parse_policy(body: &Value, offered: &[&str]) -> Result<PolicyBody, RequestError> {
    let map = object(body, "")?;
    only_keys(map, "", &POLICY)?;
    let kind = string(required(map, "", "kind")?, "/kind")?;
    if !offered.contains(&kind) {
        return Ok(PolicyBody::Unsupported(kind.to_string()));
    }
    let extra = |key: &str| -> Result<(), RequestError> {
        match map.get(key) {
            Some(_) => Err(invalid(&child("", key), format!("not a member of {kind}"))),
            None => Ok(()),
        }
    };
    let policy = match kind {
        "quorum" => {
            extra("binding")?;
            let threshold = integer_at_least(required(map, "", "threshold")?, "/threshold", 1)?;
            Policy::Quorum {
                threshold: u8::try_from(threshold)
                    .map_err(|_| invalid("/threshold", "is too large"))?,
            }
        }
        "supervisor" => {
            extra("threshold")?;
            let text = string(required(map, "", "binding")?, "/binding")?;
            Policy::Supervisor {
                binding: BindingId::parse(text)
                    .ok_or_else(|| invalid("/binding", "must be a binding id of the goal"))?,
            }
        }
        other => {
            extra("threshold")?;
            extra("binding")?;
            match other {
                "verifier" => Policy::Verifier,
                "host-confirmed" => Policy::HostConfirmed,
                "principal-confirmed" => Policy::PrincipalConfirmed,
                _ => return Ok(PolicyBody::Unsupported(kind.to_string())),
            }
        }
    };
    Ok(PolicyBody::Policy(policy))
}

/// `POST {base}/{id}/attention/confirmations`: no body, `{}`, or
/// `{evidence: {kind, ref}}`, what the confirmer points at.
pub fn parse_confirmation(body: Option<&Value>) -> Result<Option<(String, String)>, RequestError> {
    let Some(body) = body else {
        return Ok(None);
    };
    let map = object(body, "")?;
    only_keys(map, "", &CONFIRMATION)?;
    let Some(evidence) = map.get("evidence") else {
        return Ok(None);
    };
    let evidence = object(evidence, "/evidence")?;
    only_keys(evidence, "/evidence", &CONFIRMATION_EVIDENCE)?;
    let text = |key: &str| -> Result<String, RequestError> {
        let at = child("/evidence", key);
        let text = string(required(evidence, "/evidence", key)?, &at)?;
        let chars = text.chars().count();
        if chars == 0 || chars > MAX_CONFIRMATION_TEXT_CHARS || text.chars().any(char::is_control) {
            return Err(invalid(
                &at,
                format!("must be 1 to {MAX_CONFIRMATION_TEXT_CHARS} printable characters"),
            ));
        }
        Ok(text.to_string())
    };
    Ok(Some((text("kind")?, text("ref")?)))
}
