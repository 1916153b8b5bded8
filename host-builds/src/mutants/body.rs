//! Request bodies as a careless parser reads them: the HTTP mutants'
//! duplicate-key and huge-number bugs.

/// Whether some JSON object in `bytes` repeats a key (the body parses).
pub(super) fn has_duplicate_keys(bytes: &[u8]) -> bool {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::cell::Cell;

    struct Scan<'a>(&'a Cell<bool>);

    impl<'de> DeserializeSeed<'de> for Scan<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Scan<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
            while items.next_element_seed(Scan(self.0))?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = entries.next_key::<String>()? {
                if !seen.insert(key) {
                    self.0.set(true);
                }
                entries.next_value_seed(Scan(self.0))?;
            }
            Ok(())
        }
    }

    let found = Cell::new(false);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    Scan(&found).deserialize(&mut deserializer).is_ok() && found.get()
}

/// `bytes` with every number too large for a double replaced by the
/// largest integer; `None` when there is none.
pub(super) fn saturated(bytes: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            out.push(c);
            continue;
        }
        if c == '-' || c.is_ascii_digit() {
            let mut end = start + c.len_utf8();
            while let Some(&(at, next)) = chars.peek() {
                if next.is_ascii_digit() || matches!(next, '.' | 'e' | 'E' | '+' | '-') {
                    end = at + next.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let token = &text[start..end];
            let digits = token.bytes().filter(u8::is_ascii_digit).count();
            let huge = token.parse::<f64>().is_ok_and(|n| n.is_infinite()) || digits > 20;
            if huge {
                changed = true;
                if token.starts_with('-') {
                    out.push('-');
                }
                out.push_str(&u64::MAX.to_string());
            } else {
                out.push_str(token);
            }
            continue;
        }
        out.push(c);
    }
    changed.then(|| out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        assert!(has_duplicate_keys(br#"{"a": 1, "a": 2}"#));
        assert!(has_duplicate_keys(br#"{"b": [{"c": 1, "c": 1}]}"#));
        assert!(!has_duplicate_keys(br#"{"a": 1, "b": {"a": 2}}"#));
        assert!(!has_duplicate_keys(b"{ nope"));
    }

    #[test]
    fn only_numbers_no_double_holds_are_saturated() {
        let body = br#"{"n": 1e400, "s": "1e400", "ok": 12, "neg": -1e400}"#;
        let rewritten = String::from_utf8(saturated(body).expect("changed")).expect("utf-8");
        assert_eq!(
            rewritten,
            r#"{"n": 18446744073709551615, "s": "1e400", "ok": 12, "neg": -18446744073709551615}"#
        );
        assert_eq!(saturated(br#"{"n": 3}"#), None);
    }
}
