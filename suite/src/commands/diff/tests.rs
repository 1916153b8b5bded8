use super::*;
use crate::report::{ProfileReport, SUITE_NAME};
use crate::run::scope::Status;
use crate::testing::assert_contains;

fn requirement(
    id: &str,
    level: &str,
    disposition: &str,
    reason: Option<&str>,
) -> RequirementReport {
    RequirementReport {
        id: id.to_string(),
        profile: id.split('.').next().unwrap_or_default().to_string(),
        level: level.to_string(),
        disposition: DispositionKind::parse(disposition).expect("a disposition"),
        reason: reason.map(str::to_string),
        message: (!matches!(disposition, "pass" | "skip" | "not-applicable"))
            .then(|| format!("{id} broke")),
        ..RequirementReport::default()
    }
}

fn report(requirements: Vec<RequirementReport>) -> RunReport {
    let mut report = RunReport::default();
    report.suite.name = SUITE_NAME.to_string();
    report.profile_version = Some("1.0".to_string());
    let certified = requirements
        .iter()
        .filter(|r| r.level == "MUST")
        .all(|r| r.disposition == DispositionKind::Pass);
    report.profiles.insert(
        "core".to_string(),
        ProfileReport {
            certified,
            ..ProfileReport::default()
        },
    );
    report.requirements = requirements;
    report
}

#[test]
fn identical_reports_have_no_diff() {
    let old = report(vec![requirement("core.a", "MUST", "pass", None)]);
    let diff = Diff::between(&old, &old.clone());
    assert_eq!(diff, Diff::default());
    assert_eq!(diff.exit_code(), 0);
}

#[test]
fn a_must_that_now_fails_is_a_regression_and_fails_the_gate() {
    let old = report(vec![
        requirement("core.a", "MUST", "pass", None),
        requirement("core.b", "MUST", "fail", None),
        requirement("core.c", "SHOULD", "pass", None),
        requirement("core.d", "MUST", "skip", Some("seam-absent")),
    ]);
    let new = report(vec![
        requirement("core.a", "MUST", "fail", None),
        requirement("core.b", "MUST", "pass", None),
        requirement("core.c", "SHOULD", "advisory", None),
        requirement("core.d", "MUST", "not-reached", None),
    ]);
    let diff = Diff::between(&old, &new);
    let ids = |changes: &[Change]| changes.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&diff.regressed), ["core.a", "core.c", "core.d"]);
    assert_eq!(ids(&diff.recovered), ["core.b"]);
    assert_eq!(
        diff.must_regressions()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["core.a", "core.d"]
    );
    assert_eq!(diff.exit_code(), 1);
    let mut text = Vec::new();
    write(&diff, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert_contains(&text, "regressed, MUST (2):\n  core.a MUST: pass → fail: core.a broke\n  core.d MUST: skip (seam-absent) → not-reached: core.d broke\n");
    assert_contains(
        &text,
        "regressed, SHOULD (advisory, never blocks) (1):\n  core.c SHOULD: pass → advisory",
    );
    assert_contains(&text, "recovered (1):\n  core.b MUST: fail → pass\n");
    assert!(text.ends_with("2 MUST requirements regressed\n"), "{text}");
}

#[test]
fn a_should_turning_advisory_alone_does_not_fail_the_gate() {
    let old = report(vec![requirement("core.c", "SHOULD", "pass", None)]);
    let new = report(vec![requirement("core.c", "SHOULD", "advisory", None)]);
    let diff = Diff::between(&old, &new);
    assert_eq!(diff.regressed.len(), 1);
    assert_eq!(diff.exit_code(), 0);
}

