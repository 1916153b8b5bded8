//! `report.html`: one self-contained page (inline CSS and script, no other
//! file, opens from disk) that a host implementer can act on and a buyer can
//! read at a glance: the verdict per profile, every requirement with filters,
//! and for every failing or erroring step the whole exchange with a curl
//! command that replays it.
//!
//! Everything that came from the host or a scenario is escaped. The script
//! is a constant that only reads the DOM (no data is ever written into it),
//! and a Content-Security-Policy pins the page to exactly that script and
//! style by hash, so even a missed escape could not run anything.

use std::io;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::escape::markup as escape;
use super::legend::{self, DISPOSITIONS};
use super::{ProfileReport, RequirementReport, RunReport, ScenarioReport};
use crate::run::outcome::exchange::{FailedStep, Header, RecordedBody};
use crate::run::outcome::DispositionKind;
use crate::run::scope::Status;

/// The stylesheet both HTML pages share (`html/page.css`), then this page's own.
const STYLE: &str = concat!(
    include_str!("html/page.css"),
    include_str!("html/style.css")
);
const SCRIPT: &str = include_str!("html/filter.js");

pub fn write(report: &RunReport, mut out: impl io::Write) -> io::Result<()> {
    out.write_all(page(report).as_bytes())?;
    out.flush()
}

fn page(report: &RunReport) -> String {
    let mut html = String::with_capacity(64 * 1024);
    open_page(&mut html, STYLE, SCRIPT);
    html.push_str(&format!(
        "<title>{} — goalpost {} conformance report</title>\n",
        escape(&report.host.url),
        escape(&report.suite.version)
    ));
    html.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    html.push_str(&header(report));
    html.push_str("<main>\n");
    html.push_str(&profiles(report));
    html.push_str(&legend_section(report));
    html.push_str(&requirements(report));
    html.push_str(&failures(report));
    html.push_str("</main>\n");
    html.push_str(&format!("<script>{SCRIPT}</script>\n</body>\n</html>\n"));
    html
}

fn header(report: &RunReport) -> String {
    let host_note = if report.host.bundled {
        " <span class=\"note\">(the bundled reference host)</span>"
    } else {
        ""
    };
    format!(
        "<header>\n<h1>goalpost conformance report</h1>\n<dl class=\"meta\">\n\
         <dt>Host</dt><dd><code id=\"host-url\">{url}</code>{host_note}</dd>\n\
         <dt>Suite</dt><dd>{suite} {version}</dd>\n\
         <dt>Profile</dt><dd>{profile}</dd>\n\
         <dt>Date</dt><dd><time datetime=\"{started}\">{started}</time> to <time datetime=\"{finished}\">{finished}</time> ({seconds:.1} s)</dd>\n\
         <dt>Discovery SHA-256</dt><dd><code>{digest}</code></dd>\n</dl>\n</header>\n",
        url = escape(&report.host.url),
        suite = escape(&report.suite.name),
        version = escape(&report.suite.version),
        started = escape(&report.started_at),
        finished = escape(&report.finished_at),
        seconds = report.duration_ms as f64 / 1000.0,
        digest = escape(&report.host.discovery_sha256),
        profile = profile_version(report),
    )
}

/// "Profile 1.0", linked to PROFILE.md when it was found.
fn profile_version(report: &RunReport) -> String {
    let words = match &report.profile_version {
        Some(version) => format!("{} {}", legend::PROFILE_DOCUMENT, escape(version)),
        None => "unversioned (the scenarios folder names no profileVersion)".to_string(),
    };
    match &report.profile_href {
        Some(href) => format!("<a href=\"{}\">{words}</a>", escape(href)),
        None => words,
    }
}

/// A link to a PROFILE.md section when PROFILE.md was found, else the
/// section's name: a link that does not resolve helps nobody.
fn section_link(report: &RunReport, section: &str, label: &str) -> String {
    match report.section_href(section) {
        Some(href) => format!("<a href=\"{}\">{}</a>", escape(&href), escape(label)),
        None => format!("{} (<code>{}</code>)", escape(label), escape(section)),
    }
}

