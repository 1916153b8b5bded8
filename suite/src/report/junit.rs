//! `junit.xml`: one `<testsuite>` per profile, one `<testcase>` per
//! scenario. A broken claim is a `<failure>`, a host that could not be used
//! (transport, timeout, garbage body) an `<error>`, and a skip a
//! `<skipped message="reason">` saying what the reason means and which
//! PROFILE.md section says how to act. Each case lists the requirements it
//! names as properties, and in `<system-out>` each with its level, its
//! disposition (an advisory is not a failure: the case passes) and its
//! section; a failing case ends with the curl command that replays its step.
//! Each suite's properties carry its profile's verdict, what it covers
//! (its scope) or why it is not certified, and its requirement counts (the
//! case counts are scenarios).

use std::collections::BTreeMap;
use std::io;

use super::escape::markup as escape;
use super::{legend, RequirementReport, RunReport, ScenarioReport};
use crate::run::outcome::{DispositionKind, OutcomeKind};
use crate::run::scope::Status;

pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    let mut by_profile: BTreeMap<&str, Vec<&ScenarioReport>> = BTreeMap::new();
    for scenario in &report.scenarios {
        by_profile
            .entry(&scenario.profile)
            .or_default()
            .push(scenario);
    }
    let mut proves: BTreeMap<&str, Vec<&RequirementReport>> = BTreeMap::new();
    for requirement in &report.requirements {
        for scenario in &requirement.scenarios {
            proves.entry(scenario).or_default().push(requirement);
        }
    }
    let count = |scenarios: &[&ScenarioReport], outcome: OutcomeKind| {
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
        count(&all, OutcomeKind::Fail),
        count(&all, OutcomeKind::Error),
        count(&all, OutcomeKind::Skip),
        seconds(&all),
    )?;
    for (profile, scenarios) in &by_profile {
        writeln!(
            out,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="{}" skipped="{}" time="{:.3}" timestamp="{}">"#,
            escape(profile),
            scenarios.len(),
            count(scenarios, OutcomeKind::Fail),
            count(scenarios, OutcomeKind::Error),
            count(scenarios, OutcomeKind::Skip),
            seconds(scenarios),
            escape(&report.started_at),
        )?;
        // The profile's verdict, which counts requirements: the case counts
        // above are scenarios, and an advisory is never a failed case.
        if let Some(summary) = report.profiles.get(*profile) {
            writeln!(out, "    <properties>")?;
            let verdict = match summary.status() {
                Status::OptedOut => "opted-out".to_string(),
                status => status.to_string(),
            };
            let scope = &summary.scope;
            let mut counts = vec![
                ("verdict", verdict),
                ("requirements.pass", summary.pass.to_string()),
                ("requirements.fail", summary.fail.to_string()),
                ("requirements.advisory", summary.advisory.to_string()),
                ("requirements.not-reached", summary.not_reached.to_string()),
                ("requirements.skip", summary.skip.to_string()),
                (
                    "requirements.not-applicable",
                    summary.not_applicable.to_string(),
                ),
                ("requirements.error", summary.error.to_string()),
            ];
            // What the verdict covers, or why it is not certified.
            if let Some(reason) = &summary.reason {
                counts.push(("reason", reason.clone()));
            }
            if !scope.is_empty() {
                counts.extend([
                    ("scope", scope.to_string()),
                    ("scope.judge", scope.judge.clone().unwrap_or_default()),
                    ("scope.modes", scope.modes.join(" ")),
                    ("scope.offered", scope.offered.join(" ")),
                    ("scope.not-offered", scope.not_offered.join(" ")),
                ]);
            }
            for (name, value) in counts {
                writeln!(
                    out,
                    r#"      <property name="{name}" value="{}"/>"#,
                    escape(&value)
                )?;
            }
            writeln!(out, "    </properties>")?;
        }
        for scenario in scenarios {
            writeln!(
                out,
                r#"    <testcase name="{}" classname="{}" time="{:.3}">"#,
                escape(&scenario.name),
                escape(profile),
                scenario.duration().as_secs_f64(),
            )?;
            let named = proves.get(scenario.name.as_str()).map_or(&[][..], |v| v);
            if !named.is_empty() {
                writeln!(out, "      <properties>")?;
                for requirement in named {
                    writeln!(
                        out,
                        r#"        <property name="requirement" value="{}"/>"#,
                        escape(&requirement.id)
                    )?;
                }
                writeln!(out, "      </properties>")?;
            }
            let message = scenario.message.as_deref().unwrap_or_default();
            let first_line = message.lines().next().unwrap_or_default();
            let mut body = message.to_string();
            if let Some(step) = &scenario.failed_step {
                body.push_str("\n\nreproduce:\n");
                body.push_str(&step.request.curl());
            }
            match scenario.outcome {
                OutcomeKind::Fail | OutcomeKind::Error => writeln!(
                    out,
                    "      <{kind} message=\"{}\" type=\"{kind}\">{}</{kind}>",
                    escape(first_line),
                    escape(&body),
                    kind = if scenario.outcome == OutcomeKind::Fail {
                        "failure"
                    } else {
                        "error"
                    },
                )?,
                OutcomeKind::Skip => {
                    let reason = scenario.reason.as_deref().unwrap_or_default();
                    match report.legend.get(reason) {
                        Some(entry) => writeln!(
                            out,
                            "      <skipped message=\"{}\">{} See {}.</skipped>",
                            escape(reason),
                            escape(&entry.meaning),
                            escape(&entry.section)
                        )?,
                        None => writeln!(out, "      <skipped message=\"{}\"/>", escape(reason))?,
                    }
                }
                OutcomeKind::Pass => {}
            }
            if !named.is_empty() {
                let lines: Vec<String> = named.iter().map(|r| requirement_line(r)).collect();
                writeln!(
                    out,
                    "      <system-out>{}</system-out>",
                    escape(&lines.join("\n"))
                )?;
            }
            writeln!(out, "    </testcase>")?;
        }
        writeln!(out, "  </testsuite>")?;
    }
    writeln!(out, "</testsuites>")?;
    out.flush()
}

