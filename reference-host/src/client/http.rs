//! The client's one HTTP connection to a host: JSON in and out, bearer
//! token, timeouts, no redirects, capped bodies, and the host's error
//! envelope turned into an error the operator can read.

use std::fmt;
use std::time::Duration;

use reqwest::{Method, Url};
use serde_json::Value;

/// Connecting gives up after this.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Answers above this are refused rather than read into memory.
pub const BODY_CAP: usize = 8 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing usable came back: connection refused, timeout, reset.
    #[error("cannot reach {url}: {message}")]
    Transport { url: String, message: String },
    /// The host refused; `body` is its error envelope when it sent one.
    #[error("{}", Refusal { status: *.status, code, message })]
    Refused {
        status: u16,
        code: String,
        message: String,
        body: Option<Value>,
    },
    /// A success whose body is not JSON, or too large.
    #[error("{url} answered HTTP {status} with {reason}")]
    BadAnswer {
        url: String,
        status: u16,
        reason: String,
    },
}

struct Refusal<'a> {
    status: u16,
    code: &'a str,
    message: &'a str,
}

impl fmt::Display for Refusal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (HTTP {})",
            self.code,
            printable(self.message),
            self.status
        )
    }
}

/// A host's text with control characters escaped, so a hostile answer
/// cannot drive the operator's terminal.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// An answer: status and JSON body (`None` when the body was empty).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Option<Value>,
    /// Where its `Link: <…>; rel="next"` points (RFC 8288), as an absolute
    /// URL, when that is on the same host: the bearer token is never sent
    /// anywhere else.
    pub next: Option<String>,
}

/// The target of the `rel="next"` link among `header`'s links, resolved
/// against `url`.
fn next_link(url: &Url, header: &str) -> Option<Url> {
    header.split(',').find_map(|link| {
        let (target, params) = link.trim().split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let is_next = params.split(';').any(|param| {
            let Some((name, value)) = param.split_once('=') else {
                return false;
            };
            name.trim().eq_ignore_ascii_case("rel")
                && value
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|rel| rel.eq_ignore_ascii_case("next"))
        });
        is_next.then(|| url.join(target).ok()).flatten()
    })
}

#[derive(Debug, Clone)]
pub struct HostClient {
    http: reqwest::Client,
    base: Url,
    token: Option<String>,
}

/// A base URL the client can use: absolute `http`, no query or fragment.
pub fn parse_base_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|error| format!("{text:?} is not a URL: {error}"))?;
    match url.scheme() {
        "http" => {}
        "https" => {
            return Err(
                "this build speaks plain http only; reach an https host through a local proxy"
                    .into(),
            )
        }
        other => return Err(format!("{text:?}: unsupported scheme {other:?}")),
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("{text:?}: a host URL has no query or fragment"));
    }
    Ok(url)
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved).
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

impl HostClient {
    pub fn new(base: Url, token: Option<String>, timeout: Duration) -> Result<HostClient, String> {
        let http = crate::tls::client_builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        Ok(HostClient { http, base, token })
    }

    /// `path` (absolute, already encoded) on the host.
    pub fn url(&self, path: &str) -> String {
        let base = self.base.as_str().trim_end_matches('/');
        format!("{base}{path}")
    }

