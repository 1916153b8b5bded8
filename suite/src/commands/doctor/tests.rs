use super::*;
use crate::testing::assert_contains;

fn catalog() -> Catalog {
    let schemas = Schemas::embedded().expect("schemas");
    crate::run::loader::load_embedded(&schemas).expect("the embedded scenarios")
}

fn capabilities(seams: &[&str], modes: &[&str]) -> Capabilities {
    let document = json!({
        "agents": {"goals": {"judge": "verifier", "continuation": modes, "requiresBounds": true}},
        "conformanceSeams": {"goals": seams.iter().map(|seam| (seam.to_string(), json!(true))).collect::<serde_json::Map<_, _>>()}
    });
    Capabilities::from_document(Some(&document))
}

fn offer(capabilities: &Capabilities, second_tenant: bool) -> Offer {
    Offer {
        capabilities: capabilities.clone(),
        attention: capabilities.attention,
        second_tenant,
        endpoints: 1,
    }
}

fn diagnosis(capabilities: Capabilities) -> Diagnosis {
    let catalog = catalog();
    Diagnosis {
        base_url: "http://h".to_string(),
        discovery_status: 200,
        profiles: readiness(&catalog, &capabilities, true),
        predictions: predict(&catalog, &offer(&capabilities, true), &BTreeMap::new()),
        capabilities,
        probes: Vec::new(),
    }
}

/// Profile → its predicted status.
/// The prediction for `profile`; every profile the suite knows has one.
fn of<'a>(predictions: &'a [Prediction], profile: &str) -> &'a Prediction {
    predictions
        .iter()
        .find(|p| p.profile == profile)
        .unwrap_or_else(|| panic!("no prediction for {profile}"))
}

fn statuses(predictions: &[Prediction]) -> BTreeMap<&str, Status> {
    predictions
        .iter()
        .map(|p| (p.profile.as_str(), p.summary.status))
        .collect()
}

/// The reference host's discovery, as far as doctor's prediction goes.
fn reference() -> Capabilities {
    Capabilities::from_document(Some(&json!({
        "host": {"reportedRuns": {"continuation": ["manual"]},
                 "events": {"goalList": true, "stream": "/v1/host/sample/events"}},
        "agents": {"goals": {"judge": "verifier",
                             "continuation": ["schedule", "commitment", "heartbeat", "manual"]}},
        "webhookEgress": {"internal": "denied"},
        "conformanceSeams": {"goals": {"continue": true, "events": true,
                                       "fixtures": true, "webhooks": true}},
        "extensions": {"goalpost": {"attention": {"version": "1.0"}}}
    })))
}

#[test]
fn a_host_offering_everything_would_be_certified_but_in_cluster() {
    let predictions = predict(&catalog(), &offer(&reference(), true), &BTreeMap::new());
    assert_eq!(
        statuses(&predictions),
        BTreeMap::from([
            ("core", Status::Certified),
            ("behavior", Status::Certified),
            ("observed", Status::Certified),
            ("hardening", Status::Certified),
            ("cluster", Status::NotAttempted),
            ("strict", Status::Certified),
            ("attention", Status::Certified),
        ])
    );
    let cluster = of(&predictions, "cluster");
    assert_eq!(
        cluster.line(),
        "not attempted — needs 2+ endpoints of one deployment (--host once per replica)"
    );
    let behavior = of(&predictions, "behavior");
    assert_eq!(
        behavior.line(),
        "would be certified — judge verifier; modes manual, schedule, heartbeat, commitment; reported runs; host event list; host event stream"
    );
}

#[test]
fn a_missing_token_or_an_absent_seam_is_the_reason_it_cannot_be_certified() {
    let catalog = catalog();
    let predictions = predict(&catalog, &offer(&reference(), false), &BTreeMap::new());
    let line = |profile: &str| of(&predictions, profile).line();
    assert_eq!(
        line("hardening"),
        "not attempted — needs a second tenant's token (--token-b)"
    );
    assert!(
        line("core").starts_with(
            "cannot be certified — 2 MUST requirements would skip `needs-second-tenant` (no second tenant's token: give --token-b): core.tenancy.goal-404, core.tenancy.list-isolation"
        ),
        "{}",
        line("core")
    );
    // A seam the host advertises but does not serve: its scenarios fail.
    let absent = BTreeMap::from([(
        "events".to_string(),
        "answered 404, expected 200".to_string(),
    )]);
    let predictions = predict(&catalog, &offer(&reference(), true), &absent);
    let behavior = of(&predictions, "behavior");
    assert_eq!(behavior.summary.status, Status::NotCertified);
    assert_eq!(
        behavior.blockers,
        ["the `events` seam is advertised but absent (answered 404, expected 200): its scenarios would fail"]
    );
    assert_eq!(
        statuses(&predictions)["core"],
        Status::Certified,
        "core needs no seam"
    );
}

