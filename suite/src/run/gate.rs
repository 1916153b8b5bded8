//! Deciding, before a scenario runs, whether it can run against this host
//! with these credentials and this selection.

use std::collections::BTreeSet;

use crate::model::Scenario;
use crate::run::discovery::{Capabilities, PREFERRED_MODE};
use crate::run::outcome::SkipReason;
use crate::run::scripted_judge;

/// The option `needs.options` names for `--webhook-secret`.
pub const WEBHOOK_SECRET: &str = "webhook-secret";
/// The option `needs.options` names for `--principal-token`.
pub const PRINCIPAL_TOKEN: &str = "principal-token";
/// The option `needs.options` names for `--host-authority-token`.
pub const HOST_AUTHORITY_TOKEN: &str = "host-authority-token";

/// Every suite option `needs.options` can name, as given: what a run with
/// all of them would be gated by.
pub fn every_option() -> BTreeSet<String> {
    [WEBHOOK_SECRET, PRINCIPAL_TOKEN, HOST_AUTHORITY_TOKEN]
        .map(str::to_string)
        .into()
}

/// `None` when the scenario can run; otherwise why it is skipped. Reasons
/// are checked in a fixed order so the same host always gets the same one:
/// what the host advertises first, then what the run was given.
pub fn gate(
    scenario: &Scenario,
    capabilities: &Capabilities,
    selected: &BTreeSet<String>,
    second_tenant: bool,
    options: &BTreeSet<String>,
    endpoints: usize,
) -> Option<SkipReason> {
    let needs = &scenario.needs;
    if !selected.contains(&scenario.profile) {
        Some(SkipReason::OptedOut)
    } else if !capabilities.goals
        || needs
            .continuation
            .iter()
            .any(|mode| !capabilities.continuation.contains(mode))
        || needs
            .requires_bounds
            .is_some_and(|wanted| wanted != capabilities.requires_bounds)
        || needs
            .judge
            .as_deref()
            .is_some_and(|judge| !judge_offered(judge, capabilities.judge.as_deref()))
        || (needs.egress_policy && !capabilities.egress_denies_internal)
        || (needs.reported_runs && !capabilities.reported_runs.contains(PREFERRED_MODE))
        || (needs.attention && !capabilities.attention)
        || needs
            .host_events
            .as_ref()
            .is_some_and(|offer| !capabilities.host_events.contains(offer))
    {
        Some(SkipReason::NotAdvertised)
    } else if needs
        .seams
        .iter()
        .any(|seam| !capabilities.seams.contains(seam))
        || (scripted_judge::applies(scenario, capabilities.judge.as_deref())
            && !capabilities.seams.contains(scripted_judge::SEAM))
    {
        Some(SkipReason::SeamAbsent)
    } else if needs.tenants >= 2 && !second_tenant {
        Some(SkipReason::NeedsSecondTenant)
    } else if usize::from(needs.endpoints) > endpoints {
        Some(SkipReason::NeedsEndpoints)
    } else if needs.options.iter().any(|option| !options.contains(option)) {
        Some(SkipReason::NotConfigured)
    } else {
        None
    }
}

