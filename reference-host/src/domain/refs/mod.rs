//! `completion.verifierRef` and `continuation.armRef`: a `conformance:`
//! fixture (DESIGN "Fixture refs"), an `http` webhook URL (DESIGN
//! "Webhooks"), or, for verifiers, the name of a registered criteria
//! verifier. Each grammar is strict: anything it does not know is refused.

mod fixture;
#[cfg(test)]
mod tests;
mod webhook;

use std::collections::BTreeSet;

use super::criteria::VerifierName;

pub use fixture::{ArmFixture, CriterionScript, VerifierFixture};
pub use webhook::Webhook;

/// The shortest `intervalMs` and `heartbeatMs` an arm ref may name when
/// the conformance seams are off.
pub const MIN_INTERVAL_MS: u64 = 1_000;

/// Why a ref was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    /// A `conformance:` ref while the fixtures seam is off.
    #[error("fixture refs need the host's conformance seams")]
    FixturesDisabled,
    /// A fixture or webhook ref that breaks its grammar.
    #[error("malformed ref: {0}")]
    Malformed(String),
    /// A ref this host does not know how to call.
    #[error("this host does not know {0:?}")]
    Unknown(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum VerifierSpec {
    Fixture(VerifierFixture),
    Webhook(Webhook),
    /// A criteria verifier registered under this name by the goal's tenant
    /// (whether it exists is checked where the registry is, in the engine).
    Named(VerifierName),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ArmSpec {
    Fixture(ArmFixture),
    Webhook(Webhook),
}

/// A parsed `verifierRef`, keeping the text the client wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifierRef {
    text: String,
    spec: VerifierSpec,
}

/// A parsed `armRef`, keeping the text the client wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmRef {
    text: String,
    spec: ArmSpec,
}

impl VerifierRef {
    pub fn parse(text: &str, fixtures_enabled: bool) -> Result<VerifierRef, RefError> {
        let spec = if fixture::is_fixture(text) {
            VerifierSpec::Fixture(fixture::verifier(text, fixtures_enabled)?)
        } else if webhook::is_url(text) {
            // A verifier URL takes no host-side parameters.
            VerifierSpec::Webhook(Webhook::parse(text, &[])?)
        } else if let Some(name) = VerifierName::parse(text) {
            VerifierSpec::Named(name)
        } else {
            return Err(RefError::Unknown(text.to_string()));
        };
        Ok(VerifierRef {
            text: text.to_string(),
            spec,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn spec(&self) -> &VerifierSpec {
        &self.spec
    }

    /// The registered verifier this ref names, if it names one.
    pub fn name(&self) -> Option<&VerifierName> {
        match &self.spec {
            VerifierSpec::Named(name) => Some(name),
            _ => None,
        }
    }
}

impl ArmRef {
    pub fn parse(text: &str, fixtures_enabled: bool) -> Result<ArmRef, RefError> {
        let spec = if fixture::is_fixture(text) {
            ArmSpec::Fixture(fixture::arm(text, fixtures_enabled)?)
        } else if webhook::is_url(text) {
            ArmSpec::Webhook(Webhook::parse(
                text,
                &[webhook::INTERVAL_MS, webhook::HEARTBEAT_MS],
            )?)
        } else {
            return Err(RefError::Unknown(text.to_string()));
        };
        let arm = ArmRef {
            text: text.to_string(),
            spec,
        };
        // Outside conformance mode (the suite's 20 ms intervals need the
        // seams) an interval is a cost the tenant sets for the host and
        // for whatever the webhook points at: 200 goals at 1 ms made 9,485
        // arm calls a second.
        if !fixtures_enabled {
            for (key, ms) in [
                (webhook::INTERVAL_MS, arm.interval_ms()),
                (webhook::HEARTBEAT_MS, arm.heartbeat_ms()),
            ] {
                if ms.is_some_and(|ms| ms < MIN_INTERVAL_MS) {
                    return Err(malformed(format!(
                        "{key} is at least {MIN_INTERVAL_MS} on this host"
                    )));
                }
            }
        }
        Ok(arm)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn spec(&self) -> &ArmSpec {
        &self.spec
    }

    /// How long a `schedule` arm waits after a run before firing again.
    pub fn interval_ms(&self) -> Option<u64> {
        match &self.spec {
            ArmSpec::Fixture(fixture) => fixture.interval_ms,
            ArmSpec::Webhook(webhook) => webhook.interval_ms(),
        }
    }

    /// How long a `heartbeat` arm waits after a probe before probing again.
    pub fn heartbeat_ms(&self) -> Option<u64> {
        match &self.spec {
            ArmSpec::Fixture(fixture) => fixture.heartbeat_ms,
            ArmSpec::Webhook(webhook) => webhook.heartbeat_ms(),
        }
    }
}

fn malformed(message: String) -> RefError {
    RefError::Malformed(message)
}

/// Splits `key=value&key=value` into unique, non-empty pairs (the grammar
/// of fixture queries and webhook fragments alike).
fn pairs(text: &str) -> Result<Vec<(&str, &str)>, RefError> {
    let mut seen = BTreeSet::new();
    let mut pairs = Vec::new();
    for pair in text.split('&') {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(malformed(format!("{pair:?} is not key=value")));
        };
        if key.is_empty() || value.is_empty() {
            return Err(malformed(format!("{pair:?} has an empty key or value")));
        }
        if !seen.insert(key) {
            return Err(malformed(format!("{key:?} is repeated")));
        }
        pairs.push((key, value));
    }
    Ok(pairs)
}

fn integer(key: &str, value: &str) -> Result<u64, RefError> {
    if !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(malformed(format!("{key}={value:?} is not a whole number")));
    }
    value
        .parse()
        .map_err(|_| malformed(format!("{key}={value:?} is out of range")))
}

fn positive(key: &str, value: &str) -> Result<u64, RefError> {
    match integer(key, value)? {
        0 => Err(malformed(format!("{key} must be at least 1"))),
        number => Ok(number),
    }
}

/// Plain decimals only (`0`, `0.4`): no sign, exponent, `inf` or `NaN`.
fn decimal(key: &str, value: &str) -> Result<f64, RefError> {
    let (whole, fraction) = match value.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (value, None),
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    if !digits(whole) || !fraction.is_none_or(digits) {
        return Err(malformed(format!("{key}={value:?} is not a plain decimal")));
    }
    value
        .parse::<f64>()
        .ok()
        .filter(|number| number.is_finite())
        .ok_or_else(|| malformed(format!("{key}={value:?} is out of range")))
}