#[test]
fn a_host_without_seams_or_with_its_own_judge_says_what_behavior_needs() {
    let mut document = json!({
        "agents": {"goals": {"judge": "host", "continuation": ["manual"]}}
    });
    let predictions = predict(
        &catalog(),
        &offer(&Capabilities::from_document(Some(&document)), true),
        &BTreeMap::new(),
    );
    let behavior = of(&predictions, "behavior");
    assert_eq!(behavior.summary.status, Status::NotAttempted);
    assert!(
        behavior.line().contains("`continue` seam") && behavior.line().contains("scriptedJudge"),
        "{}",
        behavior.line()
    );
    assert_eq!(statuses(&predictions)["core"], Status::Certified);
    // Nothing advertised: nothing can be certified.
    document = json!({"protocol": "openwop"});
    let predictions = predict(
        &catalog(),
        &offer(&Capabilities::from_document(Some(&document)), true),
        &BTreeMap::new(),
    );
    assert!(
        predictions
            .iter()
            .all(|p| p.summary.status == Status::NotAttempted),
        "{predictions:?}"
    );
}

const ALL_SEAMS: &[&str] = &["continue", "events", "fixtures", "webhooks"];

#[test]
fn a_host_offering_fewer_modes_made_a_legal_choice() {
    let found = diagnosis(capabilities(ALL_SEAMS, &["manual"]));
    let modes: BTreeSet<&Missing> = found
        .profiles
        .iter()
        .flat_map(|profile| profile.missing.keys())
        .collect();
    assert!(
        modes.contains(&Missing::Mode("schedule".to_string())),
        "{modes:?}"
    );
    assert!(modes.iter().all(|missing| !missing.blocks()));
    assert_eq!(found.exit_code(), 0);
}

#[test]
fn a_missing_seam_or_goals_blocks_and_names_its_section() {
    let found = diagnosis(capabilities(
        &["continue", "events", "fixtures"],
        &["manual", "schedule", "heartbeat"],
    ));
    let webhooks = Missing::Seam("webhooks".to_string());
    assert!(found
        .profiles
        .iter()
        .any(|profile| profile.profile == "observed" && profile.missing.contains_key(&webhooks)));
    assert_eq!(webhooks.section(), "PROFILE.md#seam-webhooks");
    assert_eq!(found.exit_code(), 1);

    let bare = diagnosis(Capabilities::from_document(Some(&json!({}))));
    let core = &bare.profiles[0];
    assert_eq!(core.profile, "core");
    assert_eq!(core.verdict(), "cannot attempt");
    assert_eq!(
        core.missing.keys().next().map(Missing::section).as_deref(),
        Some("PROFILE.md#core.discovery.shape")
    );
}

#[test]
fn the_other_judge_is_another_legal_choice_not_a_gap() {
    let found = diagnosis(capabilities(
        ALL_SEAMS,
        &["manual", "schedule", "heartbeat", "commitment"],
    ));
    for profile in &found.profiles {
        if profile.profile == "cluster" {
            // Doctor reads one endpoint: the cluster profile needs the run
            // to name several, which is no gap of the host.
            assert_eq!(profile.attemptable, 0, "{profile:?}");
            assert_eq!(
                profile.missing.keys().collect::<Vec<_>>(),
                [&Missing::Endpoints],
                "{profile:?}"
            );
            assert_eq!(
                Missing::Endpoints.section(),
                "PROFILE.md#skip-needs-endpoints"
            );
            assert!(!Missing::Endpoints.blocks());
            continue;
        }
        assert_eq!(
            profile.attemptable + profile.other_choice,
            profile.scenarios,
            "{profile:?}"
        );
        assert_eq!(profile.verdict(), "ready");
    }
    assert!(found
        .profiles
        .iter()
        .any(|profile| profile.profile == "cluster"));
    assert_eq!(found.exit_code(), 0);
}

fn list_answer(status: u16, body: &Value) -> Exchange {
    Exchange::new(
        "GET",
        "http://h/v1/host/sample/goals",
        status,
        reqwest::header::HeaderMap::new(),
        body.to_string().into_bytes(),
    )
}

fn goal(id: &str, max_cost: Value) -> Value {
    json!({
        "id": id,
        "objective": "o",
        "state": "active",
        "completion": {"check": "verifier"},
        "continuation": {"mode": "manual"},
        "bounds": {"maxLoopIterations": 3, "maxCostUsd": max_cost},
        "owner": {"tenant": "t"},
        "createdAt": "2026-11-28T00:00:00Z"
    })
}

#[test]
fn goals_already_in_the_list_are_a_note_never_a_failure() {
    let schemas = Schemas::embedded().expect("schemas");
    let clean = list_answer(200, &json!({"goals": [goal("goal-1", json!(1))]}));
    assert_eq!(judge_list(&clean, &schemas), (None, None));
    let earlier = list_answer(
        200,
        &json!({"goals": [goal("goal-1", json!(1)), goal("goal-2", json!("1"))]}),
    );
    let (problem, note) = judge_list(&earlier, &schemas);
    assert_eq!(problem, None);
    let note = note.expect("a note on the goal the schema refuses");
    assert!(note.starts_with("1 of 2 goals"), "{note}");
    assert_contains(&note, "goal-2");
}

#[test]
fn a_list_without_its_envelope_is_still_wrong() {
    let schemas = Schemas::embedded().expect("schemas");
    let (problem, _) = judge_list(
        &list_answer(200, &json!([goal("goal-1", json!(1))])),
        &schemas,
    );
    assert!(problem.expect("a problem").contains("`goals`"));
    let (problem, _) = judge_list(&list_answer(500, &json!({"goals": []})), &schemas);
    assert!(problem.expect("a problem").contains("answered 500"));
}
