//! Webhook refs: an absolute `http://` URL the host POSTs to, with host-side
//! parameters in the fragment (which is never sent): `#intervalMs=I`,
//! `#heartbeatMs=H` (DESIGN "Webhooks").

use url::Url;

use super::{malformed, pairs, positive, RefError};

pub(super) const INTERVAL_MS: &str = "intervalMs";
pub(super) const HEARTBEAT_MS: &str = "heartbeatMs";

/// Longest webhook ref accepted, fragment included.
pub const MAX_URL_LEN: usize = 2048;

/// A webhook ref: where to POST, and the host-side parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The URL without its fragment, as it is called.
    url: String,
    interval_ms: Option<u64>,
    heartbeat_ms: Option<u64>,
}

/// Whether `text` is meant as a URL of a scheme webhooks use (anything else
/// is a name or a fixture). Names cannot hold `:`, so this is unambiguous.
pub(super) fn is_url(text: &str) -> bool {
    ["http:", "https:"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

impl Webhook {
    /// Parses a URL ref whose fragment may set only the `allowed` keys.
    /// `https` refs are called over TLS (`webhook/roots.rs`).
    pub(super) fn parse(text: &str, allowed: &[&str]) -> Result<Webhook, RefError> {
        if text.len() > MAX_URL_LEN {
            return Err(malformed(format!(
                "a webhook URL is at most {MAX_URL_LEN} bytes"
            )));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(malformed(
                "a webhook URL holds no spaces or controls".into(),
            ));
        }
        let (base, fragment) = match text.split_once('#') {
            Some((base, fragment)) => (base, Some(fragment)),
            None => (text, None),
        };
        let url = Url::parse(base).map_err(|error| malformed(format!("bad URL: {error}")))?;
        match url.scheme() {
            "http" | "https" => {}
            other => return Err(malformed(format!("scheme {other:?} is not http(s)"))),
        }
        let absolute = ["http://", "https://"].iter().any(|prefix| {
            base.get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        });
        if !absolute {
            return Err(malformed(
                "a webhook URL is absolute: http(s)://host/...".into(),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(malformed("a webhook URL names a host".into()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            // The ref is stored and shown to the goal's readers.
            return Err(malformed(
                "credentials do not belong in a webhook URL; the host sends its own secret".into(),
            ));
        }
        let mut webhook = Webhook {
            url: url.to_string(),
            interval_ms: None,
            heartbeat_ms: None,
        };
        let Some(fragment) = fragment else {
            return Ok(webhook);
        };
        for (key, value) in pairs(fragment)? {
            if !allowed.contains(&key) {
                return Err(malformed(format!("unknown fragment key {key:?}")));
            }
            let number = positive(key, value)?;
            match key {
                INTERVAL_MS => webhook.interval_ms = Some(number),
                HEARTBEAT_MS => webhook.heartbeat_ms = Some(number),
                _ => return Err(malformed(format!("unknown fragment key {key:?}"))),
            }
        }
        Ok(webhook)
    }

    /// The URL to POST to (no fragment).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn interval_ms(&self) -> Option<u64> {
        self.interval_ms
    }

    pub fn heartbeat_ms(&self) -> Option<u64> {
        self.heartbeat_ms
    }
}
