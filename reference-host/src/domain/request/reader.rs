//! Small typed readers over `serde_json::Value` that refuse with a pointer.

use serde_json::{Map, Number, Value};

use super::RequestError;

/// The largest integer a JSON number carries exactly as a double.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

pub(super) fn invalid(pointer: &str, message: impl Into<String>) -> RequestError {
    RequestError::Invalid {
        pointer: pointer.to_string(),
        message: message.into(),
    }
}

/// `parent` joined with one escaped reference token (RFC 6901).
pub(super) fn child(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

pub(super) fn object<'a>(
    value: &'a Value,
    pointer: &str,
) -> Result<&'a Map<String, Value>, RequestError> {
    value
        .as_object()
        .ok_or_else(|| invalid(pointer, "must be an object"))
}

/// Refuses the first key (in the body's order) that is not allowed.
pub(super) fn only_keys(
    map: &Map<String, Value>,
    pointer: &str,
    allowed: &[&str],
) -> Result<(), RequestError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(invalid(&child(pointer, key), "unknown field")),
        None => Ok(()),
    }
}

pub(super) fn required<'a>(
    map: &'a Map<String, Value>,
    pointer: &str,
    key: &str,
) -> Result<&'a Value, RequestError> {
    map.get(key)
        .ok_or_else(|| invalid(&child(pointer, key), "is required"))
}

pub(super) fn string<'a>(value: &'a Value, pointer: &str) -> Result<&'a str, RequestError> {
    value
        .as_str()
        .ok_or_else(|| invalid(pointer, "must be a string"))
}

pub(super) fn nullable_string<'a>(
    value: &'a Value,
    pointer: &str,
) -> Result<Option<&'a str>, RequestError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text)),
        _ => Err(invalid(pointer, "must be a string or null")),
    }
}

fn number<'a>(value: &'a Value, pointer: &str) -> Result<&'a Number, RequestError> {
    match value {
        Value::Number(number) => Ok(number),
        _ => Err(invalid(pointer, "must be a number")),
    }
}

/// A whole number `>= min`. Integral doubles (`3.0`) count as whole, as in
/// JSON Schema; fractions and negatives are refused.
pub(super) fn integer_at_least(
    value: &Value,
    pointer: &str,
    min: u64,
) -> Result<u64, RequestError> {
    let number = number(value, pointer)?;
    let whole = match number.as_u64() {
        Some(whole) => Some(whole),
        None => number.as_f64().and_then(|double| {
            let integral = double.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&double);
            // Exact: integral and within the safe range.
            integral.then_some(double as u64)
        }),
    };
    let Some(whole) = whole else {
        let negative = number.as_f64().is_some_and(|double| double < 0.0);
        let message = if negative {
            format!("must be a whole number >= {min}")
        } else {
            "must be a whole number".to_string()
        };
        return Err(invalid(pointer, message));
    };
    if whole < min {
        return Err(invalid(pointer, format!("must be a whole number >= {min}")));
    }
    Ok(whole)
}

/// A finite number `>= 0`, as written.
pub(super) fn non_negative_number(value: &Value, pointer: &str) -> Result<Number, RequestError> {
    let number = number(value, pointer)?;
    match number.as_f64() {
        Some(double) if double.is_finite() && double >= 0.0 => Ok(number.clone()),
        _ => Err(invalid(pointer, "must be a number >= 0")),
    }
}