/// The verdict words and CSS class of a profile.
fn verdict(profile: &ProfileReport) -> (String, &'static str) {
    match profile.status() {
        Status::OptedOut => ("opted out".to_string(), "opted-out"),
        Status::NotAttempted => ("not attempted".to_string(), "not-attempted"),
        Status::Certified => (profile.verdict_words(), "certified"),
        Status::NotCertified if profile.fail + profile.error > 0 => {
            ("not certified".to_string(), "failed")
        }
        Status::NotCertified => ("not certified".to_string(), "incomplete"),
    }
}

/// Under the verdict: the scope a certification covers, or why the
/// profile is not certified or was not attempted.
fn verdict_detail(profile: &ProfileReport) -> String {
    let text = match profile.status() {
        Status::Certified if !profile.scope.is_empty() => format!("Covers: {}.", profile.scope),
        Status::NotAttempted | Status::NotCertified => match &profile.reason {
            Some(reason) => format!("{}.", upper_first(reason)),
            None => return String::new(),
        },
        _ => return String::new(),
    };
    format!("<p class=\"scope\">{}</p>", escape(&text))
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn profiles(report: &RunReport) -> String {
    let mut html = format!(
        "<section id=\"profiles\">\n<h2>Profiles</h2>\n<p class=\"note\">Counts are of requirements ({run} scenarios ran, {skipped} skipped). \
         A profile is certified when its minimum scope ran and every {must} requirement that applies to the host passed; {should} requirements never block: one not met is an advisory, counted apart. \
         A requirement about a feature the host does not advertise is not applicable: it never blocks and never counts as a pass, and the scope says what was not offered.</p>\n\
         <ul class=\"profiles\">\n",
        run = report.scenarios_run(),
        skipped = report.scenarios.len() - report.scenarios_run(),
        must = section_link(report, &legend::levels_section(), "MUST"),
        should = section_link(report, &legend::levels_section(), "SHOULD"),
    );
    for (name, profile) in &report.profiles {
        let (word, class) = verdict(profile);
        html.push_str(&format!(
            "<li class=\"profile {class}\" data-profile=\"{name}\"><h3>{name}</h3><p class=\"verdict\">{word}</p>{detail}\
             <p class=\"counts\">{counts}</p></li>\n",
            counts = counts(profile),
            name = escape(name),
            word = escape(&word),
            detail = verdict_detail(profile),
        ));
    }
    html.push_str("</ul>\n</section>\n");
    html
}

/// A profile's counts, one span each; advisories coloured apart, as
/// they never block.
fn counts(profile: &ProfileReport) -> String {
    let spans: Vec<String> = profile
        .counts()
        .iter()
        .map(|(words, count)| match *words {
            "advisory" => format!("<span class=\"advisory\">{count} {words}</span>"),
            _ => format!("<span>{count} {words}</span>"),
        })
        .collect();
    spans.join(" ")
}

/// What every disposition means, and every skip reason present in this
/// run with the PROFILE.md section that says how to act on it.
fn legend_section(report: &RunReport) -> String {
    let mut html = format!(
        "<section id=\"legend\">\n<h2>Legend</h2>\n<h3>Dispositions ({})</h3>\n<dl class=\"legend\">\n",
        section_link(report, &legend::dispositions_section(), "PROFILE.md")
    );
    for (disposition, meaning) in DISPOSITIONS {
        html.push_str(&format!(
            "<dt><span class=\"badge {disposition}\">{disposition}</span></dt><dd>{}</dd>\n",
            escape(meaning)
        ));
    }
    html.push_str("</dl>\n");
    if !report.legend.is_empty() {
        html.push_str(
            "<h3>Reasons in this run: skips, and what does not apply</h3>\n<dl class=\"legend\" id=\"skip-reasons\">\n",
        );
        for (reason, entry) in legend::in_reading_order(&report.legend) {
            html.push_str(&format!(
                "<dt id=\"skip-{reason}\"><code>{reason}</code></dt><dd>{} {}</dd>\n",
                escape(&entry.meaning),
                section_link(report, &entry.section, "How to act."),
                reason = escape(reason),
            ));
        }
        html.push_str("</dl>\n");
    }
    html.push_str("</section>\n");
    html
}

fn has_article(scenario: &ScenarioReport) -> bool {
    scenario.outcome.is_failure()
}

fn scenario_anchor(name: &str) -> String {
    format!("scenario-{}", escape(name))
}

fn requirement_anchor(id: &str) -> String {
    format!("requirement-{}", escape(id))
}

fn requirements(report: &RunReport) -> String {
    let mut html = String::from("<section id=\"requirements\">\n<h2>Requirements</h2>\n");
    html.push_str("<form id=\"filters\" hidden>\n<label>Profile <select id=\"filter-profile\"><option value=\"\">all</option>");
    for name in report.profiles.keys() {
        html.push_str(&format!("<option>{}</option>", escape(name)));
    }
    html.push_str("</select></label>\n<label>Disposition <select id=\"filter-disposition\"><option value=\"\">all</option>");
    for (disposition, _) in DISPOSITIONS {
        html.push_str(&format!("<option>{disposition}</option>"));
    }
    html.push_str(&format!(
        "</select></label>\n<output id=\"shown\">{n} of {n} requirements shown</output>\n</form>\n",
        n = report.requirements.len()
    ));
    html.push_str(
        "<table id=\"requirement-table\">\n<thead><tr><th class=\"c-id\">Requirement</th><th class=\"c-level\">Level</th>\
         <th class=\"c-clause\">Section</th><th class=\"c-disposition\">Disposition</th><th class=\"c-reason\">Reason</th>\
         <th class=\"c-scenarios\">Scenarios</th><th class=\"c-mutation\">Mutation-verified</th></tr></thead>\n<tbody>\n",
    );
    for requirement in &report.requirements {
        html.push_str(&requirement_row(report, requirement));
    }
    html.push_str("</tbody>\n</table>\n</section>\n");
    html
}

fn requirement_row(report: &RunReport, requirement: &RequirementReport) -> String {
    let articles: Vec<&ScenarioReport> = requirement
        .scenarios
        .iter()
        .filter_map(|name| report.scenarios.iter().find(|s| &s.name == name))
        .filter(|s| has_article(s))
        .collect();
    let reason = match (&requirement.reason, &requirement.message) {
        (Some(reason), _) => format!(
            "<a href=\"#skip-{reason}\" title=\"{meaning}\">{reason}</a>",
            reason = escape(reason),
            meaning = escape(
                report
                    .legend
                    .get(reason)
                    .map_or("", |entry| entry.meaning.as_str())
            ),
        ),
        (None, Some(message)) => {
            // The check that decided this requirement, when the ledger
            // knows it: with per-requirement attribution the scenario's
            // first failed step may be about another requirement.
            let decided = requirement.failed_step.as_deref().and_then(short_reason);
            let short = match requirement.disposition {
                // The ledger's own words name what blocked it.
                DispositionKind::NotReached => None,
                DispositionKind::Fail | DispositionKind::Error => decided.or_else(|| {
                    articles
                        .iter()
                        .find_map(|s| s.failed_step.as_deref())
                        .and_then(short_reason)
                }),
                _ => decided,
            }
            .unwrap_or_else(|| message.lines().next().unwrap_or_default().to_string());
            let first = escape(&short);
            let in_scenario = requirement
                .failed_check
                .as_ref()
                .and_then(|check| articles.iter().find(|s| s.name == check.scenario))
                .or(articles.first());
            if requirement.disposition == DispositionKind::Advisory {
                format!(
                    "<a href=\"#{}\">{first}</a>",
                    requirement_anchor(&requirement.id)
                )
            } else if let Some(scenario) = in_scenario {
                format!(
                    "<a href=\"#{}\">{first}</a>",
                    scenario_anchor(&scenario.name)
                )
            } else {
                first
            }
        }
        (None, None) => "—".to_string(),
    };
    let scenarios: Vec<String> = requirement
        .scenarios
        .iter()
        .map(|name| {
            if articles.iter().any(|s| &s.name == name) {
                format!(
                    "<a href=\"#{}\"><code>{}</code></a>",
                    scenario_anchor(name),
                    escape(name)
                )
            } else {
                format!("<code>{}</code>", escape(name))
            }
        })
        .collect();
    let mutation = match requirement.mutation_verified {
        None => "—".to_string(),
        Some(true) => {
            let names: Vec<String> = requirement
                .mutants
                .iter()
                .map(|name| format!("<code>{}</code>", escape(name)))
                .collect();
            format!("yes<div class=\"mutants\">{}</div>", names.join(" "))
        }
        Some(false) => "no".to_string(),
    };
    let disposition = requirement.disposition;
    // The clause as requirements.json states it, linked to its section;
    // when the clause is the section itself, the link says so once.
    let clause_text = if requirement.clause == requirement.section || requirement.clause.is_empty()
    {
        legend::PROFILE_DOCUMENT.to_string()
    } else {
        requirement.clause.clone()
    };
    let section = if requirement.section.is_empty() {
        escape(&requirement.clause)
    } else {
        section_link(report, &requirement.section, &clause_text)
    };
    let level = escape(&requirement.level);
    format!(
        "<tr data-profile=\"{profile}\" data-disposition=\"{disposition}\"><td><code class=\"id\">{id}</code><div class=\"text\">{text}</div>{observed}</td>\
         <td><span class=\"level {level}\">{level}</span></td><td class=\"section\">{section}</td><td><span class=\"badge {disposition}\">{disposition}</span></td>\
         <td class=\"reason\">{reason}</td><td class=\"scenarios\">{scenarios}</td><td class=\"mutation\">{mutation}</td></tr>\n",
        profile = escape(&requirement.profile),
        id = escape(&requirement.id),
        text = escape(&requirement.text),
        scenarios = scenarios.join(" "),
        observed = observations(requirement),
    )
}

/// The suite's own counts next to the host's claims (observed profile).
fn observations(requirement: &RequirementReport) -> String {
    if requirement.observations.is_empty() {
        return String::new();
    }
    let value = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "—".to_string(),
        serde_json::Value::String(text) => escape(text),
        other => escape(&other.to_string()),
    };
    let mut html = String::from(
        "<table class=\"observations\"><tr><th>observed</th><th>suite saw</th><th>host says</th><th></th></tr>",
    );
    for observation in &requirement.observations {
        let agree = match observation.agree {
            Some(true) => "<span class=\"agree\">agree</span>",
            Some(false) => "<span class=\"disagree\">differ</span>",
            None => "",
        };
        html.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{agree}</td></tr>",
            escape(&observation.what),
            value(&observation.suite),
            observation
                .host
                .as_ref()
                .map_or_else(|| "—".to_string(), value),
        ));
    }
    html.push_str("</table>");
    html
}

