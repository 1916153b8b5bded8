//! The TLS under every outgoing call (webhooks, the `goals` client): rustls
//! with the `ring` crypto provider. reqwest is built without a provider of
//! its own (`rustls-no-provider`) and reads rustls's process-wide default
//! when a client is built, so [`client_builder`] installs ring first; a
//! program embedding the host that installed another provider keeps its
//! choice. docs/DESIGN.md, "TLS", says why ring.

/// A reqwest client builder whose TLS runs on ring: the one way this crate
/// (and its tests) start an HTTP client.
pub fn client_builder() -> reqwest::ClientBuilder {
    // An error only says a provider is installed already: that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// A client with reqwest's defaults on [`client_builder`]'s TLS; panics,
/// as `reqwest::Client::new` does, when the TLS backend cannot start.
pub fn client() -> reqwest::Client {
    match client_builder().build() {
        Ok(client) => client,
        Err(error) => panic!("cannot build an HTTP client: {error}"),
    }
}
