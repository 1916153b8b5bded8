//! The HTTP client under every outgoing call (webhooks, the `goals` client)
//! and its TLS: rustls with the `ring` crypto provider. reqwest is built
//! without a provider of its own (`rustls-no-provider`) and reads rustls's
//! process-wide default when a client is built, so [`client_builder`]
//! installs ring first; a program embedding the host that installed
//! another provider keeps its choice. docs/DESIGN.md, "Build", says why
//! ring.

/// A reqwest client builder whose TLS runs on ring: the one way this crate
/// (and its tests) start an HTTP client.
pub fn client_builder() -> reqwest::ClientBuilder {
    // An error only says a provider is installed already: that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// What went wrong with a call: reqwest's top-level message is terse
/// ("error sending request"), and its causes say what happened (connection
/// refused, reset, a certificate nobody trusts, ...).
pub fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A client with reqwest's defaults on [`client_builder`]'s TLS; panics,
/// as `reqwest::Client::new` does, when the TLS backend cannot start.
pub fn client() -> reqwest::Client {
    match client_builder().build() {
        Ok(client) => client,
        Err(error) => panic!("cannot build an HTTP client: {error}"),
    }
}
