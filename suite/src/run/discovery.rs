//! The host's discovery document, read once before trials are built: it
//! decides `{base}`, which scenarios can run and which skip, and its hash
//! goes into the report so two reports can be told apart by host build.

use std::collections::BTreeSet;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::RunError;
use crate::http::{Http, Outgoing};
use crate::model::strings;

pub const DISCOVERY_PATH: &str = "/.well-known/openwop";
/// `{base}` when the host does not name one in `conformanceSeams`.
pub const DEFAULT_BASE_PATH: &str = "/v1/host/sample/goals";
/// Where discovery advertises the attention extension.
pub const ATTENTION_MEMBER: &str = "/extensions/goalpost/attention";
/// Template variables every scenario run gets from discovery.
pub const VARIABLES: &[&str] = &[
    "discovery.judge",
    "discovery.mode",
    "discovery.eventsStream",
];
/// `{discovery.judge}` when the host names no judge (its discovery
/// scenario fails on that; the creates should still say something valid).
pub const DEFAULT_JUDGE: &str = "verifier";
/// `{discovery.eventsStream}` when discovery names no stream: only a
/// scenario that needs the stream sends to it, and then one is named.
pub const DEFAULT_EVENTS_STREAM: &str = "/";
/// The continuation mode a scenario prefers when the host offers it: the
/// client drives every iteration, so nothing fires behind the test's back.
pub const PREFERRED_MODE: &str = "manual";

/// What the host says it can do, as far as gating scenarios goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// `agents.goals` is present.
    pub goals: bool,
    /// `agents.goals.continuation`.
    pub continuation: BTreeSet<String>,
    /// The same modes in the document's order, for `{discovery.mode}`.
    pub continuation_order: Vec<String>,
    /// Seams whose flag in `conformanceSeams.goals` is `true`.
    pub seams: BTreeSet<String>,
    pub base_path: String,
    /// `agents.goals.judge`, when it is a string.
    pub judge: Option<String>,
    /// `agents.goals.requiresBounds`; true when absent or not a boolean,
    /// as SPEC §1 defaults it.
    pub requires_bounds: bool,
    /// `webhookEgress.internal` is `"denied"`: webhook refs into internal
    /// addresses are refused (PROFILE.md#hardening.egress.internal-refs-refused).
    pub egress_denies_internal: bool,
    /// `host.reportedRuns.continuation`: the modes whose goals take runs
    /// reported with `POST {base}/{id}/runs` (empty when not advertised).
    pub reported_runs: BTreeSet<String>,
    /// `extensions.goalpost.attention` is an object: the attention
    /// extension is advertised (PROFILE.md "Profile `attention`").
    pub attention: bool,
    /// What `host.events` offers as host API: `goalList` (a goal's events
    /// and evaluations) and `stream` (the tenant's event stream).
    pub host_events: BTreeSet<String>,
    /// `host.events.stream`: the event stream's path, when it is one.
    pub events_stream: Option<String>,
}

impl Capabilities {
    /// The capabilities with `--base-path`, when given, over the
    /// collection path discovery names.
    pub fn with_base_path(mut self, base_path: Option<&String>) -> Capabilities {
        if let Some(path) = base_path {
            self.base_path.clone_from(path);
        }
        self
    }

