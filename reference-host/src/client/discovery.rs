//! The client reads discovery before anything else and refuses a host that
//! does not advertise `agents.goals`: the host is the authority on whether
//! it has standing goals, and the client never guesses.

use reqwest::Method;
use serde_json::Value;

use super::http::{ClientError, HostClient};
use crate::http::GOALS_BASE;

pub const DISCOVERY_PATH: &str = "/.well-known/openwop";

/// What the client takes from a discovery document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertised {
    /// `agents.goals.judge`, the default `completion.check` of `create`.
    pub judge: Option<String>,
    /// The goals collection path: `conformanceSeams.goals.basePath`, else
    /// the profile's default.
    pub base: String,
    /// Whether `GET {base}/{id}/events` is offered (seam `events`).
    pub events: bool,
    /// Where the host streams its events live (`host.events.stream`, a
    /// goalpost-host extension), when it says so.
    pub stream: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{url} does not advertise standing goals (no agents.goals in {DISCOVERY_PATH}: {why}); refusing to manage goals there")]
    NotAdvertised { url: String, why: String },
}

pub async fn require_goals(client: &HostClient) -> Result<Advertised, DiscoveryError> {
    let not_advertised = |why: String| DiscoveryError::NotAdvertised {
        url: client.url(""),
        why,
    };
    let answer = client
        .send(Method::GET, DISCOVERY_PATH, None, false)
        .await
        .map_err(|error| match error {
            ClientError::BadAnswer { reason, .. } => not_advertised(format!("answered {reason}")),
            other => DiscoveryError::Client(other),
        })?;
    if answer.status != 200 {
        return Err(not_advertised(format!("HTTP {}", answer.status)));
    }
    let document = answer
        .body
        .ok_or_else(|| not_advertised("an empty document".into()))?;
    read(&document).ok_or_else(|| not_advertised("the key is absent".into()))
}

/// `None` when `agents.goals` is not an object.
pub fn read(document: &Value) -> Option<Advertised> {
    let goals = document.pointer("/agents/goals")?.as_object()?;
    let seams = document.pointer("/conformanceSeams/goals");
    let base = seams
        .and_then(|seams| seams.get("basePath"))
        .and_then(Value::as_str)
        .filter(|path| path.starts_with('/') && path.len() > 1)
        .map(|path| path.trim_end_matches('/').to_string())
        .unwrap_or_else(|| GOALS_BASE.to_string());
    Some(Advertised {
        judge: goals
            .get("judge")
            .and_then(Value::as_str)
            .map(str::to_string),
        base,
        events: seams
            .and_then(|seams| seams.get("events"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || document
                .pointer("/host/events/goalList")
                .and_then(Value::as_bool)
                == Some(true),
        stream: document
            .pointer("/host/events/stream")
            .and_then(Value::as_str)
            .filter(|path| path.starts_with('/') && !path.contains(['?', '#']))
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_goals_and_seams() {
        let advertised = read(&json!({
            "agents": { "goals": { "judge": "verifier", "continuation": ["manual"] } },
            "conformanceSeams": { "goals": { "basePath": "/g/", "events": true } },
        }))
        .expect("advertised");
        assert_eq!(
            advertised,
            Advertised {
                judge: Some("verifier".into()),
                base: "/g".into(),
                events: true,
                stream: None,
            }
        );
    }

    #[test]
    fn defaults_without_seams() {
        let advertised =
            read(&json!({ "agents": { "goals": { "judge": "host" } } })).expect("advertised");
        assert_eq!(advertised.base, GOALS_BASE);
        assert!(!advertised.events);
        assert_eq!(advertised.stream, None);
    }

    #[test]
    fn host_events_are_read_without_seams() {
        let advertised = read(&json!({
            "agents": { "goals": { "judge": "verifier" } },
            "host": { "events": { "goalList": true, "stream": "/g/events" } },
        }))
        .expect("advertised");
        assert!(advertised.events);
        assert_eq!(advertised.stream.as_deref(), Some("/g/events"));
        let odd = read(&json!({
            "agents": { "goals": {} },
            "host": { "events": { "stream": "http://elsewhere/events" } },
        }))
        .expect("advertised");
        assert_eq!(odd.stream, None, "only a path on this host");
    }

    #[test]
    fn absent_goals_are_not_advertised() {
        assert_eq!(read(&json!({ "agents": {} })), None);
        assert_eq!(read(&json!({ "agents": { "goals": true } })), None);
        assert_eq!(read(&json!([])), None);
    }
}