    /// Any status; `Transport`/`BadAnswer` only when there is no answer to
    /// look at.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        authenticated: bool,
    ) -> Result<Answer, ClientError> {
        self.send_to(method, self.url(path), body, authenticated)
            .await
    }

    /// [`HostClient::send`] to an absolute URL.
    async fn send_to(
        &self,
        method: Method,
        url: String,
        body: Option<&Value>,
        authenticated: bool,
    ) -> Result<Answer, ClientError> {
        let mut request = self.http.request(method, &url);
        if authenticated {
            if let Some(token) = &self.token {
                request = request.bearer_auth(token);
            }
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let mut response = request
            .send()
            .await
            .map_err(|error| transport(&url, &error))?;
        let status = response.status().as_u16();
        let next = response
            .headers()
            .get_all(reqwest::header::LINK)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find_map(|value| next_link(response.url(), value))
            .filter(|next| next.origin() == self.base.origin())
            .map(String::from);
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| transport(&url, &error))?
        {
            if bytes.len() + chunk.len() > BODY_CAP {
                return Err(ClientError::BadAnswer {
                    url,
                    status,
                    reason: format!("a body over {BODY_CAP} bytes"),
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        let body = if bytes.is_empty() {
            None
        } else {
            match serde_json::from_slice(&bytes) {
                Ok(value) => Some(value),
                Err(_) if !(200..300).contains(&status) => None,
                Err(error) => {
                    return Err(ClientError::BadAnswer {
                        url,
                        status,
                        reason: format!("a body that is not JSON ({error})"),
                    })
                }
            }
        };
        Ok(Answer { status, body, next })
    }

    /// One page of a list: the 2xx JSON answer of `url` (absolute) and
    /// where the next page is.
    pub async fn page(&self, url: String) -> Result<(Value, Option<String>), ClientError> {
        let answer = self.send_to(Method::GET, url.clone(), None, true).await?;
        if !(200..300).contains(&answer.status) {
            return Err(refused(answer));
        }
        let next = answer.next.clone();
        let body = answer.body.ok_or(ClientError::BadAnswer {
            url,
            status: answer.status,
            reason: "an empty body".into(),
        })?;
        Ok((body, next))
    }

    /// A 2xx JSON answer, or the host's refusal as an error.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ClientError> {
        let url = self.url(path);
        let answer = self.send(method, path, body, true).await?;
        if !(200..300).contains(&answer.status) {
            return Err(refused(answer));
        }
        answer.body.ok_or(ClientError::BadAnswer {
            url,
            status: answer.status,
            reason: "an empty body".into(),
        })
    }

    pub async fn get(&self, path: &str) -> Result<Value, ClientError> {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Option<&Value>) -> Result<Value, ClientError> {
        self.call(Method::POST, path, body).await
    }
}

impl HostClient {
    /// Opens `path` as a Server-Sent Events stream, resuming after
    /// `last_event_id` when given. The stream has no overall deadline (it
    /// is meant to stay open); a read that waits longer than `idle` (no
    /// event, no heartbeat) fails it.
    pub async fn open_stream(
        &self,
        path: &str,
        last_event_id: Option<&str>,
        idle: Duration,
    ) -> Result<reqwest::Response, ClientError> {
        let url = self.url(path);
        let http = crate::tls::client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(idle)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| ClientError::Transport {
                url: url.clone(),
                message: format!("cannot build the HTTP client: {error}"),
            })?;
        let mut request = http
            .get(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request
            .send()
            .await
            .map_err(|error| transport(&url, &error))?;
        if response.status().is_success() {
            return Ok(response);
        }
        // A refusal: read its envelope like any other answer.
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|error| transport(&url, &error))?;
        let body = serde_json::from_slice(&bytes).ok();
        Err(refused(Answer {
            status,
            body,
            next: None,
        }))
    }
}

fn transport(url: &str, error: &reqwest::Error) -> ClientError {
    ClientError::Transport {
        url: url.to_string(),
        message: crate::tls::describe(error),
    }
}

/// A refusal, read from the envelope when there is one.
fn refused(answer: Answer) -> ClientError {
    let text = |key: &str| {
        answer
            .body
            .as_ref()
            .and_then(|body| body.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let code = text("error").unwrap_or_else(|| format!("http_{}", answer.status));
    let message = text("message").unwrap_or_else(|| "the host sent no error envelope".into());
    ClientError::Refused {
        status: answer.status,
        code,
        message,
        body: answer.body,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn base_urls() {
        assert!(parse_base_url("http://127.0.0.1:8080").is_ok());
        assert!(parse_base_url("http://h/prefix/").is_ok());
        assert!(parse_base_url("https://h")
            .unwrap_err()
            .contains("plain http"));
        assert!(parse_base_url("ftp://h").is_err());
        assert!(parse_base_url("h:8080x").is_err());
        assert!(parse_base_url("http://h/?q=1").is_err());
    }

    #[test]
    fn urls_join_without_double_slashes() {
        let client = HostClient::new(
            parse_base_url("http://h:1/prefix/").expect("url"),
            None,
            Duration::from_secs(1),
        )
        .expect("client");
        assert_eq!(client.url("/x"), "http://h:1/prefix/x");
    }

    #[test]
    fn segments_are_encoded() {
        assert_eq!(segment("goal-1_a.b~"), "goal-1_a.b~");
        assert_eq!(segment("../x y"), "..%2Fx%20y");
        assert_eq!(segment("é"), "%C3%A9");
    }

    #[test]
    fn refusals_read_the_envelope() {
        let error = refused(Answer {
            next: None,
            status: 422,
            body: Some(json!({ "error": "bounds_required", "message": "add bounds" })),
        });
        assert_eq!(error.to_string(), "bounds_required: add bounds (HTTP 422)");
        let bare = refused(Answer {
            next: None,
            status: 502,
            body: None,
        });
        assert_eq!(
            bare.to_string(),
            "http_502: the host sent no error envelope (HTTP 502)"
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\\n");
        assert_eq!(printable("plain – text"), "plain – text");
    }
}
