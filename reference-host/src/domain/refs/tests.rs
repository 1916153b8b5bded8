//! The ref grammars: fixtures, webhook URLs, verifier names.

use super::*;
use crate::domain::money::MicroUsd;
use crate::domain::verdict::FailureClass;

fn verifier(text: &str) -> Result<VerifierFixture, RefError> {
    VerifierRef::parse(text, true).map(|parsed| match parsed.spec {
        VerifierSpec::Fixture(fixture) => fixture,
        other => panic!("not a fixture: {other:?}"),
    })
}

fn arm(text: &str) -> Result<ArmFixture, RefError> {
    ArmRef::parse(text, true).map(|parsed| match parsed.spec {
        ArmSpec::Fixture(fixture) => fixture,
        other => panic!("not a fixture: {other:?}"),
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
        arm("conformance:arm?costUsd=0.4&escalateOn=2&failOn=3&runMs=0&intervalMs=50&heartbeatMs=20&fireOn=3")
            .expect("valid");
    assert_eq!(fixture.cost, MicroUsd::from_micros(400_000));
    assert_eq!(fixture.escalate_on, Some(2));
    assert_eq!(fixture.fail_on, Some(3));
    assert_eq!(fixture.run_ms, 0);
    assert_eq!(fixture.interval_ms, Some(50));
    assert_eq!(fixture.heartbeat_ms, Some(20));
    assert_eq!(fixture.fire_on, Some(3));
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
        "conformance:arm?heartbeatMs=0",
        "conformance:arm?fireOn=0",
        "conformance:arm?fireOn=x",
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

fn webhook(parsed: &ArmSpec) -> &Webhook {
    match parsed {
        ArmSpec::Webhook(webhook) => webhook,
        other => panic!("not a webhook: {other:?}"),
    }
}

#[test]
fn webhook_urls_with_fragment_parameters() {
    let text = "http://127.0.0.1:4000/arm/g1?x=1#intervalMs=250&heartbeatMs=40";
    let parsed = ArmRef::parse(text, true).expect("valid with seams");
    assert_eq!(parsed.as_str(), text);
    let hook = webhook(parsed.spec());
    assert_eq!(hook.url(), "http://127.0.0.1:4000/arm/g1?x=1");
    assert_eq!(parsed.interval_ms(), Some(250));
    assert_eq!(parsed.heartbeat_ms(), Some(40));
    let bare = ArmRef::parse("HTTP://example.test", false).expect("valid");
    assert_eq!(webhook(bare.spec()).url(), "http://example.test/");
    assert_eq!(bare.interval_ms(), None);

    let verifier = VerifierRef::parse("http://example.test/verify", false).expect("valid");
    assert!(matches!(verifier.spec(), VerifierSpec::Webhook(_)));
    assert_eq!(verifier.name(), None);
}

#[test]
fn intervals_have_a_floor_without_seams() {
    for text in [
        "http://example.test/a#intervalMs=999",
        "http://example.test/a#heartbeatMs=1",
    ] {
        assert!(
            matches!(ArmRef::parse(text, false), Err(RefError::Malformed(_))),
            "{text}"
        );
        assert!(ArmRef::parse(text, true).is_ok(), "{text}");
    }
    let slow = ArmRef::parse(
        "http://example.test/a#intervalMs=1000&heartbeatMs=1000",
        false,
    )
    .expect("at the floor");
    assert_eq!(slow.interval_ms(), Some(MIN_INTERVAL_MS));
}

#[test]
fn malformed_webhook_refs_are_refused() {
    let long = format!("http://example.test/{}", "a".repeat(2048));
    for text in [
        "http://example.test/#",
        "http://example.test/#intervalMs",
        "http://example.test/#intervalMs=",
        "http://example.test/#intervalMs=0",
        "http://example.test/#intervalMs=1.5",
        "http://example.test/#intervalMs=1&intervalMs=2",
        "http://example.test/#colour=blue",
        "http://example.test/#intervalMs=1#heartbeatMs=2",
        "http://user:pw@example.test/",
        "http://user@example.test/",
        "http://",
        "http:example.test",
        "http:/example.test",
        "http://exa mple.test/",
        "http://example.test/\n",
        long.as_str(),
    ] {
        assert!(
            matches!(ArmRef::parse(text, true), Err(RefError::Malformed(_))),
            "{text:?} should be malformed"
        );
    }
    for text in [
        "http://example.test/#intervalMs=5",
        "http://example.test/#heartbeatMs=5",
    ] {
        assert!(
            matches!(VerifierRef::parse(text, true), Err(RefError::Malformed(_))),
            "{text:?}: a verifier URL takes no parameters"
        );
    }
}

#[test]
fn names_and_other_refs() {
    let named = VerifierRef::parse("vf-1", false).expect("a name");
    assert_eq!(named.name().map(|name| name.as_str()), Some("vf-1"));
    for text in ["has space", "ftp://example.test", "", "urn:x"] {
        assert!(
            matches!(VerifierRef::parse(text, true), Err(RefError::Unknown(_))),
            "{text:?}"
        );
    }
    for text in ["vf-1", "ftp://example.test", " http://example.test/"] {
        assert!(
            matches!(ArmRef::parse(text, true), Err(RefError::Unknown(_))),
            "{text:?}"
        );
    }
    // Called over TLS.
    let verifier = VerifierRef::parse("https://example.test/verify", false).expect("valid");
    assert!(
        matches!(verifier.spec(), VerifierSpec::Webhook(hook) if hook.url() == "https://example.test/verify")
    );
    let arm = ArmRef::parse("https://example.test/arm#intervalMs=1000", false).expect("valid");
    assert_eq!(webhook(arm.spec()).url(), "https://example.test/arm");
    assert!(ArmRef::parse("https:example.test/arm", false).is_err());
}
