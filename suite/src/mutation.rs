//! Mutation verification: which mutants of the reference host prove that a
//! requirement's scenarios can fail. The list is data of the profile,
//! scenarios/mutants.json (embedded like the rest of `scenarios/`);
//! `tests/it/kill_matrix.rs` runs the suite against every mutant on every
//! `cargo test` and fails unless each one fails exactly the requirements
//! that file declares, so a requirement listed here is one the bundled
//! scenarios are known to catch when it is broken.
//!
//! Only a mutant that breaks the requirement's own rule (its `breaks`)
//! verifies it. A requirement a mutant fails as collateral (a setup step of
//! its scenario leans on the broken behaviour) is not shown as verified by
//! it: that failure says nothing about the requirement's own checks.
//!
//! `goalpost list --requirements` prints the table; the report carries the
//! same per requirement (`mutationVerified`, `mutants`).

use std::io::{self, Write};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::run::loader::Catalog;

/// The mutant list beside requirements.json.
pub const MUTANTS_FILE: &str = "mutants.json";

/// One mutant of scenarios/mutants.json.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Mutant {
    /// What `goalpost-host --mutant` takes.
    pub name: String,
    pub description: String,
    /// Requirements whose own rule it breaks.
    pub breaks: Vec<String>,
    /// Requirements it also fails, through a setup step.
    pub collateral: Vec<String>,
}

#[derive(Deserialize)]
struct MutantsFile {
    mutants: Vec<Mutant>,
}

/// Every mutant of the embedded profile, in file order. The file is
/// checked by this module's tests (schema, known requirement ids) and by
/// the host's (the same names as its registry), so a build whose copy does
/// not parse is a broken build, not bad input.
pub fn mutants() -> &'static [Mutant] {
    static MUTANTS: OnceLock<Vec<Mutant>> = OnceLock::new();
    MUTANTS.get_or_init(|| {
        let text = crate::embedded::file(MUTANTS_FILE).expect("scenarios/mutants.json is embedded");
        let file: MutantsFile =
            serde_json::from_str(text).expect("scenarios/mutants.json lists mutants");
        file.mutants
    })
}

/// The mutants that break `requirement`'s own rule, in file order.
pub fn mutants_for(requirement: &str) -> Vec<String> {
    mutants()
        .iter()
        .filter(|mutant| mutant.breaks.iter().any(|id| id == requirement))
        .map(|mutant| mutant.name.clone())
        .collect()
}

/// Whether some mutant that breaks `requirement`'s own rule proves its
/// scenarios can fail.
pub fn verified(requirement: &str) -> bool {
    mutants()
        .iter()
        .any(|mutant| mutant.breaks.iter().any(|id| id == requirement))
}

/// What is wrong with the mutant list against `catalog`: a requirement id
/// it does not know, one listed both as broken and as collateral, or twice.
pub fn problems(catalog: &Catalog) -> Vec<String> {
    let known = |id: &String| catalog.requirements.iter().any(|r| r.id == *id);
    let mut found = Vec::new();
    for mutant in mutants() {
        for id in mutant.breaks.iter().chain(&mutant.collateral) {
            if !known(id) {
                found.push(format!("{} names unknown requirement {id}", mutant.name));
            }
        }
        for id in &mutant.collateral {
            if mutant.breaks.contains(id) {
                found.push(format!(
                    "{} lists {id} as both broken and collateral",
                    mutant.name
                ));
            }
        }
    }
    let mut names: Vec<&str> = mutants().iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    for pair in names.windows(2) {
        if pair[0] == pair[1] {
            found.push(format!("{} is listed twice", pair[0]));
        }
    }
    found
}

/// MUST requirements of the catalog whose own rule no mutant breaks, by id.
pub fn unverified_musts(catalog: &Catalog) -> Vec<String> {
    catalog
        .requirements
        .iter()
        .filter(|requirement| requirement.level == "MUST" && !verified(&requirement.id))
        .map(|requirement| requirement.id.clone())
        .collect()
}

/// `goalpost list --requirements`: one line per requirement (id, level,
/// how many scenarios name it, whether it is mutation-verified, the
/// mutants), then a summary line.
pub fn write_requirements(catalog: &Catalog, mut out: impl Write) -> io::Result<()> {
    let width = catalog
        .requirements
        .iter()
        .map(|requirement| requirement.id.len())
        .max()
        .unwrap_or(0)
        .max("requirement".len());
    writeln!(
        out,
        "{:<width$}  level  scenarios  verified  mutants",
        "requirement"
    )?;
    for requirement in &catalog.requirements {
        let scenarios = catalog
            .scenarios
            .iter()
            .filter(|scenario| scenario.requirements.contains(&requirement.id))
            .count();
        let mutants = mutants_for(&requirement.id);
        let verified = if mutants.is_empty() { "no" } else { "yes" };
        let shown = if mutants.is_empty() {
            "-".to_string()
        } else {
            mutants.join(", ")
        };
        writeln!(
            out,
            "{:<width$}  {:<5}  {:>9}  {:<8}  {shown}",
            requirement.id, requirement.level, scenarios, verified
        )?;
    }
    let musts = catalog
        .requirements
        .iter()
        .filter(|requirement| requirement.level == "MUST")
        .count();
    let verified = catalog
        .requirements
        .iter()
        .filter(|requirement| verified(&requirement.id))
        .count();
    let missing = unverified_musts(catalog);
    write!(
        out,
        "{} requirements ({musts} MUST), {verified} mutation-verified",
        catalog.requirements.len()
    )?;
    if missing.is_empty() {
        writeln!(out, "; every MUST is")?;
    } else {
        writeln!(
            out,
            "; MUST without a mutant that breaks its rule: {}",
            missing.join(", ")
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_list_matches_its_schema_and_names_only_known_requirements() {
        let schemas = goalpost_schemas::Schemas::embedded().expect("schemas");
        let text = crate::embedded::file(MUTANTS_FILE).expect("embedded");
        let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
        assert!(
            schemas.validate("mutants", &value).is_ok(),
            "{MUTANTS_FILE} does not match mutants.schema.json"
        );
        let catalog = crate::run::loader::load_embedded(&schemas).expect("the embedded profile");
        assert_eq!(problems(&catalog), Vec::<String>::new());
        assert!(!mutants().is_empty());
    }

    #[test]
    fn an_unknown_requirement_is_a_problem() {
        let schemas = goalpost_schemas::Schemas::embedded().expect("schemas");
        let mut catalog =
            crate::run::loader::load_embedded(&schemas).expect("the embedded profile");
        catalog
            .requirements
            .retain(|requirement| requirement.id != "core.discovery.shape");
        assert_eq!(
            problems(&catalog),
            vec!["discovery-duplicate-modes names unknown requirement core.discovery.shape"]
        );
    }

    #[test]
    fn registered_requirements_have_their_mutants() {
        assert!(verified("core.create.bounds-required"));
        assert!(mutants_for("core.create.bounds-required").contains(&"default-bounds".to_string()));
        assert!(!verified("core.no-such-requirement"));
        assert!(mutants_for("core.no-such-requirement").is_empty());
    }

    #[test]
    fn collateral_does_not_verify() {
        // create-without-location fails core.get.returns-goal only because
        // its scenario's create step checks the Location header.
        assert!(
            !mutants_for("core.get.returns-goal").contains(&"create-without-location".to_string())
        );
        assert!(
            mutants_for("core.create.location").contains(&"create-without-location".to_string())
        );
    }
}
