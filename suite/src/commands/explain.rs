//! `goalpost explain REQ-ID`: what a requirement asks, its level, its
//! section of PROFILE.md and what proves it, for the person reading a
//! failed report.

use std::io::{self, Write};
use std::path::Path;

use crate::model::Requirement;
use crate::run::loader::Catalog;

/// Explained.
pub const EXIT_FOUND: u8 = 0;
/// The id is unknown, or the catalog could not be loaded.
pub const EXIT_UNKNOWN: u8 = 2;

/// Ids offered when the one asked for is unknown.
const SUGGESTIONS: usize = 5;

/// Mutants of the reference host that break this requirement and that its
/// scenarios must kill (the kill matrix proves each).
pub fn mutants(id: &str) -> Vec<String> {
    crate::mutation::mutants_for(id)
}

/// Prints the requirement to `out`, or an error with close ids to `err`.
/// Scenario files are shown relative to `cwd` when they lie under it.
pub fn explain(
    catalog: &Catalog,
    id: &str,
    cwd: &Path,
    mut out: impl Write,
    mut err: impl Write,
) -> io::Result<u8> {
    let Some(requirement) = catalog.requirements.iter().find(|r| r.id == id) else {
        let close = suggestions(&catalog.requirements, id);
        write!(err, "goalpost: unknown requirement `{id}`")?;
        if close.is_empty() {
            writeln!(err)?;
        } else {
            writeln!(err, "; did you mean: {}", close.join(", "))?;
        }
        return Ok(EXIT_UNKNOWN);
    };
    writeln!(
        out,
        "{}  ({} profile, {})",
        requirement.id, requirement.profile, requirement.level
    )?;
    writeln!(out, "Level: {}", level_meaning(requirement))?;
    writeln!(out, "Section: {}", requirement.clause)?;
    writeln!(out, "{}", applies(requirement))?;
    writeln!(out, "{}", requirement.text)?;
    writeln!(out)?;
    let proving: Vec<_> = catalog
        .scenarios
        .iter()
        .filter(|s| s.requirements.iter().any(|r| r == id))
        .collect();
    match proving.len() {
        0 => writeln!(out, "Proved by no scenario.")?,
        1 => writeln!(out, "Proved by 1 scenario:")?,
        n => writeln!(out, "Proved by {n} scenarios:")?,
    }
    for scenario in proving {
        let path = scenario.path.strip_prefix(cwd).unwrap_or(&scenario.path);
        writeln!(
            out,
            "  {}  {}  ({})",
            scenario.name,
            scenario.title,
            path.display()
        )?;
    }
    let mutants = mutants(id);
    if mutants.is_empty() {
        writeln!(
            out,
            "Mutation-verified: no (no mutant of the reference host breaks it)"
        )?;
    } else {
        writeln!(out, "Mutation-verified by: {}", mutants.join(", "))?;
    }
    out.flush()?;
    Ok(EXIT_FOUND)
}

/// What it applies to and what judging it needs, in one line: the
/// section's `Applies to` line without its Markdown emphasis.
fn applies(requirement: &Requirement) -> String {
    crate::model::capability::applies_to(&requirement.capability).replace("**", "")
}

/// What the level means for certification, in one line.
fn level_meaning(requirement: &Requirement) -> String {
    match requirement.level.as_str() {
        "SHOULD" => format!(
            "SHOULD (a failure is advisory: it never blocks certification of {})",
            requirement.profile
        ),
        level => format!(
            "{level} (a failure blocks certification of {})",
            requirement.profile
        ),
    }
}

/// Known ids that contain the asked text, then those that share its first
/// two segments.
fn suggestions(requirements: &[Requirement], id: &str) -> Vec<String> {
    let stem = id.split('.').take(2).collect::<Vec<_>>().join(".");
    let containing = requirements
        .iter()
        .filter(|r| !id.is_empty() && r.id.contains(id));
    let sharing = requirements
        .iter()
        .filter(|r| stem.contains('.') && r.id.starts_with(&format!("{stem}.")));
    let mut found: Vec<String> = Vec::new();
    for requirement in containing.chain(sharing) {
        if found.len() == SUGGESTIONS {
            break;
        }
        if !found.contains(&requirement.id) {
            found.push(requirement.id.clone());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_contains;

    /// A catalog loaded from files, as `goalpost explain` loads it.
    fn catalog(dir: &Path) -> Catalog {
        let requirement = |id: &str, level: &str| {
            serde_json::json!({"id": id, "profile": "core", "level": level,
                               "clause": format!("PROFILE.md#{id}"), "text": "A create without bounds is refused.",
                               "capability": if level == "MUST" { vec!["requires-bounds"] } else { vec![] }})
        };
        let requirements = serde_json::json!({"profileVersion": "1.0", "requirements": [
            requirement("core.create.bounds-required", "MUST"),
            requirement("core.create.bounds-range", "SHOULD"),
        ]});
        let scenario = |title: &str, id: &str| {
            serde_json::json!({"title": title, "profile": "core", "requirements": [id], "checks": 1,
                   "needs": {"requiresBounds": true},
                   "steps": [{"name": "read", "request": {"method": "GET", "path": "{base}"},
                              "expect": {"status": 200}}]})
        };
        std::fs::create_dir_all(dir.join("core")).unwrap();
        std::fs::write(dir.join("requirements.json"), requirements.to_string()).unwrap();
        for (file, title, id) in [
            (
                "create-bounds",
                "Bounds are required",
                "core.create.bounds-required",
            ),
            (
                "bounds-range",
                "Bounds in range",
                "core.create.bounds-range",
            ),
        ] {
            std::fs::write(
                dir.join("core").join(format!("{file}.json")),
                scenario(title, id).to_string(),
            )
            .unwrap();
        }
        let schemas = goalpost_schemas::Schemas::embedded().unwrap();
        crate::run::loader::load(dir, &schemas).unwrap()
    }

    fn run(id: &str) -> (u8, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("w");
        let catalog = catalog(&root.join("scenarios"));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = explain(&catalog, id, &root, &mut out, &mut err).unwrap();
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_known_requirement_with_clause_scenarios_and_mutants() {
        let (code, out, err) = run("core.create.bounds-required");
        assert_eq!((code, err.as_str()), (0, ""));
        assert_eq!(
            out,
            "core.create.bounds-required  (core profile, MUST)\n\
             Level: MUST (a failure blocks certification of core)\n\
             Section: PROFILE.md#core.create.bounds-required\n\
             Applies to: hosts that advertise required bounds (`requires-bounds`).\n\
             A create without bounds is refused.\n\n\
             Proved by 1 scenario:\n  \
             core::create-bounds  Bounds are required  (scenarios/core/create-bounds.json)\n\
             Mutation-verified by: default-bounds\n"
        );
    }

    #[test]
    fn a_should_requirement_says_it_never_blocks() {
        let (code, out, _) = run("core.create.bounds-range");
        assert_eq!(code, 0);
        assert_contains(
            &out,
            "Level: SHOULD (a failure is advisory: it never blocks certification of core)\n\
                 Section: PROFILE.md#core.create.bounds-range\n\
                 Applies to: every host that advertises `agents.goals`.\n",
        );
    }

    #[test]
    fn an_unknown_id_suggests_close_ones() {
        let (code, out, err) = run("core.create.bounds");
        assert_eq!((code, out.as_str()), (2, ""));
        assert_contains(
            &err,
            "did you mean: core.create.bounds-required, core.create.bounds-range",
        );
        let (code, _, err) = run("zzz");
        assert_eq!(code, 2);
        assert_eq!(err, "goalpost: unknown requirement `zzz`\n");
    }
}
