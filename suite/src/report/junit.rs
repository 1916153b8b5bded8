//! `junit.xml`: one `<testsuite>` per profile, one `<testcase>` per
//! scenario; failures as `<failure>`, errors as `<error>`, skips as
//! `<skipped message="reason"/>`.

use std::collections::BTreeMap;
use std::io;

use super::{RunReport, ScenarioReport};

pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    let mut by_profile: BTreeMap<&str, Vec<&ScenarioReport>> = BTreeMap::new();
    for scenario in &report.scenarios {
        by_profile
            .entry(&scenario.profile)
            .or_default()
            .push(scenario);
    }
    let count = |scenarios: &[&ScenarioReport], outcome: &str| {
        scenarios.iter().filter(|s| s.outcome == outcome).count()
    };
    let seconds = |scenarios: &[&ScenarioReport]| {
        scenarios
            .iter()
            .map(|s| s.duration().as_secs_f64())
            .sum::<f64>()
    };
    let all: Vec<&ScenarioReport> = report.scenarios.iter().collect();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="{}" tests="{}" failures="{}" errors="{}" skipped="{}" time="{:.3}">"#,
        escape(&report.suite.name),
        all.len(),
        count(&all, "fail"),
        count(&all, "error"),
        count(&all, "skip"),
        seconds(&all),
    )?;
    for (profile, scenarios) in &by_profile {
        writeln!(
            out,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="{}" skipped="{}" time="{:.3}" timestamp="{}">"#,
            escape(profile),
            scenarios.len(),
            count(scenarios, "fail"),
            count(scenarios, "error"),
            count(scenarios, "skip"),
            seconds(scenarios),
            escape(&report.started_at),
        )?;
        for scenario in scenarios {
            write!(
                out,
                r#"    <testcase name="{}" classname="{}" time="{:.3}""#,
                escape(&scenario.name),
                escape(profile),
                scenario.duration().as_secs_f64(),
            )?;
            let message = scenario.message.as_deref().unwrap_or_default();
            let first_line = message.lines().next().unwrap_or_default();
            match scenario.outcome.as_str() {
                "fail" => writeln!(
                    out,
                    ">\n      <failure message=\"{}\" type=\"fail\">{}</failure>\n    </testcase>",
                    escape(first_line),
                    escape(message)
                )?,
                "error" => writeln!(
                    out,
                    ">\n      <error message=\"{}\" type=\"error\">{}</error>\n    </testcase>",
                    escape(first_line),
                    escape(message)
                )?,
                "skip" => writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    escape(scenario.reason.as_deref().unwrap_or_default())
                )?,
                _ => writeln!(out, "/>")?,
            }
        }
        writeln!(out, "  </testsuite>")?;
    }
    writeln!(out, "</testsuites>")?;
    out.flush()
}

/// Escapes text for an attribute or element. Characters XML 1.0 cannot
/// carry at all (a hostile body excerpt may hold them) become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    fn written() -> String {
        let mut out = Vec::new();
        write(&sample::report(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The elements of a document, as (name, attributes text) in order,
    /// checking that every element closes in order: enough to prove the
    /// writer emits well-formed XML of the expected shape.
    fn elements(xml: &str) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut open: Vec<String> = Vec::new();
        let mut rest = xml;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("unclosed tag") + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if tag.starts_with('?') {
                continue;
            }
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(
                    open.pop().as_deref(),
                    Some(name),
                    "mismatched close in {xml}"
                );
                continue;
            }
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, attributes) = tag.split_once(' ').unwrap_or((tag, ""));
            assert!(!attributes.contains('<'), "raw < in attributes of {name}");
            found.push((name.to_string(), attributes.to_string()));
            if !self_closing {
                open.push(name.to_string());
            }
        }
        assert!(open.is_empty(), "unclosed elements {open:?}");
        found
    }

    #[test]
    fn one_suite_per_profile_with_every_outcome_kind() {
        let xml = written();
        let elements = elements(&xml);
        let names: Vec<&str> = elements.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "testsuites",
                "testsuite",
                "testcase",
                "skipped",
                "testsuite",
                "testcase",
                "failure",
                "testcase",
                "testcase",
                "error"
            ]
        );
        assert!(
            elements[0]
                .1
                .contains(r#"tests="4" failures="1" errors="1" skipped="1""#),
            "{}",
            elements[0].1
        );
        assert!(elements[3].1.contains(r#"message="seam-absent""#));
        assert!(elements[7].1.contains(r#"name="core::create""#));
    }

    #[test]
    fn messages_are_escaped() {
        let xml = written();
        assert!(xml.contains("&lt;&amp;&gt; failed"), "{xml}");
        assert!(xml.contains("&quot;create&quot;"), "{xml}");
        assert!(!xml.contains("<&>"));
    }

    #[test]
    fn escape_replaces_characters_xml_cannot_hold() {
        assert_eq!(escape("a\u{1}b\u{FFFF}\n'"), "a\u{FFFD}b\u{FFFD}\n&apos;");
    }
}