#[test]
fn appeared_vanished_and_other_moves_are_named() {
    let old = report(vec![
        requirement("core.a", "MUST", "pass", None),
        requirement("core.gone", "MUST", "pass", None),
        requirement("core.s", "MUST", "pass", None),
    ]);
    let mut new = report(vec![
        requirement("core.a", "MUST", "pass", None),
        requirement("core.s", "MUST", "skip", Some("seam-absent")),
        requirement("core.new-ok", "MUST", "pass", None),
        requirement("core.new-bad", "MUST", "fail", None),
    ]);
    new.profile_version = Some("1.1".to_string());
    let diff = Diff::between(&old, &new);
    let ids = |changes: &[Change]| changes.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&diff.appeared), ["core.new-bad", "core.new-ok"]);
    assert_eq!(ids(&diff.vanished), ["core.gone"]);
    // pass → skip: no longer checked, listed, not a regression.
    assert_eq!(ids(&diff.changed), ["core.s"]);
    // A new requirement the host breaks is a regression of the gate.
    assert_eq!(ids(&diff.regressed), ["core.new-bad"]);
    assert_eq!(diff.exit_code(), 1);
    assert_eq!(diff.profile_version.as_deref(), Some("1.0 → 1.1"));
    assert_eq!(diff.profiles, ["core: certified → not certified"]);
}

/// A report whose `core` profile is certified for `scope`.
fn scoped(judge: &str, modes: &[&str], not_offered: &[&str]) -> RunReport {
    let mut report = report(vec![requirement("core.a", "MUST", "pass", None)]);
    let core = report.profiles.get_mut("core").expect("core");
    core.status = Some(Status::Certified);
    core.scope = crate::run::scope::Scope {
        judge: Some(judge.to_string()),
        modes: modes.iter().map(|m| m.to_string()).collect(),
        offered: Vec::new(),
        not_offered: not_offered.iter().map(|t| t.to_string()).collect(),
    };
    report
}

#[test]
fn a_scope_that_shrinks_is_a_regression_and_one_that_grows_a_change() {
    let wide = scoped("verifier", &["manual", "schedule"], &[]);
    let narrow = scoped("verifier", &["manual"], &["mode:schedule"]);
    let diff = Diff::between(&wide, &narrow);
    assert_eq!(diff.scopes.len(), 1);
    assert_eq!(diff.scopes[0].lost, ["mode:schedule"]);
    assert!(diff.scopes[0].shrank());
    assert_eq!(
        diff.exit_code(),
        1,
        "no requirement moved, yet the scope shrank"
    );
    let mut text = Vec::new();
    write(&diff, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert_contains(&text, "scope of core shrank (no longer: mode:schedule): judge verifier; modes manual, schedule → judge verifier; mode manual; not offered: schedule\n");
    assert!(
        text.ends_with("scope shrank (a regression): core\n"),
        "{text}"
    );
    // The other way: the certification covers more. A change, not a
    // regression.
    let diff = Diff::between(&narrow, &wide);
    assert_eq!(diff.scopes[0].gained, ["mode:schedule"]);
    assert!(!diff.scopes[0].shrank());
    assert_eq!(diff.exit_code(), 0);
    // Another judge is a change that loses the old one: a regression.
    let diff = Diff::between(&wide, &scoped("host", &["manual", "schedule"], &[]));
    assert_eq!(diff.scopes[0].lost, ["judge:verifier"]);
    assert_eq!(diff.scopes[0].gained, ["judge:host"]);
    assert_eq!(diff.exit_code(), 1);
    // A report from before scopes has none to compare.
    let diff = Diff::between(
        &report(vec![requirement("core.a", "MUST", "pass", None)]),
        &wide,
    );
    assert!(diff.scopes.is_empty());
    assert_eq!(diff.exit_code(), 0);
}

#[test]
fn not_applicable_is_not_broken_and_a_verdict_that_moves_is_named() {
    let old = scoped("verifier", &["manual", "heartbeat"], &[]);
    let mut new = scoped("verifier", &["manual"], &["mode:heartbeat"]);
    new.requirements = vec![requirement(
        "core.a",
        "MUST",
        "not-applicable",
        Some("mode:heartbeat"),
    )];
    let core = new.profiles.get_mut("core").expect("core");
    core.status = Some(Status::NotCertified);
    let diff = Diff::between(&old, &new);
    assert!(diff.regressed.is_empty(), "{:?}", diff.regressed);
    assert_eq!(diff.changed.len(), 1);
    assert_eq!(diff.profiles, ["core: certified → not certified"]);
    assert_eq!(diff.exit_code(), 1, "the scope shrank");
}
