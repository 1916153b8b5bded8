//! What a requirement applies to: the `capability` tokens of
//! `scenarios/requirements.json` (PROFILE.md "Capabilities").
//!
//! Two kinds, with two different consequences when a host or a run lacks
//! one:
//!
//! - a **feature** (a continuation mode, a judge kind, reported runs, the
//!   egress policy, required bounds, the attention extension) is a choice
//!   the host makes in discovery: a requirement naming one the host does not
//!   advertise does not apply to it (`not-applicable`, never blocking);
//! - a **run need** (a seam, a second tenant, several endpoints) is what the
//!   suite needs to judge the requirement: a run without it skips the
//!   requirement, and the skip blocks certification as every skip does.

use std::fmt;

/// The continuation modes `agents.goals.continuation` may list.
pub const MODES: [&str; 4] = ["manual", "schedule", "heartbeat", "commitment"];
/// The judges `agents.goals.judge` may name.
pub const JUDGES: [&str; 2] = ["verifier", "host"];
/// The flags of `conformanceSeams.goals` a requirement may need.
pub const SEAMS: [&str; 5] = [
    "continue",
    "events",
    "fixtures",
    "webhooks",
    "scriptedJudge",
];

/// The host surfaces for events `host.events` may advertise: the goal's
/// event list (`goalList: true`) and the tenant's event stream (`stream`).
pub const HOST_EVENTS: [&str; 2] = ["goalList", "stream"];

/// One token of a requirement's `capability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// `mode:M`: goals of continuation mode M (one of [`MODES`]).
    Mode(&'static str),
    /// `judge:J`: the rule is about that judge kind (one of [`JUDGES`]).
    Judge(&'static str),
    /// `reported-runs`: `host.reportedRuns` takes runs for `manual` goals.
    ReportedRuns,
    /// `egress-policy`: discovery's `webhookEgress.internal` is `"denied"`.
    EgressPolicy,
    /// `requires-bounds`: `agents.goals.requiresBounds` is true or absent.
    RequiresBounds,
    /// `attention`: the attention extension profile is advertised.
    Attention,
    /// `host-events:E`: `host.events` advertises the surface E (one of
    /// [`HOST_EVENTS`]), where a client reads events without any seam.
    HostEvents(&'static str),
    /// `seam:S`: the `conformanceSeams.goals` flag S (one of [`SEAMS`]).
    Seam(&'static str),
    /// `tenants:2`: a second tenant's credential (`--token-b`).
    SecondTenant,
    /// `endpoints:2`: two or more endpoints of one deployment.
    Endpoints,
}

impl Capability {
    /// The token as `requirements.json` and report.json write it.
    pub fn token(self) -> String {
        match self {
            Capability::Mode(mode) => format!("mode:{mode}"),
            Capability::Judge(judge) => format!("judge:{judge}"),
            Capability::ReportedRuns => "reported-runs".to_string(),
            Capability::EgressPolicy => "egress-policy".to_string(),
            Capability::RequiresBounds => "requires-bounds".to_string(),
            Capability::Attention => "attention".to_string(),
            Capability::HostEvents(surface) => format!("host-events:{surface}"),
            Capability::Seam(seam) => format!("seam:{seam}"),
            Capability::SecondTenant => "tenants:2".to_string(),
            Capability::Endpoints => "endpoints:2".to_string(),
        }
    }

    /// The capability a token names (`token`'s inverse).
    pub fn parse(token: &str) -> Option<Capability> {
        let known = |list: &[&'static str], name: &str| list.iter().copied().find(|k| *k == name);
        match token.split_once(':') {
            Some(("mode", mode)) => known(&MODES, mode).map(Capability::Mode),
            Some(("judge", judge)) => known(&JUDGES, judge).map(Capability::Judge),
            Some(("seam", seam)) => known(&SEAMS, seam).map(Capability::Seam),
            Some(("host-events", surface)) => {
                known(&HOST_EVENTS, surface).map(Capability::HostEvents)
            }
            Some(("tenants", "2")) => Some(Capability::SecondTenant),
            Some(("endpoints", "2")) => Some(Capability::Endpoints),
            Some(_) => None,
            None => match token {
                "reported-runs" => Some(Capability::ReportedRuns),
                "egress-policy" => Some(Capability::EgressPolicy),
                "requires-bounds" => Some(Capability::RequiresBounds),
                "attention" => Some(Capability::Attention),
                _ => None,
            },
        }
    }

    /// A feature the host chooses to advertise (its absence makes a
    /// requirement `not-applicable`), rather than something the run needs to
    /// judge it (whose absence is a blocking skip).
    pub fn is_feature(self) -> bool {
        !matches!(
            self,
            Capability::Seam(_) | Capability::SecondTenant | Capability::Endpoints
        )
    }

    /// The family a feature belongs to: the last part of its
    /// `PROFILE.md#not-applicable-<family>` anchor.
    pub fn family(self) -> &'static str {
        match self {
            Capability::Mode(_) => "mode",
            Capability::Judge(_) => "judge",
            Capability::ReportedRuns => "reported-runs",
            Capability::EgressPolicy => "egress-policy",
            Capability::RequiresBounds => "requires-bounds",
            Capability::Attention => "attention",
            Capability::HostEvents(_) => "host-events",
            Capability::Seam(_) => "seam",
            Capability::SecondTenant => "tenants",
            Capability::Endpoints => "endpoints",
        }
    }

    /// A few words for a scope line: `heartbeat`, `reported runs`.
    pub fn short(self) -> String {
        match self {
            Capability::Mode(mode) => mode.to_string(),
            Capability::Judge(judge) => format!("judge {judge}"),
            Capability::ReportedRuns => "reported runs".to_string(),
            Capability::EgressPolicy => "egress policy".to_string(),
            Capability::RequiresBounds => "bounds required".to_string(),
            Capability::Attention => "attention".to_string(),
            Capability::HostEvents("goalList") => "host event list".to_string(),
            Capability::HostEvents(_) => "host event stream".to_string(),
            Capability::Seam(seam) => format!("{seam} seam"),
            Capability::SecondTenant => "two tenants".to_string(),
            Capability::Endpoints => "2+ endpoints".to_string(),
        }
    }

    /// What it is, in a sentence's words, with where discovery (or the run)
    /// says it: "the `schedule` continuation mode (`mode:schedule`)".
    pub fn describe(self) -> String {
        let what = match self {
            Capability::Mode(mode) => format!("the `{mode}` continuation mode"),
            Capability::Judge(judge) => format!("the judge `{judge}`"),
            Capability::ReportedRuns => "reported runs for `manual` goals".to_string(),
            Capability::EgressPolicy => "an egress policy that denies internal targets".to_string(),
            Capability::RequiresBounds => "required bounds".to_string(),
            Capability::Attention => "the attention extension".to_string(),
            Capability::HostEvents("goalList") => {
                "a goal's event list on the host's own API".to_string()
            }
            Capability::HostEvents(_) => {
                "the tenant's event stream on the host's own API".to_string()
            }
            Capability::Seam(seam) => format!("the `{seam}` seam"),
            Capability::SecondTenant => "a second tenant".to_string(),
            Capability::Endpoints => "two or more endpoints of one deployment".to_string(),
        };
        format!("{what} (`{}`)", self.token())
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.token())
    }
}

// By hand: the derive would borrow the `&'static str`s from the input.
impl<'de> serde::Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let token = String::deserialize(deserializer)?;
        Capability::parse(&token)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown capability token `{token}`")))
    }
}

