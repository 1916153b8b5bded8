//! Mutants: deliberately broken builds of this host, one bug each, the
//! way a real implementation gets a rule wrong, that the suite must catch
//! (its kill matrix). A requirement is **mutation-verified** when a mutant
//! breaks its rule and the suite's scenarios for it fail against that
//! mutant; `suite/tests/it/kill_matrix.rs` proves every mutant on every
//! `cargo test`.
//!
//! The registry (names and descriptions: what `--mutant` takes) is compiled
//! into every build. Which requirements each mutant fails is the suite's
//! data, in scenarios/mutants.json: `breaks`, whose own rule it breaks (the
//! only ones reports call mutation-verified by it), and `collateral`, that
//! fail because a scenario of theirs leans on the broken behaviour in a
//! setup step. The kill matrix fails if one it breaks still passes and if
//! any requirement outside both lists changes, so a list can neither
//! overclaim nor hide collateral.
//!
//! The broken behaviour exists only with the `mutants` cargo feature, which
//! the default build and the released binary leave out. It reaches the host
//! through the fault seams every layer calls unconditionally
//! ([`crate::engine::Faults`], [`crate::webhook::CallFaults`],
//! [`crate::http::RouteFaults`]), wired in one place: [`Selection::wire`].

#[cfg(feature = "mutants")]
mod attention;
#[cfg(feature = "mutants")]
mod body;
#[cfg(feature = "mutants")]
mod engine;
#[cfg(feature = "mutants")]
mod faults;
#[cfg(feature = "mutants")]
mod http;
#[cfg(feature = "mutants")]
mod notes;
#[cfg(feature = "mutants")]
mod postgres;
mod registry;
#[cfg(feature = "mutants")]
mod switch;
#[cfg(feature = "mutants")]
mod webhook;

use std::sync::Arc;

use crate::engine::{Faults, NoFaults};
use crate::http::{NoRouteFaults, RouteFaults};
use crate::storage::{DbLocation, Store, StoreError};

#[cfg(feature = "mutants")]
pub use postgres::{open_postgres, open_store, StoreMutant};
pub use registry::{parse_arg, Mutant, MutantInfo, REGISTRY};
#[cfg(feature = "mutants")]
pub use switch::Switch;

/// Which mutant a host runs with (`goalpost-host serve --mutant NAME`,
/// `--foreign-invalid-goal TENANT`). Empty in a build without the
/// `mutants` feature, which has no such options.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Selection {
    /// Run with a deliberate bug from the kill matrix's registry (see
    /// src/mutants/).
    #[cfg(feature = "mutants")]
    #[arg(long, value_parser = parse_arg)]
    pub mutant: Option<Mutant>,

    /// Serve one schema-invalid goal in this tenant's lists, as if another
    /// client had stored it: the suite's isolation test.
    #[cfg(feature = "mutants")]
    #[arg(long, value_name = "TENANT")]
    pub foreign_invalid_goal: Option<String>,
}

/// The hooks a host is built with: the engine's (which hands the webhook
/// client its own) and the router's.
pub struct Wiring {
    pub engine: Arc<dyn Faults>,
    pub routes: Arc<dyn RouteFaults>,
}

impl Selection {
    /// Opens the store at `location`: the broken PostgreSQL store when the
    /// selected mutant is one of its (`postgres-…`), which needs
    /// `--db postgres://…`; otherwise [`crate::storage::open`]. Blocks.
    pub fn open_store(&self, location: &DbLocation) -> Result<Arc<dyn Store>, StoreError> {
        #[cfg(feature = "mutants")]
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
        crate::storage::open(location)
    }

    /// The one place a mutant is wired into a host. Nothing selected (and
    /// every build without the feature) gives the faithful hooks.
    pub fn wire(&self) -> Wiring {
        #[cfg(feature = "mutants")]
        if self.mutant.is_some() || self.foreign_invalid_goal.is_some() {
            if let Some(mutant) = self.mutant {
                tracing::warn!(%mutant, "running with a deliberate bug (mutant): not a conformant host");
            }
            let switch = Switch::new(self.mutant)
                .with_foreign_invalid_goal(self.foreign_invalid_goal.clone());
            let faults = faults::MutantFaults::new(switch);
            return Wiring {
                engine: faults.clone(),
                routes: faults,
            };
        }
        Wiring {
            engine: Arc::new(NoFaults),
            routes: Arc::new(NoRouteFaults),
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "mutants")]
    #[test]
    fn serve_takes_a_mutant() {
        use super::{Mutant, Selection};
        use clap::Parser;
        let parsed = crate::cli::Cli::try_parse_from([
            "goalpost-host",
            "serve",
            "--mutant",
            "off-by-one-iterations",
        ])
        .expect("valid");
        let crate::cli::Invocation::Serve(serve) = parsed.invocation() else {
            panic!("expected serve");
        };
        assert_eq!(
            serve.host.into_config().mutants.mutant,
            Some(Mutant::OffByOneIterations)
        );
        assert!(
            crate::cli::Cli::try_parse_from(["goalpost-host", "serve", "--mutant", "nope"])
                .is_err()
        );
        let preset = crate::Config::conformance_in_memory(Vec::new());
        assert_eq!(preset.mutants, Selection::default());
    }

    /// The PostgreSQL store's mutants are named `postgres-…` and refuse to
    /// start on SQLite rather than run as a faithful host.
    #[cfg(feature = "mutants")]
    #[test]
    fn a_postgres_mutant_needs_a_postgres_database() {
        use super::{Mutant, Selection, StoreMutant, REGISTRY};
        use crate::storage::DbLocation;
        for info in REGISTRY {
            assert_eq!(
                info.mutant.needs_postgres(),
                StoreMutant::of(info.mutant).is_some(),
                "{}",
                info.name
            );
        }
        let selection = Selection {
            mutant: Some(Mutant::PostgresKeysInReplicaMemory),
            foreign_invalid_goal: None,
        };
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

    #[cfg(not(feature = "mutants"))]
    #[test]
    fn the_default_build_has_no_mutant_switch() {
        use clap::Parser;
        assert!(crate::cli::Cli::try_parse_from([
            "goalpost-host",
            "serve",
            "--mutant",
            "off-by-one-iterations",
        ])
        .is_err());
    }
}
