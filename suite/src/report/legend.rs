//! What each skip reason and disposition means to someone who has never
//! seen goalpost, and which PROFILE.md section says how to act on it. Every
//! writer takes its wording from here, so the formats never disagree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::Capability;
use crate::run::outcome::{DispositionKind, SkipReason};

/// The profile document every `section` link points into, relative to the
/// repository root.
pub const PROFILE_DOCUMENT: &str = "PROFILE.md";

/// One skip reason explained: report.json's `legend` values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegendEntry {
    /// One sentence for a stranger: what happened and what to do about it.
    pub meaning: String,
    /// `PROFILE.md#skip-<reason>`.
    pub section: String,
}

/// What a skip reason means, in one sentence.
pub fn meaning(reason: SkipReason) -> &'static str {
    match reason {
        SkipReason::NotAdvertised => {
            "The host's discovery document does not advertise what the scenario needs (agents.goals, a continuation mode, a judge), so it did not run. A requirement that applies to the host but has only such scenarios was not judged on this host's choices, and blocks certification: the gap is the suite's to close, or the host's to advertise."
        }
        SkipReason::SeamAbsent => {
            "The host does not list a conformance seam the scenario drives (conformanceSeams.goals); add the seam as the profile's seam contract describes to have the requirement checked."
        }
        SkipReason::NeedsSecondTenant => {
            "The run had no second tenant's token, so cross-tenant isolation was not checked; run again with --token-b."
        }
        SkipReason::NeedsEndpoints => {
            "The scenario checks a deployment of several replicas and needs two or more endpoints of one deployment, but the run named fewer; give --host once per replica (each a base URL of the same deployment) to have it checked."
        }
        SkipReason::NotConfigured => {
            "The scenario needs a suite option this run was not given (such as --webhook-secret); run again with it."
        }
        SkipReason::OptedOut => {
            "The requirement's profile was not selected for this run (--profile, --strict); it says nothing about the host."
        }
        SkipReason::Filtered => {
            "A harness name filter or --skip left its scenarios out of this run; a filtered run certifies nothing it left out."
        }
    }
}

/// `PROFILE.md#skip-<reason>`.
pub fn reason_section(reason: SkipReason) -> String {
    format!("{PROFILE_DOCUMENT}#skip-{}", reason.as_str())
}

/// What a `not-applicable` reason (the capability token the host does not
/// advertise) means, in one sentence.
pub fn not_applicable_meaning(capability: Capability) -> String {
    format!(
        "The host does not advertise {}, so requirements about it do not apply to this host: they never block certification and never count as passes, and the profile's scope lists it as not offered.",
        capability.describe()
    )
}

/// `PROFILE.md#not-applicable-<family>`.
pub fn not_applicable_section(capability: Capability) -> String {
    format!("{PROFILE_DOCUMENT}#not-applicable-{}", capability.family())
}

/// `PROFILE.md#<id>`: the section of one requirement.
pub fn requirement_section(id: &str) -> String {
    format!("{PROFILE_DOCUMENT}#{id}")
}

/// The legend of the reasons among `reasons`, keyed by keyword: skip
/// reasons, and the capability tokens `not-applicable` requirements name
/// (unknown keywords are left out).
pub fn skip_legend<'a>(
    reasons: impl IntoIterator<Item = &'a str>,
) -> BTreeMap<String, LegendEntry> {
    reasons
        .into_iter()
        .filter_map(|keyword| {
            let entry = if let Some(reason) = SkipReason::parse(keyword) {
                LegendEntry {
                    meaning: meaning(reason).to_string(),
                    section: reason_section(reason),
                }
            } else {
                let capability = Capability::parse(keyword).filter(|c| c.is_feature())?;
                LegendEntry {
                    meaning: not_applicable_meaning(capability),
                    section: not_applicable_section(capability),
                }
            };
            Some((keyword.to_string(), entry))
        })
        .collect()
}

/// The legend entries in the order readers meet them (most actionable
/// first: skip reasons, then what does not apply), rather than
/// alphabetical.
pub fn in_reading_order(legend: &BTreeMap<String, LegendEntry>) -> Vec<(&str, &LegendEntry)> {
    let mut entries: Vec<(&str, &LegendEntry)> =
        legend.iter().map(|(k, v)| (k.as_str(), v)).collect();
    entries.sort_by_key(|(keyword, _)| {
        SkipReason::parse(keyword)
            .and_then(|r| SkipReason::ALL.iter().position(|a| *a == r))
            .unwrap_or(usize::MAX)
    });
    entries
}

/// The dispositions a requirement can end with, each with one sentence, in
/// the order the reports list them. The anchor is `PROFILE.md#dispositions`.
pub const DISPOSITIONS: [(DispositionKind, &str); 7] = [
    (DispositionKind::Pass, "Every check that proves the requirement ran and held."),
    (DispositionKind::Fail, "A check that proves this MUST requirement did not hold: the host broke it."),
    (
        DispositionKind::Advisory,
        "A check that proves this SHOULD requirement did not hold: reported, counted apart, never blocks certification.",
    ),
    (
        DispositionKind::NotReached,
        "Its checks never ran because an earlier check (of another requirement, or a setup step) failed; the message names it.",
    ),
    (DispositionKind::Skip, "Not checked in this run; the reason says why and how to have it checked. A skipped MUST requirement blocks certification."),
    (
        DispositionKind::NotApplicable,
        "It names a feature the host does not advertise (the reason names it), so it does not apply to this host: never blocks certification, never counts as a pass.",
    ),
    (DispositionKind::Error, "The host could not be used (transport failure, timeout, an answer that is not HTTP or JSON)."),
];

/// `PROFILE.md#dispositions`.
pub fn dispositions_section() -> String {
    format!("{PROFILE_DOCUMENT}#dispositions")
}

/// `PROFILE.md#levels`.
pub fn levels_section() -> String {
    format!("{PROFILE_DOCUMENT}#levels")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_a_sentence_and_its_section() {
        for reason in SkipReason::ALL {
            let sentence = meaning(reason);
            assert!(sentence.ends_with('.'), "{reason}: {sentence}");
            assert_eq!(
                reason_section(reason),
                format!("PROFILE.md#skip-{}", reason.as_str())
            );
        }
    }

    #[test]
    fn the_legend_holds_only_the_reasons_present() {
        let legend = skip_legend([
            "seam-absent",
            "filtered",
            "seam-absent",
            "bogus",
            "mode:heartbeat",
            "seam:continue",
        ]);
        assert_eq!(
            legend.keys().map(String::as_str).collect::<Vec<_>>(),
            ["filtered", "mode:heartbeat", "seam-absent"],
            "a run need is never a not-applicable reason"
        );
        assert_eq!(
            legend["mode:heartbeat"].section,
            "PROFILE.md#not-applicable-mode"
        );
        assert!(legend["mode:heartbeat"].meaning.contains("`heartbeat`"));
        assert_eq!(legend["filtered"].section, "PROFILE.md#skip-filtered");
        let ordered: Vec<&str> = in_reading_order(&legend).iter().map(|(k, _)| *k).collect();
        assert_eq!(ordered, ["seam-absent", "filtered", "mode:heartbeat"]);
    }
}
