//! `completion.verifierRef` and `continuation.armRef`, and the strict grammar
//! of the `conformance:` fixture refs (SPEC §4, DESIGN "Fixture refs").

use std::collections::BTreeSet;

use super::money::MicroUsd;
use super::verdict::FailureClass;

const FIXTURE_SCHEME: &str = "conformance:";
const VERIFIER_FIXTURE: &str = "conformance:verifier";
const ARM_FIXTURE: &str = "conformance:arm";

/// Why a ref was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    /// A `conformance:` ref while the fixtures seam is off.
    #[error("fixture refs need the host's conformance seams")]
    FixturesDisabled,
    /// A `conformance:` ref that breaks the grammar.
    #[error("malformed fixture ref: {0}")]
    Malformed(String),
    /// A ref this host does not know how to call.
    #[error("this host does not know {0:?}")]
    Unknown(String),
}

/// The scripted behaviour of one criterion of the fixture verifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CriterionScript {
    Pass,
    Fail(Option<FailureClass>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct VerifierFixture {
    /// The overall flag is true from this iteration on; `None` = never.
    pub satisfy_on: Option<u64>,
    pub confidence: f64,
    pub criteria: Vec<CriterionScript>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArmFixture {
    pub cost: MicroUsd,
    pub escalate_on: Option<u64>,
    pub fail_on: Option<u64>,
    pub run_ms: u64,
    pub interval_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum VerifierSpec {
    Fixture(VerifierFixture),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ArmSpec {
    Fixture(ArmFixture),
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
        let pairs = fixture_query(text, VERIFIER_FIXTURE, fixtures_enabled)?;
        let mut fixture = VerifierFixture {
            satisfy_on: None,
            confidence: 0.9,
            criteria: Vec::new(),
        };
        for (key, value) in pairs {
            match key {
                "satisfyOn" => fixture.satisfy_on = Some(positive(key, value)?),
                "confidence" => {
                    let confidence = decimal(key, value)?;
                    if confidence > 1.0 {
                        return Err(malformed(format!("{key} must lie in 0..1")));
                    }
                    fixture.confidence = confidence;
                }
                "criteria" => fixture.criteria = criteria(value)?,
                _ => return Err(malformed(format!("unknown verifier key {key:?}"))),
            }
        }
        Ok(VerifierRef {
            text: text.to_string(),
            spec: VerifierSpec::Fixture(fixture),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn spec(&self) -> &VerifierSpec {
        &self.spec
    }
}

impl ArmRef {
    pub fn parse(text: &str, fixtures_enabled: bool) -> Result<ArmRef, RefError> {
        let pairs = fixture_query(text, ARM_FIXTURE, fixtures_enabled)?;
        let mut fixture = ArmFixture {
            cost: MicroUsd::ZERO,
            escalate_on: None,
            fail_on: None,
            run_ms: 0,
            interval_ms: None,
        };
        for (key, value) in pairs {
            match key {
                "costUsd" => {
                    fixture.cost = MicroUsd::from_usd(decimal(key, value)?)
                        .ok_or_else(|| malformed(format!("{key} is out of range")))?;
                }
                "escalateOn" => fixture.escalate_on = Some(positive(key, value)?),
                "failOn" => fixture.fail_on = Some(positive(key, value)?),
                "runMs" => fixture.run_ms = integer(key, value)?,
                "intervalMs" => fixture.interval_ms = Some(positive(key, value)?),
                _ => return Err(malformed(format!("unknown arm key {key:?}"))),
            }
        }
        Ok(ArmRef {
            text: text.to_string(),
            spec: ArmSpec::Fixture(fixture),
        })
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
        }
    }
}

fn malformed(message: String) -> RefError {
    RefError::Malformed(message)
}

/// Checks the head and splits the query into unique, non-empty pairs.
fn fixture_query<'a>(
    text: &'a str,
    head: &str,
    fixtures_enabled: bool,
) -> Result<Vec<(&'a str, &'a str)>, RefError> {
    if !text.starts_with(FIXTURE_SCHEME) {
        return Err(RefError::Unknown(text.to_string()));
    }
    if !fixtures_enabled {
        return Err(RefError::FixturesDisabled);
    }
    let (found_head, query) = match text.split_once('?') {
        Some((found_head, query)) => (found_head, Some(query)),
        None => (text, None),
    };
    if found_head != head {
        return Err(malformed(format!(
            "expected {head:?}, found {found_head:?}"
        )));
    }
    let Some(query) = query else {
        return Ok(Vec::new());
    };
    let mut seen = BTreeSet::new();
    let mut pairs = Vec::new();
    for pair in query.split('&') {
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

fn criteria(value: &str) -> Result<Vec<CriterionScript>, RefError> {
    value
        .split(',')
        .map(|item| match item {
            "pass" => Ok(CriterionScript::Pass),
            "fail" => Ok(CriterionScript::Fail(None)),
            "fail:logical" => Ok(CriterionScript::Fail(Some(FailureClass::Logical))),
            "fail:environmental" => Ok(CriterionScript::Fail(Some(FailureClass::Environmental))),
            other => Err(malformed(format!("unknown criterion {other:?}"))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier(text: &str) -> Result<VerifierFixture, RefError> {
        VerifierRef::parse(text, true).map(|parsed| match parsed.spec {
            VerifierSpec::Fixture(fixture) => fixture,
        })
    }

    fn arm(text: &str) -> Result<ArmFixture, RefError> {
        ArmRef::parse(text, true).map(|parsed| match parsed.spec {
            ArmSpec::Fixture(fixture) => fixture,
        })
    }

    #[test]
    fn bare_verifier_never_satisfies() {
        let fixture = verifier("conformance:verifier").expect("valid");
        assert_eq!(fixture.satisfy_on, None);
        assert_eq!(fixture.confidence, 0.9);
        assert!(fixture.criteria.is_empty());
    }

    #[test]
    fn verifier_with_every_key() {
        let fixture =
            verifier("conformance:verifier?satisfyOn=3&confidence=0.75&criteria=pass,fail,fail:logical,fail:environmental")
                .expect("valid");
        assert_eq!(fixture.satisfy_on, Some(3));
        assert_eq!(fixture.confidence, 0.75);
        assert_eq!(
            fixture.criteria,
            vec![
                CriterionScript::Pass,
                CriterionScript::Fail(None),
                CriterionScript::Fail(Some(FailureClass::Logical)),
                CriterionScript::Fail(Some(FailureClass::Environmental)),
            ]
        );
    }

    #[test]
    fn arm_with_every_key() {
        let fixture =
            arm("conformance:arm?costUsd=0.4&escalateOn=2&failOn=3&runMs=0&intervalMs=50")
                .expect("valid");
        assert_eq!(fixture.cost, MicroUsd::from_micros(400_000));
        assert_eq!(fixture.escalate_on, Some(2));
        assert_eq!(fixture.fail_on, Some(3));
        assert_eq!(fixture.run_ms, 0);
        assert_eq!(fixture.interval_ms, Some(50));
        let bare = arm("conformance:arm").expect("valid");
        assert_eq!(bare.cost, MicroUsd::ZERO);
        assert_eq!(bare.interval_ms, None);
    }

    #[test]
    fn keeps_the_text_as_written() {
        let text = "conformance:arm?intervalMs=5&costUsd=1";
        assert_eq!(ArmRef::parse(text, true).expect("valid").as_str(), text);
    }

    #[test]
    fn malformed_verifier_refs_are_refused() {
        for text in [
            "conformance:verifier?",
            "conformance:verifier?satisfyOn",
            "conformance:verifier?satisfyOn=",
            "conformance:verifier?=3",
            "conformance:verifier?satisfyOn=0",
            "conformance:verifier?satisfyOn=-1",
            "conformance:verifier?satisfyOn=+1",
            "conformance:verifier?satisfyOn=1.5",
            "conformance:verifier?satisfyOn=two",
            "conformance:verifier?satisfyOn=99999999999999999999999",
            "conformance:verifier?satisfyOn=1&satisfyOn=2",
            "conformance:verifier?satisfyOn=1&",
            "conformance:verifier?satisfyOn=1&&confidence=0.5",
            "conformance:verifier?colour=blue",
            "conformance:verifier?confidence=1.5",
            "conformance:verifier?confidence=1e-1",
            "conformance:verifier?confidence=.5",
            "conformance:verifier?confidence=NaN",
            "conformance:verifier?criteria=",
            "conformance:verifier?criteria=pass,",
            "conformance:verifier?criteria=maybe",
            "conformance:verifier?criteria=fail:vibes",
            "conformance:verifierx",
            "conformance:verifier/x?satisfyOn=1",
            "conformance:arm",
            "conformance:",
        ] {
            assert!(
                matches!(VerifierRef::parse(text, true), Err(RefError::Malformed(_))),
                "{text:?} should be malformed"
            );
        }
    }

    #[test]
    fn malformed_arm_refs_are_refused() {
        for text in [
            "conformance:arm?",
            "conformance:arm?costUsd=-0.4",
            "conformance:arm?costUsd=abc",
            "conformance:arm?costUsd=1e3",
            "conformance:arm?costUsd=0.4.1",
            "conformance:arm?escalateOn=0",
            "conformance:arm?failOn=0",
            "conformance:arm?intervalMs=0",
            "conformance:arm?runMs=-5",
            "conformance:arm?runMs=5ms",
            "conformance:arm?costUsd=1&costUsd=1",
            "conformance:arm?satisfyOn=1",
            "conformance:verifier",
        ] {
            assert!(
                matches!(ArmRef::parse(text, true), Err(RefError::Malformed(_))),
                "{text:?} should be malformed"
            );
        }
    }

    #[test]
    fn fixtures_need_the_seam() {
        assert_eq!(
            VerifierRef::parse("conformance:verifier?satisfyOn=1", false),
            Err(RefError::FixturesDisabled)
        );
        assert_eq!(
            ArmRef::parse("conformance:arm?bogus", false),
            Err(RefError::FixturesDisabled)
        );
    }

    #[test]
    fn other_refs_are_unknown() {
        assert!(matches!(
            VerifierRef::parse("vf-1", true),
            Err(RefError::Unknown(_))
        ));
        assert!(matches!(
            ArmRef::parse("https://example.test/arm", true),
            Err(RefError::Unknown(_))
        ));
    }
}
