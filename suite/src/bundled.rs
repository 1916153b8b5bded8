//! Starting the reference host in-process when no `--host` is given. The
//! only place the suite touches `goalpost-host`, and only with the
//! `bundled-host` feature (on by default): without it (`cargo install
//! goalpost --no-default-features`) `goalpost` is a client that needs
//! `--host`, and [`BundledHost`] cannot be made.

/// The two tenants the bundled host knows.
pub const TENANT_A: &str = "tenant-a";
pub const TENANT_B: &str = "tenant-b";
pub const DEFAULT_TOKEN_A: &str = "goalpost-a";
pub const DEFAULT_TOKEN_B: &str = "goalpost-b";
/// The bundled host's credentials that hold a principal's and the host's
/// authority for tenant A (the attention profile's confirmations).
pub const DEFAULT_PRINCIPAL_TOKEN: &str = "goalpost-principal";
pub const DEFAULT_HOST_AUTHORITY_TOKEN: &str = "goalpost-host-authority";

/// The credentials the bundled host is started with: the two tenants'
/// tokens, and tenant A's credentials that hold a principal's and the
/// host's authority, where the run has them.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    pub token_a: &'a str,
    pub token_b: &'a str,
    pub principal: Option<&'a str>,
    pub host_authority: Option<&'a str>,
}

#[cfg(feature = "bundled-host")]
pub use with_host::BundledHost;
#[cfg(not(feature = "bundled-host"))]
pub use without_host::BundledHost;

/// Why a run without `--host` cannot start in a build without the host.
pub const NOT_BUILT: &str = "this goalpost was built without the bundled reference host (cargo feature `bundled-host`); give --host URL (and --token) to certify a running host";

#[cfg(feature = "bundled-host")]
mod with_host {
    use super::{Credentials, TENANT_A, TENANT_B};

    /// A running bundled host; shut it down when the run ends.
    pub struct BundledHost {
        base_url: String,
        host: goalpost_host::RunningHost,
    }

    impl BundledHost {
        /// Starts the host on 127.0.0.1:0 with an in-memory database and the
        /// conformance seams on, knowing `token_a` as tenant A and `token_b` as
        /// tenant B, signing its webhook calls with keys derived from
        /// `webhook_secret`. Its webhook calls may reach no internal address
        /// until [`BundledHost::allow_callback`] names the suite's. Must run
        /// inside the run's tokio runtime.
        pub async fn start(
            credentials: Credentials<'_>,
            webhook_secret: Option<&str>,
        ) -> Result<BundledHost, String> {
            let mut config = goalpost_host::Config::conformance_in_memory(vec![
                (credentials.token_a.to_string(), TENANT_A.to_string()),
                (credentials.token_b.to_string(), TENANT_B.to_string()),
            ]);
            let for_a = |token: Option<&str>| {
                token
                    .iter()
                    .map(|token| (token.to_string(), TENANT_A.to_string()))
                    .collect::<Vec<_>>()
            };
            config.principal_tokens = for_a(credentials.principal);
            config.host_authority_tokens = for_a(credentials.host_authority);
            config.webhook_secret = webhook_secret.map(str::to_string);
            config.webhook_allow = Vec::new();
            let host = goalpost_host::RunningHost::start(config)
                .await
                .map_err(|error| error.to_string())?;
            Ok(BundledHost {
                base_url: host.base_url(),
                host,
            })
        }

        /// Lets the host call the suite's callback at `url` (its host and
        /// port, nothing else internal).
        pub fn allow_callback(&self, url: &str) -> Result<(), String> {
            let parsed = reqwest::Url::parse(url).map_err(|error| format!("{url}: {error}"))?;
            let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default())
            else {
                return Err(format!("{url}: no host or port"));
            };
            let entry =
                goalpost_host::domain::egress::AllowEntry::parse(&format!("{host}:{port}"))?;
            self.host.allow_egress(entry);
            Ok(())
        }

        pub fn base_url(&self) -> &str {
            &self.base_url
        }

        pub async fn shutdown(self) {
            self.host.shutdown().await;
        }
    }
}

#[cfg(not(feature = "bundled-host"))]
mod without_host {
    use std::convert::Infallible;

    /// Never made: a build without the host has none to start.
    pub struct BundledHost(Infallible);

    impl BundledHost {
        pub async fn start(
            _: super::Credentials<'_>,
            _: Option<&str>,
        ) -> Result<BundledHost, String> {
            Err(super::NOT_BUILT.to_string())
        }

        pub fn allow_callback(&self, _url: &str) -> Result<(), String> {
            match self.0 {}
        }

        pub fn base_url(&self) -> &str {
            match self.0 {}
        }

        pub async fn shutdown(self) {
            match self.0 {}
        }
    }
}