    /// Reads what it can from a discovery document; anything malformed reads
    /// as "not advertised" (the discovery scenarios judge the shape itself).
    pub fn from_document(document: Option<&Value>) -> Capabilities {
        let goals = document.and_then(|doc| doc.pointer("/agents/goals"));
        let seams = document.and_then(|doc| doc.pointer("/conformanceSeams/goals"));
        let continuation_order = strings(goals.and_then(|g| g.get("continuation")));
        let events = document.and_then(|doc| doc.pointer("/host/events"));
        let events_stream = events
            .and_then(|e| e.get("stream"))
            .and_then(Value::as_str)
            .filter(|path| path.starts_with('/'))
            .map(str::to_string);
        Capabilities {
            goals: goals.is_some_and(Value::is_object),
            continuation: continuation_order.iter().cloned().collect(),
            continuation_order,
            seams: seams
                .and_then(Value::as_object)
                .map(|flags| {
                    flags
                        .iter()
                        .filter(|(_, flag)| flag.as_bool() == Some(true))
                        .map(|(name, _)| name.clone())
                        .collect()
                })
                .unwrap_or_default(),
            base_path: seams
                .and_then(|s| s.get("basePath"))
                .and_then(Value::as_str)
                .filter(|path| path.starts_with('/'))
                .unwrap_or(DEFAULT_BASE_PATH)
                .trim_end_matches('/')
                .to_string(),
            judge: goals
                .and_then(|g| g.get("judge"))
                .and_then(Value::as_str)
                .map(str::to_string),
            requires_bounds: goals
                .and_then(|g| g.get("requiresBounds"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
            egress_denies_internal: document
                .and_then(|doc| doc.pointer("/webhookEgress/internal"))
                .and_then(Value::as_str)
                == Some("denied"),
            reported_runs: strings(
                document.and_then(|doc| doc.pointer("/host/reportedRuns/continuation")),
            )
            .into_iter()
            .collect(),
            attention: document
                .and_then(|doc| doc.pointer(ATTENTION_MEMBER))
                .is_some_and(Value::is_object),
            host_events: [
                (
                    "goalList",
                    events
                        .and_then(|e| e.get("goalList"))
                        .and_then(Value::as_bool)
                        == Some(true),
                ),
                ("stream", events_stream.is_some()),
            ]
            .into_iter()
            .filter(|(_, offered)| *offered)
            .map(|(name, _)| name.to_string())
            .collect(),
            events_stream,
        }
    }

    /// The `{discovery.*}` variables: values a scenario may use where the
    /// host's choice does not matter to what it proves.
    pub fn variables(&self) -> Vec<(&'static str, Value)> {
        vec![
            (
                "discovery.judge",
                Value::from(self.judge.as_deref().unwrap_or(DEFAULT_JUDGE)),
            ),
            ("discovery.mode", Value::from(self.mode())),
            (
                "discovery.eventsStream",
                Value::from(
                    self.events_stream
                        .as_deref()
                        .unwrap_or(DEFAULT_EVENTS_STREAM),
                ),
            ),
        ]
    }

    /// `{discovery.mode}`: `manual` when advertised, else the first
    /// advertised continuation mode (in the document's order), else
    /// `manual` (the host's discovery scenario fails on an empty list; the
    /// creates should still say something valid).
    pub fn mode(&self) -> &str {
        if self.continuation.contains(PREFERRED_MODE) {
            PREFERRED_MODE
        } else {
            self.continuation_order
                .first()
                .map(String::as_str)
                .unwrap_or(PREFERRED_MODE)
        }
    }
}

/// The discovery document as fetched.
#[derive(Debug, Clone)]
pub struct Discovery {
    pub status: u16,
    /// Hex SHA-256 of the body bytes exactly as received.
    pub sha256: String,
    /// `None` when the body is not JSON.
    pub document: Option<Value>,
    pub capabilities: Capabilities,
}

impl Discovery {
    /// What is known of a host that answered the discovery request, but not
    /// usably: no document (the digest is of an empty body), so it
    /// advertises nothing.
    pub fn unusable() -> Discovery {
        Discovery {
            status: 0,
            sha256: sha256_hex(b""),
            document: None,
            capabilities: Capabilities::from_document(None),
        }
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Fetches the document. Only a transport failure is an error: a host that
/// answers badly is still tested (and fails the discovery scenarios).
pub async fn fetch(http: &Http, base_url: &str) -> Result<Discovery, RunError> {
    let exchange = http
        .send(&Outgoing {
            method: "GET".to_string(),
            url: format!("{}{DISCOVERY_PATH}", base_url.trim_end_matches('/')),
            headers: Vec::new(),
            body: None,
        })
        .await?;
    let document = if exchange.status == 200 {
        exchange.json().ok().cloned()
    } else {
        None
    };
    Ok(Discovery {
        status: exchange.status,
        sha256: sha256_hex(&exchange.body),
        capabilities: Capabilities::from_document(document.as_ref()),
        document,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unusable_answer_advertises_nothing_and_base_path_wins_only_when_given() {
        let unusable = Discovery::unusable();
        assert_eq!(unusable.sha256, sha256_hex(b""));
        assert_eq!(unusable.sha256.len(), 64);
        assert!(!unusable.capabilities.goals);
        assert!(unusable.capabilities.seams.is_empty());
        let found = unusable.capabilities.base_path.clone();
        let kept = unusable.capabilities.clone().with_base_path(None);
        assert_eq!(kept.base_path, found);
        let given = "/v2/goals".to_string();
        let over = unusable.capabilities.with_base_path(Some(&given));
        assert_eq!(over.base_path, "/v2/goals");
    }

    #[test]
    fn reads_modes_seams_and_base_path() {
        let document = json!({
            "agents": {"goals": {"judge": "verifier", "continuation": ["manual", "schedule"]}},
            "conformanceSeams": {"goals": {"basePath": "/x/goals/", "continue": true,
                                           "events": true, "fixtures": false}}
        });
        let caps = Capabilities::from_document(Some(&document));
        assert!(caps.goals);
        assert_eq!(
            caps.continuation,
            ["manual", "schedule"].map(String::from).into()
        );
        assert_eq!(caps.seams, ["continue", "events"].map(String::from).into());
        assert_eq!(caps.base_path, "/x/goals");
        assert_eq!(caps.judge.as_deref(), Some("verifier"));
        assert!(
            caps.requires_bounds,
            "absent requiresBounds defaults to true"
        );
    }

    #[test]
    fn reads_judge_and_requires_bounds_into_variables() {
        let plain = json!({"agents": {"goals": {"judge": "host", "continuation": [],
                                                 "requiresBounds": false}}});
        let odd = json!({"agents": {"goals": {"judge": 3, "requiresBounds": "no"}}});
        for (document, judge, requires_bounds) in
            [(&plain, "host", false), (&odd, "verifier", true)]
        {
            let caps = Capabilities::from_document(Some(document));
            assert_eq!(caps.requires_bounds, requires_bounds, "{document}");
            assert_eq!(
                caps.variables(),
                vec![
                    ("discovery.judge", json!(judge)),
                    ("discovery.mode", json!("manual")),
                    ("discovery.eventsStream", json!("/"))
                ]
            );
        }
        let caps = Capabilities::from_document(Some(&odd));
        let names: Vec<&str> = caps.variables().iter().map(|(name, _)| *name).collect();
        assert_eq!(names, VARIABLES);
    }

    #[test]
    fn host_events_are_read_from_the_host_member() {
        let document = json!({"agents": {"goals": {"judge": "verifier", "continuation": ["manual"]}},
                              "host": {"events": {"goalList": true, "stream": "/v1/g/events"}}});
        let caps = Capabilities::from_document(Some(&document));
        assert_eq!(
            caps.host_events,
            ["goalList", "stream"].map(String::from).into()
        );
        assert_eq!(caps.events_stream.as_deref(), Some("/v1/g/events"));
        assert!(caps
            .variables()
            .contains(&("discovery.eventsStream", json!("/v1/g/events"))));
        // A stream that is no path, or a list that is not `true`, is not
        // advertised.
        let odd = json!({"host": {"events": {"goalList": "yes", "stream": "events"}}});
        let caps = Capabilities::from_document(Some(&odd));
        assert!(caps.host_events.is_empty());
        assert_eq!(caps.events_stream, None);
    }

    #[test]
    fn a_bare_host_advertises_nothing() {
        let caps = Capabilities::from_document(Some(&json!({"protocol": "openwop"})));
        assert!(!caps.goals);
        assert!(caps.seams.is_empty());
        assert_eq!(caps.base_path, DEFAULT_BASE_PATH);
        assert_eq!(Capabilities::from_document(None), caps);
    }

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn mode_prefers_manual_then_the_first_advertised() {
        let mode = |modes: Value| {
            let document = json!({"agents": {"goals": {"continuation": modes}}});
            Capabilities::from_document(Some(&document))
                .mode()
                .to_string()
        };
        assert_eq!(mode(json!(["schedule", "manual"])), "manual");
        assert_eq!(mode(json!(["schedule", "heartbeat"])), "schedule");
        assert_eq!(mode(json!(["heartbeat", "schedule"])), "heartbeat");
        assert_eq!(mode(json!([])), "manual");
    }
}
