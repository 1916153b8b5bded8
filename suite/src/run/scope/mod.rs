//! Scoped certification (PROFILE.md "Capabilities" and "Minimum scope"):
//! what a host offers and a run has, which requirements apply to it, the
//! least each profile needs to be attempted at all, and the scope a
//! profile's verdict covers.
//!
//! Pure: the ledger decides dispositions and verdicts with it after a run,
//! and `goalpost doctor` predicts them with it before one.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::capability::{join_and, MODES};
use crate::model::{Capability, Requirement};
use crate::run::discovery::{Capabilities, ATTENTION_MEMBER};

/// The document every section link points into.
const PROFILE_DOCUMENT: &str = "PROFILE.md";

/// The seams the `attention` profile is judged through: its bindings'
/// arms are the suite's webhook mock, and one binding runs at a time
/// through the binding `continue` route.
const ATTENTION_SEAMS: [&str; 2] = ["continue", "webhooks"];

/// What a run has to judge a host by: what the host advertises, and what
/// the operator gave the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub capabilities: Capabilities,
    /// The attention extension is advertised ([`attention_advertised`]).
    pub attention: bool,
    /// The run has a second tenant's token.
    pub second_tenant: bool,
    /// Endpoints of one deployment the run names (`--host` once each).
    pub endpoints: usize,
}

/// Whether a discovery document advertises the attention extension
/// profile: an object at `extensions.goalpost.attention`
/// ([`ATTENTION_MEMBER`]).
pub fn attention_advertised(document: Option<&Value>) -> bool {
    document
        .and_then(|doc| doc.pointer(ATTENTION_MEMBER))
        .is_some_and(Value::is_object)
}

impl Offer {
    /// Whether the host advertises `capability` (a feature) or the run has
    /// it (a run need).
    pub fn has(&self, capability: Capability) -> bool {
        let caps = &self.capabilities;
        match capability {
            Capability::Mode(mode) => caps.continuation.contains(mode),
            Capability::Judge(judge) => caps.judge.as_deref() == Some(judge),
            Capability::ReportedRuns => caps.reported_runs.contains("manual"),
            Capability::EgressPolicy => caps.egress_denies_internal,
            Capability::RequiresBounds => caps.requires_bounds,
            Capability::Attention => self.attention,
            Capability::HostEvents(surface) => caps.host_events.contains(surface),
            Capability::Seam(seam) => caps.seams.contains(seam),
            Capability::SecondTenant => self.second_tenant,
            Capability::Endpoints => self.endpoints >= 2,
        }
    }

    /// The first feature `requirement` names that the host does not
    /// advertise: it does not apply to this host (`not-applicable`). `None`
    /// when it applies, and for every requirement when the host advertises
    /// no `agents.goals` at all (then nothing is decided for it: every
    /// profile is unattempted).
    pub fn missing_feature(&self, requirement: &Requirement) -> Option<Capability> {
        if !self.capabilities.goals {
            return None;
        }
        requirement.features().find(|feature| !self.has(*feature))
    }

    /// What keeps `profile` from being attempted on this host with this
    /// run: its minimum scope, unmet part by part (empty: met).
    pub fn unmet(&self, profile: &str) -> Vec<Unmet> {
        let caps = &self.capabilities;
        if !caps.goals {
            return vec![Unmet::Goals];
        }
        let mut unmet = Vec::new();
        let seams: &[&'static str] = match profile {
            "behavior" => &["continue", "events"],
            "observed" => &["webhooks"],
            _ => &[],
        };
        if matches!(profile, "behavior" | "observed") && caps.continuation.is_empty() {
            unmet.push(Unmet::Mode);
        }
        for seam in seams {
            if !self.has(Capability::Seam(seam)) {
                unmet.push(Unmet::Seam(seam));
            }
        }
        if matches!(profile, "behavior" | "observed") && !self.scriptable_judge(profile) {
            unmet.push(Unmet::ScriptableJudge(if profile == "behavior" {
                JudgeScript::Fixtures
            } else {
                JudgeScript::Webhooks
            }));
        }
        if profile == "hardening" && !self.second_tenant {
            unmet.push(Unmet::SecondTenant);
        }
        if profile == "cluster" && self.endpoints < 2 {
            unmet.push(Unmet::Endpoints);
        }
        if profile == "attention" {
            if !self.attention {
                unmet.push(Unmet::Attention);
            }
            for seam in ATTENTION_SEAMS {
                if !self.has(Capability::Seam(seam)) {
                    unmet.push(Unmet::Seam(seam));
                }
            }
        }
        unmet
    }