/// One line saying what broke: the check with expected and actual, or the
/// error, cut to a table cell's length.
fn short_reason(step: &FailedStep) -> Option<String> {
    const CELL_CHARS: usize = 160;
    let text = match (&step.check, &step.error) {
        (Some(check), _) => format!(
            "{}: expected {}, actual {}",
            check.what, check.expected, check.actual
        ),
        (None, Some(error)) => error.clone(),
        (None, None) => return None,
    };
    let mut short: String = text.chars().take(CELL_CHARS).collect();
    if text.chars().nth(CELL_CHARS).is_some() {
        short.push('…');
    }
    Some(short)
}

fn failures(report: &RunReport) -> String {
    let mut html = String::from("<section id=\"failures\">\n<h2>Failing and erroring steps</h2>\n");
    let failing: Vec<(usize, &ScenarioReport)> = report
        .scenarios
        .iter()
        .filter(|s| has_article(s))
        .enumerate()
        .collect();
    if failing.is_empty() {
        html.push_str("<p class=\"none\">No step failed or errored.</p>\n");
    } else {
        html.push_str("<p class=\"note\">Set <code>TOKEN</code> (and <code>TOKEN_B</code>) to your bearer tokens before running a curl command.</p>\n");
    }
    let shown = failing.len();
    for (index, scenario) in failing {
        html.push_str(&article(report, index, scenario));
    }
    html.push_str("</section>\n");
    html.push_str(&advisories(report, shown));
    html
}

