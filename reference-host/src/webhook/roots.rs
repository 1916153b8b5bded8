//! Whom an `https` webhook may be: a server whose certificate chains to a
//! root of the system's store (rustls-platform-verifier, which on Linux
//! reads the distribution's CA bundle), or to a certificate authority the
//! operator named with `--webhook-ca`.
//!
//! Why the system store rather than a bundled list (webpki-roots): the
//! operator already maintains it — distribution updates revoke and add
//! roots, and a company CA installed there is trusted without a rebuild —
//! while a list compiled into the binary goes stale with the binary. A
//! container without a CA bundle then trusts nothing public, and every
//! `https` call fails as an environmental failure: never sent in clear.
//! `--webhook-ca` adds private CAs without touching the system store.

use std::fmt;
use std::sync::Arc;

/// Extra certificate authorities, as the PEM text they were given in
/// (validated: at least one certificate, each parsable).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct WebhookCa {
    pem: Option<Arc<[u8]>>,
}

impl WebhookCa {
    /// No extra authority: the system's roots alone.
    pub fn none() -> WebhookCa {
        WebhookCa::default()
    }

    /// The certificates of a PEM bundle; an error when it holds none or
    /// one does not parse.
    pub fn from_pem(pem: &[u8]) -> Result<WebhookCa, String> {
        let certificates = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|error| format!("not a PEM certificate bundle: {error}"))?;
        if certificates.is_empty() {
            return Err("no certificate in the PEM bundle".to_string());
        }
        // The DER inside is parsed only when a client is built: build one,
        // so a broken file stops the start instead of failing every call.
        certificates
            .into_iter()
            .fold(crate::tls::client_builder(), |builder, certificate| {
                builder.add_root_certificate(certificate)
            })
            .build()
            .map_err(|error| format!("unusable certificate: {error}"))?;
        Ok(WebhookCa {
            pem: Some(Arc::from(pem)),
        })
    }

    /// The certificates to trust besides the system's.
    pub(super) fn certificates(&self) -> Result<Vec<reqwest::Certificate>, String> {
        match &self.pem {
            None => Ok(Vec::new()),
            Some(pem) => reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|error| format!("--webhook-ca: {error}")),
        }
    }
}

impl fmt::Debug for WebhookCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pem {
            None => f.write_str("WebhookCa(system roots only)"),
            Some(pem) => write!(f, "WebhookCa({} bytes of PEM)", pem.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_must_hold_a_certificate() {
        assert!(WebhookCa::from_pem(b"").is_err());
        assert!(WebhookCa::from_pem(b"not pem at all").is_err());
        assert!(WebhookCa::from_pem(
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        )
        .is_err());
        assert_eq!(WebhookCa::none().certificates().map(|c| c.len()), Ok(0));
    }
}
