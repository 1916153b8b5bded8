//! How a goal's attention (`domain::attention`) is laid out inside the
//! goal's JSON record, beside its notes, and the checked way back. Refs
//! are re-parsed with fixtures on, as the goal's own are.

use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::domain::attention::{
    AttentionMode, AttentionState, Authority, Binding, BindingStatus, Confirmation, Evidence,
    Policy, Vote,
};
use crate::domain::{ArmRef, BindingId, EvidenceId, Timestamp};

fn corrupt(what: impl Into<String>) -> StoreError {
    StoreError::Corrupt(what.into())
}

fn binding_id(text: &str) -> Result<BindingId, StoreError> {
    BindingId::parse(text).ok_or_else(|| corrupt(format!("binding id {text:?}")))
}

fn mode(text: &str) -> Result<AttentionMode, StoreError> {
    AttentionMode::parse(text).ok_or_else(|| corrupt(format!("attention mode {text:?}")))
}

fn at(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_ms(ms).ok_or_else(|| corrupt(format!("timestamp {ms}")))
}

fn authority(text: &str) -> Result<Authority, StoreError> {
    Authority::parse(text).ok_or_else(|| corrupt(format!("authority {text:?}")))
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct AttentionRecord {
    policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threshold: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    supervisor: Option<String>,
    revision: u64,
    claim: String,
    #[serde(default)]
    bindings: Vec<BindingRecord>,
    #[serde(default)]
    evidence: Vec<EvidenceRecord>,
    #[serde(default)]
    votes: Vec<VoteRecord>,
    #[serde(default)]
    confirmations: Vec<ConfirmationRecord>,
}

#[derive(Debug, Serialize, Deserialize)]
struct BindingRecord {
    id: String,
    mode: String,
    arm: String,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    until_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    superseded_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    supersedes: Option<String>,
    created_ms: i64,
    updated_ms: i64,
    runs: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_run_ms: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct EvidenceRecord {
    id: String,
    binding: String,
    mode: String,
    kind: String,
    reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    blocking: bool,
    resolved: bool,
    revision: u64,
    at_ms: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct VoteRecord {
    binding: String,
    mode: String,
    approve: bool,
    revision: u64,
    at_ms: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct ConfirmationRecord {
    authority: String,
    revision: u64,
    at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    evidence: Option<(String, String)>,
}

impl AttentionRecord {
    pub(super) fn from_state(state: &AttentionState) -> AttentionRecord {
        let (threshold, supervisor) = match &state.policy {
            Policy::Quorum { threshold } => (Some(*threshold), None),
            Policy::Supervisor { binding } => (None, Some(binding.as_str().to_string())),
            _ => (None, None),
        };
        AttentionRecord {
            policy: state.policy.kind().to_string(),
            threshold,
            supervisor,
            revision: state.revision,
            claim: state.claim.clone(),
            bindings: state
                .bindings
                .iter()
                .map(|binding| {
                    let (until_ms, superseded_by) = match &binding.status {
                        BindingStatus::Paused { until } => (until.map(Timestamp::unix_ms), None),
                        BindingStatus::Superseded { by } => (None, Some(by.as_str().to_string())),
                        _ => (None, None),
                    };
                    BindingRecord {
                        id: binding.id.as_str().to_string(),
                        mode: binding.mode.as_str().to_string(),
                        arm: binding.arm.as_str().to_string(),
                        status: binding.status.as_str().to_string(),
                        until_ms,
                        superseded_by,
                        supersedes: binding
                            .supersedes
                            .as_ref()
                            .map(|id| id.as_str().to_string()),
                        created_ms: binding.created_at.unix_ms(),
                        updated_ms: binding.updated_at.unix_ms(),
                        runs: binding.runs,
                        last_run_ms: binding.last_run_at.map(Timestamp::unix_ms),
                    }
                })
                .collect(),
            evidence: state
                .evidence
                .iter()
                .map(|item| EvidenceRecord {
                    id: item.id.as_str().to_string(),
                    binding: item.binding.as_str().to_string(),
                    mode: item.mode.as_str().to_string(),
                    kind: item.kind.clone(),
                    reference: item.reference.clone(),
                    label: item.label.clone(),
                    summary: item.summary.clone(),
                    blocking: item.blocking,
                    resolved: item.resolved,
                    revision: item.revision,
                    at_ms: item.at.unix_ms(),
                })
                .collect(),
            votes: state
                .votes
                .iter()
                .map(|vote| VoteRecord {
                    binding: vote.binding.as_str().to_string(),
                    mode: vote.mode.as_str().to_string(),
                    approve: vote.approve,
                    revision: vote.revision,
                    at_ms: vote.at.unix_ms(),
                })
                .collect(),
            confirmations: state
                .confirmations
                .iter()
                .map(|confirmation| ConfirmationRecord {
                    authority: confirmation.authority.as_str().to_string(),
                    revision: confirmation.revision,
                    at_ms: confirmation.at.unix_ms(),
                    evidence: confirmation.evidence.clone(),
                })
                .collect(),
        }
    }

    pub(super) fn into_state(self) -> Result<AttentionState, StoreError> {
        let policy = match self.policy.as_str() {
            "verifier" => Policy::Verifier,
            "host-confirmed" => Policy::HostConfirmed,
            "principal-confirmed" => Policy::PrincipalConfirmed,
            "quorum" => Policy::Quorum {
                threshold: self.threshold.ok_or_else(|| corrupt("quorum threshold"))?,
            },
            "supervisor" => Policy::Supervisor {
                binding: binding_id(
                    self.supervisor
                        .as_deref()
                        .ok_or_else(|| corrupt("supervisor"))?,
                )?,
            },
            other => return Err(corrupt(format!("policy {other:?}"))),
        };
        let bindings = self
            .bindings
            .into_iter()
            .map(|record| -> Result<Binding, StoreError> {
                let status = match record.status.as_str() {
                    "active" => BindingStatus::Active,
                    "paused" => BindingStatus::Paused {
                        until: record.until_ms.map(at).transpose()?,
                    },
                    "superseded" => BindingStatus::Superseded {
                        by: binding_id(
                            record
                                .superseded_by
                                .as_deref()
                                .ok_or_else(|| corrupt("superseded_by"))?,
                        )?,
                    },
                    "stopped" => BindingStatus::Stopped,
                    other => return Err(corrupt(format!("binding status {other:?}"))),
                };
                Ok(Binding {
                    id: binding_id(&record.id)?,
                    mode: mode(&record.mode)?,
                    arm: ArmRef::parse(&record.arm, true)
                        .map_err(|error| corrupt(error.to_string()))?,
                    status,
                    supersedes: record.supersedes.as_deref().map(binding_id).transpose()?,
                    created_at: at(record.created_ms)?,
                    updated_at: at(record.updated_ms)?,
                    runs: record.runs,
                    last_run_at: record.last_run_ms.map(at).transpose()?,
                })
            })
            .collect::<Result<_, _>>()?;
        let evidence = self
            .evidence
            .into_iter()
            .map(|record| -> Result<Evidence, StoreError> {
                Ok(Evidence {
                    id: EvidenceId::parse(&record.id)
                        .ok_or_else(|| corrupt(format!("evidence id {:?}", record.id)))?,
                    binding: binding_id(&record.binding)?,
                    mode: mode(&record.mode)?,
                    kind: record.kind,
                    reference: record.reference,
                    label: record.label,
                    summary: record.summary,
                    blocking: record.blocking,
                    resolved: record.resolved,
                    revision: record.revision,
                    at: at(record.at_ms)?,
                })
            })
            .collect::<Result<_, _>>()?;
        let votes = self
            .votes
            .into_iter()
            .map(|record| -> Result<Vote, StoreError> {
                Ok(Vote {
                    binding: binding_id(&record.binding)?,
                    mode: mode(&record.mode)?,
                    approve: record.approve,
                    revision: record.revision,
                    at: at(record.at_ms)?,
                })
            })
            .collect::<Result<_, _>>()?;
        let confirmations = self
            .confirmations
            .into_iter()
            .map(|record| -> Result<Confirmation, StoreError> {
                Ok(Confirmation {
                    authority: authority(&record.authority)?,
                    revision: record.revision,
                    at: at(record.at_ms)?,
                    evidence: record.evidence,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(AttentionState {
            policy,
            revision: self.revision,
            claim: self.claim,
            bindings,
            evidence,
            votes,
            confirmations,
        })
    }
}
