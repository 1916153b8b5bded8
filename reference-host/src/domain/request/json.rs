//! Request bodies from bytes, stricter than `serde_json::from_slice`: a key
//! repeated in one object (which plain parsing resolves silently, last one
//! wins) and nesting deeper than [`MAX_DEPTH`] are refused, as are invalid
//! UTF-8 and numbers no double can hold. Every refusal is an error, never a
//! panic, and the depth check keeps recursion shallow whatever the input.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Objects and arrays nest at most this deep (the body itself is level 1).
pub const MAX_DEPTH: usize = 32;

/// Why bytes are not an acceptable JSON body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BodyError(String);

/// Parses a whole body: one JSON value, optionally surrounded by whitespace.
pub fn parse_body(bytes: &[u8]) -> Result<Value, BodyError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Level(1)
        .deserialize(&mut deserializer)
        .map_err(|error| BodyError(error.to_string()))?;
    deserializer
        .end()
        .map_err(|error| BodyError(error.to_string()))?;
    Ok(value)
}

/// A value at this nesting level.
#[derive(Clone, Copy)]
struct Level(usize);

impl Level {
    fn enter<E: de::Error>(self) -> Result<Level, E> {
        if self.0 > MAX_DEPTH {
            return Err(E::custom(format_args!(
                "nesting deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(Level(self.0 + 1))
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number out of range"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // Checked before the first element is read, so a deep array is
        // refused on the way down.
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key {key:?} appears twice in one object"
                )));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn plain_json_reads_as_serde_json_reads_it() {
        let text = r#" {"a": [1, -2, 3.5, 1e3, true, null, "x\u00e9"], "b": {"c": {}}} "#;
        let expected: Value = serde_json::from_str(text).expect("JSON");
        assert_eq!(parse_body(text.as_bytes()), Ok(expected));
        assert_eq!(parse_body(b"18446744073709551615"), Ok(json!(u64::MAX)));
        assert_eq!(parse_body(b"-9223372036854775808"), Ok(json!(i64::MIN)));
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": 1, "b": {"c": 1, "c": 1}}"#,
            r#"[{"x": null, "x": null}]"#,
        ] {
            let error = parse_body(text.as_bytes()).expect_err(text);
            assert!(error.to_string().contains("twice"), "{error}");
        }
        assert!(parse_body(br#"{"a": {"a": {"a": 1}}}"#).is_ok());
    }

    #[test]
    fn nesting_is_capped() {
        assert!(parse_body(nested(MAX_DEPTH).as_bytes()).is_ok());
        let error = parse_body(nested(MAX_DEPTH + 1).as_bytes()).expect_err("too deep");
        assert!(error.to_string().contains("nesting"), "{error}");
        let objects = format!(
            "{}1{}",
            r#"{"a":"#.repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        assert!(parse_body(objects.as_bytes()).is_err());
        // Far beyond any stack: refused early, no overflow.
        assert!(parse_body(nested(1_000_000).as_bytes()).is_err());
    }

    #[test]
    fn hostile_bytes_are_refused() {
        for bytes in [
            &b"{\"a\": \"\xff\"}"[..],
            b"\xef\xbb\xbf{}",
            b"{\"a\": 1e400}",
            b"{\"a\": -1e400}",
            br#"{"a": "\ud800"}"#,
            b"{} {}",
            b"",
            b"NaN",
            b"{\"a\": 1,}",
            b"\x00",
        ] {
            assert!(
                parse_body(bytes).is_err(),
                "{:?} was accepted",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
