//! The exchange of a failing or erroring step, as every report shows it: the
//! request and the answer with credentials redacted, the claim that did not
//! hold, and a `curl` command that replays the request.
//!
//! Redaction happens when the exchange is recorded, so no writer (and no
//! `report.json`) ever holds a token.

use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};

use super::check::CheckResult;
use crate::http::{Exchange, Outgoing};

/// Longest body kept per direction; the rest is cut and marked.
pub const BODY_CAP: usize = 64 * 1024;

/// What a redacted header value reads as.
pub const REDACTED: &str = "[redacted]";

/// Header names whose values never reach a report as sent.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-goalpost-webhook-secret",
];

/// Tokens shorter than this are only redacted in credential headers: a
/// short token replaced everywhere would garble bodies and URLs.
const MIN_TOKEN_FOR_TEXT: usize = 8;

/// The step that ended a scenario's run, with its last exchange.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedStep {
    /// 1-based position of the step in the scenario.
    pub step: usize,
    pub name: String,
    /// The scenario file, as the run was given it.
    pub file: String,
    /// JSON pointer of the step in its file (`/steps/2`).
    pub pointer: String,
    /// The claim that did not hold; `None` when the step errored.
    pub check: Option<CheckResult>,
    /// Why the step errored (transport failure, not JSON, ...); `None` when
    /// a claim failed.
    pub error: Option<String>,
    pub request: RecordedRequest,
    /// `None` when no answer arrived.
    pub response: Option<RecordedResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    pub url: String,
    /// As sent, in order (the content type first when there is a body).
    pub headers: Vec<Header>,
    pub body: Option<RecordedBody>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedResponse {
    pub status: u16,
    pub headers: Vec<Header>,
    pub body: RecordedBody,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedBody {
    /// The body as text (invalid UTF-8 replaced), at most [`BODY_CAP`] bytes.
    pub text: String,
    /// Size of the whole body in bytes.
    pub bytes: usize,
    pub truncated: bool,
}

impl RecordedBody {
    pub fn new(bytes: &[u8], redactor: &Redactor) -> RecordedBody {
        let kept = &bytes[..bytes.len().min(BODY_CAP)];
        RecordedBody {
            text: redactor.text(&String::from_utf8_lossy(kept)),
            bytes: bytes.len(),
            truncated: kept.len() < bytes.len(),
        }
    }

    /// Pretty JSON when the body is JSON, else the text as it came.
    pub fn pretty(&self) -> String {
        match serde_json::from_str::<serde_json::Value>(&self.text) {
            Ok(value) if !self.truncated => {
                serde_json::to_string_pretty(&value).unwrap_or_else(|_| self.text.clone())
            }
            _ => self.text.clone(),
        }
    }
}

/// Replaces the run's bearer tokens (and any credential header) before an
/// exchange is recorded. Token A becomes `$TOKEN`, token B `$TOKEN_B`, so the
/// curl command works once those variables are set.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    tokens: Vec<(String, &'static str)>,
}

impl Redactor {
    pub fn new(token_a: Option<&str>, token_b: Option<&str>) -> Redactor {
        let tokens = [(token_a, "$TOKEN"), (token_b, "$TOKEN_B")]
            .into_iter()
            .filter_map(|(token, name)| {
                token
                    .filter(|t| !t.is_empty())
                    .map(|t| (t.to_string(), name))
            })
            .collect();
        Redactor { tokens }
    }

    /// Also replaces the authority credentials (`$PRINCIPAL_TOKEN`,
    /// `$HOST_AUTHORITY_TOKEN`).
    #[must_use]
    pub fn with_authority(mut self, authority: &crate::config::AuthorityTokens) -> Redactor {
        for (token, name) in [
            (&authority.principal, "$PRINCIPAL_TOKEN"),
            (&authority.host, "$HOST_AUTHORITY_TOKEN"),
        ] {
            if let Some(token) = token.as_ref().filter(|token| !token.is_empty()) {
                self.tokens.push((token.clone(), name));
            }
        }
        self
    }

    /// A header value as it may appear in a report.
    pub fn header(&self, name: &str, value: &str) -> String {
        if SECRET_HEADERS
            .iter()
            .any(|secret| secret.eq_ignore_ascii_case(name))
        {
            let placeholder = self
                .tokens
                .iter()
                .find(|(token, _)| value == format!("Bearer {token}"))
                .map(|(_, name)| format!("Bearer {name}"));
            return placeholder.unwrap_or_else(|| REDACTED.to_string());
        }
        self.text(value)
    }

