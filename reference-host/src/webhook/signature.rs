//! How a receiver knows a call is the host's and for which tenant (DESIGN
//! "Signed webhooks", PROFILE.md#seam-webhooks): each call carries
//! `X-Goalpost-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key,
//! "<t>.<body>")>` under a key of the goal's tenant only, so one tenant's
//! receiver learns nothing that lets it forge calls to another's.

use sha2::{Digest, Sha256};

use super::WebhookSecret;

pub const SIGNATURE_HEADER: &str = "x-goalpost-signature";
pub const TENANT_HEADER: &str = "x-goalpost-tenant";
pub const GOAL_HEADER: &str = "x-goalpost-goal";
/// How old a signature a receiver should still accept, in seconds (either
/// side of its own clock).
pub const REPLAY_WINDOW_SECS: i64 = 300;

const BLOCK: usize = 64;

/// HMAC-SHA256 (RFC 2104) of the concatenated `parts`.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|byte| byte ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|byte| byte ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The tenant's signing key when the operator gave none for it: hex of
/// HMAC-SHA256(master secret, tenant), so an operator can hand each tenant
/// its key (`printf %s TENANT | openssl dgst -sha256 -hmac MASTER`).
pub fn tenant_secret(master: &WebhookSecret, tenant: &str) -> WebhookSecret {
    WebhookSecret::new(&hex(&hmac_sha256(
        master.expose().as_bytes(),
        &[tenant.as_bytes()],
    )))
    .expect("hex is visible ASCII")
}

/// The `X-Goalpost-Signature` value for `body` sent at `unix` seconds.
pub fn sign(key: &WebhookSecret, unix: i64, body: &[u8]) -> String {
    let stamp = unix.to_string();
    let mac = hmac_sha256(key.expose().as_bytes(), &[stamp.as_bytes(), b".", body]);
    format!("t={stamp},v1={}", hex(&mac))
}

/// Why a signature does not authenticate a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature header is not t=<unix>,v1=<hex>")]
    Malformed,
    #[error("the signature is older or newer than the replay window")]
    Stale,
    #[error("the signature does not match the body under this key")]
    Mismatch,
}

/// Checks a signature header as a receiver should: well-formed, within
/// [`REPLAY_WINDOW_SECS`] of `now_unix`, and the MAC compared in constant
/// time.
pub fn verify(
    key: &WebhookSecret,
    header: &str,
    body: &[u8],
    now_unix: i64,
) -> Result<(), SignatureError> {
    let mut stamp = None;
    let mut macs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => stamp = Some(value),
            Some(("v1", value)) => macs.push(value),
            _ => {}
        }
    }
    let stamp = stamp.ok_or(SignatureError::Malformed)?;
    let unix: i64 = stamp.parse().map_err(|_| SignatureError::Malformed)?;
    if macs.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now_unix - unix).abs() > REPLAY_WINDOW_SECS {
        return Err(SignatureError::Stale);
    }
    let want = hex(&hmac_sha256(
        key.expose().as_bytes(),
        &[stamp.as_bytes(), b".", body],
    ));
    let matches = macs.iter().any(|got| {
        got.len() == want.len()
            && got
                .bytes()
                .zip(want.bytes())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    });
    if matches {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> WebhookSecret {
        WebhookSecret::new(text).expect("valid")
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 and test case 6 (a key longer than a block).
        assert_eq!(
            hex(&hmac_sha256(
                b"Jefe",
                &[b"what do ya want ", b"for nothing?"]
            )),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_body_and_window() {
        let a = tenant_secret(&key("master"), "tenant-a");
        let b = tenant_secret(&key("master"), "tenant-b");
        assert_ne!(a, b);
        let header = sign(&a, 1_700_000_000, b"{\"x\":1}");
        assert!(header.starts_with("t=1700000000,v1="), "{header}");
        assert_eq!(verify(&a, &header, b"{\"x\":1}", 1_700_000_100), Ok(()));
        assert_eq!(
            verify(&b, &header, b"{\"x\":1}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&a, &header, b"{\"x\":2}", 1_700_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(
                &a,
                &header,
                b"{\"x\":1}",
                1_700_000_000 + REPLAY_WINDOW_SECS + 1
            ),
            Err(SignatureError::Stale)
        );
        assert_eq!(verify(&a, "v1=00", b"", 0), Err(SignatureError::Malformed));
    }

    #[test]
    fn the_derived_key_is_what_openssl_prints() {
        // printf %s tenant-a | openssl dgst -sha256 -hmac master
        assert_eq!(
            tenant_secret(&key("master"), "tenant-a").expose(),
            "6422d16aaabd68945231c6a4b3da13d2f0c3de3ffd0b102666d7eef8afa5ea11"
        );
    }
}
