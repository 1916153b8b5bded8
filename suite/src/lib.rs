//! goalpost: the conformance suite for RFC 0097 standing goals.
//!
//! Layout follows the data: the scenario [`model`] is read by the
//! [`loader`], gated by [`gate`] against the host's [`discovery`] document,
//! run by the [`driver`] (templating in [`template`], HTTP in [`http`],
//! predicates in [`assertion`]), recorded in the [`ledger`], and written out
//! by the [`report`] writers. [`runner`] ties one run together; [`cli`] and
//! [`config`] turn a command line into a [`config::RunConfig`]. [`validate`]
//! and [`explain`] are the other subcommands.

pub mod assertion;
pub mod attribution;
pub mod bundled;
pub mod cli;
pub mod config;
pub mod diff;
pub mod discovery;
pub mod doctor;
pub mod driver;
pub mod embedded;
pub mod error;
pub mod explain;
pub mod gate;
pub mod http;
pub mod ledger;
pub mod lint;
pub mod loader;
pub mod matrix;
pub mod mock;
pub mod model;
pub mod mutation;
pub mod observation;
pub mod outcome;
pub mod report;
pub mod runner;
pub mod shuffle;
pub mod template;
pub mod timestamp;
pub mod validate;

pub use config::{HostChoice, RunConfig};
pub use error::start::StartError;
pub use runner::{run, RunOutcome};
