//! One conformance run, stage by stage: the [`loader`] reads the scenario
//! files into the [`crate::model`], the [`gate`] decides from the host's
//! [`discovery`] document which scenarios can run, the [`driver`] runs them
//! and writes typed [`outcome`]s, and the [`ledger`] turns those into one
//! disposition per requirement. Data flows one way: no stage imports a
//! later one, and [`crate::report`] only reads what they produce.

pub mod discovery;
pub mod driver;
pub mod gate;
pub mod ledger;
pub mod loader;
pub mod outcome;
pub mod scope;
pub mod scripted_judge;
