//! `badge-<profile>.svg`: a small shields-style badge per profile, for a
//! README: `certified` (green; `certified, N advisory` when SHOULD
//! requirements were not met, which never blocks), `N failed` (red),
//! `N not reached` or `N skipped` (amber: it ran but something could not be
//! checked), `not attempted` (grey: the run did not meet the profile's
//! minimum scope) or `not run` (grey). The title (tooltip) of a certified
//! badge adds its scope, and of an unattempted one what it needs.
//!
//! [`write`] writes the badge of every profile into one stream (handy for
//! golden tests); [`write_profile`] writes one file's worth and [`file_name`]
//! names it.

use std::io;

use super::escape::markup as escape;
use super::{ProfileReport, RunReport};
use crate::run::scope::Status;

const GREEN: &str = "#2da44e";
const RED: &str = "#cf222e";
const AMBER: &str = "#bf8700";
const GREY: &str = "#6e7781";
const LABEL_GREY: &str = "#555";

/// Badges of every profile, one after the other, each on its own line.
pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    for name in report.profiles.keys() {
        write_profile(report, name, &mut out)?;
    }
    out.flush()
}

/// `badge-<profile>.svg`.
pub fn file_name(profile: &str) -> String {
    format!("badge-{profile}.svg")
}

/// The badge of one profile; an unknown profile gets a `not run` badge.
/// The visible text stays short; its title (the tooltip, and what a screen
/// reader says) adds what a certification covers or what an unattempted
/// profile needs.
pub fn write_profile(report: &RunReport, profile: &str, mut out: impl io::Write) -> io::Result<()> {
    let summary = report.profiles.get(profile).cloned().unwrap_or_default();
    let (message, colour) = message(&summary);
    let detail = match summary.status() {
        Status::Certified if !summary.scope.is_empty() => Some(summary.scope.to_string()),
        Status::NotAttempted => summary.reason.clone(),
        _ => None,
    };
    out.write_all(
        svg(
            &format!("goalpost {profile}"),
            &message,
            detail.as_deref(),
            colour,
        )
        .as_bytes(),
    )?;
    out.flush()
}

fn message(profile: &ProfileReport) -> (String, &'static str) {
    let broken = profile.fail + profile.error;
    if profile.status() == Status::NotAttempted && broken + profile.not_reached == 0 {
        ("not attempted".to_string(), GREY)
    } else if !profile.selected || profile.ran() == 0 {
        ("not run".to_string(), GREY)
    } else if profile.certified && profile.advisory > 0 {
        (format!("certified, {} advisory", profile.advisory), GREEN)
    } else if profile.certified {
        ("certified".to_string(), GREEN)
    } else if broken > 0 {
        (format!("{broken} failed"), RED)
    } else if profile.not_reached > 0 {
        (format!("{} not reached", profile.not_reached), AMBER)
    } else {
        (format!("{} skipped", profile.skip), AMBER)
    }
}

fn svg(label: &str, message: &str, detail: Option<&str>, colour: &str) -> String {
    let label_width = text_width(label) + 12;
    let message_width = text_width(message) + 12;
    let width = label_width + message_width;
    let title = match detail {
        Some(detail) => escape(&format!("{label}: {message} ({detail})")),
        None => escape(&format!("{label}: {message}")),
    };
    let (label, message) = (escape(label), escape(message));
    format!(
        concat!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"20\" role=\"img\" aria-label=\"{title}\">",
            "<title>{title}</title>",
            "<linearGradient id=\"s\" x2=\"0\" y2=\"100%\"><stop offset=\"0\" stop-color=\"#bbb\" stop-opacity=\".1\"/><stop offset=\"1\" stop-opacity=\".1\"/></linearGradient>",
            "<clipPath id=\"r\"><rect width=\"{width}\" height=\"20\" rx=\"3\" fill=\"#fff\"/></clipPath>",
            "<g clip-path=\"url(#r)\"><rect width=\"{lw}\" height=\"20\" fill=\"{label_grey}\"/><rect x=\"{lw}\" width=\"{mw}\" height=\"20\" fill=\"{colour}\"/><rect width=\"{width}\" height=\"20\" fill=\"url(#s)\"/></g>",
            "<g fill=\"#fff\" text-anchor=\"middle\" font-family=\"Verdana,Geneva,DejaVu Sans,sans-serif\" font-size=\"11\">",
            "<text x=\"{lx}\" y=\"15\" fill=\"#010101\" fill-opacity=\".3\">{label}</text><text x=\"{lx}\" y=\"14\">{label}</text>",
            "<text x=\"{mx}\" y=\"15\" fill=\"#010101\" fill-opacity=\".3\">{message}</text><text x=\"{mx}\" y=\"14\">{message}</text>",
            "</g></svg>\n"
        ),
        width = width,
        lw = label_width,
        mw = message_width,
        lx = f64::from(label_width) / 2.0,
        mx = f64::from(label_width) + f64::from(message_width) / 2.0,
        label = label,
        message = message,
        title = title,
        colour = colour,
        label_grey = LABEL_GREY,
    )
}

