//! `Idempotency-Key` on create: the key a client sends, and the fingerprint
//! of the body it came with (canonical JSON, so key order and whitespace do
//! not matter, then SHA-256).

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::domain::ClientKey;

/// How long a key is remembered.
pub const IDEMPOTENCY_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// The longest key accepted.
pub const MAX_KEY_CHARS: usize = 255;

/// 1 to 255 visible ASCII characters.
pub type IdempotencyKey = ClientKey<MAX_KEY_CHARS>;

/// SHA-256 (hex) of the body's canonical JSON.
pub fn fingerprint(body: &Value) -> String {
    let mut text = String::new();
    canonical(body, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Objects with their keys sorted, no whitespace; scalars as serde_json
/// writes them. Independent of whether `serde_json` keeps insertion order.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, child)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(child, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, child) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical(child, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_are_short_visible_ascii() {
        assert!(IdempotencyKey::parse("create-42").is_some());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_some());
        for bad in ["", " ", "a b", "é", "tab\there"] {
            assert!(IdempotencyKey::parse(bad).is_none(), "{bad:?}");
        }
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_none());
    }

    #[test]
    fn the_fingerprint_ignores_key_order_but_not_values() {
        let one = json!({ "a": 1, "b": { "x": [1, 2], "y": "z" } });
        let same: Value =
            serde_json::from_str(r#"{ "b": { "y": "z", "x": [1,2] }, "a": 1 }"#).expect("JSON");
        assert_eq!(fingerprint(&one), fingerprint(&same));
        assert_ne!(
            fingerprint(&one),
            fingerprint(&json!({ "a": 2, "b": { "x": [1, 2], "y": "z" } }))
        );
        assert_ne!(fingerprint(&json!([1, 2])), fingerprint(&json!([2, 1])));
        assert_ne!(
            fingerprint(&json!({ "a": "1" })),
            fingerprint(&json!({ "a": 1 }))
        );
        assert_eq!(fingerprint(&one).len(), 64);
    }
}