    /// A judge the suite can script for `profile`: the verifier judge with
    /// the suite's verdicts (fixtures for `behavior`, its own webhook
    /// verifier for `observed`), or the host's own judge with the
    /// `scriptedJudge` seam.
    fn scriptable_judge(&self, profile: &str) -> bool {
        let verifier_script = if profile == "behavior" {
            "fixtures"
        } else {
            "webhooks"
        };
        (self.has(Capability::Judge("verifier")) && self.has(Capability::Seam(verifier_script)))
            || (self.has(Capability::Judge("host")) && self.has(Capability::Seam("scriptedJudge")))
    }

    /// The scope a verdict of `profile` covers: the host's judge and modes,
    /// and the features the profile's requirements name, offered or not.
    pub fn scope<'a>(
        &self,
        profile: &str,
        requirements: impl IntoIterator<Item = &'a Requirement>,
    ) -> Scope {
        let caps = &self.capabilities;
        if !caps.goals {
            return Scope::default();
        }
        let named: BTreeSet<Capability> = requirements
            .into_iter()
            .filter(|requirement| requirement.profile == profile)
            .flat_map(Requirement::features)
            .collect();
        let offered = named
            .iter()
            .filter(|c| !matches!(c, Capability::Mode(_) | Capability::Judge(_)))
            .filter(|c| self.has(**c))
            .map(|c| c.token())
            .collect();
        let not_offered = named
            .iter()
            .filter(|c| !self.has(**c))
            .map(|c| c.token())
            .collect();
        Scope {
            judge: caps.judge.clone(),
            modes: MODES
                .iter()
                .filter(|mode| caps.continuation.contains(**mode))
                .map(|mode| mode.to_string())
                .collect(),
            offered,
            not_offered,
        }
    }
}

/// What a profile's certification covers (report.json `profiles.P.scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Scope {
    /// The judge the host advertises (`agents.goals.judge`).
    pub judge: Option<String>,
    /// The continuation modes it advertises, in the profile's order.
    pub modes: Vec<String>,
    /// Other features the profile's requirements name that the host
    /// advertises (`reported-runs`, `egress-policy`, ...), as tokens.
    pub offered: Vec<String>,
    /// Features the profile's requirements name that the host does not
    /// advertise, as tokens: the requirements naming them ended
    /// `not-applicable`, so the certification says nothing of them.
    pub not_offered: Vec<String>,
}

impl Scope {
    /// What the certification covers, as tokens (`judge:J`, `mode:M` and
    /// the offered features): a later scope without one of them covers
    /// less.
    pub fn covered(&self) -> BTreeSet<String> {
        self.judge
            .iter()
            .map(|judge| format!("judge:{judge}"))
            .chain(self.modes.iter().map(|mode| format!("mode:{mode}")))
            .chain(self.offered.iter().cloned())
            .collect()
    }

    /// Whether nothing is known of it (no `agents.goals`, or an older
    /// report without scopes).
    pub fn is_empty(&self) -> bool {
        *self == Scope::default()
    }
}

/// One line: `judge verifier; modes manual, schedule; reported runs; not
/// offered: heartbeat, egress policy`.
impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = |token: &String| {
            Capability::parse(token).map_or_else(|| token.clone(), Capability::short)
        };
        let mut parts = vec![match &self.judge {
            Some(judge) => format!("judge {judge}"),
            None => "no judge".to_string(),
        }];
        parts.push(match self.modes.as_slice() {
            [] => "no continuation mode".to_string(),
            [one] => format!("mode {one}"),
            modes => format!("modes {}", modes.join(", ")),
        });
        parts.extend(self.offered.iter().map(short));
        if !self.not_offered.is_empty() {
            let missing: Vec<String> = self.not_offered.iter().map(short).collect();
            parts.push(format!("not offered: {}", missing.join(", ")));
        }
        f.write_str(&parts.join("; "))
    }
}

