//! Name resolution under the egress policy: every name a webhook URL holds
//! is resolved here, and only the addresses the policy allows are handed to
//! the connector. Checking the address actually connected to (rather than
//! the name, or an earlier lookup) is what stops a name that resolves to
//! loopback, or one that changes its answer between checks (DNS
//! rebinding).

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::egress::{AllowEntry, EgressPolicy};

/// The policy shared by the resolver and the ref checks. Writable so that
/// an embedding (the suite's bundled host) can allow its callback once it
/// knows the address.
#[derive(Debug, Clone, Default)]
pub struct SharedEgress(Arc<RwLock<EgressPolicy>>);

impl SharedEgress {
    pub fn new(policy: EgressPolicy) -> SharedEgress {
        SharedEgress(Arc::new(RwLock::new(policy)))
    }

    pub fn policy(&self) -> EgressPolicy {
        self.0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub fn allow(&self, entry: AllowEntry) {
        self.0
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .allow(entry);
    }
}

#[derive(Debug)]
pub(super) struct EgressResolver {
    pub(super) egress: SharedEgress,
}

impl Resolve for EgressResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let egress = self.egress.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips = resolved.iter().map(SocketAddr::ip).collect();
            let allowed = egress.policy().filter_resolved(&host, ips)?;
            let addrs: Addrs = Box::new(
                allowed
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, 0))
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            Ok(addrs)
        })
    }
}
