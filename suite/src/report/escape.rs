//! Escaping for the markup formats (HTML, SVG, XML). Everything a host or a
//! scenario wrote passes through [`markup`] before it reaches a document.

/// Escapes text for an element or a double- or single-quoted attribute.
/// Characters XML 1.0 cannot carry at all (a hostile body excerpt may hold
/// them) become U+FFFD.
pub fn markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7F}' || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.push('\u{FFFD}')
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_replaces_characters_xml_cannot_hold() {
        assert_eq!(
            markup("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(markup("a\u{1}b\u{FFFF}\n\t"), "a\u{FFFD}b\u{FFFD}\n\t");
    }
}