/// One article per advisory: the SHOULD check that did not hold, with its
/// exchange and curl, apart from the failures (its scenario may well have
/// passed). `first_index` numbers the curl boxes after the failures'.
fn advisories(report: &RunReport, first_index: usize) -> String {
    let advisory: Vec<&RequirementReport> = report
        .requirements
        .iter()
        .filter(|r| r.disposition == DispositionKind::Advisory)
        .collect();
    if advisory.is_empty() {
        return String::new();
    }
    let mut html = String::from(
        "<section id=\"advisories\">\n<h2>Advisories</h2>\n<p class=\"note\">SHOULD requirements the host did not meet: reported, counted apart, never blocking certification.</p>\n",
    );
    for (offset, requirement) in advisory.into_iter().enumerate() {
        html.push_str(&format!(
            "<article class=\"failure advisory\" id=\"{anchor}\">\n<h3><span class=\"badge advisory\">advisory</span> <code>{id}</code> {text}</h3>\n<p class=\"proves\">{level}, {section}</p>\n",
            anchor = requirement_anchor(&requirement.id),
            id = escape(&requirement.id),
            text = escape(&requirement.text),
            level = escape(&requirement.level),
            section = section_link(report, &requirement.section, "its section in PROFILE.md"),
        ));
        if let Some(step) = &requirement.failed_step {
            html.push_str(&failed_step(first_index + offset, step));
        }
        if let Some(message) = &requirement.message {
            html.push_str(&full_message(message, requirement.failed_step.is_none()));
        }
        html.push_str("</article>\n");
    }
    html.push_str("</section>\n");
    html
}

