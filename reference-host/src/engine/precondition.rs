//! `If-Match` on the goal's strong `ETag` (`"<version>"`).

/// A parsed `If-Match` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: any current version matches.
    Any,
    /// The versions named by strong tags; weak or foreign tags match nothing.
    Versions(Vec<u64>),
}

impl IfMatch {
    pub fn parse(header: &str) -> IfMatch {
        if header.trim() == "*" {
            return IfMatch::Any;
        }
        let versions = header
            .split(',')
            .filter_map(|tag| {
                let tag = tag.trim();
                let inner = tag.strip_prefix('"')?.strip_suffix('"')?;
                // Only our own spelling: plain digits, no sign or padding.
                let canonical = !inner.is_empty()
                    && inner.bytes().all(|byte| byte.is_ascii_digit())
                    && (inner == "0" || !inner.starts_with('0'));
                if canonical {
                    inner.parse().ok()
                } else {
                    None
                }
            })
            .collect();
        IfMatch::Versions(versions)
    }

    pub fn matches(&self, version: u64) -> bool {
        match self {
            IfMatch::Any => true,
            IfMatch::Versions(versions) => versions.contains(&version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strong_tags_match_their_version_only() {
        assert!(IfMatch::parse("\"3\"").matches(3));
        assert!(!IfMatch::parse("\"3\"").matches(4));
        assert!(IfMatch::parse("\"1\", \"3\"").matches(3));
        assert!(IfMatch::parse("*").matches(42));
    }

    #[test]
    fn weak_and_malformed_tags_match_nothing() {
        for header in ["W/\"3\"", "3", "\"03\"", "\"+3\"", "\"\"", "", "\"3"] {
            assert!(!IfMatch::parse(header).matches(3), "{header:?}");
        }
    }
}
