use super::*;
use crate::report::{FailedCheck, SUITE_NAME};
use crate::testing::assert_contains;

fn requirement(id: &str, level: &str, disposition: &str) -> RequirementReport {
    RequirementReport {
        id: id.to_string(),
        profile: id.split('.').next().unwrap_or_default().to_string(),
        level: level.to_string(),
        text: format!("{id} <holds>"),
        disposition: DispositionKind::parse(disposition).expect("a disposition"),
        reason: (disposition == "skip").then(|| "seam-absent".to_string()),
        message: (disposition == "fail").then(|| "it broke".to_string()),
        failed_check: (disposition == "fail").then(|| FailedCheck {
            scenario: "core::x".to_string(),
            step: 1,
            ..FailedCheck::default()
        }),
        ..RequirementReport::default()
    }
}

fn column(label: &str, requirements: Vec<RequirementReport>, html: bool) -> Column {
    let mut report = RunReport::default();
    report.suite.name = SUITE_NAME.to_string();
    report.profile_version = Some("1.0".to_string());
    let fail = requirements
        .iter()
        .filter(|r| r.disposition == DispositionKind::Fail)
        .count() as u32;
    let pass = requirements
        .iter()
        .filter(|r| r.disposition == DispositionKind::Pass)
        .count() as u32;
    report.profiles.insert(
        "core".to_string(),
        ProfileReport {
            certified: fail == 0,
            pass,
            fail,
            ..ProfileReport::default()
        },
    );
    report.requirements = requirements;
    Column {
        label: label.to_string(),
        report,
        report_html: html.then(|| format!("../{label}/report.html")),
    }
}

fn two_hosts() -> Vec<Column> {
    vec![
        column(
            "reference-host",
            vec![
                requirement("core.a", "MUST", "pass"),
                requirement("core.b", "MUST", "pass"),
            ],
            true,
        ),
        column(
            "other",
            vec![
                requirement("core.a", "MUST", "fail"),
                requirement("core.b", "MUST", "pass"),
                requirement("core.c", "SHOULD", "skip"),
            ],
            true,
        ),
    ]
}

/// The `<tr>` of a requirement in the page.
fn row<'a>(html: &'a str, id: &str) -> &'a str {
    html.split("<tr ")
        .find(|row| row.contains(&format!("id=\"requirement-{id}\"")))
        .map(|row| &row[..row.find("</tr>").unwrap()])
        .unwrap_or_else(|| panic!("no row {id}"))
}

#[test]
fn rows_are_requirements_and_columns_hosts_with_links_to_failures() {
    let html = html_page(&two_hosts());
    assert!(
        html.contains("<th class=\"host\" title=\"")
            && html.contains("<a href=\"../other/report.html\">other</a></th>"),
        "{html}"
    );
    let row_a = row(&html, "core.a");
    assert_contains(row_a, "data-differ=\"true\"");
    assert_contains(row_a, "<a href=\"../other/report.html#scenario-core::x\" title=\"it broke\"><span class=\"badge fail\">fail</span></a>");
    assert!(row(&html, "core.b").contains("data-differ=\"false\""));
    // Absent from one report: a dash, and the row differs.
    let row_c = row(&html, "core.c");
    assert!(
        row_c.contains("class=\"absent\">—</td>") && row_c.contains("seam-absent"),
        "{row_c}"
    );
    // Host data is escaped; per-profile verdicts are there.
    assert!(html.contains("core.a &lt;holds&gt;"));
    assert!(html.contains("<span class=\"badge certified\">certified</span>"));
    assert!(html.contains("<span class=\"badge failed\">not certified</span>"));
}

#[test]
fn the_markdown_has_the_same_table() {
    let md = markdown_page(&two_hosts());
    assert_contains(&md, "| profile | [reference-host](../reference-host/report.html) | [other](../other/report.html) |\n|---|---|---|\n| core | certified | not certified |\n");
    assert_contains(
        &md,
        "| `core.a` | MUST | pass | [fail](../other/report.html#scenario-core::x) |\n",
    );
    assert_contains(&md, "| `core.c` | SHOULD | — | skip (seam-absent) |\n");
}

#[test]
fn without_a_report_html_a_failure_is_not_linked() {
    let mut hosts = two_hosts();
    hosts[1].report_html = None;
    let html = html_page(&hosts);
    assert!(!html.contains("report.html#scenario"), "{html}");
}

#[test]
fn the_page_does_not_depend_on_when_it_was_built() {
    assert_eq!(html_page(&two_hosts()), html_page(&two_hosts()));
}

#[test]
fn each_verdict_says_its_scope_or_what_it_needs() {
    let mut hosts = two_hosts();
    let scope = crate::run::scope::Scope {
        judge: Some("verifier".to_string()),
        modes: vec!["manual".to_string()],
        offered: Vec::new(),
        not_offered: vec!["mode:heartbeat".to_string()],
    };
    let core = hosts[0].report.profiles.get_mut("core").expect("core");
    core.status = Some(Status::Certified);
    core.scope = scope;
    hosts[0].report.profiles.insert(
        "cluster".to_string(),
        ProfileReport {
            status: Some(Status::NotAttempted),
            reason: Some("needs 2+ endpoints".to_string()),
            skip: 5,
            ..ProfileReport::default()
        },
    );
    let html = html_page(&hosts);
    assert_contains(&html, "<span class=\"badge certified\">certified</span><span class=\"scope\">judge verifier; mode manual; not offered: heartbeat</span>");
    assert_contains(&html, "<span class=\"badge not-run\">not attempted</span><span class=\"scope\">needs 2+ endpoints</span>");
    let md = markdown_page(&hosts);
    assert_contains(&md, "| core | certified (judge verifier; mode manual; not offered: heartbeat) | not certified |");
    assert_contains(&md, "| cluster | not attempted (needs 2+ endpoints) | — |");
}
