//! `report.md`: a short summary for a CI step summary or a pull-request
//! comment. One line per profile, then each failing or erroring scenario
//! with its reason and the curl command that replays it.
//!
//! Everything from the host sits in code spans or fenced blocks (where
//! Markdown renders nothing), other text is backslash-escaped, so a hostile
//! answer cannot add links, images or HTML to a comment.

use std::io;

use super::{ProfileReport, RunReport, ScenarioReport};

/// Failures listed in full; the rest are counted (a PR comment has a size
/// limit, and report.html has them all).
const FAILURES_SHOWN: usize = 20;
/// Longer curl commands are left to report.html.
const CURL_CHARS: usize = 2000;

pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    out.write_all(summary(report).as_bytes())?;
    out.flush()
}

fn summary(report: &RunReport) -> String {
    let mut md = format!(
        "### goalpost {}: {}\n\n",
        text(&report.suite.version),
        headline(report)
    );
    md.push_str(&format!(
        "Host {}{} · {} · discovery SHA-256 {}\n\n",
        code(&report.host.url),
        if report.host.bundled {
            " (bundled reference host)"
        } else {
            ""
        },
        code(&report.started_at),
        code(report.host.discovery_sha256.get(..12).unwrap_or_default()),
    ));
    for (name, profile) in &report.profiles {
        md.push_str(&format!(
            "- {} **{}**: {} ({} pass, {} fail, {} skip, {} error)\n",
            icon(profile),
            text(name),
            verdict(profile),
            profile.pass,
            profile.fail,
            profile.skip,
            profile.error
        ));
    }
    let failing: Vec<&ScenarioReport> = report
        .scenarios
        .iter()
        .filter(|s| s.outcome == "fail" || s.outcome == "error")
        .collect();
    if failing.is_empty() {
        md.push_str("\nNo scenario failed or errored.\n");
        return md;
    }
    md.push_str(&format!(
        "\n#### Failing and erroring scenarios ({})\n\n",
        failing.len()
    ));
    for scenario in failing.iter().take(FAILURES_SHOWN) {
        md.push_str(&failure(report, scenario));
    }
    if failing.len() > FAILURES_SHOWN {
        md.push_str(&format!(
            "\n… and {} more: see report.html.\n",
            failing.len() - FAILURES_SHOWN
        ));
    }
    md.push_str("\nSet `TOKEN` (and `TOKEN_B`) to your bearer tokens before running a command.\n");
    md
}

fn headline(report: &RunReport) -> String {
    let selected: Vec<(&String, &ProfileReport)> =
        report.profiles.iter().filter(|(_, p)| p.selected).collect();
    let certified = selected.iter().filter(|(_, p)| p.certified).count();
    if !selected.is_empty() && certified == selected.len() {
        "every selected profile certified".to_string()
    } else {
        format!(
            "{certified} of {} selected profiles certified",
            selected.len()
        )
    }
}

fn verdict(profile: &ProfileReport) -> &'static str {
    if !profile.selected {
        "opted out"
    } else if profile.certified {
        "certified"
    } else {
        "not certified"
    }
}

fn icon(profile: &ProfileReport) -> &'static str {
    if !profile.selected {
        "⚪"
    } else if profile.certified {
        "✅"
    } else if profile.fail + profile.error > 0 {
        "❌"
    } else {
        "⚠️"
    }
}

fn failure(report: &RunReport, scenario: &ScenarioReport) -> String {
    let proves: Vec<String> = report
        .requirements
        .iter()
        .filter(|r| r.scenarios.contains(&scenario.name))
        .map(|r| code(&r.id))
        .collect();
    let mut md = format!(
        "- **{}** {} ({}): ",
        text(&scenario.outcome),
        code(&scenario.name),
        if proves.is_empty() {
            "no requirement".to_string()
        } else {
            proves.join(", ")
        }
    );
    match &scenario.failed_step {
        Some(step) => {
            md.push_str(&format!("step {} “{}”: ", step.step, text(&step.name)));
            match (&step.check, &step.error) {
                (Some(check), _) => md.push_str(&format!(
                    "{}: expected {}, got {}",
                    text(&check.what),
                    code(&check.expected),
                    code(&check.actual)
                )),
                (None, Some(error)) => md.push_str(&code(error)),
                (None, None) => md.push_str(&code(first_line(&scenario.message))),
            }
            md.push('\n');
            let curl = step.request.curl();
            if curl.chars().count() <= CURL_CHARS && !step.request.curl_is_partial() {
                md.push_str(&fenced("sh", &curl));
            } else {
                md.push_str("  (the request is too long for this summary; see report.html)\n");
            }
        }
        None => {
            md.push_str(&code(first_line(&scenario.message)));
            md.push('\n');
        }
    }
    md
}

fn first_line(message: &Option<String>) -> &str {
    message
        .as_deref()
        .and_then(|m| m.lines().next())
        .unwrap_or_default()
}

/// Plain text on one line, with the characters that could start inline
/// Markdown (emphasis, links, images, code, tables) backslash-escaped and
/// HTML's turned into entities. Block syntax (`-`, `1.`) only matters at the
/// start of a line, where this text never goes.
fn text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A code span that holds any text: the fence is longer than any run of
/// backticks inside, and newlines become spaces.
fn code(value: &str) -> String {
    let one_line: String = value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let fence = "`".repeat(longest_run(&one_line, '`') + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') || one_line.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{one_line}{pad}{fence}")
}

/// A fenced block, indented to sit inside a list item.
fn fenced(language: &str, body: &str) -> String {
    let fence = "`".repeat(longest_run(body, '`').max(2) + 1);
    let mut md = format!("  {fence}{language}\n");
    for line in body.lines() {
        md.push_str("  ");
        md.push_str(line);
        md.push('\n');
    }
    md.push_str(&format!("  {fence}\n"));
    md
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut current) = (0, 0);
    for ch in text.chars() {
        if ch == c {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    fn written(report: &RunReport) -> String {
        let mut out = Vec::new();
        write(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_line_per_profile() {
        let md = written(&sample::report());
        assert!(md.contains("- ❌ **core**: not certified (1 pass, 1 fail, 0 skip, 1 error)\n"));
        assert!(md.contains("- ⚪ **strict**: opted out (0 pass, 0 fail, 0 skip, 0 error)\n"));
        assert!(md.contains("0 of 2 selected profiles certified"));
    }

    #[test]
    fn failures_name_the_check_and_the_curl() {
        let md = written(&sample::report());
        assert!(
            md.contains("- **fail** `core::bounds` (`core.create.bounds-required`): step 1 “create”: status: expected `422`, got `201`\n"),
            "{md}"
        );
        assert!(md.contains("  ```sh\n  curl -sS -i \\\n"), "{md}");
        assert!(md.contains("- **error** `core::discovery`"), "{md}");
    }

    #[test]
    fn host_text_cannot_become_markup() {
        assert_eq!(code("a `b` c"), "``a `b` c``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a\nb"), "`a b`");
        assert_eq!(
            text("[x](http://e) <img> *y*"),
            r"\[x\]\(http://e\) &lt;img&gt; \*y\*"
        );
        assert_eq!(fenced("sh", "a ``` b"), "  ````sh\n  a ``` b\n  ````\n");
    }

    #[test]
    fn a_clean_run_says_so() {
        let mut report = sample::report();
        report.scenarios.retain(|s| s.outcome == "pass");
        for profile in report.profiles.values_mut() {
            profile.certified = profile.selected;
        }
        let md = written(&report);
        assert!(md.contains("every selected profile certified"), "{md}");
        assert!(md.contains("No scenario failed or errored."));
    }
}
