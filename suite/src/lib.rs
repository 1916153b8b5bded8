//! goalpost: the conformance suite for RFC 0097 standing goals.
//!
//! Layout follows the data, one way: the scenario [`model`] is read and
//! run by the stages in [`run`] (loader, gate, driver, ledger; their typed
//! results in [`run::outcome`]), and written out by the [`report`] writers,
//! which only read. [`runner`] ties one run together; [`cli`] and [`config`]
//! turn a command line into a [`config::RunConfig`]; [`commands`] are the
//! other subcommands. Below the stages: templating in [`template`],
//! predicates in [`assertion`], HTTP in [`http`], the webhook [`mock`].
//! docs/DESIGN.md, "Suite pipeline", draws the layers.

pub mod assertion;
pub mod bundled;
pub mod cli;
pub mod commands;
pub mod config;
pub mod embedded;
pub mod error;
pub mod http;
pub mod mock;
pub mod model;
pub mod mutation;
pub mod report;
pub mod run;
pub mod runner;
pub mod shuffle;
pub mod start;
pub mod template;
#[cfg(test)]
mod testing;
pub mod timestamp;

pub use config::{HostChoice, RunConfig};
pub use runner::{run, RunOutcome};
pub use start::StartError;
