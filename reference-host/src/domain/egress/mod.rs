//! Where the host may send webhook calls (DESIGN "Egress policy"). A
//! tenant writes the URLs its goals call, so without a rule any tenant could
//! aim the host at its own network: loopback services, the cloud metadata
//! endpoint, private ranges. The rule is judged on the address actually
//! connected to (the webhook client applies it after DNS resolution) and,
//! for IP literals, also when a ref is written.

#[cfg(test)]
mod tests;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not called unless the operator allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedRange {
    Unspecified,
    Loopback,
    /// RFC 1918 (and IPv6 site-local / local NAT64).
    Private,
    /// RFC 6598 shared address space (carrier-grade NAT).
    SharedAddressSpace,
    /// 169.254.0.0/16 and fe80::/10; holds the cloud metadata endpoint.
    LinkLocal,
    /// fc00::/7.
    UniqueLocal,
    Multicast,
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment and future-use
    /// ranges: nothing a webhook legitimately lives on.
    Reserved,
}

impl DeniedRange {
    pub fn as_str(self) -> &'static str {
        match self {
            DeniedRange::Unspecified => "unspecified",
            DeniedRange::Loopback => "loopback",
            DeniedRange::Private => "private",
            DeniedRange::SharedAddressSpace => "shared address space",
            DeniedRange::LinkLocal => "link-local",
            DeniedRange::UniqueLocal => "unique-local",
            DeniedRange::Multicast => "multicast",
            DeniedRange::Broadcast => "broadcast",
            DeniedRange::Reserved => "reserved",
        }
    }
}

impl fmt::Display for DeniedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The range `ip` falls in when it is one the host does not call by
/// default; `None` for a public address.
pub fn denied_range(ip: IpAddr) -> Option<DeniedRange> {
    match ip {
        IpAddr::V4(v4) => denied_v4(v4),
        IpAddr::V6(v6) => denied_v6(v6),
    }
}

fn denied_v4(ip: Ipv4Addr) -> Option<DeniedRange> {
    let [a, b, c, _] = ip.octets();
    let range = match (a, b, c) {
        (0, _, _) => DeniedRange::Unspecified,
        (127, _, _) => DeniedRange::Loopback,
        (10, _, _) | (192, 168, _) => DeniedRange::Private,
        (172, 16..=31, _) => DeniedRange::Private,
        (100, 64..=127, _) => DeniedRange::SharedAddressSpace,
        (169, 254, _) => DeniedRange::LinkLocal,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => DeniedRange::Reserved,
        (198, 18..=19, _) => DeniedRange::Reserved,
        (224..=239, _, _) => DeniedRange::Multicast,
        _ if ip == Ipv4Addr::BROADCAST => DeniedRange::Broadcast,
        (240..=255, _, _) => DeniedRange::Reserved,
        _ => return None,
    };
    Some(range)
}

fn denied_v6(ip: Ipv6Addr) -> Option<DeniedRange> {
    if ip.is_unspecified() {
        return Some(DeniedRange::Unspecified);
    }
    if ip.is_loopback() {
        return Some(DeniedRange::Loopback);
    }
    // Addresses that carry an IPv4 address reach it: judge that one.
    if let Some(v4) = embedded_v4(ip) {
        return denied_v4(v4).or(Some(DeniedRange::Reserved).filter(|_| is_v4_compatible(ip)));
    }
    let s = ip.segments();
    let range = match s[0] {
        0xfe80..=0xfebf => DeniedRange::LinkLocal,
        0xfec0..=0xfeff => DeniedRange::Private,
        0xfc00..=0xfdff => DeniedRange::UniqueLocal,
        0xff00..=0xffff => DeniedRange::Multicast,
        // 64:ff9b:1::/48, local-use NAT64 (RFC 8215).
        0x0064 if s[1] == 0xff9b && s[2] == 1 => DeniedRange::Private,
        // 2001:db8::/32 documentation.
        0x2001 if s[1] == 0x0db8 => DeniedRange::Reserved,
        // 2001::/23, the IETF's protocol assignments: Teredo (2001::/32,
        // which tunnels to an IPv4 address), benchmarking, ORCHID and the
        // rest. Nothing a webhook lives on.
        0x2001 if s[1] < 0x0200 => DeniedRange::Reserved,
        // 3fff::/20 documentation (RFC 9637).
        0x3fff if s[1] < 0x1000 => DeniedRange::Reserved,
        // 5f00::/16, SRv6 segment identifiers.
        0x5f00 => DeniedRange::Reserved,
        // 100::/64 discard-only.
        0x0100 if s[1..4] == [0, 0, 0] => DeniedRange::Reserved,
        _ => return None,
    };
    Some(range)
}