/// `core.x MUST advisory: why (PROFILE.md#core.x)`: one requirement a
/// case names, with what became of it over all its scenarios.
fn requirement_line(requirement: &RequirementReport) -> String {
    let why = match requirement.disposition {
        DispositionKind::Advisory | DispositionKind::NotReached => requirement
            .message
            .as_deref()
            .and_then(|m| m.lines().next())
            .map(|line| format!(": {line}"))
            .unwrap_or_default(),
        DispositionKind::Skip | DispositionKind::NotApplicable => requirement
            .reason
            .as_deref()
            .map(|reason| format!(": {reason}"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let section = if requirement.section.is_empty() {
        legend::requirement_section(&requirement.id)
    } else {
        requirement.section.clone()
    };
    format!(
        "{} {} {}{why} ({section})",
        requirement.id, requirement.level, requirement.disposition
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;
    use crate::testing::assert_contains;

    fn written() -> String {
        sample::written(|report, out| write(report, out), &sample::report())
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
        let names: Vec<&str> = elements
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| !["properties", "property", "system-out"].contains(name))
            .collect();
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
        let skipped = elements.iter().find(|(n, _)| n == "skipped").unwrap();
        assert!(skipped.1.contains(r#"message="seam-absent""#));
        assert!(elements
            .iter()
            .any(|(n, a)| n == "testcase" && a.contains(r#"name="core::create""#)));
    }

    #[test]
    fn failures_and_errors_stay_distinct() {
        let xml = written();
        let failure = xml.find("<failure").unwrap();
        let error = xml.find("<error").unwrap();
        assert!(xml[..failure].contains(r#"name="core::bounds""#));
        assert!(xml[failure..error].contains(r#"name="core::discovery""#));
        assert!(xml[error..].contains("transport failure"));
    }

    #[test]
    fn each_case_names_the_requirements_it_proves() {
        let xml = written();
        assert_contains(
            &xml,
            r#"<property name="requirement" value="core.create.bounds-required"/>"#,
        );
    }

    #[test]
    fn each_case_says_what_became_of_each_requirement_it_names() {
        let xml = written();
        assert_contains(&xml, "<system-out>core.create.ok MUST pass (PROFILE.md#core.create.ok)\ncore.create.location SHOULD advisory: core/create.json step 1 &quot;create&quot;: header location is absent (PROFILE.md#core.create.location)</system-out>");
        assert_contains(
            &xml,
            "core.lifecycle.abandon MUST not-reached: not reached: step 1",
        );
        // An advisory is no failure: its case has no <failure>.
        let create = &xml[xml.find(r#"name="core::create""#).unwrap()..];
        let create = &create[..create.find("</testcase>").unwrap()];
        assert!(!create.contains("<failure"), "{create}");
    }

    #[test]
    fn each_suite_carries_its_profile_verdict_in_requirements() {
        let xml = written();
        let core = &xml[xml.find(r#"<testsuite name="core""#).unwrap()..];
        let core = &core[..core.find("<testcase").unwrap()];
        assert_contains(core, r#"<property name="verdict" value="not certified"/>"#);
        assert_contains(
            core,
            r#"<property name="requirements.advisory" value="1"/>"#,
        );
        assert_contains(
            core,
            r#"<property name="requirements.not-reached" value="1"/>"#,
        );
    }

    #[test]
    fn a_skip_says_what_its_reason_means_and_where_to_read_more() {
        let xml = written();
        assert_contains(
            &xml,
            "<skipped message=\"seam-absent\">The host does not list a conformance seam",
        );
        assert_contains(&xml, "See PROFILE.md#skip-seam-absent.</skipped>");
    }

    #[test]
    fn a_failure_carries_its_curl_command() {
        let xml = written();
        let failure = &xml[xml.find("<failure").unwrap()..xml.find("</failure>").unwrap()];
        assert_contains(failure, "reproduce:\ncurl -sS -i");
        assert_contains(failure, "Bearer $TOKEN");
    }

    #[test]
    fn messages_are_escaped() {
        let xml = written();
        assert_contains(&xml, "&lt;&amp;&gt; failed");
        assert_contains(&xml, "&quot;create&quot;");
        assert!(!xml.contains("<&>"));
    }
}
