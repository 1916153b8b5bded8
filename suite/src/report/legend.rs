//! What each skip reason and disposition means to someone who has never
//! seen goalpost, and which PROFILE.md section says how to act on it. Every
//! writer takes its wording from here, so the formats never disagree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
            "The host's discovery document does not advertise what the scenario needs (agents.goals, a continuation mode or a judge), so nothing was checked; advertise it to have the requirement checked."
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

/// `PROFILE.md#<id>`: the section of one requirement.
pub fn requirement_section(id: &str) -> String {
    format!("{PROFILE_DOCUMENT}#{id}")
}

/// The legend of the skip reasons among `reasons` (keywords; unknown ones
/// are left out), keyed by keyword.
pub fn skip_legend<'a>(
    reasons: impl IntoIterator<Item = &'a str>,
) -> BTreeMap<String, LegendEntry> {
    reasons
        .into_iter()
        .filter_map(SkipReason::parse)
        .map(|reason| {
            (
                reason.as_str().to_string(),
                LegendEntry {
                    meaning: meaning(reason).to_string(),
                    section: reason_section(reason),
                },
            )
        })
        .collect()
}

/// The legend entries in the order readers meet them (most actionable
/// first), rather than alphabetical.
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
pub const DISPOSITIONS: [(DispositionKind, &str); 6] = [
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
    (DispositionKind::Skip, "Not checked in this run; the reason says why and how to have it checked."),
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
        let legend = skip_legend(["seam-absent", "filtered", "seam-absent", "bogus"]);
        assert_eq!(
            legend.keys().map(String::as_str).collect::<Vec<_>>(),
            ["filtered", "seam-absent"]
        );
        assert_eq!(legend["filtered"].section, "PROFILE.md#skip-filtered");
        let ordered: Vec<&str> = in_reading_order(&legend).iter().map(|(k, _)| *k).collect();
        assert_eq!(ordered, ["seam-absent", "filtered"]);
    }
}
