//! The summary printed after the harness's own output: one line per
//! profile, then where the reports went and how long the run had to wait.

use std::io;

use super::RunReport;

pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    writeln!(out)?;
    for (name, profile) in &report.profiles {
        let verdict = if !profile.selected {
            "opted-out"
        } else if profile.certified {
            "certified"
        } else {
            "not certified"
        };
        writeln!(
            out,
            "{name}: {verdict} — {} pass, {} fail, {} skip, {} error",
            profile.pass, profile.fail, profile.skip, profile.error
        )?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    #[test]
    fn one_line_per_profile_in_the_documented_form() {
        let mut report = sample::report();
        let behavior = report.profiles.get_mut("behavior").unwrap();
        (behavior.certified, behavior.pass, behavior.skip) = (true, 4, 0);
        report.scenarios[2].quiet_ms = 1500;
        let mut out = Vec::new();
        write(&report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(
            lines,
            [
                "behavior: certified — 4 pass, 0 fail, 0 skip, 0 error",
                "core: not certified — 1 pass, 1 fail, 0 skip, 1 error",
                "strict: opted-out — 0 pass, 0 fail, 0 skip, 0 error",
                "unavoidable waits: 1.5 s in 1 scenario (quiet periods the profile requires)",
            ]
        );
    }
}
