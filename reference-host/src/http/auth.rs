//! Bearer tokens → tenants. A goal endpoint without a known token is 401.
//!
//! Tokens are kept as SHA-256 digests and a presented token is compared with
//! every configured one in constant time, so neither the answer's timing nor
//! a lookup structure tells an attacker how much of a guess was right.

use sha2::{Digest, Sha256};

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::error::ApiError;
use super::AppState;
use crate::domain::egress::Cidr;
use crate::domain::Tenant;

/// The header a proxy names the client in.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("a token must be non-empty visible ASCII without spaces")]
    BadToken,
    #[error("tenant {0:?} is not a valid tenant name")]
    BadTenant(String),
    #[error("a token is configured twice")]
    Duplicate,
}

type TokenDigest = [u8; 32];

/// The configured credentials.
#[derive(Clone, Default)]
pub struct Tokens {
    tenants: Vec<(TokenDigest, Tenant)>,
}

fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// Equal without an early exit: the time taken does not depend on where
/// the first difference is. `black_box` keeps the optimiser from turning the
/// fold back into a short-circuiting comparison.
fn constant_time_eq(left: &TokenDigest, right: &TokenDigest) -> bool {
    let difference = left
        .iter()
        .zip(right.iter())
        .fold(0u8, |acc, (a, b)| acc | std::hint::black_box(a ^ b));
    std::hint::black_box(difference) == 0
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the tokens themselves.
        f.debug_struct("Tokens")
            .field("count", &self.tenants.len())
            .finish()
    }
}

impl Tokens {
    /// `(token, tenant)` pairs.
    pub fn new(pairs: &[(String, String)]) -> Result<Tokens, TokenError> {
        let mut tenants: Vec<(TokenDigest, Tenant)> = Vec::with_capacity(pairs.len());
        for (token, tenant) in pairs {
            let valid = !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_graphic());
            if !valid {
                return Err(TokenError::BadToken);
            }
            let tenant =
                Tenant::parse(tenant).ok_or_else(|| TokenError::BadTenant(tenant.clone()))?;
            let digest = digest(token);
            if tenants.iter().any(|(known, _)| known == &digest) {
                return Err(TokenError::Duplicate);
            }
            tenants.push((digest, tenant));
        }
        Ok(Tokens { tenants })
    }

    /// The tenant of `token`. Every configured token is compared, whichever
    /// matches, so the time taken depends only on how many are configured.
    pub fn tenant(&self, token: &str) -> Option<&Tenant> {
        let presented = digest(token);
        let mut found = None;
        for (known, tenant) in &self.tenants {
            if constant_time_eq(known, &presented) {
                found = Some(tenant);
            }
        }
        found
    }

    pub fn is_empty(&self) -> bool {
        self.tenants.is_empty()
    }
}

/// The tenant of the request's bearer token.
#[derive(Debug, Clone)]
pub struct Caller(pub Tenant);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    /// The token is compared first: a known one is never throttled, so
    /// failures from an address (a proxy's, say) cannot lock out the valid
    /// tenants behind it. An unknown one counts against its source, which
    /// is then refused with 429 for the rest of the window. (The throttle
    /// ran before the comparison: 100 bad tokens from one address locked
    /// every valid tenant behind it out for 60 s.)
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        match Caller::from_header(parts, state) {
            Ok(caller) => {
                // Its connection is no longer anonymous (`serve::table`),
                // and the request log names its tenant.
                if let Some(mark) = parts.extensions.get::<crate::serve::ConnectionMark>() {
                    mark.authenticated();
                }
                if let Some(logged) = parts.extensions.get::<super::trace::LoggedCaller>() {
                    logged.set(&caller.0);
                }
                Ok(caller)
            }
            // Only a presented credential is a guess: a request without
            // one (the suite sends dozens) learns nothing.
            Err(refused) if !parts.headers.contains_key(AUTHORIZATION) => Err(refused),
            Err(refused) => {
                // A latency-free decision on the monotonic clock; the
                // window logic itself is tested with explicit instants.
                let now = Instant::now();
                let source = client_address(parts, &state.trusted_proxies);
                if let Some(wait) = state.throttle.blocked_at(source, now) {
                    return Err(ApiError::too_many_failures(wait));
                }
                state.throttle.fail_at(source, now);
                Err(refused)
            }
        }
    }
}

