//! Outbound event webhooks (DESIGN "Event webhooks"): the rules, no I/O.
//! An operator subscribes one URL per tenant (`--event-webhook
//! TENANT=URL`); every committed event of that tenant is POSTed there, one
//! at a time in cursor order, until the receiver answers 2xx. A failed
//! delivery is retried, the same event again, after a delay that doubles
//! from [`FIRST_RETRY_MS`] up to [`MAX_RETRY_MS`], jittered so that many
//! hosts failing against one receiver do not retry in lockstep.

use std::fmt;

use super::ids::Tenant;

/// The delay after the first failed delivery (before jitter).
pub const FIRST_RETRY_MS: u64 = 1_000;
/// The longest delay between two attempts at one event: a receiver down
/// for a day is tried every five minutes, not every second.
pub const MAX_RETRY_MS: u64 = 300_000;
/// The jitter takes up to this share off the nominal delay ("equal
/// jitter"): a delay is between half of the nominal one and all of it, so
/// it still grows with every failure and never exceeds the cap.
const JITTER_SHARE: f64 = 0.5;

/// One subscription: where a tenant's events go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventWebhook {
    pub tenant: Tenant,
    pub url: url::Url,
}

impl EventWebhook {
    /// `TENANT=URL`. The tenant ends at the first `=` (URLs may hold `=`
    /// in their query). The URL must be `http` or `https` with a host and
    /// without credentials: the host authenticates itself with the
    /// signature, and a URL is printed in logs.
    pub fn parse(text: &str) -> Result<EventWebhook, String> {
        let (tenant, url) = text
            .split_once('=')
            .ok_or_else(|| format!("expected TENANT=URL, got {text:?}"))?;
        let tenant = Tenant::parse(tenant)
            .ok_or_else(|| format!("expected TENANT=URL, got {text:?}: the tenant is empty"))?;
        let url = url::Url::parse(url)
            .map_err(|error| format!("{url:?} is not a URL ({error}) in {text:?}"))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(format!(
                "{url} is not an http or https URL (event webhooks are POSTed over HTTP)"
            ));
        }
        if url.host().is_none() {
            return Err(format!("{url} names no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "the URL for tenant {tenant} carries credentials: leave them out \
                 (receivers authenticate the host by X-Goalpost-Signature)"
            ));
        }
        Ok(EventWebhook { tenant, url })
    }
}

impl fmt::Display for EventWebhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.tenant, self.url)
    }
}

/// Why a set of subscriptions cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    #[error("--event-webhook names tenant {0}, which no token belongs to")]
    UnknownTenant(String),
    #[error("--event-webhook gives tenant {0} a second URL: one URL per tenant")]
    Duplicate(String),
}

/// Checks that every subscription names a configured tenant, and each
/// tenant at most once.
pub fn check_subscriptions(
    subscriptions: &[EventWebhook],
    mut known: impl FnMut(&Tenant) -> bool,
) -> Result<(), SubscriptionError> {
    for (index, subscription) in subscriptions.iter().enumerate() {
        let tenant = subscription.tenant.as_str();
        if subscriptions[..index]
            .iter()
            .any(|earlier| earlier.tenant == subscription.tenant)
        {
            return Err(SubscriptionError::Duplicate(tenant.to_string()));
        }
        if !known(&subscription.tenant) {
            return Err(SubscriptionError::UnknownTenant(tenant.to_string()));
        }
    }
    Ok(())
}

/// What one delivery attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The receiver answered 2xx: the event is delivered.
    Delivered,
    /// Anything else (another status, a timeout, a refused connection, an
    /// address the egress policy denies): the same event is tried again.
    Failed,
    /// The receiver answered 410 Gone. The subscription is the operator's,
    /// not the receiver's, so it is not dropped (that would lose events
    /// for good); the event is retried at the longest delay at once, and
    /// the host logs that the operator should change or remove the URL.
    Gone,
}

impl Attempt {
    /// The attempt an HTTP status means.
    pub fn from_status(status: u16) -> Attempt {
        match status {
            200..=299 => Attempt::Delivered,
            410 => Attempt::Gone,
            _ => Attempt::Failed,
        }
    }
}