/// Approximate width in pixels of text in 11 px Verdana: close enough that
/// the text never overflows its box.
fn text_width(text: &str) -> u32 {
    let tenths: u32 = text
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 35,
            'f' | 't' | 'r' | ' ' | '(' | ')' | '-' => 45,
            'm' | 'w' | 'M' | 'W' => 105,
            c if c.is_ascii_uppercase() => 78,
            c if c.is_ascii_digit() => 70,
            c if c.is_ascii() => 68,
            _ => 110,
        })
        .sum();
    tenths.div_ceil(10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;
    use crate::testing::assert_contains;

    fn badge(profile: ProfileReport) -> String {
        let mut report = sample::report();
        report.profiles.insert("core".to_string(), profile);
        sample::written(|report, out| write_profile(report, "core", out), &report)
    }

    #[test]
    fn the_message_follows_the_verdict() {
        let certified = badge(sample::profile(true, 5, 0, 0, 0, true));
        assert!(certified.contains("<title>goalpost core: certified</title>"));
        assert!(certified.contains(GREEN));
        let failed = badge(sample::profile(false, 5, 2, 1, 1, true));
        assert!(failed.contains("<title>goalpost core: 3 failed</title>"));
        assert!(failed.contains(RED));
        let skipped = badge(sample::profile(false, 5, 0, 2, 0, true));
        assert!(skipped.contains(": 2 skipped</title>"));
        assert!(badge(sample::profile(false, 0, 0, 0, 0, false)).contains(": not run</title>"));
        assert!(badge(sample::profile(false, 0, 0, 4, 0, true)).contains(": not run</title>"));
    }

    #[test]
    fn advisories_never_take_certified_away() {
        let advised = badge(ProfileReport {
            certified: true,
            pass: 5,
            advisory: 2,
            selected: true,
            ..ProfileReport::default()
        });
        assert!(advised.contains("<title>goalpost core: certified, 2 advisory</title>"));
        assert!(advised.contains(GREEN));
        // Only advisories ran (no MUST passed): it ran, but is not certified.
        let only_advisory = badge(ProfileReport {
            advisory: 1,
            skip: 3,
            selected: true,
            ..ProfileReport::default()
        });
        assert_contains(&only_advisory, ": 3 skipped</title>");
        let blocked = badge(ProfileReport {
            pass: 2,
            not_reached: 3,
            selected: true,
            ..ProfileReport::default()
        });
        assert!(blocked.contains(": 3 not reached</title>"));
        assert!(blocked.contains(AMBER));
    }

    #[test]
    fn a_certified_badge_titles_its_scope_and_an_unattempted_one_its_needs() {
        let certified = badge(ProfileReport {
            certified: true,
            status: Some(Status::Certified),
            pass: 3,
            selected: true,
            scope: crate::run::scope::Scope {
                judge: Some("verifier".to_string()),
                modes: vec!["manual".to_string()],
                ..Default::default()
            },
            ..ProfileReport::default()
        });
        assert_contains(
            &certified,
            "<title>goalpost core: certified (judge verifier; mode manual)</title>",
        );
        assert!(certified.contains(GREEN));
        let unattempted = badge(ProfileReport {
            status: Some(Status::NotAttempted),
            reason: Some("needs 2+ endpoints".to_string()),
            skip: 5,
            selected: true,
            ..ProfileReport::default()
        });
        assert_contains(
            &unattempted,
            "<title>goalpost core: not attempted (needs 2+ endpoints)</title>",
        );
        assert!(unattempted.contains(GREY));
        // The visible text stays short.
        assert_contains(&unattempted, ">not attempted</text>");
    }

    #[test]
    fn every_profile_gets_a_file_name_and_text_is_escaped() {
        assert_eq!(file_name("core"), "badge-core.svg");
        let svg = svg("a<b>&\"", "x", None, GREY);
        assert!(svg.contains("a&lt;b&gt;&amp;&quot;"));
        assert!(!svg.contains("a<b>"));
    }

    #[test]
    fn wider_text_makes_a_wider_badge() {
        assert!(text_width("certified") < text_width("12 failed, more"));
        assert!(text_width("WWW") > text_width("iii"));
    }
}
