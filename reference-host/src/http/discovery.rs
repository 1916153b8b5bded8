//! `GET /.well-known/openwop`: public, no credential.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::json::json;
use super::paging::MAX_PAGE;
use super::{AppState, EVENTS_STREAM_PATH, GOALS_BASE};
use crate::choices::{Choices, EgressPolicy, ReportedRuns};
use crate::domain::Check;
use crate::engine::TAKES_REPORTED_RUNS;

pub fn routes() -> Router<AppState> {
    Router::new().route("/.well-known/openwop", get(discovery))
}

async fn discovery(State(state): State<AppState>) -> Response {
    json(StatusCode::OK, state.discovery.as_ref().clone())
}

/// Advertises the attention extension (PROFILE.md "Profile `attention`")
/// under the goalpost extension member, when this host serves it: the
/// root of the discovery document is open to families it does not know,
/// and `agents.goals` stays as openwop's schema closes it.
pub fn advertise_attention(document: &mut Value, engine: &crate::engine::Engine) {
    if !engine.attention_served() {
        return;
    }
    let modes = engine.attention_faults().advertised_modes(
        crate::domain::attention::AttentionMode::ALL
            .iter()
            .map(|mode| mode.as_str())
            .collect(),
    );
    let wake = match engine.pause_wake() {
        crate::domain::attention::PauseWake::Tick => "tick",
        crate::domain::attention::PauseWake::Clock => "clock",
    };
    if let Some(root) = document.as_object_mut() {
        root.insert(
            "extensions".into(),
            json!({ "goalpost": { "attention": {
                "version": "1.0",
                "modes": modes,
                "policies": engine.attention_policies(),
                "pauseWake": wake,
                "bindings": format!("{GOALS_BASE}/{{id}}/attention/bindings"),
                "list": super::attention::TENANT_BINDINGS,
            } } }),
        );
    }
}

/// The discovery document: the judge and modes `choices` offer;
/// `conformanceSeams` only with the seams on.
pub fn document(seams: bool, choices: &Choices) -> Value {
    let modes: Vec<&str> = choices.modes.iter().map(|mode| mode.as_str()).collect();
    let judge = choices.judge.as_str();
    let reported_modes: Vec<&str> = TAKES_REPORTED_RUNS
        .iter()
        .filter(|mode| choices.modes.contains(mode))
        .map(|mode| mode.as_str())
        .collect();
    let offers_reported_runs = choices.reported_runs == ReportedRuns::Offered;
    let mut document = json!({
        "protocol": "openwop",
        // A host extension member (`host` is free-form; `agents.goals` and
        // `conformanceSeams.goals` are closed): the list pages with
        // `?limit=N&after=ID` and `Link: rel="next"`, at most `maxLimit`
        // goals a page.
        "host": {
            "name": "goalpost-host",
            "version": env!("CARGO_PKG_VERSION"),
            "goalsList": { "paging": ["limit", "after"], "maxLimit": MAX_PAGE },
            // Runs executed elsewhere are reported to their goal with
            // `POST {base}/{id}/runs` (PROFILE.md "Reported runs"), for
            // goals in these continuation modes only.
            "reportedRuns": {
                "path": format!("{GOALS_BASE}/{{id}}/runs"),
                "continuation": reported_modes,
            },
            // Events are this host's API, seams or not: a goal's list and
            // evaluations (`{base}/{id}/events`, `/evaluations`) and the
            // tenant's live stream (Server-Sent Events). Other hosts may
            // offer them only as the `events` seam.
            "events": { "goalList": true, "stream": EVENTS_STREAM_PATH },
        },
        "agents": { "goals": { "judge": judge, "continuation": modes, "requiresBounds": true } },
        // Webhook refs into internal addresses are refused unless the
        // operator allowed them (`--webhook-allow`; DESIGN "Egress policy").
        "webhookEgress": { "internal": "denied" },
    });
    if let Some(root) = document.as_object_mut() {
        if !offers_reported_runs {
            if let Some(host) = root.get_mut("host").and_then(Value::as_object_mut) {
                host.remove("reportedRuns");
            }
        }
        if choices.egress_policy == EgressPolicy::Unadvertised {
            root.remove("webhookEgress");
        }
    }
    if seams {
        let mut goals = json!({
            "basePath": GOALS_BASE,
            "continue": true, "events": true, "fixtures": true, "webhooks": true
        });
        // A host that judges with its own evaluator lets the suite script
        // its verdicts; a verifier host's goals name theirs.
        if choices.judge == Check::Host {
            goals["scriptedJudge"] = Value::Bool(true);
        }
        if let Some(root) = document.as_object_mut() {
            root.insert("conformanceSeams".into(), json!({ "goals": goals }));
        }
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_host_does_not_offer_is_not_advertised() {
        let reference = document(true, &Choices::default());
        assert_eq!(
            reference.pointer("/host/reportedRuns/continuation"),
            Some(&json!(["manual"]))
        );
        assert_eq!(
            reference.pointer("/webhookEgress/internal"),
            Some(&json!("denied"))
        );
        let narrow = document(
            false,
            &Choices {
                reported_runs: ReportedRuns::NotOffered,
                egress_policy: EgressPolicy::Unadvertised,
                ..Choices::default()
            },
        );
        assert_eq!(narrow.pointer("/host/reportedRuns"), None);
        assert_eq!(narrow.get("webhookEgress"), None);
        assert_eq!(narrow.get("conformanceSeams"), None);
        // The rest of the host member stays.
        assert!(narrow.pointer("/host/goalsList").is_some());
    }
}
