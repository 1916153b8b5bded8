//! Checking a host's webhook signature (PROFILE.md#seam-webhooks):
//! `X-Goalpost-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key,
//! "<t>.<body>")>`, the key being the secret the suite was given or, for a
//! host given that secret as its master, the tenant's key derived from it
//! (hex HMAC-SHA256(secret, tenant), tenant from `X-Goalpost-Tenant`).
//! Written apart from the host's code on purpose: the suite checks the
//! scheme, not the host's implementation of it.

use sha2::{Digest, Sha256};

use super::log::SecretCheck;

pub const SIGNATURE_HEADER: &str = "x-goalpost-signature";
pub const TENANT_HEADER: &str = "x-goalpost-tenant";
/// Signatures further than this from the mock's clock are refused as
/// replays.
pub const REPLAY_WINDOW_SECS: i64 = 300;

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// How a call's signature compares, given the secret the suite knows.
pub fn check(
    header: Option<&str>,
    tenant: Option<&str>,
    body: &[u8],
    known: Option<&str>,
    now_unix: i64,
) -> SecretCheck {
    let Some(header) = header else {
        return SecretCheck::Missing;
    };
    let Some(secret) = known else {
        return SecretCheck::Present;
    };
    let mut stamp = None;
    let mut macs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => stamp = Some(value),
            Some(("v1", value)) => macs.push(value),
            _ => {}
        }
    }
    let Some((stamp, unix)) = stamp.and_then(|t| Some((t, t.parse::<i64>().ok()?))) else {
        return SecretCheck::Mismatch;
    };
    let mut keys = vec![secret.to_string()];
    if let Some(tenant) = tenant {
        keys.push(hex(&hmac(secret.as_bytes(), &[tenant.as_bytes()])));
    }
    let valid = keys.iter().any(|key| {
        let want = hex(&hmac(key.as_bytes(), &[stamp.as_bytes(), b".", body]));
        macs.iter().any(|got| same(got, &want))
    });
    if !valid {
        SecretCheck::Mismatch
    } else if (now_unix - unix).abs() > REPLAY_WINDOW_SECS {
        SecretCheck::Stale
    } else {
        SecretCheck::Match
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(key: &str, unix: i64, body: &[u8]) -> String {
        let stamp = unix.to_string();
        format!(
            "t={stamp},v1={}",
            hex(&hmac(key.as_bytes(), &[stamp.as_bytes(), b".", body]))
        )
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hex(&hmac(b"Jefe", &[b"what do ya want for nothing?"])),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn signatures_under_the_secret_or_the_tenant_key_match() {
        let body = b"{\"goalId\":\"g\"}";
        let now = 1_700_000_000;
        let direct = sign("s", now, body);
        assert_eq!(
            check(Some(&direct), None, body, Some("s"), now),
            SecretCheck::Match
        );
        let tenant_key = hex(&hmac(b"s", &[b"tenant-a"]));
        let derived = sign(&tenant_key, now, body);
        assert_eq!(
            check(Some(&derived), Some("tenant-a"), body, Some("s"), now),
            SecretCheck::Match
        );
    }

    #[test]
    fn forged_replayed_and_unknown_signatures_do_not() {
        let body = b"{}";
        let now = 1_700_000_000;
        // Tenant B's key signing a call that claims to be for tenant A.
        let key_b = hex(&hmac(b"s", &[b"tenant-b"]));
        let forged = sign(&key_b, now, body);
        assert_eq!(
            check(Some(&forged), Some("tenant-a"), body, Some("s"), now),
            SecretCheck::Mismatch
        );
        let old = sign("s", now - REPLAY_WINDOW_SECS - 1, body);
        assert_eq!(
            check(Some(&old), None, body, Some("s"), now),
            SecretCheck::Stale
        );
        let good = sign("s", now, body);
        assert_eq!(
            check(Some(&good), None, b"{ }", Some("s"), now),
            SecretCheck::Mismatch
        );
        assert_eq!(
            check(Some("garbage"), None, body, Some("s"), now),
            SecretCheck::Mismatch
        );
        assert_eq!(
            check(Some(&good), None, body, None, now),
            SecretCheck::Present
        );
        assert_eq!(
            check(None, None, body, Some("s"), now),
            SecretCheck::Missing
        );
    }
}
