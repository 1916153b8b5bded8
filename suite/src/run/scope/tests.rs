use super::*;
use serde_json::json;

/// The reference host's discovery document, as far as scope goes.
fn reference() -> Value {
    json!({
        "host": {"reportedRuns": {"continuation": ["manual"]}},
        "agents": {"goals": {"judge": "verifier",
                             "continuation": ["schedule", "commitment", "heartbeat", "manual"]}},
        "webhookEgress": {"internal": "denied"},
        "conformanceSeams": {"goals": {"continue": true, "events": true,
                                       "fixtures": true, "webhooks": true}}
    })
}

fn offer(document: &Value, second_tenant: bool, endpoints: usize) -> Offer {
    Offer {
        capabilities: Capabilities::from_document(Some(document)),
        attention: attention_advertised(Some(document)),
        second_tenant,
        endpoints,
    }
}

fn requirement(id: &str, tokens: &[&str]) -> Requirement {
    Requirement {
        id: id.to_string(),
        profile: id.split('.').next().unwrap_or_default().to_string(),
        level: "MUST".to_string(),
        clause: format!("PROFILE.md#{id}"),
        text: "t".to_string(),
        capability: tokens
            .iter()
            .map(|t| Capability::parse(t).expect("a token"))
            .collect(),
    }
}

#[test]
fn a_requirement_applies_when_every_feature_is_advertised() {
    let full = offer(&reference(), true, 1);
    for tokens in [
        &[][..],
        &["mode:heartbeat", "seam:webhooks"],
        &["reported-runs", "mode:schedule"],
        &["egress-policy"],
        &["requires-bounds"],
        &["judge:verifier", "tenants:2", "endpoints:2"],
    ] {
        assert_eq!(
            full.missing_feature(&requirement("behavior.x", tokens)),
            None,
            "{tokens:?}"
        );
    }
    assert_eq!(
        full.missing_feature(&requirement("behavior.x", &["judge:host"])),
        Some(Capability::Judge("host"))
    );
    assert_eq!(
        full.missing_feature(&requirement("behavior.x", &["attention"])),
        Some(Capability::Attention)
    );
    let mut document = reference();
    document["extensions"] = json!({"goalpost": {"attention": {}}});
    assert_eq!(
        offer(&document, true, 1).missing_feature(&requirement("behavior.x", &["attention"])),
        None
    );
}

#[test]
fn only_features_make_a_requirement_not_applicable_never_run_needs() {
    let mut document = reference();
    document["conformanceSeams"] = json!({});
    let bare = offer(&document, false, 1);
    let needs = requirement(
        "hardening.x",
        &["seam:continue", "tenants:2", "endpoints:2"],
    );
    assert_eq!(bare.missing_feature(&needs), None);
    for token in ["seam:continue", "tenants:2", "endpoints:2"] {
        assert!(!bare.has(Capability::parse(token).unwrap()), "{token}");
    }
    // Each feature missing in turn: the first missing one is named.
    let mut schedule_only = reference();
    schedule_only["agents"]["goals"]["continuation"] = json!(["schedule"]);
    schedule_only["host"] = json!({});
    schedule_only
        .as_object_mut()
        .unwrap()
        .remove("webhookEgress");
    schedule_only["agents"]["goals"]["requiresBounds"] = json!(false);
    let lean = offer(&schedule_only, true, 1);
    for (tokens, missing) in [
        (&["mode:manual"][..], "mode:manual"),
        (&["mode:schedule", "reported-runs"], "reported-runs"),
        (&["egress-policy"], "egress-policy"),
        (&["requires-bounds"], "requires-bounds"),
    ] {
        assert_eq!(
            lean.missing_feature(&requirement("core.x", tokens)),
            Capability::parse(missing),
            "{tokens:?}"
        );
    }
}

#[test]
fn without_agents_goals_nothing_is_not_applicable_and_nothing_can_be_attempted() {
    let nothing = offer(&json!({"protocol": "openwop"}), true, 3);
    assert_eq!(
        nothing.missing_feature(&requirement("behavior.x", &["mode:heartbeat"])),
        None
    );
    for profile in profiles_but_attention() {
        assert_eq!(nothing.unmet(profile), [Unmet::Goals], "{profile}");
    }
    assert!(nothing.scope("core", std::iter::empty()).is_empty());
}