fn article(report: &RunReport, index: usize, scenario: &ScenarioReport) -> String {
    let outcome = scenario.outcome;
    let mut html = format!(
        "<article class=\"failure {outcome}\" id=\"{anchor}\">\n<h3><span class=\"badge {outcome}\">{outcome}</span> <code>{name}</code> {title}</h3>\n",
        anchor = scenario_anchor(&scenario.name),
        name = escape(&scenario.name),
        title = escape(&scenario.title),
    );
    // Each requirement the scenario names with what became of it: a failed
    // check fails only what it proves.
    let proves: Vec<String> = report
        .requirements
        .iter()
        .filter(|r| r.scenarios.contains(&scenario.name))
        .map(|r| {
            format!(
                "<code>{}</code> <span class=\"badge {d}\">{d}</span>",
                escape(&r.id),
                d = r.disposition
            )
        })
        .collect();
    if !proves.is_empty() {
        html.push_str(&format!(
            "<p class=\"proves\">Names {}</p>\n",
            proves.join(", ")
        ));
    }
    if let Some(step) = &scenario.failed_step {
        html.push_str(&failed_step(index, step));
    }
    if let Some(message) = &scenario.message {
        html.push_str(&full_message(message, scenario.failed_step.is_none()));
    }
    html.push_str("</article>\n");
    html
}

/// The whole message behind a collapsed summary; open when no exchange is
/// shown above it, since then the message is all there is to read.
fn full_message(message: &str, open: bool) -> String {
    format!(
        "<details{}><summary>Full message</summary><pre class=\"message\">{}</pre></details>\n",
        if open { " open" } else { "" },
        escape(message)
    )
}