/// Who sent the request, for the throttle: the connection's peer, or,
/// when the peer is a trusted proxy, the nearest address in
/// `X-Forwarded-For` that is not one (read from the right, the end the
/// proxies append to; what a client wrote further left is not believed).
/// `X-Forwarded-For` from any other peer is ignored: a client could name
/// anyone in it.
fn client_address(parts: &Parts, proxies: &[Cidr]) -> Option<IpAddr> {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())?;
    if !proxies.iter().any(|proxy| proxy.contains(peer)) {
        return Some(peer);
    }
    let mut hops = Vec::new();
    for value in parts.headers.get_all(X_FORWARDED_FOR) {
        let Ok(text) = value.to_str() else {
            return Some(peer);
        };
        hops.extend(text.split(',').map(str::trim));
    }
    for hop in hops.iter().rev() {
        let Ok(address) = hop.parse::<IpAddr>() else {
            // Unreadable: the hops before it cannot be told from forged.
            return Some(peer);
        };
        if !proxies.iter().any(|proxy| proxy.contains(address)) {
            return Some(address);
        }
    }
    Some(peer)
}

impl Caller {
    fn from_header(parts: &Parts, state: &AppState) -> Result<Caller, ApiError> {
        state
            .tokens
            .tenant(bearer_token(parts)?)
            .cloned()
            .map(Caller)
            .ok_or_else(ApiError::unauthorized)
    }
}

/// The token of the request's `Authorization: Bearer …` header; 401 when
/// there is none, or the header is unreadable or of another scheme.
pub(super) fn bearer_token(parts: &Parts) -> Result<&str, ApiError> {
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(ApiError::unauthorized)?;
    let (scheme, token) = header
        .trim()
        .split_once(' ')
        .ok_or_else(ApiError::unauthorized)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::unauthorized());
    }
    Ok(token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(peer: [u8; 4], forwarded: &[&str]) -> Parts {
        let mut request = axum::http::Request::builder();
        for value in forwarded {
            request = request.header(X_FORWARDED_FOR, *value);
        }
        let (mut parts, ()) = request.body(()).expect("a request").into_parts();
        parts
            .extensions
            .insert(ConnectInfo(SocketAddr::from((peer, 40_000))));
        parts
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_proxies() {
        let proxies = [Cidr::parse("10.0.0.0/24").expect("cidr")];
        let ip = |text: &str| Some(text.parse::<IpAddr>().expect("an address"));
        // From a proxy: the nearest hop that is not one.
        assert_eq!(
            client_address(&parts([10, 0, 0, 5], &["203.0.113.9, 10.0.0.7"]), &proxies),
            ip("203.0.113.9")
        );
        // A client's own entries to the left are not believed.
        assert_eq!(
            client_address(
                &parts([10, 0, 0, 5], &["1.2.3.4", "198.51.100.2"]),
                &proxies
            ),
            ip("198.51.100.2")
        );
        // From anyone else, the header is ignored.
        assert_eq!(
            client_address(&parts([192, 0, 2, 1], &["203.0.113.9"]), &proxies),
            ip("192.0.2.1")
        );
        // Nothing readable: the proxy itself.
        assert_eq!(
            client_address(&parts([10, 0, 0, 5], &["not-an-address"]), &proxies),
            ip("10.0.0.5")
        );
        assert_eq!(
            client_address(&parts([10, 0, 0, 5], &[]), &proxies),
            ip("10.0.0.5")
        );
    }

    fn pair(token: &str, tenant: &str) -> (String, String) {
        (token.to_string(), tenant.to_string())
    }

    #[test]
    fn tokens_map_to_tenants() {
        let tokens = Tokens::new(&[pair("tok-a", "acme"), pair("tok-b", "globex")]).expect("valid");
        assert_eq!(tokens.tenant("tok-a").map(Tenant::as_str), Some("acme"));
        assert_eq!(tokens.tenant("tok-c"), None);
    }

    #[test]
    fn near_misses_do_not_match() {
        let tokens = Tokens::new(&[pair("tok-abcdef", "acme")]).expect("valid");
        for guess in ["tok-abcdeg", "tok-abcde", "tok-abcdefg", "TOK-ABCDEF", ""] {
            assert_eq!(tokens.tenant(guess), None, "{guess:?}");
        }
        assert!(constant_time_eq(&digest("x"), &digest("x")));
        assert!(!constant_time_eq(&digest("x"), &digest("y")));
    }

    #[test]
    fn bad_configuration_is_refused() {
        assert_eq!(
            Tokens::new(&[pair("", "acme")]).err(),
            Some(TokenError::BadToken)
        );
        assert_eq!(
            Tokens::new(&[pair("a b", "acme")]).err(),
            Some(TokenError::BadToken)
        );
        assert!(matches!(
            Tokens::new(&[pair("t", "")]),
            Err(TokenError::BadTenant(_))
        ));
        assert_eq!(
            Tokens::new(&[pair("t", "a"), pair("t", "b")]).err(),
            Some(TokenError::Duplicate)
        );
    }
}