impl serde::Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.token())
    }
}

/// The line every requirement's PROFILE.md section carries, stating its
/// capability in words a host author reads; `goalpost lint` holds each
/// section to it (`capability-unstated`).
pub fn applies_to(capability: &[Capability]) -> String {
    let features: Vec<String> = capability
        .iter()
        .filter(|c| c.is_feature())
        .map(|c| c.describe())
        .collect();
    let needs: Vec<String> = capability
        .iter()
        .filter(|c| !c.is_feature())
        .map(|c| c.describe())
        .collect();
    let mut line = if features.is_empty() {
        "**Applies to:** every host that advertises `agents.goals`.".to_string()
    } else {
        format!(
            "**Applies to:** hosts that advertise {}.",
            join_and(&features)
        )
    };
    if !needs.is_empty() {
        line.push_str(&format!(" **Judged with:** {}.", join_and(&needs)));
    }
    line
}

/// `a`, `a and b`, `a, b and c`.
pub fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_round_trips_and_unknown_ones_are_refused() {
        let mut all: Vec<Capability> = Vec::new();
        all.extend(MODES.iter().map(|m| Capability::Mode(m)));
        all.extend(JUDGES.iter().map(|j| Capability::Judge(j)));
        all.extend(SEAMS.iter().map(|s| Capability::Seam(s)));
        all.extend([
            Capability::ReportedRuns,
            Capability::EgressPolicy,
            Capability::RequiresBounds,
            Capability::Attention,
            Capability::SecondTenant,
            Capability::Endpoints,
        ]);
        for capability in all {
            assert_eq!(Capability::parse(&capability.token()), Some(capability));
        }
        for bad in [
            "mode:hourly",
            "judge:person",
            "seam:magic",
            "tenants:3",
            "endpoints:1",
            "reported_runs",
            "",
            "mode:",
        ] {
            assert_eq!(Capability::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn features_are_the_host_choices_and_needs_the_run_ones() {
        assert!(Capability::Mode("schedule").is_feature());
        assert!(Capability::Judge("verifier").is_feature());
        assert!(Capability::ReportedRuns.is_feature());
        assert!(Capability::EgressPolicy.is_feature());
        assert!(Capability::RequiresBounds.is_feature());
        assert!(Capability::Attention.is_feature());
        assert!(!Capability::Seam("continue").is_feature());
        assert!(!Capability::SecondTenant.is_feature());
        assert!(!Capability::Endpoints.is_feature());
    }

    #[test]
    fn the_applies_to_line_names_features_then_run_needs() {
        assert_eq!(
            applies_to(&[]),
            "**Applies to:** every host that advertises `agents.goals`."
        );
        assert_eq!(
            applies_to(&[Capability::Mode("schedule"), Capability::Seam("webhooks")]),
            "**Applies to:** hosts that advertise the `schedule` continuation mode (`mode:schedule`). \
             **Judged with:** the `webhooks` seam (`seam:webhooks`)."
        );
        assert_eq!(
            applies_to(&[Capability::SecondTenant]),
            "**Applies to:** every host that advertises `agents.goals`. \
             **Judged with:** a second tenant (`tenants:2`)."
        );
        assert_eq!(
            join_and(&["a".into(), "b".into(), "c".into()]),
            "a, b and c"
        );
    }
}
