//! The `conformance:verifier` and `conformance:arm` fixture grammar (SPEC
//! §4 `fixtures`, DESIGN "Fixture refs").

use super::{decimal, integer, malformed, pairs, positive, RefError};
use crate::domain::money::MicroUsd;
use crate::domain::verdict::FailureClass;

const FIXTURE_SCHEME: &str = "conformance:";
const VERIFIER_FIXTURE: &str = "conformance:verifier";
const ARM_FIXTURE: &str = "conformance:arm";

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
    /// Heartbeat probe interval.
    pub heartbeat_ms: Option<u64>,
    /// The heartbeat fires on this probe and every probe after; `None` =
    /// on every probe.
    pub fire_on: Option<u64>,
    /// `commitAfterMs=N`: every run commits to check in N ms later (a
    /// `commitment` goal's next fire); absent: no run commits.
    pub commit_after_ms: Option<u64>,
}

pub(super) fn is_fixture(text: &str) -> bool {
    text.starts_with(FIXTURE_SCHEME)
}

pub(super) fn verifier(text: &str, fixtures_enabled: bool) -> Result<VerifierFixture, RefError> {
    let mut fixture = VerifierFixture {
        satisfy_on: None,
        confidence: 0.9,
        criteria: Vec::new(),
    };
    for (key, value) in query(text, VERIFIER_FIXTURE, fixtures_enabled)? {
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
    Ok(fixture)
}

pub(super) fn arm(text: &str, fixtures_enabled: bool) -> Result<ArmFixture, RefError> {
    let mut fixture = ArmFixture {
        cost: MicroUsd::ZERO,
        escalate_on: None,
        fail_on: None,
        run_ms: 0,
        interval_ms: None,
        heartbeat_ms: None,
        fire_on: None,
        commit_after_ms: None,
    };
    for (key, value) in query(text, ARM_FIXTURE, fixtures_enabled)? {
        match key {
            "costUsd" => {
                fixture.cost = MicroUsd::from_usd(decimal(key, value)?)
                    .ok_or_else(|| malformed(format!("{key} is out of range")))?;
            }
            "escalateOn" => fixture.escalate_on = Some(positive(key, value)?),
            "failOn" => fixture.fail_on = Some(positive(key, value)?),
            "runMs" => fixture.run_ms = integer(key, value)?,
            "intervalMs" => fixture.interval_ms = Some(positive(key, value)?),
            "heartbeatMs" => fixture.heartbeat_ms = Some(positive(key, value)?),
            "fireOn" => fixture.fire_on = Some(positive(key, value)?),
            "commitAfterMs" => {
                let ms = positive(key, value)?;
                fixture.commit_after_ms = Some(
                    crate::domain::commitment::commitment_ms(ms)
                        .ok_or_else(|| malformed(format!("{key} is out of range")))?,
                );
            }
            _ => return Err(malformed(format!("unknown arm key {key:?}"))),
        }
    }
    Ok(fixture)
}

/// Checks the head and splits the query into unique, non-empty pairs.
fn query<'a>(
    text: &'a str,
    head: &str,
    fixtures_enabled: bool,
) -> Result<Vec<(&'a str, &'a str)>, RefError> {
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
    match query {
        None => Ok(Vec::new()),
        Some(query) => pairs(query),
    }
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
