//! The choices the profile leaves to a host, as this host makes them.
//!
//! [`Choices::default`] is how the reference host behaves. Every other value
//! is still a conforming host: the suite's variant matrix starts builds that
//! make one other choice each (`host-builds/src/variants/`,
//! `scenarios/variants.json`) to prove it certifies hosts that chose
//! differently. The engine and the HTTP layer read these fields; the
//! registry that names the alternatives lives in that other crate.

use crate::domain::{Check, CostReading, Mode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choices {
    /// The status of a successful create.
    pub create_status: CreateStatus,
    /// What `GET {base}/{id}/attention` carries.
    pub attention: AttentionBody,
    /// The `confidence` of an evaluation that no judge gave (the run or the
    /// judge failed: an environmental failure).
    pub confidence_without_verdict: ConfidenceWithoutVerdict,
    /// How `maxCostUsd` stops a goal.
    pub cost_reading: CostReading,
    /// The code of a `continue` refused because the goal is escalated.
    pub escalated_continue: EscalatedContinue,
    /// The vocabulary of the error envelope's `error` member.
    pub error_codes: ErrorCodes,
    /// Whether webhook calls are signed (`X-Goalpost-Signature`).
    pub webhook_signing: WebhookSigning,
    /// The judge discovery advertises, and the only `completion.check` a
    /// create or edit may name.
    pub judge: Check,
    /// The continuation modes discovery advertises and a create or edit
    /// may name, in discovery's order.
    pub modes: &'static [Mode],
    /// What a `schedule` goal without an `armRef` does.
    pub armless_schedule: ArmlessSchedule,
    /// Whether the attention extension is offered (PROFILE.md "Profile
    /// `attention`"), and the choices it leaves open.
    pub attention_extension: AttentionOffer,
    /// Whether runs executed elsewhere may be reported to a goal
    /// (`POST {base}/{id}/runs`, advertised as `host.reportedRuns`).
    pub reported_runs: ReportedRuns,
    /// Whether discovery says how webhook targets are checked
    /// (`webhookEgress`). The policy itself holds either way.
    pub egress_policy: EgressPolicy,
    /// What an arm request carries beside the attention projection.
    pub arm_request: ArmRequestBody,
    /// What a PATCH naming a member it may not change (judge-owned, a
    /// bound) gets: refused whole, or the member dropped.
    pub unappliable: Unappliable,
}

impl Default for Choices {
    fn default() -> Choices {
        Choices {
            create_status: CreateStatus::Created,
            attention: AttentionBody::GoalIdAndStatus,
            confidence_without_verdict: ConfidenceWithoutVerdict::Zero,
            cost_reading: CostReading::Budget,
            escalated_continue: EscalatedContinue::GoalEscalated,
            error_codes: ErrorCodes::Goalpost,
            webhook_signing: WebhookSigning::Signed,
            judge: Check::Verifier,
            modes: &Mode::SUPPORTED,
            armless_schedule: ArmlessSchedule::FiresAtOnce,
            attention_extension: AttentionOffer::On {
                wake: PauseWake::Tick,
                supervisor: false,
            },
            reported_runs: ReportedRuns::Offered,
            egress_policy: EgressPolicy::Advertised,
            arm_request: ArmRequestBody::Projection,
            unappliable: Unappliable::Refused,
        }
    }
}

pub use crate::domain::attention::PauseWake;

/// The attention extension as this host offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionOffer {
    /// Not offered: discovery does not advertise it and its routes answer
    /// 404 (every conforming variant that is not about attention).
    Off,
    On {
        /// How a timed pause becomes eligible again.
        wake: PauseWake,
        /// Whether the optional `supervisor` completion policy is offered.
        supervisor: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateStatus {
    /// 201 Created (with `Location`).
    Created,
    /// 200 OK (still with `Location`): RFC 0097 hosts may answer either.
    Ok,
}

pub use crate::domain::wire::{AttentionBody, ConfidenceWithoutVerdict};
pub use crate::domain::Unappliable;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EscalatedContinue {
    /// 409 `goal_escalated`.
    GoalEscalated,
    /// 409 `goal_terminal`: continuation is stopped until a person acts.
    GoalTerminal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCodes {
    /// This host's own codes (`invalid_request`, `goal_terminal`, ...).
    Goalpost,
    /// openwop's generic codes (`validation_error`, `not_found`,
    /// `unauthenticated`, `conflict`, ...), mapped from ours; statuses are
    /// unchanged.
    Openwop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookSigning {
    Signed,
    /// No signature: receivers authenticate the host some other way (or
    /// not at all); the profile asks for none.
    Unsigned,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmlessSchedule {
    /// Fires at once and every default interval with the no-op worker.
    FiresAtOnce,
    /// Waits, never fired by the scheduler, until an edit gives it an
    /// `armRef` (then it fires at once). `continue` still runs it.
    WaitsForArm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportedRuns {
    /// `POST {base}/{id}/runs` is served and advertised.
    Offered,
    /// Not offered: no route (an unknown route's 404), nothing in
    /// discovery. A host need not take runs from outside.
    NotOffered,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressPolicy {
    /// Discovery advertises `webhookEgress: {internal: "denied"}`.
    Advertised,
    /// Discovery says nothing of it (the host still refuses internal
    /// targets: saying so is the choice, not having the policy).
    Unadvertised,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmRequestBody {
    /// The attention projection and this host's `previous` and
    /// `resolution`.
    Projection,
    /// Also the goal's `revision` (its version when the run was reserved)
    /// and continuation `mode`: members of the host's own, which the seam
    /// contract lets an arm request carry.
    WithRevision,
}

/// openwop's code for one of ours: what a host that uses openwop's
/// generic vocabulary (`validation_error`, `not_found`, `unauthenticated`,
/// `conflict`, ...)
/// answers with the same status. Codes both vocabularies share, or that
/// openwop has no generic name for, stay as they are.
pub fn openwop_code(code: &'static str) -> &'static str {
    match code {
        "invalid_request"
        | "malformed_json"
        | "bounds_required"
        | "judge_owned_field"
        | "immutable_field"
        | "objective_too_long"
        | "unsupported_continuation"
        | "unsupported_judge"
        | "fixtures_disabled"
        | "unknown_verifier"
        | "unknown_arm" => "validation_error",
        "goal_terminal"
        | "goal_escalated"
        | "goal_paused"
        | "verifier_exists"
        | "judge_not_host"
        | "idempotency_conflict"
        | "runs_not_accepted"
        | "run_conflict" => "conflict",
        "unauthorized" => "unauthenticated",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_reference_host() {
        let choices = Choices::default();
        assert_eq!(choices.create_status, CreateStatus::Created);
        assert_eq!(choices.judge, Check::Verifier);
        assert_eq!(choices.modes, &Mode::SUPPORTED);
        assert_eq!(choices.cost_reading, CostReading::Budget);
    }

    #[test]
    fn openwop_codes_keep_unmapped_ones() {
        assert_eq!(openwop_code("invalid_request"), "validation_error");
        assert_eq!(openwop_code("bounds_required"), "validation_error");
        assert_eq!(openwop_code("goal_escalated"), "conflict");
        assert_eq!(openwop_code("not_found"), "not_found");
        assert_eq!(openwop_code("unauthorized"), "unauthenticated");
        assert_eq!(openwop_code("payload_too_large"), "payload_too_large");
    }
}
