//! The goalpost JSON Schemas (draft 2020-12), embedded into the binary and
//! compiled once.
//!
//! Every schema lives in `schemas/<name>.schema.json` with the `$id`
//! `https://goalpost.dev/schemas/<name>.schema.json`. Cross-file `$ref`s are
//! resolved from the set being compiled (embedded or read from a directory),
//! never from the network: a `$ref` outside the set fails at compile time.

mod violation;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jsonschema::{Registry, Validator};
use serde_json::Value;

pub use violation::Violation;

/// One list of names drives both [`NAMES`] and the embedded texts, so the two
/// cannot disagree.
macro_rules! schema_set {
    ($($name:literal),* $(,)?) => {
        /// Every schema name, sorted. The file is `schemas/<name>.schema.json`.
        pub const NAMES: &[&str] = &[$($name),*];

        const SOURCES: &[(&str, &str)] =
            &[$(($name, include_str!(concat!("../", $name, ".schema.json")))),*];
    };
}

schema_set![
    "attention",
    "attention-arm-request",
    "attention-arm-response",
    "attention-binding",
    "attention-binding-list",
    "attention-closure",
    "attention-confirmation",
    "attention-continue-response",
    "attention-evidence",
    "attention-evidence-list",
    "attention-policy",
    "capabilities",
    "continue-response",
    "create-request",
    "error",
    "evaluation",
    "evaluation-list",
    "event-envelope",
    "event-list",
    "goal",
    "goal-closed",
    "goal-evaluated",
    "goal-list",
    "mutants",
    "report",
    "requirements",
    "run-report-request",
    "run-report-response",
    "scenario",
    "variants",
    "verifier-definition",
    "verifier-list",
    "verifier-registration",
    "webhook-arm-request",
    "webhook-arm-response",
    "webhook-heartbeat-request",
    "webhook-heartbeat-response",
    "webhook-verifier-request",
    "webhook-verifier-response",
];

/// The prefix of every schema's `$id`; the name and `.schema.json` follow.
pub const ID_PREFIX: &str = "https://goalpost.dev/schemas/";

/// The embedded text of `<name>.schema.json`.
pub fn source(name: &str) -> Option<&'static str> {
    SOURCES
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| *text)
}

/// The `$id` a schema of this name carries.
pub fn schema_id(name: &str) -> String {
    format!("{ID_PREFIX}{name}.schema.json")
}

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("unknown schema `{0}`")]
    Unknown(String),
    #[error("cannot read schema file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("schema `{name}` is not valid JSON: {source}")]
    Parse {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("schema `{name}` does not compile: {message}")]
    Compile { name: String, message: String },
}

/// Compiled validators for every schema in [`NAMES`]. Build it once and share
/// it (it is `Send + Sync`); validating never compiles.
pub struct Schemas {
    validators: BTreeMap<&'static str, Validator>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("names", &self.validators.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Schemas {
    /// Compiles the schemas embedded in this binary.
    pub fn embedded() -> Result<Schemas, SchemaError> {
        let mut documents = Vec::with_capacity(SOURCES.len());
        for (name, text) in SOURCES {
            documents.push((*name, parse(name, text)?));
        }
        Self::compile(documents)
    }

    /// Compiles `<dir>/<name>.schema.json` for every name in [`NAMES`], so a
    /// schema can be changed without rebuilding.
    pub fn from_dir(dir: &Path) -> Result<Schemas, SchemaError> {
        let mut documents = Vec::with_capacity(NAMES.len());
        for name in NAMES {
            let path = dir.join(format!("{name}.schema.json"));
            let text = std::fs::read_to_string(&path)
                .map_err(|source| SchemaError::Read { path, source })?;
            documents.push((*name, parse(name, &text)?));
        }
        Self::compile(documents)
    }

    fn compile(documents: Vec<(&'static str, Value)>) -> Result<Schemas, SchemaError> {
        let registry_error = |error: jsonschema::ReferencingError| SchemaError::Compile {
            name: "(registry)".to_string(),
            message: error.to_string(),
        };
        for (name, document) in &documents {
            let declared = document.get("$id").and_then(Value::as_str);
            if declared != Some(schema_id(name).as_str()) {
                return Err(SchemaError::Compile {
                    name: (*name).to_string(),
                    message: format!("`$id` is {declared:?}, expected {:?}", schema_id(name)),
                });
            }
        }
        let registry = Registry::new()
            .extend(
                documents
                    .iter()
                    .map(|(name, document)| (schema_id(name), document.clone())),
            )
            .and_then(|builder| builder.prepare())
            .map_err(registry_error)?;
        let mut validators = BTreeMap::new();
        for (name, document) in &documents {
            let validator = jsonschema::options()
                .offline()
                .should_validate_formats(true)
                .with_registry(&registry)
                .build(document)
                .map_err(|error| SchemaError::Compile {
                    name: (*name).to_string(),
                    message: error.to_string(),
                })?;
            validators.insert(*name, validator);
        }
        Ok(Schemas { validators })
    }

    /// Every violation of schema `name` by `value`. An unknown name is a
    /// violation too: a typo in a caller must never read as a pass.
    pub fn validate(&self, name: &str, value: &Value) -> Result<(), Vec<Violation>> {
        let Some(validator) = self.validators.get(name) else {
            return Err(vec![Violation {
                pointer: String::new(),
                message: SchemaError::Unknown(name.to_string()).to_string(),
            }]);
        };
        let violations: Vec<Violation> = validator
            .iter_errors(value)
            .map(|error| Violation {
                pointer: error.instance_path().as_str().to_string(),
                message: error.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    /// Whether `value` is valid against schema `name` (false for an unknown name).
    pub fn is_valid(&self, name: &str, value: &Value) -> bool {
        self.validators
            .get(name)
            .is_some_and(|validator| validator.is_valid(value))
    }
}

fn parse(name: &str, text: &str) -> Result<Value, SchemaError> {
    serde_json::from_str(text).map_err(|source| SchemaError::Parse {
        name: name.to_string(),
        source,
    })
}
