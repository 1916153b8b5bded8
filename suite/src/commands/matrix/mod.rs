//! `goalpost matrix REPORT.json... --out DIR`: a compatibility matrix of
//! several hosts' reports. Requirements are rows and hosts columns; each
//! host has a verdict per profile; a requirement a host broke links to that
//! host's report.html where the failing exchange is. One self-contained
//! page (inline style and script pinned by CSP hashes, opens from disk) and
//! the same table in Markdown. Nothing in the output depends on when it was
//! built, so a published matrix can be checked for staleness by building it
//! again.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::report::escape::markup as escape;
use crate::report::html::open_page;
use crate::report::read::ReadError;
use crate::report::{ProfileReport, RequirementReport, RunReport};
use crate::run::outcome::DispositionKind;
use crate::run::scope::Status;

/// The stylesheet both HTML pages share, then this page's own.
const STYLE: &str = concat!(
    include_str!("../../report/html/page.css"),
    include_str!("style.css")
);
const SCRIPT: &str = include_str!("matrix.js");
pub const HTML_FILE: &str = "matrix.html";
pub const MARKDOWN_FILE: &str = "matrix.md";
/// Dispositions from worst to best: the order a sort by a host's column
/// puts rows in, and the filter's options.
const ORDER: &[DispositionKind] = &[
    DispositionKind::Fail,
    DispositionKind::Error,
    DispositionKind::NotReached,
    DispositionKind::Advisory,
    DispositionKind::Skip,
    DispositionKind::NotApplicable,
    DispositionKind::Pass,
];

/// One host: its report and where its report.html is from the output folder.
#[derive(Debug, Clone)]
pub struct Column {
    /// The report folder's name (`reference-host`, a variant's name).
    pub label: String,
    pub report: RunReport,
    /// Relative URL of the report.html beside the report.json, if there is one.
    pub report_html: Option<String>,
}

/// Reads each report and resolves its label and report.html link as seen
/// from `out` (which must exist).
pub fn columns(paths: &[PathBuf], out: &Path) -> Result<Vec<Column>, ReadError> {
    let out = std::fs::canonicalize(out).map_err(|source| ReadError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let mut columns: Vec<Column> = Vec::new();
    for path in paths {
        let report = RunReport::read(path)?;
        let folder = std::fs::canonicalize(path)
            .ok()
            .and_then(|file| file.parent().map(Path::to_path_buf));
        let mut label = folder
            .as_deref()
            .and_then(Path::file_name)
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| report.host.url.clone());
        if columns.iter().any(|column| column.label == label) {
            label = format!("{label} ({})", columns.len() + 1);
        }
        let report_html = folder
            .map(|folder| folder.join("report.html"))
            .filter(|html| html.is_file())
            .map(|html| crate::runner::relative_path(&out, &html));
        columns.push(Column {
            label,
            report,
            report_html,
        });
    }
    Ok(columns)
}

/// Writes matrix.html and matrix.md into `out`.
pub fn write(columns: &[Column], out: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)?;
    let html = out.join(HTML_FILE);
    std::fs::write(&html, html_page(columns))?;
    let markdown = out.join(MARKDOWN_FILE);
    std::fs::write(&markdown, markdown_page(columns))?;
    Ok(vec![html, markdown])
}

/// A row: one requirement, as the first report naming it describes it.
struct Row<'a> {
    requirement: &'a RequirementReport,
    /// Per column, that host's result (`None`: not in its report).
    cells: Vec<Option<&'a RequirementReport>>,
}

fn rows(columns: &[Column]) -> Vec<Row<'_>> {
    let mut order: Vec<&RequirementReport> = Vec::new();
    let mut seen = BTreeSet::new();
    for column in columns {
        for requirement in &column.report.requirements {
            if seen.insert(requirement.id.as_str()) {
                order.push(requirement);
            }
        }
    }
    let lookup: Vec<BTreeMap<&str, &RequirementReport>> = columns
        .iter()
        .map(|column| {
            column
                .report
                .requirements
                .iter()
                .map(|requirement| (requirement.id.as_str(), requirement))
                .collect()
        })
        .collect();
    order
        .into_iter()
        .map(|requirement| Row {
            requirement,
            cells: lookup
                .iter()
                .map(|by_id| by_id.get(requirement.id.as_str()).copied())
                .collect(),
        })
        .collect()
}

/// The verdict words and CSS class of a profile in one host's report.
fn verdict(profile: &ProfileReport) -> (String, &'static str) {
    let broken = profile.fail + profile.error + profile.not_reached > 0;
    match profile.status() {
        Status::OptedOut => ("not run".to_string(), "not-run"),
        Status::NotAttempted if !broken => ("not attempted".to_string(), "not-run"),
        // A report from before statuses: nothing ran, so nothing was judged.
        _ if profile.status.is_none() && profile.ran() == 0 => ("not run".to_string(), "not-run"),
        Status::Certified => (profile.verdict_words(), "certified"),
        _ if profile.fail + profile.error > 0 => ("not certified".to_string(), "failed"),
        _ => ("not certified".to_string(), "incomplete"),
    }
}