fn failed_step(index: usize, step: &FailedStep) -> String {
    let mut html = format!(
        "<p class=\"step\">Step {} “{}” (<code>{}</code>) in <code>{}</code></p>\n",
        step.step,
        escape(&step.name),
        escape(&step.pointer),
        escape(&step.file)
    );
    if let Some(check) = &step.check {
        let mut rows = vec![("Check", escape(&check.what))];
        if let Some(pointer) = &check.pointer {
            let shown = if pointer.is_empty() {
                "(whole body)"
            } else {
                pointer
            };
            rows.push(("JSON pointer", format!("<code>{}</code>", escape(shown))));
        }
        rows.push((
            "Expected",
            format!("<code>{}</code>", escape(&check.expected)),
        ));
        rows.push(("Actual", format!("<code>{}</code>", escape(&check.actual))));
        if let Some(note) = &check.note {
            rows.push(("Note", escape(note)));
        }
        if let Some(context) = &check.context {
            rows.push(("Attempt", escape(context)));
        }
        rows.push((
            "Claim in scenario",
            format!("<code>{}</code>", escape(&check.at)),
        ));
        html.push_str("<table class=\"check\">\n");
        for (name, value) in rows {
            html.push_str(&format!("<tr><th>{name}</th><td>{value}</td></tr>\n"));
        }
        html.push_str("</table>\n");
    }
    if let Some(error) = &step.error {
        html.push_str(&format!("<p class=\"error-text\">{}</p>\n", escape(error)));
    }
    let request = &step.request;
    let mut text = format!("{} {}\n", request.method, request.url);
    text.push_str(&headers(&request.headers));
    if let Some(body) = &request.body {
        text.push('\n');
        text.push_str(&body_text(body));
    }
    html.push_str(&format!(
        "<div class=\"exchange\">\n<div><h4>Request</h4><pre class=\"request\">{}</pre></div>\n",
        escape(&text)
    ));
    let response = match &step.response {
        Some(response) => {
            let mut text = format!("{}\n", response.status);
            text.push_str(&headers(&response.headers));
            text.push('\n');
            text.push_str(&body_text(&response.body));
            text
        }
        None => "(no response)".to_string(),
    };
    html.push_str(&format!(
        "<div><h4>Response</h4><pre class=\"response\">{}</pre></div>\n</div>\n",
        escape(&response)
    ));
    let partial = if request.curl_is_partial() {
        "<p class=\"note\">The request body was too long to keep whole; this command sends only its beginning.</p>\n"
    } else {
        ""
    };
    html.push_str(&format!(
        "<h4>Reproduce</h4>\n{partial}<div class=\"curl-box\"><pre class=\"curl\" id=\"curl-{index}\">{}</pre>\
         <button type=\"button\" class=\"copy\" data-target=\"curl-{index}\" hidden>Copy</button></div>\n",
        escape(&request.curl())
    ));
    html
}

fn headers(headers: &[Header]) -> String {
    headers
        .iter()
        .map(|h| format!("{}: {}\n", h.name, h.value))
        .collect()
}

fn body_text(body: &RecordedBody) -> String {
    let mut text = body.pretty();
    if body.truncated {
        text.push_str(&format!(
            "\n… (cut: {} of {} bytes shown)",
            body.text.len(),
            body.bytes
        ));
    }
    text
}

/// The opening of a self-contained page, up to its `<title>`: its only
/// sources are the inline `style` and `script` it carries, by hash.
pub(crate) fn open_page(html: &mut String, style: &str, script: &str) {
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src '{}'; script-src '{}'; base-uri 'none'; form-action 'none'\">\n",
        csp_hash(style),
        csp_hash(script)
    ));
}

