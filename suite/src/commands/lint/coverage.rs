//! The coverage map (`docs/COVERAGE.md`, beside the scenarios folder in
//! the repository) held consistent with the registry:
//!
//! - `coverage-unknown`: a table row names, in backticks, a requirement id
//!   the registry lacks or a scenario file (`<profile>/<name>.json`) the
//!   scenarios folder lacks;
//! - `coverage-unmapped`: a requirement no row names (or the map cannot be
//!   read at all);
//! - `coverage-unaudited`: a MUST requirement with no audit row, a row whose
//!   first cell is that requirement's id alone.
//!
//! Only table rows count (lines that start with `|`), so prose around the
//! tables may mention ids freely. An id is a backticked span that starts
//! with a profile's name and a dot; a scenario is one that starts with a
//! profile's name and a slash and ends in `.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::cli::KNOWN_PROFILES;
use crate::model::Requirement;

/// Where the map lives, relative to the repository root (the parent of the
/// scenarios folder).
pub const COVERAGE_FILE: &str = "docs/COVERAGE.md";

/// Where `goalpost lint` looks for the map: `docs/COVERAGE.md` in the
/// parent of `scenarios`.
pub fn coverage_path(scenarios: &Path) -> PathBuf {
    scenarios.join("..").join(COVERAGE_FILE)
}

/// What the table rows of the map name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Map {
    /// Requirement ids, each with the lines (from 1) of the rows naming it.
    pub requirements: BTreeMap<String, Vec<usize>>,
    /// Scenario files (`<profile>/<name>.json`), each with its rows' lines.
    pub scenarios: BTreeMap<String, Vec<usize>>,
    /// Ids that are a row's whole first cell: the audited requirements.
    pub audited: BTreeSet<String>,
}

/// The backticked spans of `line`.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

fn profile_prefixed(span: &str, separator: char) -> bool {
    span.split_once(separator)
        .is_some_and(|(profile, rest)| KNOWN_PROFILES.contains(&profile) && !rest.is_empty())
}

/// A requirement id: `<profile>.<lowercase words>`.
fn is_requirement(span: &str) -> bool {
    profile_prefixed(span, '.')
        && span
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
}

/// A scenario file: `<profile>/<name>.json`.
fn is_scenario(span: &str) -> bool {
    profile_prefixed(span, '/')
        && span.ends_with(".json")
        && span.matches('/').count() == 1
        && !span.contains(char::is_whitespace)
}

/// Reads the tables of `text`.
pub fn parse(text: &str) -> Map {
    let mut map = Map::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if !line.starts_with('|') {
            continue;
        }
        let number = index + 1;
        for span in spans(line) {
            if is_requirement(span) {
                map.requirements
                    .entry(span.to_string())
                    .or_default()
                    .push(number);
            } else if is_scenario(span) {
                map.scenarios
                    .entry(span.to_string())
                    .or_default()
                    .push(number);
            }
        }
        let first = line.trim_start_matches('|').split('|').next().unwrap_or("");
        let first = first.trim();
        if let Some(id) = first
            .strip_prefix('`')
            .and_then(|rest| rest.strip_suffix('`'))
        {
            if is_requirement(id) {
                map.audited.insert(id.to_string());
            }
        }
    }
    map
}

/// One problem with the map: the line it is on (0: the whole file) and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    UnknownRequirement { line: usize, id: String },
    UnknownScenario { line: usize, file: String },
    Unmapped { id: String },
    Unaudited { id: String },
}

/// What is wrong with `map` against the registry and the scenario files
/// (`scenarios`: `<profile>/<name>.json` of every file there).
pub fn problems(
    map: &Map,
    requirements: &[Requirement],
    scenarios: &BTreeSet<String>,
) -> Vec<Problem> {
    let known: BTreeSet<&str> = requirements.iter().map(|r| r.id.as_str()).collect();
    let mut found = Vec::new();
    for (id, lines) in &map.requirements {
        if !known.contains(id.as_str()) {
            found.extend(lines.iter().map(|line| Problem::UnknownRequirement {
                line: *line,
                id: id.clone(),
            }));
        }
    }
    for (file, lines) in &map.scenarios {
        if !scenarios.contains(file) {
            found.extend(lines.iter().map(|line| Problem::UnknownScenario {
                line: *line,
                file: file.clone(),
            }));
        }
    }
    for requirement in requirements {
        if !map.requirements.contains_key(&requirement.id) {
            found.push(Problem::Unmapped {
                id: requirement.id.clone(),
            });
        } else if requirement.level == "MUST" && !map.audited.contains(&requirement.id) {
            found.push(Problem::Unaudited {
                id: requirement.id.clone(),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(id: &str, level: &str) -> Requirement {
        Requirement {
            id: id.to_string(),
            profile: id.split('.').next().unwrap_or_default().to_string(),
            level: level.to_string(),
            clause: format!("PROFILE.md#{id}"),
            text: "t".to_string(),
            capability: Vec::new(),
        }
    }

    #[test]
    fn only_table_rows_count_and_spans_are_told_apart() {
        let text = "Prose names `core.x` and `core/x.json`.\n\
                    | promise | requirements | scenarios |\n\
                    |---|---|---|\n\
                    | A.1 | `core.a`, `strict.b-c` | `core/one.json` |\n\
                    | `core.a` | edges: `goal.closed`, `host.events` | `observed/two.json` |\n";
        let map = parse(text);
        assert_eq!(
            map.requirements.keys().collect::<Vec<_>>(),
            ["core.a", "strict.b-c"]
        );
        assert_eq!(map.requirements["core.a"], [4, 5]);
        assert_eq!(
            map.scenarios.keys().collect::<Vec<_>>(),
            ["core/one.json", "observed/two.json"]
        );
        assert_eq!(map.audited, BTreeSet::from(["core.a".to_string()]));
    }

    #[test]
    fn unknown_unmapped_and_unaudited() {
        let map = parse(
            "| `core.a` | audited |\n| B | `core.b`, `core.gone`, `core/none.json`, `core/one.json` |\n",
        );
        let requirements = [
            requirement("core.a", "MUST"),
            requirement("core.b", "MUST"),
            requirement("core.c", "SHOULD"),
            requirement("core.d", "SHOULD"),
        ];
        let scenarios = BTreeSet::from(["core/one.json".to_string()]);
        let mut found = problems(&map, &requirements, &scenarios);
        found.sort_by_key(|p| format!("{p:?}"));
        assert_eq!(
            found,
            [
                Problem::Unaudited {
                    id: "core.b".into()
                },
                Problem::UnknownRequirement {
                    line: 2,
                    id: "core.gone".into()
                },
                Problem::UnknownScenario {
                    line: 2,
                    file: "core/none.json".into()
                },
                Problem::Unmapped {
                    id: "core.c".into()
                },
                Problem::Unmapped {
                    id: "core.d".into()
                },
            ]
        );
    }
}
