//! `report.md`: a short summary for a CI step summary or a pull-request
//! comment. One line per profile, the requirements not reached and the
//! advisories (apart: they never block), what each skip reason means, then
//! each failing or erroring scenario with its reason and the curl command
//! that replays it.
//!
//! Everything from the host sits in code spans or fenced blocks (where
//! Markdown renders nothing), other text is backslash-escaped, so a hostile
//! answer cannot add links, images or HTML to a comment.

use std::io;

use super::{legend, ProfileReport, RunReport, ScenarioReport};
use crate::run::outcome::DispositionKind;
use crate::run::scope::Status;

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
        "Host {}{} · {} · discovery SHA-256 {} · {}\n\n",
        code(&report.host.url),
        if report.host.bundled {
            " (bundled reference host)"
        } else {
            ""
        },
        code(&report.started_at),
        code(report.host.discovery_sha256.get(..12).unwrap_or_default()),
        match &report.profile_version {
            Some(version) => format!("profile {}", text(version)),
            None => "unversioned profile".to_string(),
        },
    ));
    md.push_str(&format!(
        "Requirements per profile ({} scenarios ran). A profile is certified when its minimum scope ran and every {} requirement that applies to the host passed; {} requirements never block: one not met is an *advisory*, counted apart. A requirement about a feature the host does not advertise is *not applicable*: it never blocks and never counts as a pass. Each verdict says what it covers (its scope) or what it needs.\n\n",
        report.scenarios_run(),
        link(report, &legend::levels_section(), "MUST"),
        link(report, &legend::levels_section(), "SHOULD"),
    ));
    for (name, profile) in &report.profiles {
        let counts: Vec<String> = profile
            .counts()
            .iter()
            .map(|(words, count)| format!("{count} {words}"))
            .collect();
        md.push_str(&format!(
            "- {} **{}**: {} ({})\n",
            icon(profile),
            text(name),
            verdict(profile),
            counts.join(", ")
        ));
    }
    md.push_str(&requirement_list(
        report,
        DispositionKind::NotReached,
        ("not reached", "not reached"),
        "an earlier check failed, so neither proven nor broken",
    ));
    md.push_str(&requirement_list(
        report,
        DispositionKind::Advisory,
        ("advisory", "advisories"),
        "SHOULD requirements not met: counted apart, they never block certification",
    ));
    md.push_str(&skip_legend(report));
    let failing: Vec<&ScenarioReport> = report
        .scenarios
        .iter()
        .filter(|s| s.outcome.is_failure())
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

/// `[label](href#anchor)` when PROFILE.md was found, else the label and
/// the section in a code span (a link that would not resolve helps nobody).
fn link(report: &RunReport, section: &str, label: &str) -> String {
    match report.section_href(section) {
        Some(href) => format!(
            "[{}]({})",
            text(label),
            href.replace(' ', "%20").replace(')', "%29")
        ),
        None => format!("{} ({})", text(label), code(section)),
    }
}

/// The requirements with one disposition, each with its level, section
/// link and message; nothing when there are none.
fn requirement_list(
    report: &RunReport,
    disposition: DispositionKind,
    (one, many): (&str, &str),
    note: &str,
) -> String {
    let listed: Vec<_> = report
        .requirements
        .iter()
        .filter(|r| r.disposition == disposition)
        .collect();
    if listed.is_empty() {
        return String::new();
    }
    let noun = if listed.len() == 1 { one } else { many };
    let mut md = format!("\n#### {} {noun} ({note})\n\n", listed.len());
    for requirement in listed.iter().take(FAILURES_SHOWN) {
        md.push_str(&format!(
            "- {} {} ({}): {}\n",
            code(&requirement.id),
            text(&requirement.level),
            link(report, &requirement.section, "section"),
            code(first_line(&requirement.message)),
        ));
    }
    if listed.len() > FAILURES_SHOWN {
        md.push_str(&format!(
            "\n… and {} more: see report.html.\n",
            listed.len() - FAILURES_SHOWN
        ));
    }
    md
}

/// What each skip reason in the run means, with the section to read.
fn skip_legend(report: &RunReport) -> String {
    if report.legend.is_empty() {
        return String::new();
    }
    let mut md = String::from("\n#### Why requirements were skipped, or do not apply\n\n");
    for (reason, entry) in legend::in_reading_order(&report.legend) {
        md.push_str(&format!(
            "- {}: {} ({})\n",
            code(reason),
            text(&entry.meaning),
            link(report, &entry.section, "how to act"),
        ));
    }
    md
}

fn headline(report: &RunReport) -> String {
    let selected: Vec<(&String, &ProfileReport)> =
        report.profiles.iter().filter(|(_, p)| p.selected).collect();
    let unattempted: Vec<&str> = selected
        .iter()
        .filter(|(_, p)| p.status() == Status::NotAttempted)
        .map(|(name, _)| name.as_str())
        .collect();
    let attempted = selected.len() - unattempted.len();
    let certified = selected.iter().filter(|(_, p)| p.certified).count();
    let head = if attempted > 0 && certified == attempted {
        "every attempted profile certified".to_string()
    } else {
        format!("{certified} of {attempted} attempted profiles certified")
    };
    if unattempted.is_empty() {
        head
    } else {
        format!("{head}; not attempted: {}", text(&unattempted.join(", ")))
    }
}