/// A CSP source expression for an inline block: `sha256-<base64>`.
pub(crate) fn csp_hash(text: &str) -> String {
    format!(
        "sha256-{}",
        STANDARD.encode(Sha256::digest(text.as_bytes()))
    )
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
    fn the_csp_hash_is_the_padded_base64_of_the_sha256() {
        // The empty block's hash, as a browser computes it for a CSP.
        assert_eq!(
            csp_hash(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
        assert_eq!(csp_hash("a").len(), "sha256-".len() + 44);
    }

    #[test]
    fn one_row_per_requirement_with_filter_attributes() {
        let html = written(&sample::report());
        assert_eq!(html.matches("<tr data-profile=").count(), 7);
        assert!(html.contains(
            "<tr data-profile=\"core\" data-disposition=\"fail\"><td><code class=\"id\">core.create.bounds-required</code>"
        ));
        assert!(html.contains("<td class=\"mutation\">—</td>"));
    }

    #[test]
    fn each_requirement_shows_its_level_and_links_its_section() {
        let html = written(&sample::report());
        let row = &html[html.find("data-disposition=\"advisory\"").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert_contains(row, "<span class=\"level SHOULD\">SHOULD</span>");
        assert_contains(
            row,
            "<a href=\"../../PROFILE.md#core.create.location\">§2 Bounds required</a>",
        );
        assert_contains(row, "<span class=\"badge advisory\">advisory</span>");
        // Its reason is its own check's, linked to its own article.
        assert_contains(
            row,
            "<a href=\"#requirement-core.create.location\">status: expected 422",
        );
        let row = &html[html.find("data-disposition=\"not-reached\"").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert_contains(
            row,
            "not reached: step 1 &quot;create&quot; failed on core.create.bounds-required",
        );
    }

    #[test]
    fn the_legend_explains_dispositions_and_the_skip_reasons_present() {
        let mut report = sample::report();
        let html = written(&report);
        let legend = &html[html.find("<section id=\"legend\">").unwrap()..];
        let legend = &legend[..legend.find("</section>").unwrap()];
        for (disposition, _) in DISPOSITIONS {
            assert!(
                legend.contains(&format!("<span class=\"badge {disposition}\">")),
                "{disposition}"
            );
        }
        assert_contains(
            legend,
            "<dt id=\"skip-seam-absent\"><code>seam-absent</code></dt>",
        );
        assert_contains(
            legend,
            "<a href=\"../../PROFILE.md#skip-seam-absent\">How to act.</a>",
        );
        assert!(!legend.contains("skip-filtered"));
        // The skipped requirement's reason links to its legend entry.
        assert!(html.contains("<a href=\"#skip-seam-absent\" title=\"The host does not list"));
        // Without PROFILE.md: named, not linked.
        report.profile_href = None;
        let html = written(&report);
        assert!(html.contains("How to act. (<code>PROFILE.md#skip-seam-absent</code>)"));
        assert!(!html.contains("href=\"../../PROFILE.md"));
    }

    #[test]
    fn an_advisory_has_its_own_article_with_its_exchange() {
        let html = written(&sample::report());
        let row = &html[html.find("data-disposition=\"advisory\"").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert_contains(
            row,
            "<a href=\"#requirement-core.create.location\">status: expected 422, actual 201</a>",
        );
        let article = &html[html
            .find("<article class=\"failure advisory\" id=\"requirement-core.create.location\">")
            .unwrap()..];
        let article = &article[..article.find("</article>").unwrap()];
        assert_contains(article, "<pre class=\"curl\" id=\"curl-2\">curl -sS -i");
        assert_contains(
            article,
            "<a href=\"../../PROFILE.md#core.create.location\">its section in PROFILE.md</a>",
        );
        // The advisory is no failure: it is not among the failing steps.
        let failures = &html[html.find("<section id=\"failures\">").unwrap()
            ..html.find("<section id=\"advisories\">").unwrap()];
        assert!(!failures.contains("id=\"requirement-"), "{failures}");
    }

    #[test]
    fn a_certified_profile_with_advisories_stays_certified() {
        let mut report = sample::report();
        report.profiles.insert(
            "core".to_string(),
            ProfileReport {
                certified: true,
                pass: 4,
                advisory: 2,
                selected: true,
                ..ProfileReport::default()
            },
        );
        let html = written(&report);
        assert_contains(&html, "<li class=\"profile certified\" data-profile=\"core\"><h3>core</h3><p class=\"verdict\">certified, 2 advisory</p>");
    }

    #[test]
    fn profiles_show_their_verdict_and_counts() {
        let html = written(&sample::report());
        assert!(html.contains("<li class=\"profile failed\" data-profile=\"core\"><h3>core</h3><p class=\"verdict\">not certified</p>"));
        assert!(html.contains("<li class=\"profile opted-out\" data-profile=\"strict\">"));
        assert!(html.contains("<span>1 fail</span>"));
    }

    #[test]
    fn a_failing_step_shows_its_exchange_and_curl() {
        let html = written(&sample::report());
        let article = &html[html.find("id=\"scenario-core::bounds\"").unwrap()..];
        assert!(article.contains("<th>Expected</th><td><code>422</code></td>"));
        assert!(article.contains("<th>Actual</th><td><code>201</code></td>"));
        assert!(article.contains("authorization: Bearer $TOKEN"));
        // Pretty JSON, escaped.
        assert!(article.contains("  &quot;state&quot;: &quot;&lt;b&gt;active&lt;/b&gt;&quot;"));
        assert!(article.contains("<pre class=\"curl\" id=\"curl-0\">curl -sS -i"));
        // The erroring scenario has no exchange but still its message.
        let error = &html[html.find("id=\"scenario-core::discovery\"").unwrap()..];
        assert!(error.contains("<details open><summary>Full message</summary>"));
    }

    #[test]
    fn the_page_is_self_contained() {
        let html = written(&sample::report());
        for external in ["src=", "<link", "http-equiv=\"refresh\"", "@import", "url("] {
            assert!(!html.contains(external), "{external}");
        }
        assert_eq!(html.matches("<script>").count(), 1);
        assert!(html.contains(&format!("script-src '{}'", csp_hash(SCRIPT))));
    }

    #[test]
    fn observations_sit_under_their_requirement() {
        let mut report = sample::report();
        report.requirements[0].observations =
            vec![crate::run::outcome::observation::RequirementObservation {
                scenario: "core::create".to_string(),
                what: "arm calls <b>".to_string(),
                suite: serde_json::json!(3),
                host: Some(serde_json::json!(4)),
                agree: Some(false),
            }];
        let html = written(&report);
        assert_contains(&html, "<tr><td>arm calls &lt;b&gt;</td><td><code>3</code></td><td><code>4</code></td><td><span class=\"disagree\">differ</span></td></tr>");
    }

    #[test]
    fn hostile_text_cannot_inject_markup() {
        let hostile = "</pre></td><script>alert(1)</script><img src=x onerror=alert(2)>\"'&";
        let mut report = sample::report();
        report.host.url = hostile.to_string();
        report.requirements[1].message = Some(hostile.to_string());
        report.requirements[1].text = hostile.to_string();
        report.scenarios[1].title = hostile.to_string();
        report.scenarios[1].message = Some(hostile.to_string());
        if let Some(step) = report.scenarios[1].failed_step.as_mut() {
            step.name = hostile.to_string();
            step.request.url = hostile.to_string();
            step.request.headers[0].value = hostile.to_string();
            if let Some(response) = step.response.as_mut() {
                response.body.text = hostile.to_string();
                response.headers[0].name = hostile.to_string();
            }
            if let Some(check) = step.check.as_mut() {
                check.actual = hostile.to_string();
            }
        }
        let html = written(&report);
        assert_eq!(html.matches("<script").count(), 1, "{html}");
        assert!(!html.contains("<img"));
        assert!(!html.contains("</pre></td>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }
}
