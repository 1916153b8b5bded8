//! The subcommands other than `run`: each reads scenarios or reports
//! through the run stages and the report types and writes its own answer.

pub mod diff;
pub mod doctor;
pub mod explain;
pub mod lint;
pub mod matrix;
pub mod validate;
