//! Create and patch bodies parsed from JSON with precise refusals: the only
//! way a request body becomes domain values.

mod attention;
mod create;
mod fields;
mod json;
mod judge_script;
mod patch;
mod reader;
mod run;
mod verifier;

pub use attention::{
    parse_binding, parse_confirmation, parse_pause, parse_policy, parse_supersede, PolicyBody,
};
pub use create::{parse_create, NewGoal};
pub use fields::MAX_OBJECTIVE_BYTES;
pub use json::{parse_body, BodyError, MAX_DEPTH};
pub use judge_script::{parse_judge_ref, parse_judge_script};
pub use patch::{parse_patch, GoalPatch};
pub use run::{parse_run_report, ReportedEscalation, ReportedRun, RunKey, MAX_RUN_KEY_CHARS};
pub use verifier::{parse_verifier, NewVerifier};

use super::goal::{Check, Mode};
use super::refs::RefError;

/// What the boundary needs to know to judge a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestContext {
    /// `conformance:` refs are accepted only with the fixtures seam on.
    pub fixtures_enabled: bool,
    /// The one `completion.check` this host judges with (what discovery
    /// advertises); the other is known but refused.
    pub judge: Check,
    /// The continuation modes this host runs (what discovery advertises);
    /// other known modes are refused.
    pub modes: &'static [Mode],
    /// What a PATCH naming a member it may not change gets.
    pub unappliable: Unappliable,
}

/// What a PATCH gets for a member it may not change: a judge-owned field
/// (but `state: satisfied`, always refused), a bound, a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unappliable {
    /// The whole PATCH is refused (422), so a 2xx means all of it applied.
    Refused,
    /// The member is left out and the rest applied: RFC 0097 asks only
    /// that such members never change (PROFILE.md#core.patch.atomic).
    Dropped,
}

impl RequestContext {
    /// The reference host's own offer: the verifier judge and every mode
    /// it runs.
    pub const fn new(fixtures_enabled: bool) -> RequestContext {
        RequestContext {
            fixtures_enabled,
            judge: Check::Verifier,
            modes: &Mode::SUPPORTED,
            unappliable: Unappliable::Refused,
        }
    }
}

/// Why a body was refused. `pointer`s are RFC 6901 pointers into the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Wrong type, unknown key, out-of-range value, malformed fixture ref.
    #[error("{pointer}: {message}")]
    Invalid { pointer: String, message: String },
    /// A body names a field only the judge may set.
    #[error("{field} is owned by the judge")]
    JudgeOwned {
        field: &'static str,
        pointer: String,
    },
    /// A patch names a field that never changes after create.
    #[error("{field} cannot be changed after create")]
    Immutable {
        field: &'static str,
        pointer: String,
    },
    #[error("bounds are required")]
    BoundsRequired,
    /// The objective is longer than [`MAX_OBJECTIVE_BYTES`].
    #[error("the objective is longer than {max_bytes} bytes of UTF-8")]
    ObjectiveTooLong { max_bytes: usize },
    #[error("continuation mode {mode:?} is not supported by this host")]
    UnsupportedContinuation { mode: String },
    #[error("completion check {check:?} is not supported by this host")]
    UnsupportedJudge { check: String },
    #[error("{pointer}: fixture refs need the host's conformance seams")]
    FixturesDisabled { pointer: String },
    #[error("{pointer}: unknown verifier {reference:?}")]
    UnknownVerifier { pointer: String, reference: String },
    #[error("{pointer}: unknown arm {reference:?}")]
    UnknownArm { pointer: String, reference: String },
    /// A webhook ref into an address the host's egress policy denies.
    #[error("{pointer}: {reason}")]
    EgressDenied { pointer: String, reason: String },
}

impl RequestError {
    fn from_verifier_ref(error: RefError, pointer: &str) -> RequestError {
        RequestError::from_ref(error, pointer, |pointer, reference| {
            RequestError::UnknownVerifier { pointer, reference }
        })
    }

    fn from_arm_ref(error: RefError, pointer: &str) -> RequestError {
        RequestError::from_ref(error, pointer, |pointer, reference| {
            RequestError::UnknownArm { pointer, reference }
        })
    }

    /// A ref that did not resolve: the same errors for verifiers and arms,
    /// but for what an unknown one is called (`unknown`).
    fn from_ref(
        error: RefError,
        pointer: &str,
        unknown: impl FnOnce(String, String) -> RequestError,
    ) -> RequestError {
        match error {
            RefError::FixturesDisabled => RequestError::FixturesDisabled {
                pointer: pointer.to_string(),
            },
            RefError::Malformed(message) => RequestError::Invalid {
                pointer: pointer.to_string(),
                message,
            },
            RefError::Unknown(reference) => unknown(pointer.to_string(), reference),
        }
    }
}

/// Fields only the judge (or the server) sets, as dotted names and pointers.
const JUDGE_OWNED_TOP: [&str; 4] = ["id", "state", "progress", "owner"];
const LAST_VERDICT: &str = "completion.lastVerdict";
const LAST_VERDICT_POINTER: &str = "/completion/lastVerdict";

/// Refuses the first judge-owned field the body names.
fn refuse_judge_owned(
    body: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), RequestError> {
    if let Some(field) = JUDGE_OWNED_TOP
        .into_iter()
        .find(|key| body.contains_key(*key))
    {
        return Err(RequestError::JudgeOwned {
            field,
            pointer: format!("/{field}"),
        });
    }
    let names_last_verdict = body
        .get("completion")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|completion| completion.contains_key("lastVerdict"));
    if names_last_verdict {
        return Err(RequestError::JudgeOwned {
            field: LAST_VERDICT,
            pointer: LAST_VERDICT_POINTER.to_string(),
        });
    }
    Ok(())
}