    /// Free text (URLs, bodies) with every long enough token replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (token, name) in &self.tokens {
            if token.len() >= MIN_TOKEN_FOR_TEXT {
                out = out.replace(token.as_str(), name);
            }
        }
        out
    }

    /// The request exactly as [`crate::http::Http::send`] sends it.
    pub fn request(&self, outgoing: &Outgoing) -> RecordedRequest {
        let mut headers: Vec<Header> = Vec::new();
        if let Some(body) = &outgoing.body {
            headers.push(Header {
                name: "content-type".to_string(),
                value: self.header("content-type", &body.content_type),
            });
        }
        for (name, value) in &outgoing.headers {
            headers.retain(|existing| !existing.name.eq_ignore_ascii_case(name));
            headers.push(Header {
                name: name.clone(),
                value: self.header(name, value),
            });
        }
        RecordedRequest {
            method: outgoing.method.clone(),
            url: self.text(&outgoing.url),
            headers,
            body: outgoing
                .body
                .as_ref()
                .map(|body| RecordedBody::new(&body.bytes, self)),
        }
    }

    pub fn response(&self, exchange: &Exchange) -> RecordedResponse {
        RecordedResponse {
            status: exchange.status,
            headers: self.headers(&exchange.headers),
            body: RecordedBody::new(&exchange.body, self),
        }
    }

    fn headers(&self, map: &HeaderMap) -> Vec<Header> {
        map.iter()
            .map(|(name, value)| Header {
                name: name.as_str().to_string(),
                value: self.header(name.as_str(), &String::from_utf8_lossy(value.as_bytes())),
            })
            .collect()
    }
}

impl RecordedRequest {
    /// A shell command that sends this request again. Credentials are
    /// `$TOKEN` / `$TOKEN_B`, expanded by the shell; everything else is
    /// single-quoted, so nothing the host or the scenario wrote can run.
    pub fn curl(&self) -> String {
        let mut parts = vec!["curl -sS -i".to_string()];
        if self.method.eq_ignore_ascii_case("HEAD") {
            parts.push("--head".to_string());
        } else if self.method != "GET" || self.body.is_some() {
            // curl sends a body as POST unless told the method.
            let plain =
                !self.method.is_empty() && self.method.bytes().all(|b| b.is_ascii_alphanumeric());
            let method = if plain {
                self.method.clone()
            } else {
                shell_quote(&self.method)
            };
            parts.push(format!("-X {method}"));
        }
        parts.push(shell_quote(&self.url));
        for header in &self.headers {
            let line = format!("{}: {}", header.name, header.value);
            if header.value == "Bearer $TOKEN" || header.value == "Bearer $TOKEN_B" {
                // Fixed text we wrote ourselves: safe in double quotes.
                parts.push(format!("-H \"{line}\""));
            } else {
                parts.push(format!("-H {}", shell_quote(&line)));
            }
        }
        if let Some(body) = &self.body {
            parts.push(format!("--data-binary {}", shell_quote(&body.text)));
        }
        parts.join(" \\\n  ")
    }

    /// Whether [`RecordedRequest::curl`] can only approximate the request
    /// (its body was cut).
    pub fn curl_is_partial(&self) -> bool {
        self.body.as_ref().is_some_and(|body| body.truncated)
    }
}

