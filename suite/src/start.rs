//! Why a run could not start (exit 2). Apart from the step errors in
//! [`crate::error`] because it names the stages a run starts (loading, the
//! webhook mock), which a step error sits below.

use std::path::PathBuf;

use crate::error::RunError;
use crate::run::loader::LoadError;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(String),
    #[error("cannot compile the JSON Schemas: {0}")]
    Schemas(#[from] goalpost_schemas::SchemaError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("cannot fetch the discovery document: {0}")]
    Discovery(RunError),
    #[error("cannot start the bundled reference host: {0}")]
    BundledHost(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("cannot start the webhook mock: {0}")]
    Mock(#[from] crate::mock::MockError),
    #[error("cannot write reports to {}: {source}", path.display())]
    Report {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