/// The delay before attempt `failures + 1` after `failures` failed ones
/// in a row (≥ 1), with `jitter` in `[0, 1]` (out of range is clamped):
/// nominally [`FIRST_RETRY_MS`] doubled per further failure, capped at
/// [`MAX_RETRY_MS`], less up to half of it for jitter. A `Gone` answer
/// counts as failing for good: the nominal delay is the cap.
pub fn retry_delay_ms(failures: u32, gone: bool, jitter: f64) -> u64 {
    let nominal = if gone {
        MAX_RETRY_MS
    } else {
        let doublings = failures.saturating_sub(1).min(32);
        FIRST_RETRY_MS
            .saturating_mul(1u64 << doublings)
            .min(MAX_RETRY_MS)
    };
    let jitter = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    // Both factors are at most 1: the product fits and is ≤ nominal.
    let off = (nominal as f64 * JITTER_SHARE * jitter) as u64;
    nominal - off.min(nominal / 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixture::tenant;

    #[test]
    fn a_subscription_is_a_tenant_and_an_http_url() {
        let parsed = EventWebhook::parse("acme=https://hooks.example/goalpost?x=1").expect("valid");
        assert_eq!(parsed.tenant, tenant("acme"));
        assert_eq!(parsed.url.as_str(), "https://hooks.example/goalpost?x=1");
        assert_eq!(
            parsed.to_string(),
            "acme=https://hooks.example/goalpost?x=1"
        );
        for (bad, says) in [
            ("acme", "expected TENANT=URL"),
            ("=http://hooks.example/", "the tenant is empty"),
            ("acme=not a url", "is not a URL"),
            ("acme=ftp://hooks.example/", "not an http or https URL"),
            ("acme=file:///etc/passwd", "not an http or https URL"),
            ("acme=https://user:pw@hooks.example/", "carries credentials"),
        ] {
            let error = EventWebhook::parse(bad).expect_err(bad);
            assert!(error.contains(says), "{bad}: {error}");
        }
        // The credentials are never echoed.
        let error = EventWebhook::parse("acme=https://user:s3cret@hooks.example/")
            .expect_err("credentials");
        assert!(!error.contains("s3cret"), "{error}");
    }

    #[test]
    fn one_url_per_known_tenant() {
        let hook = |text: &str| EventWebhook::parse(text).expect("valid");
        let known = |t: &Tenant| t.as_str() == "acme" || t.as_str() == "globex";
        let both = [
            hook("acme=http://a.example/"),
            hook("globex=http://b.example/"),
        ];
        assert_eq!(check_subscriptions(&both, known), Ok(()));
        assert_eq!(
            check_subscriptions(&[hook("initech=http://a.example/")], known),
            Err(SubscriptionError::UnknownTenant("initech".into()))
        );
        let twice = [
            hook("acme=http://a.example/"),
            hook("acme=http://b.example/"),
        ];
        assert_eq!(
            check_subscriptions(&twice, known),
            Err(SubscriptionError::Duplicate("acme".into()))
        );
    }

    #[test]
    fn only_2xx_delivers_and_410_is_gone() {
        assert_eq!(Attempt::from_status(200), Attempt::Delivered);
        assert_eq!(Attempt::from_status(204), Attempt::Delivered);
        assert_eq!(Attempt::from_status(299), Attempt::Delivered);
        for failed in [100, 301, 304, 400, 404, 429, 500, 503] {
            assert_eq!(Attempt::from_status(failed), Attempt::Failed, "{failed}");
        }
        assert_eq!(Attempt::from_status(410), Attempt::Gone);
    }

    #[test]
    fn the_delay_doubles_to_a_cap_and_jitter_only_shortens_it() {
        // Without jitter: 1 s, 2 s, 4 s, ... up to 5 min, and it stays there.
        let plain: Vec<u64> = (1..=12).map(|n| retry_delay_ms(n, false, 0.0)).collect();
        assert_eq!(
            plain,
            [
                1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000,
                300_000, 300_000
            ]
        );
        assert_eq!(retry_delay_ms(u32::MAX, false, 0.0), MAX_RETRY_MS);
        // `0` failures is read as the first.
        assert_eq!(retry_delay_ms(0, false, 0.0), FIRST_RETRY_MS);
        // Full jitter halves the nominal delay, never less, never more.
        assert_eq!(retry_delay_ms(1, false, 1.0), 500);
        assert_eq!(retry_delay_ms(40, false, 1.0), MAX_RETRY_MS / 2);
        for failures in 1..40 {
            let nominal = retry_delay_ms(failures, false, 0.0);
            for jitter in [0.0, 0.1, 0.5, 0.99, 1.0, 7.0, -3.0, f64::NAN] {
                let delay = retry_delay_ms(failures, false, jitter);
                assert!(
                    delay <= nominal && delay >= nominal / 2,
                    "{failures} {jitter}"
                );
                assert!(delay <= MAX_RETRY_MS);
            }
        }
        // Gone: the longest delay at once.
        assert_eq!(retry_delay_ms(1, true, 0.0), MAX_RETRY_MS);
        assert_eq!(retry_delay_ms(1, true, 1.0), MAX_RETRY_MS / 2);
    }
}
