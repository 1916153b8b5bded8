//! `clause-unresolved`: every requirement's `clause` points at its section
//! of PROFILE.md (`PROFILE.md#<anchor>`), and that anchor exists, so a
//! report's link to the rule a host failed always lands on the rule.
//!
//! PROFILE.md sits beside the scenarios folder (in its parent), as in the
//! repository. Anchors are the explicit `<a id="...">` tags: headings are
//! not counted, so a section's anchor never changes with its wording.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::model::Requirement;

/// The file the clauses point into, and the prefix every clause has.
pub const PROFILE_FILE: &str = "PROFILE.md";
const CLAUSE_PREFIX: &str = "PROFILE.md#";

/// Where `goalpost lint` looks for PROFILE.md: the parent of `scenarios`.
pub fn profile_path(scenarios: &Path) -> PathBuf {
    scenarios.join("..").join(PROFILE_FILE)
}

/// The `id`s of every `<a id="...">` tag in `text`.
pub fn anchors(text: &str) -> BTreeSet<String> {
    const TAG: &str = "<a id=\"";
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find(TAG) {
        rest = &rest[start + TAG.len()..];
        let Some(end) = rest.find('"') else { break };
        found.insert(rest[..end].to_string());
        rest = &rest[end..];
    }
    found
}

/// The text of the section anchored `id`: from its `<a id="...">` tag to
/// the next tag, or to the end. `None` when there is no such anchor.
pub fn section<'a>(text: &'a str, id: &str) -> Option<&'a str> {
    let tag = format!("<a id=\"{id}\"></a>");
    let start = text.find(&tag)? + tag.len();
    let rest = &text[start..];
    let end = rest.find("<a id=\"").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Why one requirement's clause does not resolve; `None` when it does.
/// `anchors` is `None` when PROFILE.md could not be read.
pub fn unresolved(requirement: &Requirement, anchors: Option<&BTreeSet<String>>) -> Option<String> {
    let Some(anchor) = requirement.clause.strip_prefix(CLAUSE_PREFIX) else {
        return Some(format!(
            "the clause of `{}` is `{}`: it must be `{CLAUSE_PREFIX}<anchor>`, its section in {PROFILE_FILE}",
            requirement.id, requirement.clause
        ));
    };
    let anchors = anchors?;
    (!anchors.contains(anchor)).then(|| {
        format!(
            "the clause of `{}` points at `{anchor}`, an anchor {PROFILE_FILE} does not have \
             (write `<a id=\"{anchor}\"></a>` before its section)",
            requirement.id
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(clause: &str) -> Requirement {
        Requirement {
            id: "core.a".to_string(),
            profile: "core".to_string(),
            level: "MUST".to_string(),
            clause: clause.to_string(),
            text: "t".to_string(),
            capability: Vec::new(),
        }
    }

    #[test]
    fn a_section_runs_from_its_anchor_to_the_next() {
        let text = "intro\n<a id=\"a\"></a>\n### a\nrule a\n<a id=\"b\"></a>\n### b\nrule b\n";
        assert_eq!(section(text, "a"), Some("\n### a\nrule a\n"));
        assert_eq!(section(text, "b"), Some("\n### b\nrule b\n"));
        assert_eq!(section(text, "c"), None);
    }

    #[test]
    fn anchors_are_the_explicit_tags_only() {
        let text = "# Title\n<a id=\"levels\"></a>\n## Levels\n<a id=\"core.a\"></a> and <a id=\"x\">\n<a id=\"cut";
        let found: Vec<String> = anchors(text).into_iter().collect();
        assert_eq!(found, ["core.a", "levels", "x"]);
    }

    #[test]
    fn a_clause_resolves_only_to_an_existing_anchor() {
        let known: BTreeSet<String> = ["core.a".to_string()].into();
        assert_eq!(
            unresolved(&requirement("PROFILE.md#core.a"), Some(&known)),
            None
        );
        let missing = unresolved(&requirement("PROFILE.md#core.b"), Some(&known)).unwrap();
        assert!(missing.contains("`core.b`"), "{missing}");
        let old = unresolved(&requirement("§2 Bounds required"), Some(&known)).unwrap();
        assert!(old.contains("must be `PROFILE.md#<anchor>`"), "{old}");
        // Without the file, only the form can be judged here.
        assert_eq!(unresolved(&requirement("PROFILE.md#core.b"), None), None);
    }
}
