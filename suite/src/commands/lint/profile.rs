//! `clause-unresolved`: every requirement's `clause` points at its section
//! of PROFILE.md (`PROFILE.md#<anchor>`), and that anchor exists, so a
//! report's link to the rule a host failed always lands on the rule.
//! `level-mismatch`: that section states the requirement's level, the same
//! as `requirements.json` says, so the two places a level is written (the
//! one the report uses, the one a host author reads) cannot drift apart.
//!
//! PROFILE.md sits beside the scenarios folder (in its parent), as in the
//! repository. Anchors are the explicit `<a id="...">` tags: headings are
//! not counted, so a section's anchor never changes with its wording. A
//! section runs from its tag to the next one, and states its level as
//! `**Level:** MUST` (or `SHOULD`), optionally followed by a qualifier.

use std::collections::{BTreeMap, BTreeSet};
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

/// Each anchor's section: the text from its `<a id="...">` tag to the next
/// tag (or the end).
pub fn sections(text: &str) -> BTreeMap<String, &str> {
    const TAG: &str = "<a id=\"";
    let mut found = BTreeMap::new();
    let mut rest = text;
    let mut open: Option<String> = None;
    loop {
        let next = rest.find(TAG);
        if let Some(anchor) = open.take() {
            found.insert(anchor, &rest[..next.unwrap_or(rest.len())]);
        }
        let Some(start) = next else { break };
        rest = &rest[start + TAG.len()..];
        let Some(end) = rest.find('"') else { break };
        open = Some(rest[..end].to_string());
        rest = &rest[end..];
    }
    found
}

/// The level a section states: the capitalised word after its first
/// `**Level:**`.
pub fn stated_level(section: &str) -> Option<&str> {
    const LABEL: &str = "**Level:**";
    let after = section[section.find(LABEL)? + LABEL.len()..].trim_start();
    let word = &after[..after
        .find(|c: char| !c.is_ascii_uppercase())
        .unwrap_or(after.len())];
    (!word.is_empty()).then_some(word)
}

/// Why one requirement's level is not the one its section states; `None`
/// when they agree, or when the clause does not resolve (that is
/// [`unresolved`]'s finding).
pub fn level_mismatch(
    requirement: &Requirement,
    sections: &BTreeMap<String, &str>,
) -> Option<String> {
    let anchor = requirement.clause.strip_prefix(CLAUSE_PREFIX)?;
    let section = sections.get(anchor)?;
    match stated_level(section) {
        Some(level) if level == requirement.level => None,
        Some(level) => Some(format!(
            "`{}` is {} in requirements.json but its section of {PROFILE_FILE} says `**Level:** {level}`",
            requirement.id, requirement.level
        )),
        None => Some(format!(
            "the section of {PROFILE_FILE} for `{}` states no level (write `**Level:** {}` in it)",
            requirement.id, requirement.level
        )),
    }
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
    use crate::testing::assert_contains;

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
    fn a_section_runs_to_the_next_tag_and_states_its_level_first() {
        let text = "intro <a id=\"core.a\"></a>\n### core.a\n\n**Level:** SHOULD (for hosts that X). Later **Level:** MUST\n<a id=\"core.b\"></a>\nno level\n<a id=\"core.c\"></a>**Level:**  MUST.";
        let found = sections(text);
        assert_eq!(
            found.keys().collect::<Vec<_>>(),
            ["core.a", "core.b", "core.c"]
        );
        assert!(found["core.a"].ends_with("Later **Level:** MUST\n"));
        assert_eq!(stated_level(found["core.a"]), Some("SHOULD"));
        assert_eq!(stated_level(found["core.b"]), None);
        assert_eq!(stated_level(found["core.c"]), Some("MUST"));
        assert_eq!(stated_level("**Level:** must"), None);

        let mut must = requirement("PROFILE.md#core.a");
        must.level = "SHOULD".to_string();
        assert_eq!(level_mismatch(&must, &found), None);
        must.level = "MUST".to_string();
        let message = level_mismatch(&must, &found).expect("a mismatch");
        assert!(
            message.contains("MUST in requirements.json") && message.contains("SHOULD"),
            "{message}"
        );
        let silent = level_mismatch(&requirement("PROFILE.md#core.b"), &found).expect("no level");
        assert_contains(&silent, "states no level");
        // A clause that does not resolve is `clause-unresolved`'s finding.
        assert_eq!(
            level_mismatch(&requirement("PROFILE.md#core.z"), &found),
            None
        );
        assert_eq!(level_mismatch(&requirement("§2"), &found), None);
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
        assert_contains(&missing, "`core.b`");
        let old = unresolved(&requirement("§2 Bounds required"), Some(&known)).unwrap();
        assert_contains(&old, "must be `PROFILE.md#<anchor>`");
        // Without the file, only the form can be judged here.
        assert_eq!(unresolved(&requirement("PROFILE.md#core.b"), None), None);
    }
}