/// The verdict, with its scope when certified or what it needs otherwise.
fn verdict(profile: &ProfileReport) -> String {
    let words = match profile.status() {
        Status::OptedOut => "opted out".to_string(),
        _ => profile.verdict_words(),
    };
    let detail = match profile.status() {
        Status::Certified if !profile.scope.is_empty() => Some(profile.scope.to_string()),
        Status::NotAttempted | Status::NotCertified => profile.reason.clone(),
        _ => None,
    };
    match detail {
        Some(detail) => format!("{words} — {}", text(&detail)),
        None => words,
    }
}

fn icon(profile: &ProfileReport) -> &'static str {
    match profile.status() {
        Status::OptedOut | Status::NotAttempted => "⚪",
        Status::Certified => "✅",
        Status::NotCertified if profile.fail + profile.error > 0 => "❌",
        Status::NotCertified => "⚠️",
    }
}

fn failure(report: &RunReport, scenario: &ScenarioReport) -> String {
    // Each requirement the scenario names, with what became of it: a
    // failed check fails only what it proves, the rest may pass or be not
    // reached.
    let proves: Vec<String> = report
        .requirements
        .iter()
        .filter(|r| r.scenarios.contains(&scenario.name))
        .map(|r| format!("{} {}", code(&r.id), text(r.disposition.as_str())))
        .collect();
    let mut md = format!(
        "- **{}** {} ({}): ",
        text(scenario.outcome.as_str()),
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
    use crate::testing::assert_contains;

    fn written(report: &RunReport) -> String {
        sample::written(|report, out| write(report, out), report)
    }

    #[test]
    fn one_line_per_profile() {
        let md = written(&sample::report());
        assert_contains(&md, "- ❌ **core**: not certified — 3 MUST requirements did not pass: 1 error, 1 fail, 1 not-reached (1 pass, 1 fail, 1 advisory, 1 not reached, 0 skip, 0 not applicable, 1 error)\n");
        assert!(md.contains(
            "- ⚪ **strict**: opted out (0 pass, 0 fail, 0 advisory, 0 not reached, 0 skip, 0 not applicable, 0 error)\n"
        ));
        assert!(md.contains("0 of 2 attempted profiles certified"));
        assert_contains(&md, "· profile 1.0\n");
        assert_contains(&md, "(3 scenarios ran)");
    }

    #[test]
    fn failures_name_the_check_and_the_curl() {
        let md = written(&sample::report());
        assert_contains(&md, "- **fail** `core::bounds` (`core.create.bounds-required` fail, `core.lifecycle.abandon` not-reached): step 1 “create”: status: expected `422`, got `201`\n");
        assert_contains(&md, "  ```sh\n  curl -sS -i \\\n");
        assert_contains(&md, "- **error** `core::discovery`");
    }

    #[test]
    fn advisories_and_not_reached_are_listed_apart_with_their_sections() {
        let md = written(&sample::report());
        assert!(md.contains(
            "#### 1 advisory (SHOULD requirements not met: counted apart, they never block certification)\n\n\
             - `core.create.location` SHOULD ([section](../../PROFILE.md#core.create.location)): `core/create.json step 1 \"create\": header location is absent`\n"
        ), "{md}");
        assert!(md.contains(
            "- `core.lifecycle.abandon` MUST ([section](../../PROFILE.md#core.lifecycle.abandon)): `not reached: step 1 \"create\" failed on core.create.bounds-required`\n"
        ), "{md}");
    }

    #[test]
    fn skip_reasons_present_are_explained() {
        let mut report = sample::report();
        let md = written(&report);
        assert_contains(&md, "#### Why requirements were skipped, or do not apply\n\n- `seam-absent`: The host does not list");
        assert!(
            md.contains("([how to act](../../PROFILE.md#skip-seam-absent))\n"),
            "{md}"
        );
        assert!(!md.contains("`filtered`"));
        assert_contains(
            &md,
            "- `mode:heartbeat`: The host does not advertise the \\`heartbeat\\` continuation mode",
        );
        assert!(
            md.contains("([how to act](../../PROFILE.md#not-applicable-mode))\n"),
            "{md}"
        );
        // Without PROFILE.md the section is named, not linked.
        report.profile_href = None;
        let md = written(&report);
        assert_contains(&md, "how to act (`PROFILE.md#skip-seam-absent`)");
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
        report
            .scenarios
            .retain(|s| s.outcome == crate::run::outcome::OutcomeKind::Pass);
        for profile in report.profiles.values_mut() {
            profile.certified = profile.selected;
            if profile.selected {
                (profile.status, profile.reason) = (Some(Status::Certified), None);
            }
        }
        let md = written(&report);
        assert_contains(&md, "every attempted profile certified");
        assert!(
            md.contains(
                "- ✅ **core**: certified, 1 advisory — judge verifier; modes manual, schedule ("
            ),
            "{md}"
        );
        // A profile the run could not attempt is named, and costs nothing.
        let cluster = report.profiles.entry("cluster".to_string()).or_default();
        (cluster.selected, cluster.status) = (true, Some(Status::NotAttempted));
        cluster.reason = Some("needs 2+ endpoints".to_string());
        let md = written(&report);
        assert_contains(
            &md,
            "every attempted profile certified; not attempted: cluster",
        );
        assert!(
            md.contains("- ⚪ **cluster**: not attempted — needs 2+ endpoints ("),
            "{md}"
        );
        assert!(md.contains("No scenario failed or errored."));
    }
}