/// Single-quotes a word for a POSIX shell.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::OutgoingBody;
    use reqwest::header::HeaderValue;

    fn outgoing(headers: &[(&str, &str)], body: Option<&str>) -> Outgoing {
        Outgoing {
            method: "POST".to_string(),
            url: "http://h/v1/goals?token=secret-token-a".to_string(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.map(|text| OutgoingBody {
                bytes: text.as_bytes().to_vec(),
                content_type: "application/json".to_string(),
            }),
        }
    }

    fn redactor() -> Redactor {
        Redactor::new(Some("secret-token-a"), Some("secret-token-b"))
    }

    #[test]
    fn credentials_become_placeholders_and_other_secrets_are_hidden() {
        let request = redactor().request(&outgoing(
            &[
                ("authorization", "Bearer secret-token-a"),
                ("X-Goalpost-Webhook-Secret", "s3cr3t"),
                ("X-Echo", "has secret-token-b inside"),
            ],
            Some(r#"{"a":"secret-token-a"}"#),
        ));
        let value = |name: &str| {
            request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value.as_str())
        };
        assert_eq!(value("authorization"), Some("Bearer $TOKEN"));
        assert_eq!(value("x-goalpost-webhook-secret"), Some(REDACTED));
        assert_eq!(value("x-echo"), Some("has $TOKEN_B inside"));
        assert_eq!(value("content-type"), Some("application/json"));
        assert_eq!(request.url, "http://h/v1/goals?token=$TOKEN");
        let body = request.body.as_ref().map(|b| b.text.as_str());
        assert_eq!(body, Some(r#"{"a":"$TOKEN"}"#));
        let text = serde_json::to_string(&request).unwrap();
        assert!(!text.contains("secret-token"), "{text}");
        assert!(!text.contains("s3cr3t"), "{text}");
    }

    #[test]
    fn a_foreign_credential_is_redacted_whole() {
        let r = redactor();
        assert_eq!(r.header("Authorization", "Bearer wrong-123"), REDACTED);
        assert_eq!(
            r.header("authorization", "Bearer secret-token-b"),
            "Bearer $TOKEN_B"
        );
        // Short tokens are not replaced in free text, only in credentials.
        let short = Redactor::new(Some("t"), None);
        assert_eq!(short.text("the text"), "the text");
        assert_eq!(short.header("authorization", "Bearer t"), "Bearer $TOKEN");
    }

    #[test]
    fn a_scenario_header_replaces_the_content_type() {
        let request = redactor().request(&outgoing(&[("Content-Type", "text/plain")], Some("x")));
        let types: Vec<&str> = request
            .headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("content-type"))
            .map(|h| h.value.as_str())
            .collect();
        assert_eq!(types, ["text/plain"]);
    }

    #[test]
    fn response_headers_and_long_bodies_are_recorded_safely() {
        let mut headers = HeaderMap::new();
        headers.insert("etag", HeaderValue::from_static("\"1\""));
        headers.insert("set-authorization", HeaderValue::from_static("x"));
        headers.insert("authorization", HeaderValue::from_static("Bearer echo"));
        let body = vec![b'x'; BODY_CAP + 5];
        let exchange = Exchange::new("GET", "http://h/x", 200, headers, body);
        let response = redactor().response(&exchange);
        assert_eq!(response.body.bytes, BODY_CAP + 5);
        assert_eq!(response.body.text.len(), BODY_CAP);
        assert!(response.body.truncated);
        let auth: Vec<&str> = response
            .headers
            .iter()
            .filter(|h| h.name == "authorization")
            .map(|h| h.value.as_str())
            .collect();
        assert_eq!(auth, [REDACTED]);
    }

    #[test]
    fn pretty_prints_json_only() {
        let r = Redactor::default();
        assert_eq!(
            RecordedBody::new(br#"{"a":[1]}"#, &r).pretty(),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
        assert_eq!(RecordedBody::new(b"<html>", &r).pretty(), "<html>");
        assert_eq!(RecordedBody::new(b"\xff{", &r).pretty(), "\u{FFFD}{");
    }

    #[test]
    fn curl_quotes_everything_but_the_token_variable() {
        let request = redactor().request(&outgoing(
            &[
                ("authorization", "Bearer secret-token-a"),
                ("X-Q", "it's $(rm -rf /)"),
            ],
            Some(r#"{"o":"a'b"}"#),
        ));
        assert_eq!(
            request.curl(),
            [
                "curl -sS -i",
                "-X POST",
                "'http://h/v1/goals?token=$TOKEN'",
                "-H 'content-type: application/json'",
                "-H \"authorization: Bearer $TOKEN\"",
                r"-H 'X-Q: it'\''s $(rm -rf /)'",
                r#"--data-binary '{"o":"a'\''b"}'"#,
            ]
            .join(" \\\n  ")
        );
        assert!(!request.curl_is_partial());
    }

    #[test]
    fn curl_names_the_method_only_when_it_must() {
        let mut request = redactor().request(&outgoing(&[], None));
        request.method = "GET".to_string();
        assert!(!request.curl().contains("-X"));
        request.body = Some(RecordedBody::new(b"{}", &Redactor::default()));
        assert!(request.curl().contains("-X GET"), "a GET with a body");
        request.method = "HEAD".to_string();
        assert!(request.curl().contains("--head"));
        request.method = "B AD".to_string();
        assert!(request.curl().contains("-X 'B AD'"));
    }
}

#[cfg(test)]
pub(crate) mod sample {
    //! A failed step with every part filled, for writer tests.
    use super::*;
    use crate::run::outcome::CheckKind;

    pub fn failed_step() -> FailedStep {
        let header = |name: &str, value: &str| Header {
            name: name.to_string(),
            value: value.to_string(),
        };
        FailedStep {
            step: 1,
            name: "create".to_string(),
            file: "scenarios/core/bounds.json".to_string(),
            pointer: "/steps/0".to_string(),
            check: Some(CheckResult {
                kind: CheckKind::Status,
                at: "/steps/0/expect/status".to_string(),
                what: "status".to_string(),
                expected: "422".to_string(),
                actual: "201".to_string(),
                ..CheckResult::default()
            }),
            error: None,
            request: RecordedRequest {
                method: "POST".to_string(),
                url: "http://127.0.0.1:40123/v1/host/sample/goals".to_string(),
                headers: vec![
                    header("content-type", "application/json"),
                    header("authorization", "Bearer $TOKEN"),
                ],
                body: Some(RecordedBody {
                    text: r#"{"objective":"ship it","bounds":{}}"#.to_string(),
                    bytes: 35,
                    truncated: false,
                }),
            },
            response: Some(RecordedResponse {
                status: 201,
                headers: vec![header("content-type", "application/json")],
                body: RecordedBody {
                    text: r#"{"id":"goal-1","state":"<b>active</b>"}"#.to_string(),
                    bytes: 39,
                    truncated: false,
                },
            }),
        }
    }
}