/// How a verifier judge is scripted in the profile whose minimum names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum JudgeScript {
    /// `behavior`: verifier fixtures.
    Fixtures,
    /// `observed`: the suite's own webhook verifier.
    Webhooks,
}

/// One part of a profile's minimum scope that a host or a run lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unmet {
    /// No `agents.goals` in discovery.
    Goals,
    /// No continuation mode.
    Mode,
    /// The attention extension is not advertised.
    Attention,
    /// A seam the profile is judged through.
    Seam(&'static str),
    /// No judge the suite can script.
    ScriptableJudge(JudgeScript),
    /// No second tenant's token: a run option.
    SecondTenant,
    /// One endpoint: a run option.
    Endpoints,
}

impl Unmet {
    /// What is needed, in words: `needs 2+ endpoints of one deployment
    /// (--host once per replica)`.
    pub fn describe(self) -> String {
        match self {
            Unmet::Goals => "needs `agents.goals` in the discovery document".to_string(),
            Unmet::Mode => {
                "needs at least one continuation mode in `agents.goals.continuation`".to_string()
            }
            Unmet::Attention => {
                "needs the attention extension advertised (`extensions.goalpost.attention` in the discovery document)".to_string()
            }
            Unmet::Seam(seam) => {
                format!("needs the `{seam}` seam (`conformanceSeams.goals.{seam}`)")
            }
            Unmet::ScriptableJudge(JudgeScript::Fixtures) => {
                "needs a judge the suite can script: `judge: \"verifier\"` with the `fixtures` seam, or `judge: \"host\"` with the `scriptedJudge` seam".to_string()
            }
            Unmet::ScriptableJudge(JudgeScript::Webhooks) => {
                "needs a judge the suite can script: `judge: \"verifier\"` (the suite serves the verifier), or `judge: \"host\"` with the `scriptedJudge` seam".to_string()
            }
            Unmet::SecondTenant => "needs a second tenant's token (--token-b)".to_string(),
            Unmet::Endpoints => {
                "needs 2+ endpoints of one deployment (--host once per replica)".to_string()
            }
        }
    }

    /// Something the operator gives the run, not something the host adds.
    pub fn is_run_option(self) -> bool {
        matches!(self, Unmet::SecondTenant | Unmet::Endpoints)
    }

    /// The PROFILE.md section that says how to meet it.
    pub fn section(self) -> String {
        let anchor = match self {
            Unmet::Goals => "core.discovery.shape".to_string(),
            Unmet::Mode => "core.discovery.shape".to_string(),
            Unmet::Attention => "profile-attention".to_string(),
            Unmet::Seam(seam) => format!("seam-{seam}"),
            Unmet::ScriptableJudge(_) => "minimum-scope".to_string(),
            Unmet::SecondTenant => "skip-needs-second-tenant".to_string(),
            Unmet::Endpoints => "skip-needs-endpoints".to_string(),
        };
        format!("{PROFILE_DOCUMENT}#{anchor}")
    }
}

/// Several unmet parts in one sentence: `needs the `continue` seam (...)
/// and needs the `events` seam (...)`, shortened to one "needs".
pub fn describe_unmet(unmet: &[Unmet]) -> String {
    let parts: Vec<String> = unmet
        .iter()
        .map(|u| {
            let text = u.describe();
            text.strip_prefix("needs ")
                .map(str::to_string)
                .unwrap_or(text)
        })
        .collect();
    format!("needs {}", join_and(&parts))
}

/// A profile's verdict (report.json `profiles.P.status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every applicable MUST requirement passed and the minimum scope ran.
    Certified,
    /// Attempted, and something blocks: a MUST requirement that failed,
    /// errored, was not reached or skipped, or none that applies.
    #[default]
    NotCertified,
    /// The minimum scope is not met: the run could not attempt it, and
    /// nothing it ran failed.
    NotAttempted,
    /// The run did not select it.
    OptedOut,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Certified => "certified",
            Status::NotCertified => "not certified",
            Status::NotAttempted => "not attempted",
            Status::OptedOut => "opted out",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests;
