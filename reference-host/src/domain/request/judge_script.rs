//! `PUT {base}/{id}/judge`, the seam `scriptedJudge` (PROFILE.md "Seam
//! contract"): `{"verifierRef": REF}`, REF a verifier fixture or an `http`
//! URL, as `completion.verifierRef` takes them.

use serde_json::Value;

use super::reader::{invalid, object, only_keys, required, string};
use super::{RequestContext, RequestError};
use crate::domain::refs::VerifierRef;

const POINTER: &str = "/verifierRef";

/// The verifier a host-judged goal is to be judged by. A registered
/// verifier's name is refused: the seam scripts the judge, it does not
/// pick one of the host's own.
pub fn parse_judge_script(
    body: &Value,
    context: RequestContext,
) -> Result<VerifierRef, RequestError> {
    let top = object(body, "")?;
    only_keys(top, "", &["verifierRef"])?;
    let text = string(required(top, "", "verifierRef")?, POINTER)?;
    parse_judge_ref(text, context, POINTER)
}

/// A scripted judge's REF on its own, wherever it travels (the seam's
/// body, or the header a create carries it in): refusals name `at`.
pub fn parse_judge_ref(
    text: &str,
    context: RequestContext,
    at: &str,
) -> Result<VerifierRef, RequestError> {
    let verifier_ref = VerifierRef::parse(text, context.fixtures_enabled)
        .map_err(|error| RequestError::from_verifier_ref(error, at))?;
    if verifier_ref.name().is_some() {
        return Err(invalid(
            at,
            "must be a verifier fixture (conformance:verifier...) or an http(s) URL",
        ));
    }
    Ok(verifier_ref)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SEAMS: RequestContext = RequestContext::new(true);

    #[test]
    fn a_fixture_or_a_url_scripts_the_judge() {
        for text in [
            "conformance:verifier?satisfyOn=2",
            "conformance:verifier",
            "http://127.0.0.1:9/mock/x/verifier",
        ] {
            let parsed = parse_judge_script(&json!({"verifierRef": text}), SEAMS).expect(text);
            assert_eq!(parsed.as_str(), text);
        }
    }

    #[test]
    fn anything_else_is_refused_with_its_pointer() {
        let pointer_of = |body: serde_json::Value, context| match parse_judge_script(&body, context)
        {
            Err(RequestError::Invalid { pointer, .. }) => pointer,
            other => panic!("{body}: {other:?}"),
        };
        assert_eq!(pointer_of(json!([]), SEAMS), "");
        assert_eq!(pointer_of(json!({}), SEAMS), "/verifierRef");
        assert_eq!(
            pointer_of(json!({"verifierRef": null}), SEAMS),
            "/verifierRef"
        );
        assert_eq!(
            pointer_of(
                json!({"verifierRef": "conformance:verifier", "x": 1}),
                SEAMS
            ),
            "/x"
        );
        assert_eq!(
            pointer_of(
                json!({"verifierRef": "conformance:verifier?satisfyOn=0"}),
                SEAMS
            ),
            "/verifierRef"
        );
        assert_eq!(
            pointer_of(json!({"verifierRef": "quality-gate"}), SEAMS),
            "/verifierRef"
        );
        assert!(matches!(
            parse_judge_script(
                &json!({"verifierRef": "conformance:verifier"}),
                RequestContext::new(false)
            ),
            Err(RequestError::FixturesDisabled { .. })
        ));
    }
}