/// `::a.b.c.d` (deprecated IPv4-compatible; `::` and `::1` excluded
/// before this is asked).
fn is_v4_compatible(ip: Ipv6Addr) -> bool {
    ip.segments()[..6] == [0; 6]
}

/// The IPv4 address an IPv6 address forwards to: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), well-known NAT64
/// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:AABB:CCDD::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return Some(tail);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// An address block, `ADDR/PREFIX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Option<Cidr> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = addr.parse().ok()?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                digits.parse::<u8>().ok().filter(|p| *p <= max)?
            }
            Some(_) => return None,
        };
        Some(Cidr { network, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4-mapped IPv6 address is the IPv4 address it maps.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(
                u128::from(u32::from(net)),
                u128::from(u32::from(ip)),
                32,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(u128::from(net), u128::from(ip), 128, self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_eq(net: u128, ip: u128, width: u8, prefix: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = u32::from(width - prefix);
    (net >> shift) == (ip >> shift)
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// What one `--webhook-allow` entry lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowTarget {
    /// A host name (lowercase, no trailing dot): whatever it resolves to.
    Name(String),
    Network(Cidr),
}

/// One operator allowlist entry: `HOST`, `IP`, `CIDR`, optionally with
/// `:PORT` (`[v6]:PORT` for an IPv6 address) to allow only that port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    pub target: AllowTarget,
    pub port: Option<u16>,
}

impl AllowEntry {
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let bad = || format!("expected HOST, IP or CIDR with an optional :PORT, got {text:?}");
        if let Some(cidr) = Cidr::parse(text) {
            return Ok(AllowEntry {
                target: AllowTarget::Network(cidr),
                port: None,
            });
        }
        if let Ok(socket) = text.parse::<std::net::SocketAddr>() {
            return Ok(AllowEntry {
                target: AllowTarget::Network(Cidr {
                    network: socket.ip(),
                    prefix: if socket.is_ipv4() { 32 } else { 128 },
                }),
                port: Some(socket.port()),
            });
        }
        let (head, port) = match text.rsplit_once(':') {
            Some((head, port)) => (head, Some(port.parse::<u16>().map_err(|_| bad())?)),
            None => (text, None),
        };
        if let Some(cidr) = Cidr::parse(head) {
            return Ok(AllowEntry {
                target: AllowTarget::Network(cidr),
                port,
            });
        }
        let name = normalize_name(head);
        let valid = !name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
        if !valid {
            return Err(bad());
        }
        Ok(AllowEntry {
            target: AllowTarget::Name(name),
            port,
        })
    }

    fn port_ok(&self, port: Option<u16>) -> bool {
        match self.port {
            None => true,
            Some(allowed) => port == Some(allowed),
        }
    }
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            AllowTarget::Name(name) => f.write_str(name)?,
            AllowTarget::Network(cidr) => write!(f, "{cidr}")?,
        }
        match self.port {
            Some(port) => write!(f, " port {port}"),
            None => Ok(()),
        }
    }
}

fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// Why a call may not go somewhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressDenied {
    #[error("{ip} is a {range} address, which this host does not call")]
    Address { ip: IpAddr, range: DeniedRange },
    #[error("{name} is allowed only on other ports")]
    Port { name: String },
    #[error("every address {name} resolves to is denied by the egress policy")]
    Resolved { name: String },
}

/// The host's egress policy: every public address, plus what the
/// operator allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    allow: Vec<AllowEntry>,
}

impl EgressPolicy {
    pub fn new(allow: Vec<AllowEntry>) -> EgressPolicy {
        EgressPolicy { allow }
    }

    /// Adds an entry to the allowlist.
    pub fn allow(&mut self, entry: AllowEntry) {
        if !self.allow.contains(&entry) {
            self.allow.push(entry);
        }
    }

    pub fn allowlist(&self) -> &[AllowEntry] {
        &self.allow
    }

    /// Whether connecting to `ip` (on `port`, when known) is allowed. A
    /// port-restricted entry never matches an unknown port.
    pub fn check_ip(&self, ip: IpAddr, port: Option<u16>) -> Result<(), EgressDenied> {
        let Some(range) = denied_range(ip) else {
            return Ok(());
        };
        let allowed = self.allow.iter().any(|entry| match &entry.target {
            AllowTarget::Network(cidr) => cidr.contains(ip) && entry.port_ok(port),
            AllowTarget::Name(_) => false,
        });
        if allowed {
            Ok(())
        } else {
            Err(EgressDenied::Address { ip, range })
        }
    }

    /// Whether the operator named `name` (any port): every address it
    /// resolves to is then allowed.
    pub fn trusts_name(&self, name: &str) -> bool {
        let name = normalize_name(name);
        self.allow
            .iter()
            .any(|entry| matches!(&entry.target, AllowTarget::Name(allowed) if *allowed == name))
    }

    /// The check of a URL's host before anything is resolved: an IP
    /// literal is judged as the address it is; a name the operator allowed
    /// only on other ports is refused; any other name is judged when it
    /// resolves.
    pub fn check_host(&self, host: &url::Host<&str>, port: u16) -> Result<(), EgressDenied> {
        match host {
            url::Host::Ipv4(ip) => self.check_ip(IpAddr::V4(*ip), Some(port)),
            url::Host::Ipv6(ip) => self.check_ip(IpAddr::V6(*ip), Some(port)),
            url::Host::Domain(name) => {
                let name = normalize_name(name);
                let named: Vec<&AllowEntry> = self
                    .allow
                    .iter()
                    .filter(|entry| matches!(&entry.target, AllowTarget::Name(allowed) if *allowed == name))
                    .collect();
                if named.is_empty() || named.iter().any(|entry| entry.port_ok(Some(port))) {
                    Ok(())
                } else {
                    Err(EgressDenied::Port { name })
                }
            }
        }
    }

    /// The check of a URL when a ref is written (`None` = acceptable now;
    /// names are judged again on every call).
    pub fn check_url(&self, url: &url::Url) -> Result<(), EgressDenied> {
        match (url.host(), url.port_or_known_default()) {
            (Some(host), Some(port)) => self.check_host(&host, port),
            _ => Ok(()),
        }
    }

    /// The addresses a name resolved to that may be connected to (the
    /// port is not known at resolution: port-restricted address entries do
    /// not apply).
    pub fn filter_resolved(
        &self,
        name: &str,
        resolved: Vec<IpAddr>,
    ) -> Result<Vec<IpAddr>, EgressDenied> {
        if self.trusts_name(name) {
            return Ok(resolved);
        }
        let allowed: Vec<IpAddr> = resolved
            .into_iter()
            .filter(|ip| self.check_ip(*ip, None).is_ok())
            .collect();
        if allowed.is_empty() {
            Err(EgressDenied::Resolved {
                name: normalize_name(name),
            })
        } else {
            Ok(allowed)
        }
    }
}