/// Under a verdict: the scope a certification covers, or why a profile is
/// not certified or was not attempted.
fn verdict_detail(profile: &ProfileReport) -> Option<String> {
    match profile.status() {
        Status::Certified => Some(profile.scope.to_string()).filter(|_| !profile.scope.is_empty()),
        Status::NotAttempted | Status::NotCertified => profile.reason.clone(),
        Status::OptedOut => None,
    }
}

fn profiles(columns: &[Column]) -> Vec<String> {
    let names: BTreeSet<&String> = columns
        .iter()
        .flat_map(|column| column.report.profiles.keys())
        .collect();
    let mut names: Vec<String> = names.into_iter().cloned().collect();
    names.sort_by_key(|name| {
        crate::cli::KNOWN_PROFILES
            .iter()
            .position(|known| known == name)
            .unwrap_or(usize::MAX)
    });
    names
}

/// Where a host's failing exchange for this requirement is, in its
/// report.html: the scenario article of the failed check, the advisory's
/// own article, or the page itself.
fn failure_link(column: &Column, requirement: &RequirementReport) -> Option<String> {
    let page = column.report_html.as_ref()?;
    let anchor = match requirement.disposition {
        DispositionKind::Advisory => Some(format!("requirement-{}", requirement.id)),
        DispositionKind::Fail | DispositionKind::Error => requirement
            .failed_check
            .as_ref()
            .map(|check| format!("scenario-{}", check.scenario)),
        DispositionKind::NotReached => None,
        DispositionKind::Pass | DispositionKind::Skip | DispositionKind::NotApplicable => {
            return None
        }
    };
    Some(match anchor {
        Some(anchor) => format!("{page}#{anchor}"),
        None => page.clone(),
    })
}

fn disposition_rank(disposition: &DispositionKind) -> usize {
    ORDER
        .iter()
        .position(|known| known == disposition)
        .unwrap_or(ORDER.len())
}

fn profile_versions(columns: &[Column]) -> String {
    let versions: BTreeSet<String> = columns
        .iter()
        .map(|column| {
            column
                .report
                .profile_version
                .clone()
                .unwrap_or_else(|| "unversioned".to_string())
        })
        .collect();
    versions.into_iter().collect::<Vec<_>>().join(", ")
}

