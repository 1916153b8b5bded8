//! The summary printed after the harness's own progress lines: how many
//! scenarios ran (what the harness counts), a table of the profiles
//! counting requirements by disposition, the requirements that failed,
//! errored or were not reached, the advisories apart, what each skip reason
//! means, and how long the run had to wait. Coloured only when asked (a
//! terminal, no `NO_COLOR`).

use std::io::{self, IsTerminal};

use super::{ProfileReport, RunReport};
use crate::run::outcome::DispositionKind;
use crate::run::scope::Status;

/// How the summary is printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub colour: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset, unless the
    /// harness's `--color always|never` says otherwise.
    pub fn for_stdout(setting: Option<libtest_mimic::ColorSetting>) -> Style {
        use libtest_mimic::ColorSetting;
        let colour = match setting {
            Some(ColorSetting::Always) => true,
            Some(ColorSetting::Never) => false,
            Some(ColorSetting::Auto) | None => {
                io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        Style { colour }
    }

    fn paint(self, text: &str, code: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

const GREEN: &str = "32";
const RED: &str = "31";
const YELLOW: &str = "33";
const DIM: &str = "2";
const BOLD: &str = "1";

/// Failed requirements listed by id; the rest are counted.
const FAILURES_SHOWN: usize = 20;

/// The summary without colour.
pub fn write(report: &RunReport, out: impl io::Write) -> io::Result<()> {
    write_styled(report, out, Style::default())
}

pub fn write_styled(report: &RunReport, mut out: impl io::Write, style: Style) -> io::Result<()> {
    writeln!(out)?;
    // The harness's own "test result" line counts trials (scenarios); say
    // so, so nobody compares it with the table, which counts requirements.
    let run = report.scenarios_run();
    let filtered = report
        .scenarios
        .iter()
        .filter(|s| s.reason.as_deref() == Some("filtered"))
        .count();
    let skipped = report.scenarios.len() - run - filtered;
    let filtered = if filtered > 0 {
        format!(", {filtered} filtered out")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{run} scenario{} (trials) ran, {skipped} skipped{filtered}: the harness counts these trials; the table below counts requirements.",
        plural(run),
    )?;
    let version = report.profile_version.as_deref().map_or_else(
        || "unversioned profile".to_string(),
        |v| format!("profile {v}"),
    );
    writeln!(
        out,
        "{}",
        style.paint(
            &format!(
                "requirements per profile ({version}; certified = the minimum scope ran and every MUST requirement that applies passed):"
            ),
            BOLD
        )
    )?;
    let verdicts: Vec<(String, &str)> = report.profiles.values().map(verdict).collect();
    let name_width = report
        .profiles
        .keys()
        .map(|n| n.chars().count())
        .chain(["profile".len()])
        .max()
        .unwrap_or(0);
    let verdict_width = verdicts
        .iter()
        .map(|(word, _)| word.chars().count())
        .chain(["verdict".len()])
        .max()
        .unwrap_or(0);
    let mut header = format!("{:<name_width$}  {:<verdict_width$}", "profile", "verdict");
    for column in COLUMNS {
        header.push_str(&format!("  {column:>w$}", w = column.len().max(5)));
    }
    writeln!(out, "{}", style.paint(&header, BOLD))?;
    for ((name, profile), (word, colour)) in report.profiles.iter().zip(&verdicts) {
        // Pad before painting: escape codes have no width on screen.
        let padded = format!("{word:<verdict_width$}");
        let mut line = format!("{name:<name_width$}  {}", style.paint(&padded, colour));
        for (column, (_, count)) in COLUMNS.iter().zip(profile.counts()) {
            line.push_str(&format!("  {count:>w$}", w = column.len().max(5)));
        }
        writeln!(out, "{line}")?;
    }
    // What each verdict covers, or why a profile was not certified or not
    // attempted: a certification means nothing without its scope.
    let covers: Vec<(&String, String)> = report
        .profiles
        .iter()
        .filter(|(_, profile)| profile.status() != Status::OptedOut)
        .map(|(name, profile)| (name, scope_line(profile)))
        .collect();
    if !covers.is_empty() {
        heading(
            &mut out,
            style,
            "what each verdict covers (scope), or what it needs:",
        )?;
        for (name, line) in covers {
            writeln!(out, "  {name}: {line}")?;
        }
    }
    let broken: Vec<_> = report
        .requirements
        .iter()
        .filter(|r| r.disposition.is_blocking_failure())
        .collect();
    if !broken.is_empty() {
        heading(&mut out, style, "failed, errored or not reached:")?;
        let width = broken
            .iter()
            .map(|r| r.disposition.as_str().len())
            .max()
            .unwrap_or(0);
        for requirement in broken.iter().take(FAILURES_SHOWN) {
            let colour = match requirement.disposition {
                DispositionKind::Fail => RED,
                _ => YELLOW,
            };
            writeln!(
                out,
                "  {} {}{}",
                style.paint(&format!("{:<width$}", requirement.disposition), colour),
                requirement.id,
                first_line(requirement.message.as_deref())
            )?;
        }
        more(&mut out, broken.len())?;
    }
    let advisories: Vec<_> = report
        .requirements
        .iter()
        .filter(|r| r.disposition == DispositionKind::Advisory)
        .collect();
    if !advisories.is_empty() {
        heading(
            &mut out,
            style,
            "advisory (SHOULD requirements not met: counted apart, never block certification):",
        )?;
        for requirement in advisories.iter().take(FAILURES_SHOWN) {
            writeln!(
                out,
                "  {}{}",
                requirement.id,
                first_line(requirement.message.as_deref())
            )?;
        }
        more(&mut out, advisories.len())?;
    }
    if !report.legend.is_empty() {
        heading(
            &mut out,
            style,
            "reasons in this run: skips, and what does not apply (and the section that says how to act):",
        )?;
        for (reason, entry) in super::legend::in_reading_order(&report.legend) {
            writeln!(out, "  {reason}: {} ({})", entry.meaning, entry.section)?;
        }
    }
    let quiet: Vec<_> = report.scenarios.iter().filter(|s| s.quiet_ms > 0).collect();
    if !quiet.is_empty() {
        let total: u64 = quiet.iter().map(|s| s.quiet_ms).sum();
        writeln!(out)?;
        writeln!(
            out,
            "unavoidable waits: {:.1} s in {} scenario{} (quiet periods the profile requires)",
            total as f64 / 1000.0,
            quiet.len(),
            plural(quiet.len())
        )?;
    }
    out.flush()
}

/// The count columns of the table, in order.
const COLUMNS: [&str; 7] = [
    "pass",
    "fail",
    "advisory",
    "not-reached",
    "skip",
    "n/a",
    "error",
];

/// A certified profile's scope, or the reason another was not certified or
/// not attempted.
fn scope_line(profile: &ProfileReport) -> String {
    match (profile.status(), &profile.reason) {
        (Status::Certified, _) => profile.scope.to_string(),
        (status, Some(reason)) => format!("{status} — {reason}"),
        (status, None) => status.to_string(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Two spaces and the first line of a message, or nothing.
fn first_line(message: Option<&str>) -> String {
    message
        .and_then(|m| m.lines().next())
        .map(|line| format!("  {line}"))
        .unwrap_or_default()
}

/// A blank line, then `text` in bold: how each list after the table
/// starts.
fn heading(out: &mut impl io::Write, style: Style, text: &str) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{}", style.paint(text, BOLD))
}

fn more(out: &mut impl io::Write, listed: usize) -> io::Result<()> {
    if listed > FAILURES_SHOWN {
        writeln!(
            out,
            "  … and {} more (see report.html)",
            listed - FAILURES_SHOWN
        )?;
    }
    Ok(())
}

/// The verdict words and their colour.
fn verdict(profile: &ProfileReport) -> (String, &'static str) {
    let colour = match profile.status() {
        Status::OptedOut | Status::NotAttempted => DIM,
        Status::Certified => GREEN,
        Status::NotCertified if profile.fail + profile.error > 0 => RED,
        Status::NotCertified => YELLOW,
    };
    let words = match profile.status() {
        Status::OptedOut => "opted-out".to_string(),
        _ => profile.verdict_words(),
    };
    (words, colour)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    fn lines(report: &RunReport, style: Style) -> Vec<String> {
        let mut out = Vec::new();
        write_styled(report, &mut out, style).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_table_of_profiles_then_what_broke() {
        let mut report = sample::report();
        let behavior = report.profiles.get_mut("behavior").unwrap();
        (behavior.certified, behavior.pass, behavior.skip) = (true, 4, 0);
        (behavior.status, behavior.reason) = (Some(Status::Certified), None);
        report.scenarios[2].quiet_ms = 1500;
        report.requirements[1].message =
            Some("core/bounds.json step 1: status did not hold\n  more".into());
        assert_eq!(
            lines(&report, Style::default()),
            [
                "3 scenarios (trials) ran, 1 skipped: the harness counts these trials; the table below counts requirements.",
                "requirements per profile (profile 1.0; certified = the minimum scope ran and every MUST requirement that applies passed):",
                "profile   verdict         pass   fail  advisory  not-reached   skip    n/a  error",
                "behavior  certified          4      0         0            0      0      1      0",
                "core      not certified      1      1         1            1      0      0      1",
                "strict    opted-out          0      0         0            0      0      0      0",
                "what each verdict covers (scope), or what it needs:",
                "  behavior: judge verifier; modes manual, schedule; not offered: heartbeat",
                "  core: not certified — 3 MUST requirements did not pass: 1 error, 1 fail, 1 not-reached",
                "failed, errored or not reached:",
                "  fail        core.create.bounds-required  core/bounds.json step 1: status did not hold",
                "  error       core.discovery.shape",
                "  not-reached core.lifecycle.abandon  not reached: step 1 \"create\" failed on core.create.bounds-required",
                "advisory (SHOULD requirements not met: counted apart, never block certification):",
                "  core.create.location  core/create.json step 1 \"create\": header location is absent",
                "reasons in this run: skips, and what does not apply (and the section that says how to act):",
                "  seam-absent: The host does not list a conformance seam the scenario drives (conformanceSeams.goals); add the seam as the profile's seam contract describes to have the requirement checked. (PROFILE.md#skip-seam-absent)",
                "  mode:heartbeat: The host does not advertise the `heartbeat` continuation mode (`mode:heartbeat`), so requirements about it do not apply to this host: they never block certification and never count as passes, and the profile's scope lists it as not offered. (PROFILE.md#not-applicable-mode)",
                "unavoidable waits: 1.5 s in 1 scenario (quiet periods the profile requires)",
            ]
        );
    }

    #[test]
    fn a_certified_profile_with_advisories_says_so() {
        let mut report = sample::report();
        let core = report.profiles.get_mut("core").unwrap();
        *core = ProfileReport {
            certified: true,
            pass: 3,
            advisory: 2,
            selected: true,
            ..ProfileReport::default()
        };
        report.profile_version = None;
        let lines = lines(&report, Style::default());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("core      certified, 2 advisory  ")),
            "{lines:#?}"
        );
        assert!(lines[1].contains("(unversioned profile;"), "{lines:#?}");
    }

    #[test]
    fn colour_only_when_asked_and_columns_still_line_up() {
        let report = sample::report();
        let plain = lines(&report, Style::default());
        assert!(plain.iter().all(|l| !l.contains('\x1b')));
        let coloured = lines(&report, Style { colour: true });
        assert!(
            coloured[4].contains("\x1b[31mnot certified\x1b[0m"),
            "{coloured:?}"
        );
        let strip = |l: &String| {
            l.replace("\x1b[31m", "")
                .replace("\x1b[32m", "")
                .replace("\x1b[33m", "")
                .replace("\x1b[2m", "")
                .replace("\x1b[1m", "")
                .replace("\x1b[0m", "")
        };
        assert_eq!(coloured.iter().map(strip).collect::<Vec<_>>(), plain);
    }
}
