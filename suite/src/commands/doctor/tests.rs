use super::*;

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

fn diagnosis(capabilities: Capabilities) -> Diagnosis {
    Diagnosis {
        base_url: "http://h".to_string(),
        discovery_status: 200,
        profiles: readiness(&catalog(), &capabilities, true),
        capabilities,
        probes: Vec::new(),
    }
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
    assert!(note.contains("goal-2"), "{note}");
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