#[test]
fn each_profile_has_its_minimum_scope() {
    let full = offer(&reference(), true, 2);
    for profile in profiles_but_attention() {
        assert_eq!(full.unmet(profile), [], "{profile}");
    }
    let one = offer(&reference(), false, 1);
    assert_eq!(one.unmet("hardening"), [Unmet::SecondTenant]);
    assert_eq!(one.unmet("cluster"), [Unmet::Endpoints]);
    assert_eq!(one.unmet("core"), []);
    assert!(Unmet::Endpoints.is_run_option() && Unmet::SecondTenant.is_run_option());
    assert_eq!(
        describe_unmet(&one.unmet("cluster")),
        "needs 2+ endpoints of one deployment (--host once per replica)"
    );
    // A host of the judge `host` without the scripted-judge seam: no judge
    // the suite can script in either profile.
    let mut judge_host = reference();
    judge_host["agents"]["goals"]["judge"] = json!("host");
    let host = offer(&judge_host, true, 1);
    assert_eq!(
        host.unmet("behavior"),
        [Unmet::ScriptableJudge(JudgeScript::Fixtures)]
    );
    assert_eq!(
        host.unmet("observed"),
        [Unmet::ScriptableJudge(JudgeScript::Webhooks)]
    );
    judge_host["conformanceSeams"]["goals"]["scriptedJudge"] = json!(true);
    let scripted = offer(&judge_host, true, 1);
    assert_eq!(scripted.unmet("behavior"), []);
    assert_eq!(scripted.unmet("observed"), []);
    // No seams at all: behavior and observed cannot be attempted, and say
    // everything they need.
    let mut off = reference();
    off.as_object_mut().unwrap().remove("conformanceSeams");
    let off = offer(&off, true, 1);
    assert_eq!(
        off.unmet("behavior"),
        [
            Unmet::Seam("continue"),
            Unmet::Seam("events"),
            Unmet::ScriptableJudge(JudgeScript::Fixtures)
        ]
    );
    assert_eq!(
        off.unmet("observed"),
        [
            Unmet::Seam("webhooks"),
            Unmet::ScriptableJudge(JudgeScript::Webhooks)
        ]
    );
    assert_eq!(off.unmet("hardening"), []);
    let text = describe_unmet(&off.unmet("behavior"));
    assert!(
        text.starts_with(
            "needs the `continue` seam (`conformanceSeams.goals.continue`), the `events` seam"
        ),
        "{text}"
    );
    // No mode at all.
    let mut modeless = reference();
    modeless["agents"]["goals"]["continuation"] = json!([]);
    assert_eq!(offer(&modeless, true, 1).unmet("behavior"), [Unmet::Mode]);
}

#[test]
fn the_scope_lists_judge_modes_and_what_the_profile_names() {
    let requirements = [
        requirement("behavior.a", &[]),
        requirement("behavior.b", &["mode:heartbeat", "seam:webhooks"]),
        requirement("behavior.c", &["reported-runs"]),
        requirement("behavior.d", &["egress-policy"]),
        requirement("hardening.e", &["mode:commitment"]),
    ];
    let mut document = reference();
    document["agents"]["goals"]["continuation"] = json!(["schedule", "manual"]);
    document.as_object_mut().unwrap().remove("webhookEgress");
    let scope = offer(&document, true, 1).scope("behavior", &requirements);
    assert_eq!(
        scope,
        Scope {
            judge: Some("verifier".to_string()),
            modes: vec!["manual".to_string(), "schedule".to_string()],
            offered: vec!["reported-runs".to_string()],
            not_offered: vec!["mode:heartbeat".to_string(), "egress-policy".to_string()],
        }
    );
    assert_eq!(
        scope.to_string(),
        "judge verifier; modes manual, schedule; reported runs; not offered: heartbeat, egress policy"
    );
    assert_eq!(
        scope.covered(),
        [
            "judge:verifier",
            "mode:manual",
            "mode:schedule",
            "reported-runs"
        ]
        .map(String::from)
        .into()
    );
    // Run needs never show in a scope; another profile's features neither.
    assert!(!scope.to_string().contains("webhooks"));
    assert!(!scope.to_string().contains("commitment"));
    let value = serde_json::to_value(&scope).unwrap();
    assert_eq!(
        value,
        json!({"judge": "verifier", "modes": ["manual", "schedule"],
               "offered": ["reported-runs"], "notOffered": ["mode:heartbeat", "egress-policy"]})
    );
    assert_eq!(serde_json::from_value::<Scope>(value).unwrap(), scope);
}

#[test]
fn attention_is_attempted_only_where_advertised_with_its_seams() {
    let mut document = reference();
    assert_eq!(
        offer(&document, true, 1).unmet("attention"),
        [Unmet::Attention],
        "a host without the extension is never judged on it"
    );
    document["extensions"] = json!({"goalpost": {"attention": {"version": "1.0"}}});
    assert!(offer(&document, true, 1).unmet("attention").is_empty());
    document["conformanceSeams"] = json!({"goals": {"events": true}});
    assert_eq!(
        offer(&document, true, 1).unmet("attention"),
        [Unmet::Seam("continue"), Unmet::Seam("webhooks")]
    );
    // An `attention` member at the root is not the extension's.
    let mut rooted = reference();
    rooted["attention"] = json!({});
    assert!(!attention_advertised(Some(&rooted)));
    assert_eq!(Unmet::Attention.section(), "PROFILE.md#profile-attention");
}

/// Every profile but `attention`, whose minimum scope also needs the
/// extension advertised.
fn profiles_but_attention() -> impl Iterator<Item = &'static str> {
    crate::cli::KNOWN_PROFILES
        .iter()
        .copied()
        .filter(|profile| *profile != "attention")
}
