//! The one HTTP client of a run and the exchanges it records.
//!
//! The host under test is untrusted: every request has a connect deadline
//! and a total deadline that also covers reading the body (so a body that
//! trickles forever ends), redirects are never followed (a redirect is an
//! answer to check, not an instruction), and bodies are read chunk by chunk
//! up to a cap so a hostile host cannot exhaust memory.
//!
//! TLS is the suite's own, with or without the bundled host: rustls with the
//! `ring` crypto provider, trusting the system's roots (`SSL_CERT_FILE`
//! names another bundle, e.g. a private CA's). reqwest is built without a
//! provider of its own and reads rustls's process-wide default when a
//! client is built, so [`client_builder`] installs ring first; a program
//! embedding the suite that installed another provider keeps its choice.
//! docs/DESIGN.md, "Build", says why ring.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::Method;
use serde_json::Value;

use crate::error::RunError;

/// Bodies above this many bytes end the exchange with an error.
pub const DEFAULT_BODY_CAP: usize = 4 * 1024 * 1024;
/// Total time for one request, before `--timeout-scale`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to open a connection, before `--timeout-scale`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest body excerpt quoted in a message.
pub const EXCERPT_CHARS: usize = 500;

/// A reqwest client builder whose TLS runs on ring: the one way the suite
/// (and its tests) start an HTTP client.
pub fn client_builder() -> reqwest::ClientBuilder {
    // An error only says a provider is installed already: that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// A client with reqwest's defaults on [`client_builder`]'s TLS; panics,
/// as `reqwest::Client::new` does, when the TLS backend cannot start.
pub fn client() -> reqwest::Client {
    match client_builder().build() {
        Ok(client) => client,
        Err(error) => panic!("cannot build an HTTP client: {error}"),
    }
}

#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::Client,
    timeout: Duration,
    body_cap: usize,
}

/// A request ready to send: every template already rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<OutgoingBody>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingBody {
    pub bytes: Vec<u8>,
    pub content_type: String,
}

/// One request and the host's complete answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: String,
    pub url: String,
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    json: Result<Value, String>,
}

impl Exchange {
    pub fn new(method: &str, url: &str, status: u16, headers: HeaderMap, body: Vec<u8>) -> Self {
        let json = if body.is_empty() {
            Err("empty body".to_string())
        } else {
            serde_json::from_slice(&body).map_err(|error| error.to_string())
        };
        Exchange {
            method: method.to_string(),
            url: url.to_string(),
            status,
            headers,
            body,
            json,
        }
    }

    /// The body as JSON, or the error that says it is not.
    pub fn json(&self) -> Result<&Value, RunError> {
        self.json.as_ref().map_err(|reason| RunError::NotJson {
            method: self.method.clone(),
            url: self.url.clone(),
            status: self.status,
            reason: reason.clone(),
            excerpt: self.excerpt(),
        })
    }

    /// Every value of a header, joined the way HTTP allows (`, `); `None`
    /// when the header is missing or not text.
    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .get_all(name)
            .iter()
            .map(|value| value.to_str())
            .collect::<Result<_, _>>()
            .ok()?;
        if values.is_empty() {
            None
        } else {
            Some(values.join(", "))
        }
    }

    /// At most [`EXCERPT_CHARS`] characters of the body, for messages.
    pub fn excerpt(&self) -> String {
        excerpt(&self.body)
    }
}

pub fn excerpt(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty body)".to_string();
    }
    let text = String::from_utf8_lossy(body);
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        out.push('…');
    }
    out
}