/// The self-contained HTML page.
pub fn html_page(columns: &[Column]) -> String {
    let rows = rows(columns);
    let mut html = String::with_capacity(64 * 1024);
    open_page(&mut html, STYLE, SCRIPT);
    html.push_str("<title>goalpost compatibility matrix</title>\n");
    html.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    html.push_str(&format!(
        "<header>\n<h1>goalpost compatibility matrix</h1>\n<p class=\"note\">Profile {} · {} hosts · {} requirements. \
         A profile is certified for a host when its minimum scope ran and every MUST requirement in it that applies to the host passed; under each verdict, the scope it covers (or what it needs). A requirement that does not apply to a host is <code>not-applicable</code>. A cell that is not a pass links to that host's failing exchange.</p>\n</header>\n<main>\n",
        escape(&profile_versions(columns)),
        columns.len(),
        rows.len()
    ));
    // Hosts and their per-profile verdicts.
    html.push_str("<section id=\"hosts\">\n<h2>Hosts</h2>\n<table id=\"host-table\">\n<thead><tr><th>Profile</th>");
    for column in columns {
        html.push_str(&host_heading(column));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for profile in profiles(columns) {
        html.push_str(&format!(
            "<tr data-profile=\"{name}\"><th>{name}</th>",
            name = escape(&profile)
        ));
        for column in columns {
            match column.report.profiles.get(&profile) {
                Some(report) => {
                    let (word, class) = verdict(report);
                    let detail = verdict_detail(report)
                        .map(|detail| format!("<span class=\"scope\">{}</span>", escape(&detail)))
                        .unwrap_or_default();
                    html.push_str(&format!(
                        "<td><span class=\"badge {class}\">{}</span>{detail}</td>",
                        escape(&word)
                    ));
                }
                None => html.push_str("<td>—</td>"),
            }
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table>\n</section>\n");
    // The requirement matrix.
    html.push_str("<section id=\"requirements\">\n<h2>Requirements</h2>\n");
    html.push_str("<form id=\"filters\" hidden>\n<label>Profile <select id=\"filter-profile\"><option value=\"\">all</option>");
    for profile in profiles(columns) {
        html.push_str(&format!("<option>{}</option>", escape(&profile)));
    }
    html.push_str("</select></label>\n<label>A host has <select id=\"filter-disposition\"><option value=\"\">any disposition</option>");
    for disposition in ORDER {
        html.push_str(&format!("<option>{disposition}</option>"));
    }
    html.push_str(&format!(
        "</select></label>\n<label><input type=\"checkbox\" id=\"filter-differ\"> only where hosts differ</label>\n\
         <output id=\"shown\">{n} of {n} requirements shown</output>\n</form>\n",
        n = rows.len()
    ));
    html.push_str("<table id=\"matrix-table\">\n<thead><tr><th>Requirement</th><th>Level</th>");
    for column in columns {
        html.push_str(&host_heading(column));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for row in &rows {
        html.push_str(&html_row(columns, row));
    }
    html.push_str("</tbody>\n</table>\n</section>\n</main>\n");
    html.push_str(&format!("<script>{SCRIPT}</script>\n</body>\n</html>\n"));
    html
}

fn host_heading(column: &Column) -> String {
    let label = escape(&column.label);
    let title = escape(&format!(
        "{} · goalpost {} · {}",
        column.report.host.url, column.report.suite.version, column.report.started_at
    ));
    match &column.report_html {
        Some(href) => format!(
            "<th class=\"host\" title=\"{title}\"><a href=\"{}\">{label}</a></th>",
            escape(href)
        ),
        None => format!("<th class=\"host\" title=\"{title}\">{label}</th>"),
    }
}

fn html_row(columns: &[Column], row: &Row<'_>) -> String {
    let requirement = row.requirement;
    let present: BTreeSet<&str> = row
        .cells
        .iter()
        .flatten()
        .map(|cell| cell.disposition.as_str())
        .collect();
    let differ = present.len() > 1 || row.cells.iter().any(Option::is_none);
    let mut html = format!(
        "<tr data-profile=\"{profile}\" data-dispositions=\"{dispositions}\" data-differ=\"{differ}\" id=\"requirement-{id}\">\
         <td data-sort=\"{id}\"><code>{id}</code><div class=\"text\">{text}</div></td><td><span class=\"level {level}\">{level}</span></td>",
        profile = escape(&requirement.profile),
        dispositions = escape(&present.into_iter().collect::<Vec<_>>().join(" ")),
        id = escape(&requirement.id),
        text = escape(&requirement.text),
        level = escape(&requirement.level),
    );
    for (column, cell) in columns.iter().zip(&row.cells) {
        let Some(cell) = cell else {
            html.push_str("<td data-sort=\"9\" class=\"absent\">—</td>");
            continue;
        };
        let disposition = escape(cell.disposition.as_str());
        let badge = format!("<span class=\"badge {disposition}\">{disposition}</span>");
        let badge = match failure_link(column, cell) {
            Some(href) => format!(
                "<a href=\"{}\" title=\"{}\">{badge}</a>",
                escape(&href),
                escape(cell.message.as_deref().unwrap_or_default())
            ),
            None => badge,
        };
        let reason = cell
            .reason
            .as_deref()
            .map(|reason| format!("<span class=\"reason\">{}</span>", escape(reason)))
            .unwrap_or_default();
        html.push_str(&format!(
            "<td data-sort=\"{}\">{badge}{reason}</td>",
            disposition_rank(&cell.disposition)
        ));
    }
    html.push_str("</tr>\n");
    html
}

/// A Markdown table cell: no pipes or line breaks.
fn md(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The same matrix in Markdown (a README, a pull-request comment).
pub fn markdown_page(columns: &[Column]) -> String {
    let rows = rows(columns);
    let mut out = format!(
        "# goalpost compatibility matrix\n\nProfile {} · {} hosts · {} requirements. A profile is certified for a host when its minimum scope ran and every MUST requirement in it that applies to the host passed; each verdict says the scope it covers (or what it needs). A cell that is not a pass links to that host's failing exchange.\n\n",
        profile_versions(columns),
        columns.len(),
        rows.len()
    );
    let heading = |first: &str| {
        let mut line = format!("| {first} |");
        let mut rule = String::from("|---|");
        for column in columns {
            match &column.report_html {
                Some(href) => line.push_str(&format!(" [{}]({href}) |", md(&column.label))),
                None => line.push_str(&format!(" {} |", md(&column.label))),
            }
            rule.push_str("---|");
        }
        format!("{line}\n{rule}\n")
    };
    out.push_str(&heading("profile"));
    for profile in profiles(columns) {
        out.push_str(&format!("| {} |", md(&profile)));
        for column in columns {
            let word = column.report.profiles.get(&profile).map_or_else(
                || "—".to_string(),
                |report| match verdict_detail(report) {
                    Some(detail) => format!("{} ({})", verdict(report).0, md(&detail)),
                    None => verdict(report).0,
                },
            );
            out.push_str(&format!(" {word} |"));
        }
        out.push('\n');
    }
    out.push('\n');
    let mut requirement_heading = heading("requirement");
    requirement_heading =
        requirement_heading.replacen("| requirement |", "| requirement | level |", 1);
    requirement_heading = requirement_heading.replacen("|---|", "|---|---|", 1);
    out.push_str(&requirement_heading);
    for row in &rows {
        out.push_str(&format!(
            "| `{}` | {} |",
            md(&row.requirement.id),
            md(&row.requirement.level)
        ));
        for (column, cell) in columns.iter().zip(&row.cells) {
            let text = match cell {
                None => "—".to_string(),
                Some(cell) => {
                    let word = match &cell.reason {
                        Some(reason) => format!("{} ({})", cell.disposition, reason),
                        None => cell.disposition.to_string(),
                    };
                    match failure_link(column, cell) {
                        Some(href) => format!("[{}]({href})", md(&word)),
                        None => md(&word),
                    }
                }
            };
            out.push_str(&format!(" {text} |"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
