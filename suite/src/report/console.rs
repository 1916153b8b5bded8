//! The summary printed after the harness's own progress lines: a table of
//! the profiles, the requirements that failed or errored, and how long the
//! run had to wait. Coloured only when asked (a terminal, no `NO_COLOR`).

use std::io::{self, IsTerminal};

use super::{ProfileReport, RunReport};

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
    let verdicts: Vec<(&str, &str)> = report.profiles.values().map(verdict).collect();
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
    let header = format!(
        "{:<name_width$}  {:<verdict_width$}  {:>5}  {:>5}  {:>5}  {:>5}",
        "profile", "verdict", "pass", "fail", "skip", "error"
    );
    writeln!(out, "{}", style.paint(&header, BOLD))?;
    for ((name, profile), (word, colour)) in report.profiles.iter().zip(&verdicts) {
        // Pad before painting: escape codes have no width on screen.
        let padded = format!("{word:<verdict_width$}");
        writeln!(
            out,
            "{name:<name_width$}  {}  {:>5}  {:>5}  {:>5}  {:>5}",
            style.paint(&padded, colour),
            profile.pass,
            profile.fail,
            profile.skip,
            profile.error
        )?;
    }
    let broken: Vec<_> = report
        .requirements
        .iter()
        .filter(|r| r.disposition == "fail" || r.disposition == "error")
        .collect();
    if !broken.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", style.paint("failed or errored:", BOLD))?;
        for requirement in broken.iter().take(FAILURES_SHOWN) {
            let why = requirement
                .message
                .as_deref()
                .and_then(|m| m.lines().next())
                .map(|line| format!("  {line}"))
                .unwrap_or_default();
            let colour = if requirement.disposition == "fail" {
                RED
            } else {
                YELLOW
            };
            writeln!(
                out,
                "  {} {}{why}",
                style.paint(&format!("{:<5}", requirement.disposition), colour),
                requirement.id
            )?;
        }
        if broken.len() > FAILURES_SHOWN {
            writeln!(
                out,
                "  … and {} more (see report.html)",
                broken.len() - FAILURES_SHOWN
            )?;
        }
    }
    let quiet: Vec<_> = report.scenarios.iter().filter(|s| s.quiet_ms > 0).collect();
    if !quiet.is_empty() {
        let total: u64 = quiet.iter().map(|s| s.quiet_ms).sum();
        writeln!(
            out,
            "unavoidable waits: {:.1} s in {} scenario{} (quiet periods the profile requires)",
            total as f64 / 1000.0,
            quiet.len(),
            if quiet.len() == 1 { "" } else { "s" }
        )?;
    }
    out.flush()
}

/// The verdict word and its colour.
fn verdict(profile: &ProfileReport) -> (&'static str, &'static str) {
    if !profile.selected {
        ("opted-out", DIM)
    } else if profile.certified {
        ("certified", GREEN)
    } else if profile.fail + profile.error > 0 {
        ("not certified", RED)
    } else {
        ("not certified", YELLOW)
    }
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
        report.scenarios[2].quiet_ms = 1500;
        report.requirements[1].message =
            Some("core/bounds.json step 1: status did not hold\n  more".into());
        assert_eq!(
            lines(&report, Style::default()),
            [
                "profile   verdict         pass   fail   skip  error",
                "behavior  certified          4      0      0      0",
                "core      not certified      1      1      0      1",
                "strict    opted-out          0      0      0      0",
                "failed or errored:",
                "  fail  core.create.bounds-required  core/bounds.json step 1: status did not hold",
                "  error core.discovery.shape",
                "unavoidable waits: 1.5 s in 1 scenario (quiet periods the profile requires)",
            ]
        );
    }

    #[test]
    fn colour_only_when_asked_and_columns_still_line_up() {
        let report = sample::report();
        let plain = lines(&report, Style::default());
        assert!(plain.iter().all(|l| !l.contains('\x1b')));
        let coloured = lines(&report, Style { colour: true });
        assert!(
            coloured[2].contains("\x1b[31mnot certified\x1b[0m"),
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