impl Http {
    /// `timeout_scale` stretches the connect and per-request deadlines for
    /// slow hosts (and shrinks them for the suite's own hostile-host tests).
    pub fn new(timeout_scale: f64, body_cap: usize) -> Result<Http, String> {
        let client = client_builder()
            .connect_timeout(CONNECT_TIMEOUT.mul_f64(timeout_scale))
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Http {
            client,
            timeout: DEFAULT_REQUEST_TIMEOUT.mul_f64(timeout_scale),
            body_cap,
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Http {
        self.timeout = timeout;
        self
    }

    pub async fn send(&self, outgoing: &Outgoing) -> Result<Exchange, RunError> {
        let scenario_error = |message: String| RunError::Scenario(message);
        let method = Method::from_bytes(outgoing.method.as_bytes())
            .map_err(|_| scenario_error(format!("invalid method `{}`", outgoing.method)))?;
        let mut headers = HeaderMap::new();
        if let Some(body) = &outgoing.body {
            let value = HeaderValue::from_str(&body.content_type).map_err(|_| {
                scenario_error(format!("invalid content type `{}`", body.content_type))
            })?;
            headers.insert(CONTENT_TYPE, value);
        }
        for (name, value) in &outgoing.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| scenario_error(format!("invalid header name `{name}`")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| scenario_error(format!("invalid value for header `{name}`")))?;
            headers.insert(name, value);
        }
        // No per-request timeout on the reqwest side: the one below covers
        // the whole exchange, and a second timer per request was measurable
        // (`goalpost-bench --only overhead`).
        let mut builder = self.client.request(method, &outgoing.url).headers(headers);
        if let Some(body) = &outgoing.body {
            builder = builder.body(body.bytes.clone());
        }
        let (method, url) = (outgoing.method.clone(), outgoing.url.clone());
        let classify = |error: reqwest::Error| {
            // A connect timeout is both; it means nobody is there.
            if error.is_connect() {
                RunError::Connect {
                    method: method.clone(),
                    url: url.clone(),
                    message: error_chain(&error),
                }
            } else if error.is_timeout() {
                RunError::Timeout {
                    method: method.clone(),
                    url: url.clone(),
                    after: self.timeout,
                }
            } else {
                RunError::Transport {
                    method: method.clone(),
                    url: url.clone(),
                    message: error_chain(&error),
                }
            }
        };
        let exchange = async {
            let mut response = builder.send().await.map_err(classify)?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(classify)? {
                if body.len() + chunk.len() > self.body_cap {
                    return Err(RunError::BodyTooLarge {
                        method: method.clone(),
                        url: url.clone(),
                        cap: self.body_cap,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Exchange::new(&method, &url, status, headers, body))
        };
        // The one deadline of the exchange: no answer (headers, body, or
        // neither) holds a step past it.
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(RunError::Timeout {
                method,
                url,
                after: self.timeout,
            }),
        }
    }
}

impl Http {
    /// Sends `outgoing` and reads its answer as a stream of Server-Sent
    /// Events for `window` (or until the host ends it), then closes it. The
    /// exchange's body is the messages read, as JSON ([`sse_document`]); a
    /// host that never answers is a timeout like any request's. A stream is
    /// read for its window whatever it holds: the window, not the request
    /// deadline, bounds it.
    pub async fn read_stream(
        &self,
        outgoing: &Outgoing,
        window: Duration,
    ) -> Result<Exchange, RunError> {
        let (method, url) = (outgoing.method.clone(), outgoing.url.clone());
        let mut headers = HeaderMap::new();
        for (name, value) in &outgoing.headers {
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                return Err(RunError::Scenario(format!("invalid header `{name}`")));
            };
            headers.insert(name, value);
        }
        let method_value = Method::from_bytes(method.as_bytes())
            .map_err(|_| RunError::Scenario(format!("invalid method `{method}`")))?;
        let builder = self.client.request(method_value, &url).headers(headers);
        let transport = |error: reqwest::Error| RunError::Transport {
            method: method.clone(),
            url: url.clone(),
            message: error_chain(&error),
        };
        let mut response = match tokio::time::timeout(self.timeout, builder.send()).await {
            Ok(sent) => sent.map_err(transport)?,
            Err(_) => {
                return Err(RunError::Timeout {
                    method,
                    url,
                    after: self.timeout,
                })
            }
        };
        let status = response.status().as_u16();
        let answer_headers = response.headers().clone();
        let mut text = Vec::new();
        let mut ended = false;
        let until = tokio::time::Instant::now() + window;
        loop {
            match tokio::time::timeout_at(until, response.chunk()).await {
                Err(_) => break,
                Ok(Ok(Some(chunk))) => {
                    if text.len() + chunk.len() > self.body_cap {
                        return Err(RunError::BodyTooLarge {
                            method,
                            url,
                            cap: self.body_cap,
                        });
                    }
                    text.extend_from_slice(&chunk);
                }
                Ok(Ok(None)) => {
                    ended = true;
                    break;
                }
                Ok(Err(error)) => return Err(transport(error)),
            }
        }
        // An error answer keeps its own body (the envelope); a stream
        // becomes the document of its messages.
        let body = if (200..300).contains(&status) {
            serde_json::to_vec(&sse_document(&String::from_utf8_lossy(&text), ended))
                .unwrap_or_default()
        } else {
            text
        };
        Ok(Exchange::new(&method, &url, status, answer_headers, body))
    }
}

/// The Server-Sent Events in `text` (the WHATWG HTML event-stream format:
/// `field: value` lines, a blank line ends a message, `:` starts a comment)
/// as `{messages: [{id, event, data}], ended}`: `id` and `event` `null`
/// when a message has none, `data` parsed as JSON when it is JSON (else its
/// text). A message the stream was cut in the middle of is left out.
pub fn sse_document(text: &str, ended: bool) -> serde_json::Value {
    let mut messages = Vec::new();
    let (mut id, mut event, mut data): (Option<String>, Option<String>, Vec<String>) =
        (None, None, Vec::new());
    let mut seen = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if seen {
                let joined = data.join("\n");
                let data =
                    serde_json::from_str(&joined).unwrap_or(serde_json::Value::String(joined));
                messages.push(serde_json::json!({ "id": id, "event": event, "data": data }));
            }
            (id, event, data, seen) = (None, None, Vec::new(), false);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_string();
        match field {
            "id" => id = Some(value),
            "event" => event = Some(value),
            "data" => data.push(value),
            _ => continue,
        }
        seen = true;
    }
    serde_json::json!({ "messages": messages, "ended": ended })
}

/// reqwest's top-level message ("error sending request for url (...)")
/// repeats the URL; the causes ("Connection refused") are what a person
/// needs.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut causes = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    if causes.is_empty() {
        error.to_string()
    } else {
        causes.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_capped() {
        let long = "x".repeat(EXCERPT_CHARS + 10);
        let cut = excerpt(long.as_bytes());
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt(b"short"), "short");
        assert_eq!(excerpt(b""), "(empty body)");
    }

    #[test]
    fn json_errors_say_why() {
        let exchange = Exchange::new(
            "GET",
            "http://h/x",
            200,
            HeaderMap::new(),
            b"<html>".to_vec(),
        );
        let error = exchange.json().unwrap_err();
        assert!(
            matches!(error, RunError::NotJson { status: 200, .. }),
            "{error:?}"
        );
        let empty = Exchange::new("GET", "http://h/x", 204, HeaderMap::new(), Vec::new());
        assert!(empty.json().unwrap_err().to_string().contains("empty body"));
    }

    #[test]
    fn event_streams_read_as_their_messages() {
        let text = ": hello\n\nid: 7\nevent: goal.closed\ndata: {\"a\":1}\n\n\
                    data: two\r\ndata: lines\r\n\r\nid: 9\ndata: cut";
        let document = sse_document(text, false);
        assert_eq!(
            document,
            serde_json::json!({ "ended": false, "messages": [
                { "id": "7", "event": "goal.closed", "data": { "a": 1 } },
                { "id": null, "event": null, "data": "two\nlines" },
            ] })
        );
        assert_eq!(sse_document("", true)["messages"], serde_json::json!([]));
    }

    #[test]
    fn repeated_headers_are_joined() {
        let mut headers = HeaderMap::new();
        headers.append("x-a", HeaderValue::from_static("1"));
        headers.append("x-a", HeaderValue::from_static("2"));
        let exchange = Exchange::new("GET", "http://h/x", 200, headers, Vec::new());
        assert_eq!(exchange.header("X-A").as_deref(), Some("1, 2"));
        assert_eq!(exchange.header("x-b"), None);
    }
}