/// Whether a host advertising `advertised` can run a scenario needing
/// `judge`: its own kind, or either kind for a scenario that scripts its
/// verdicts (through refs or through the seam `scriptedJudge`).
fn judge_offered(judge: &str, advertised: Option<&str>) -> bool {
    match judge {
        scripted_judge::SCRIPTED => {
            matches!(
                advertised,
                Some(scripted_judge::VERIFIER | scripted_judge::HOST)
            )
        }
        _ => advertised == Some(judge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Needs;
    use std::path::PathBuf;

    fn scenario(profile: &str, needs: Needs) -> Scenario {
        Scenario {
            name: format!("{profile}::x"),
            profile: profile.to_string(),
            path: PathBuf::from("x.json"),
            title: "x".to_string(),
            requirements: Vec::new(),
            should: Default::default(),
            needs,
            checks: 1,
            steps: Vec::new(),
            mock: None,
            observations: Vec::new(),
            generated: Default::default(),
        }
    }

    fn full_host() -> Capabilities {
        Capabilities {
            goals: true,
            continuation: ["manual", "schedule"].map(String::from).into(),
            continuation_order: ["manual", "schedule"].map(String::from).into(),
            seams: ["continue", "events", "fixtures"].map(String::from).into(),
            base_path: "/g".to_string(),
            judge: Some("verifier".to_string()),
            requires_bounds: true,
            egress_denies_internal: false,
            reported_runs: ["manual".to_string()].into(),
            attention: true,
            host_events: BTreeSet::new(),
            events_stream: None,
        }
    }

    fn needs(seams: &[&str], modes: &[&str], tenants: u8) -> Needs {
        Needs {
            seams: seams.iter().map(|s| s.to_string()).collect(),
            continuation: modes.iter().map(|s| s.to_string()).collect(),
            tenants,
            requires_bounds: None,
            judge: None,
            options: Vec::new(),
            egress_policy: false,
            reported_runs: false,
            attention: false,
            host_events: None,
            endpoints: 1,
        }
    }

    /// Every option the suite knows was given.
    fn given() -> BTreeSet<String> {
        [WEBHOOK_SECRET.to_string()].into()
    }

    fn selected(profiles: &[&str]) -> BTreeSet<String> {
        profiles.iter().map(|p| p.to_string()).collect()
    }

    /// The gate for a run that selects the scenario's own profile and has
    /// everything the run can be given: a second tenant, every option, one
    /// endpoint. What is left to decide is the host's side.
    fn gated(scenario: &Scenario, host: &Capabilities) -> Option<SkipReason> {
        gate(
            scenario,
            host,
            &selected(&[&scenario.profile]),
            true,
            &given(),
            1,
        )
    }

    #[test]
    fn attention_runs_only_where_the_extension_is_advertised() {
        let mut wants = needs(&["continue"], &[], 1);
        wants.attention = true;
        let s = scenario("attention", wants);
        assert_eq!(gated(&s, &full_host()), None);
        let mut silent = full_host();
        silent.attention = false;
        assert_eq!(gated(&s, &silent), Some(SkipReason::NotAdvertised));
        // Not selected is not selected, advertised or not.
        assert_eq!(
            gate(&s, &full_host(), &selected(&["core"]), true, &given(), 1),
            Some(SkipReason::OptedOut)
        );
    }

    #[test]
    fn reported_runs_run_only_where_manual_goals_take_them() {
        let mut wants = needs(&[], &["manual"], 1);
        wants.reported_runs = true;
        let s = scenario("behavior", wants);
        assert_eq!(gated(&s, &full_host()), None);
        let mut schedule_only = full_host();
        schedule_only.reported_runs = ["schedule".to_string()].into();
        let mut silent = full_host();
        silent.reported_runs.clear();
        for host in [schedule_only, silent] {
            assert_eq!(gated(&s, &host), Some(SkipReason::NotAdvertised));
        }
    }

    #[test]
    fn host_events_run_only_where_that_surface_is_advertised() {
        let mut wants = needs(&[], &["manual"], 1);
        wants.host_events = Some("stream".to_string());
        let s = scenario("core", wants);
        let mut list_only = full_host();
        list_only.host_events = ["goalList".to_string()].into();
        assert_eq!(gated(&s, &list_only), Some(SkipReason::NotAdvertised));
        let mut both = list_only.clone();
        both.host_events.insert("stream".to_string());
        assert_eq!(gated(&s, &both), None);
    }

    #[test]
    fn runs_when_every_need_is_met() {
        let s = scenario("behavior", needs(&["continue"], &["schedule"], 2));
        assert_eq!(gated(&s, &full_host()), None);
    }

    #[test]
    fn unselected_profiles_are_opted_out_first() {
        let s = scenario("behavior", needs(&["webhooks"], &[], 2));
        assert_eq!(
            gate(&s, &full_host(), &selected(&["core"]), false, &given(), 1),
            Some(SkipReason::OptedOut)
        );
    }

    #[test]
    fn missing_goals_family_or_mode_is_not_advertised() {
        let s = scenario("core", needs(&[], &[], 1));
        let bare = Capabilities {
            goals: false,
            ..full_host()
        };
        assert_eq!(gated(&s, &bare), Some(SkipReason::NotAdvertised));
        let s = scenario("behavior", needs(&["continue"], &["heartbeat"], 1));
        assert_eq!(gated(&s, &full_host()), Some(SkipReason::NotAdvertised));
    }

    #[test]
    fn a_requires_bounds_need_follows_the_advertised_value() {
        let wants_true = Scenario {
            needs: Needs {
                requires_bounds: Some(true),
                ..needs(&[], &[], 1)
            },
            ..scenario("core", needs(&[], &[], 1))
        };
        let relaxed = Capabilities {
            requires_bounds: false,
            ..full_host()
        };
        assert_eq!(gated(&wants_true, &full_host()), None);
        assert_eq!(
            gated(&wants_true, &relaxed),
            Some(SkipReason::NotAdvertised)
        );
        let wants_false = Scenario {
            needs: Needs {
                requires_bounds: Some(false),
                ..needs(&[], &[], 1)
            },
            ..scenario("core", needs(&[], &[], 1))
        };
        assert_eq!(gated(&wants_false, &relaxed), None);
        assert_eq!(
            gated(&wants_false, &full_host()),
            Some(SkipReason::NotAdvertised)
        );
    }

    #[test]
    fn a_cluster_scenario_needs_several_endpoints() {
        let mut wants = needs(&[], &[], 1);
        wants.endpoints = 2;
        let s = scenario("cluster", wants);
        let profiles = selected(&["cluster"]);
        assert_eq!(gated(&s, &full_host()), Some(SkipReason::NeedsEndpoints));
        assert_eq!(gate(&s, &full_host(), &profiles, true, &given(), 2), None);
        assert_eq!(gate(&s, &full_host(), &profiles, true, &given(), 3), None);
        assert_eq!(
            gate(&s, &full_host(), &selected(&["core"]), true, &given(), 1),
            Some(SkipReason::OptedOut),
            "an unselected profile stays opted out"
        );
        assert_eq!(SkipReason::NeedsEndpoints.as_str(), "needs-endpoints");
    }

    #[test]
    fn missing_seam_is_seam_absent() {
        let s = scenario("behavior", needs(&["continue", "webhooks"], &[], 1));
        assert_eq!(gated(&s, &full_host()), Some(SkipReason::SeamAbsent));
    }

    #[test]
    fn two_tenants_need_token_b() {
        let s = scenario("core", needs(&[], &[], 2));
        assert_eq!(
            gate(&s, &full_host(), &selected(&["core"]), false, &given(), 1),
            Some(SkipReason::NeedsSecondTenant)
        );
    }

    #[test]
    fn a_judge_need_follows_the_advertised_judge() {
        let wants = |judge: &str| Scenario {
            needs: Needs {
                judge: Some(judge.to_string()),
                ..needs(&[], &[], 1)
            },
            ..scenario("behavior", needs(&[], &[], 1))
        };
        let host_judge = Capabilities {
            judge: Some("host".to_string()),
            ..full_host()
        };
        let no_judge = Capabilities {
            judge: None,
            ..full_host()
        };
        assert_eq!(gated(&wants("verifier"), &full_host()), None);
        assert_eq!(
            gated(&wants("verifier"), &host_judge),
            Some(SkipReason::NotAdvertised)
        );
        assert_eq!(gated(&wants("host"), &host_judge), None);
        assert_eq!(
            gated(&wants("host"), &full_host()),
            Some(SkipReason::NotAdvertised)
        );
        assert_eq!(
            gated(&wants("verifier"), &no_judge),
            Some(SkipReason::NotAdvertised),
            "a host naming no judge advertises neither"
        );
    }

    #[test]
    fn scripted_verdicts_run_on_either_judge_and_need_the_seam_on_a_host_judge() {
        let scripted = Scenario {
            needs: Needs {
                judge: Some(scripted_judge::SCRIPTED.to_string()),
                ..needs(&["continue"], &[], 1)
            },
            ..scenario("behavior", needs(&[], &[], 1))
        };
        let host = |seams: &[&str]| Capabilities {
            judge: Some("host".to_string()),
            seams: seams.iter().map(|seam| seam.to_string()).collect(),
            ..full_host()
        };
        let scripted_on = |caps: &Capabilities| gated(&scripted, caps);
        assert_eq!(
            scripted_on(&full_host()),
            None,
            "a verifier host takes the refs"
        );
        assert_eq!(scripted_on(&host(&["continue", "scriptedJudge"])), None);
        assert_eq!(
            scripted_on(&host(&["continue"])),
            Some(SkipReason::SeamAbsent),
            "a host judge without the seam cannot be scripted"
        );
        assert_eq!(
            scripted_on(&host(&["scriptedJudge"])),
            Some(SkipReason::SeamAbsent),
            "the scenario's own seams still count"
        );
        let no_judge = Capabilities {
            judge: None,
            ..full_host()
        };
        assert_eq!(scripted_on(&no_judge), Some(SkipReason::NotAdvertised));
    }

    #[test]
    fn a_missing_option_is_not_configured_after_the_host_reasons() {
        let s = Scenario {
            needs: Needs {
                options: vec![WEBHOOK_SECRET.to_string()],
                ..needs(&["webhooks"], &[], 1)
            },
            ..scenario("observed", needs(&[], &[], 1))
        };
        let profiles = selected(&["observed"]);
        let with_webhooks = Capabilities {
            seams: ["webhooks"].map(String::from).into(),
            ..full_host()
        };
        assert_eq!(gated(&s, &with_webhooks), None);
        assert_eq!(
            gate(&s, &with_webhooks, &profiles, true, &BTreeSet::new(), 1),
            Some(SkipReason::NotConfigured)
        );
        assert_eq!(
            gate(&s, &full_host(), &profiles, true, &BTreeSet::new(), 1),
            Some(SkipReason::SeamAbsent),
            "what the host lacks is reported before what the run lacks"
        );
        assert_eq!(SkipReason::NotConfigured.as_str(), "not-configured");
    }
}
