//! Mutants: deliberately broken builds of the reference host, one bug
//! each, the way a real implementation gets a rule wrong, that the suite
//! must catch (its kill matrix). A requirement is **mutation-verified**
//! when a mutant breaks its rule and the suite's scenarios for it fail
//! against that mutant; `suite/tests/it/kill_matrix.rs` proves every mutant
//! on every `cargo test`.
//!
//! The registry (names and descriptions: what `--mutant` takes) is here.
//! Which requirements each mutant fails is the suite's data, in
//! scenarios/mutants.json: `breaks`, whose own rule it breaks (the only
//! ones reports call mutation-verified by it), and `collateral`, that fail
//! because a scenario of theirs leans on the broken behaviour in a setup
//! step. The kill matrix fails if one it breaks still passes and if any
//! requirement outside both lists changes, so a list can neither overclaim
//! nor hide collateral.
//!
//! None of this is in `goalpost-host`. A mutant reaches a host through the
//! ports every host is assembled from ([`goalpost_host::Ports`]): the
//! engine's rules ([`goalpost_host::engine::Faults`], which hands the
//! webhook client its [`goalpost_host::webhook::CallFaults`]), the router's
//! outer layer ([`goalpost_host::http::RouteFaults`]) and the store, which
//! the PostgreSQL mutants replace with a broken replica wrapping the real
//! one. [`Selection::ports`] is the one place they are wired.

mod attention;
mod body;
mod engine;
mod faults;
mod http;
mod notes;
mod postgres;
mod registry;
mod switch;
mod webhook;

use std::sync::Arc;

use goalpost_host::storage::{DbLocation, Store, StoreError};
use goalpost_host::Ports;

pub use postgres::{open_postgres, open_store, BrokenReplica, StoreMutant};
pub use registry::{parse_arg, Mutant, MutantInfo, REGISTRY};
pub use switch::Switch;

/// Which mutant a host runs with (`--mutant NAME`,
/// `--foreign-invalid-goal TENANT`); nothing selected is the faithful host.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Selection {
    /// Run with a deliberate bug from the kill matrix's registry: never a
    /// conformant host.
    #[arg(long, value_parser = parse_arg)]
    pub mutant: Option<Mutant>,

    /// Serve one schema-invalid goal in this tenant's lists, as if another
    /// client had stored it: the suite's isolation test.
    #[arg(long, value_name = "TENANT")]
    pub foreign_invalid_goal: Option<String>,
}

impl Selection {
    /// The selection of one mutant.
    pub fn of(mutant: Option<Mutant>) -> Selection {
        Selection {
            mutant,
            foreign_invalid_goal: None,
        }
    }

    /// Opens the store at `location`: the broken PostgreSQL store when the
    /// selected mutant is one of its (`postgres-…`), which needs
    /// `--db postgres://…`; otherwise the host's own. Blocks.
    pub fn open_store(&self, location: &DbLocation) -> Result<Arc<dyn Store>, StoreError> {
        if let Some(mutant) = self.mutant {
            if let Some(broken) = StoreMutant::of(mutant) {
                let DbLocation::Postgres(url) = location else {
                    return Err(StoreError::Postgres(format!(
                        "mutant {mutant} breaks the PostgreSQL store: run it with --db postgres://…"
                    )));
                };
                return postgres::open_store(url, broken);
            }
        }
        goalpost_host::storage::open(location)
    }

    /// The one place a mutant is wired into a host: the ports one host is
    /// started with (a replica of a deployment gets ports of its own).
    /// Nothing selected gives the faithful ports.
    pub fn ports(&self) -> Ports {
        let selection = self.clone();
        let open_store = Box::new(move |location: &DbLocation| selection.open_store(location));
        if self.mutant.is_none() && self.foreign_invalid_goal.is_none() {
            return Ports {
                open_store,
                ..Ports::faithful()
            };
        }
        if let Some(mutant) = self.mutant {
            tracing::warn!(%mutant, "running with a deliberate bug (mutant): not a conformant host");
        }
        let switch =
            Switch::new(self.mutant).with_foreign_invalid_goal(self.foreign_invalid_goal.clone());
        let faults = faults::MutantFaults::new(switch);
        Ports {
            open_store,
            rules: faults.clone(),
            routes: faults,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Mutant, Selection, StoreMutant, REGISTRY};
    use goalpost_host::storage::DbLocation;

    #[test]
    fn a_selection_parses_a_registered_name() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            selection: Selection,
        }
        let parsed =
            Command::try_parse_from(["x", "--mutant", "off-by-one-iterations"]).expect("valid");
        assert_eq!(parsed.selection.mutant, Some(Mutant::OffByOneIterations));
        assert!(Command::try_parse_from(["x", "--mutant", "nope"]).is_err());
        assert_eq!(
            Command::try_parse_from(["x"]).expect("valid").selection,
            Selection::default()
        );
    }

    /// The PostgreSQL store's mutants are named `postgres-…` and refuse to
    /// start on SQLite rather than run as a faithful host.
    #[test]
    fn a_postgres_mutant_needs_a_postgres_database() {
        for info in REGISTRY {
            assert_eq!(
                info.mutant.needs_postgres(),
                StoreMutant::of(info.mutant).is_some(),
                "{}",
                info.name
            );
        }
        let selection = Selection::of(Some(Mutant::PostgresKeysInReplicaMemory));
        let refused = selection
            .open_store(&DbLocation::Memory)
            .err()
            .expect("refused on SQLite");
        assert!(
            refused.to_string().contains("--db postgres://"),
            "{refused}"
        );
        assert!(Selection::default().open_store(&DbLocation::Memory).is_ok());
    }
}
