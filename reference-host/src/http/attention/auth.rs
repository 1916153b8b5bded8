//! Credentials that hold an authority (the attention extension's
//! confirmations): configured apart from tenant tokens, each for one tenant
//! and one authority. A tenant's own token is still a known credential
//! here, but it holds no authority; and a body never grants one.

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::super::auth::{bearer_token, TokenError, Tokens};
use super::super::error::ApiError;
use super::super::AppState;
use crate::domain::attention::Authority;
use crate::domain::Tenant;

/// The credentials that hold the host's or a principal's authority.
#[derive(Debug, Clone, Default)]
pub struct Authorities {
    host: Tokens,
    principal: Tokens,
}

impl Authorities {
    /// `(token, tenant)` pairs per authority. A token may hold one
    /// authority only.
    pub fn new(
        host: &[(String, String)],
        principal: &[(String, String)],
    ) -> Result<Authorities, TokenError> {
        let all: Vec<(String, String)> = host.iter().chain(principal).cloned().collect();
        Tokens::new(&all)?;
        Ok(Authorities {
            host: Tokens::new(host)?,
            principal: Tokens::new(principal)?,
        })
    }

    /// The tenant and authority of `token`, if it holds one. Both lists are
    /// always compared, so the time taken does not say which matched.
    fn of(&self, token: &str) -> Option<(Tenant, Authority)> {
        let host = self.host.tenant(token);
        let principal = self.principal.tenant(token);
        match (host, principal) {
            (Some(tenant), _) => Some((tenant.clone(), Authority::Host)),
            (None, Some(tenant)) => Some((tenant.clone(), Authority::Principal)),
            (None, None) => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.host.is_empty() && self.principal.is_empty()
    }
}

/// Who is confirming: the tenant the credential is for, and the authority
/// it holds (`None` for a tenant's own token).
#[derive(Debug, Clone)]
pub struct Confirmer {
    pub tenant: Tenant,
    pub authority: Option<Authority>,
}

impl FromRequestParts<AppState> for Confirmer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Confirmer, ApiError> {
        let now = Instant::now();
        let source = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0.ip());
        if let Some(wait) = state.throttle.blocked_at(source, now) {
            return Err(ApiError::too_many_failures(wait));
        }
        let confirmer = confirmer(parts, state);
        if confirmer.is_err() && parts.headers.contains_key(AUTHORIZATION) {
            state.throttle.fail_at(source, now);
        }
        confirmer
    }
}

fn confirmer(parts: &Parts, state: &AppState) -> Result<Confirmer, ApiError> {
    let token = bearer_token(parts)?;
    if let Some((tenant, authority)) = state.authorities.of(token) {
        return Ok(Confirmer {
            tenant,
            authority: Some(authority),
        });
    }
    state
        .tokens
        .tenant(token)
        .cloned()
        .map(|tenant| Confirmer {
            tenant,
            authority: None,
        })
        .ok_or_else(ApiError::unauthorized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(token: &str, tenant: &str) -> (String, String) {
        (token.to_string(), tenant.to_string())
    }

    #[test]
    fn each_token_holds_one_authority_for_one_tenant() {
        let authorities =
            Authorities::new(&[pair("op", "acme")], &[pair("boss", "acme")]).expect("valid");
        assert_eq!(
            authorities.of("op"),
            Some((Tenant::parse("acme").expect("tenant"), Authority::Host))
        );
        assert_eq!(
            authorities.of("boss").map(|(_, authority)| authority),
            Some(Authority::Principal)
        );
        assert_eq!(authorities.of("tok-a"), None);
        assert_eq!(
            Authorities::new(&[pair("t", "acme")], &[pair("t", "acme")]).err(),
            Some(TokenError::Duplicate)
        );
    }
}
