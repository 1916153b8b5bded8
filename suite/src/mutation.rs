//! Mutation verification: which mutants of the reference host prove that a
//! requirement's scenarios can fail. The registry lives with the host
//! (`goalpost_host::mutants`); `tests/kill_matrix.rs` runs the suite
//! against every mutant on every `cargo test` and fails unless each one
//! fails exactly the requirements it declares, so a requirement listed here
//! is one the bundled scenarios are known to catch when it is broken.
//!
//! Only a mutant that breaks the requirement's own rule (its `breaks`)
//! verifies it. A requirement a mutant fails as collateral (a setup step of
//! its scenario leans on the broken behaviour) is not shown as verified by
//! it: that failure says nothing about the requirement's own checks.
//!
//! `goalpost list --requirements` prints the table; the report carries the
//! same per requirement (`mutationVerified`, `mutants`).

use std::io::{self, Write};

use crate::run::loader::Catalog;

/// The mutants that break `requirement`'s own rule, in registry order.
pub fn mutants_for(requirement: &str) -> Vec<String> {
    goalpost_host::mutants::breaking(requirement)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Whether some mutant that breaks `requirement`'s own rule proves its
/// scenarios can fail.
pub fn verified(requirement: &str) -> bool {
    !goalpost_host::mutants::breaking(requirement).is_empty()
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
