//! The one way the host calls out over HTTP (DESIGN "Webhooks"): a JSON
//! `POST` signed for the goal's tenant, only to addresses the egress policy
//! allows, over TLS when the ref is `https` (roots: `roots.rs`), one
//! timeout for the whole exchange, no retries, no redirects, no proxy from
//! the environment, the answer read with a size cap and
//! validated against its schema. Any failure is a [`WebhookError`], which
//! the arms and judges turn into an environmental failure of the iteration.

mod faults;
mod resolver;
mod roots;
pub mod signature;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use goalpost_schemas::Schemas;
use serde_json::Value;

use crate::domain::egress::EgressDenied;
use crate::domain::{GoalId, Tenant};

pub use faults::{CallFaults, NoCallFaults};
pub use resolver::SharedEgress;
pub use roots::WebhookCa;
pub use signature::{GOAL_HEADER, SIGNATURE_HEADER, TENANT_HEADER};
/// Answers longer than this are refused.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The default limit on one call, connect to last byte.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The secret sent with every call. Printed as `"***"`.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Arc<str>);

impl WebhookSecret {
    /// A secret from configuration: non-empty visible ASCII (it travels as
    /// a header value).
    pub fn new(text: &str) -> Option<WebhookSecret> {
        let valid = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_graphic());
        valid.then(|| WebhookSecret(Arc::from(text)))
    }

    /// A fresh random secret, for a host started without one.
    pub fn generate() -> WebhookSecret {
        WebhookSecret(Arc::from(uuid::Uuid::new_v4().simple().to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// The keys calls are signed with: the tenant's own when the operator gave
/// one, else derived from the host's master secret
/// ([`signature::tenant_secret`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signing {
    master: WebhookSecret,
    tenants: HashMap<String, WebhookSecret>,
}

impl Signing {
    pub fn new(master: WebhookSecret) -> Signing {
        Signing {
            master,
            tenants: HashMap::new(),
        }
    }

    /// Signs `tenant`'s calls with `key` instead of the derived one.
    pub fn with_tenant(mut self, tenant: &str, key: WebhookSecret) -> Signing {
        self.tenants.insert(tenant.to_string(), key);
        self
    }

    pub fn key_for(&self, tenant: &str) -> WebhookSecret {
        self.tenants
            .get(tenant)
            .cloned()
            .unwrap_or_else(|| signature::tenant_secret(&self.master, tenant))
    }
}

/// Who a call is made for: its signature and headers name them.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub tenant: &'a str,
    pub goal: &'a str,
}

/// A tenant's webhook, an arm's or a verifier's: every call on it is made
/// for its owner, about one of the owner's goals.
#[derive(Debug)]
pub struct Endpoint {
    client: Arc<WebhookClient>,
    url: String,
    owner: Tenant,
}

impl Endpoint {
    pub fn new(client: Arc<WebhookClient>, url: String, owner: Tenant) -> Endpoint {
        Endpoint { client, url, owner }
    }

    /// [`WebhookClient::call`] of this URL about `goal`.
    pub async fn call(
        &self,
        goal: &GoalId,
        body: &Value,
        answer_schema: &'static str,
    ) -> Result<Value, WebhookError> {
        let caller = Caller {
            tenant: self.owner.as_str(),
            goal: goal.as_str(),
        };
        self.client
            .call(&self.url, body, answer_schema, caller)
            .await
    }
}

/// Why a call produced no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("the webhook client is unavailable: {0}")]
    Unavailable(String),
    /// The URL, or every address its name resolves to, is one the egress
    /// policy denies: nothing was sent.
    #[error("not called: {0}")]
    Denied(String),
    #[error("the call failed: {0}")]
    Transport(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the receiver answered HTTP {0}")]
    Status(u16),
    #[error("the answer is larger than {MAX_ANSWER_BYTES} bytes")]
    TooLarge,
    #[error("the answer is not JSON: {0}")]
    NotJson(String),
    /// Names where the answer is wrong, never what it holds there: an arm
    /// may echo the objective, and this message is logged.
    #[error("the answer does not match `{schema}` at {pointers}")]
    Invalid {
        schema: &'static str,
        pointers: String,
    },
}

/// The compiled schemas, shared by every client in the process.
fn schemas() -> Result<&'static Schemas, WebhookError> {
    static SCHEMAS: OnceLock<Result<Schemas, String>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| Schemas::embedded().map_err(|error| error.to_string()))
        .as_ref()
        .map_err(|error| WebhookError::Unavailable(format!("schemas: {error}")))
}

/// An answer as the client takes it: valid against `schema` (openwop's
/// answer schemas, compiled once), else refused, naming where it is not.
pub fn checked_answer(schema: &'static str, answer: Value) -> Result<Value, WebhookError> {
    let schemas = schemas()?;
    schemas.validate(schema, &answer).map_err(|violations| {
        let mut pointers: Vec<&str> = violations
            .iter()
            .map(|violation| match violation.pointer.as_str() {
                "" => "(root)",
                pointer => pointer,
            })
            .collect();
        pointers.dedup();
        pointers.truncate(5);
        WebhookError::Invalid {
            schema,
            pointers: pointers.join(", "),
        }
    })?;
    Ok(answer)
}

pub struct WebhookClient {
    http: Result<reqwest::Client, String>,
    /// `None`: calls are not signed (a choice a conforming host may make).
    signing: Option<Signing>,
    egress: SharedEgress,
    timeout: Duration,
    faults: Arc<dyn CallFaults>,
}

impl fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookClient")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WebhookClient {
    /// A client that signs every call with `signing`'s key for the caller's
    /// tenant (when there is one) and connects only where `egress` allows;
    /// `https` servers must chain to the system's roots.
    pub fn new(signing: Option<Signing>, egress: SharedEgress, timeout: Duration) -> WebhookClient {
        WebhookClient::with_ca(signing, egress, timeout, &WebhookCa::none())
    }

    /// [`WebhookClient::new`], also trusting the authorities of `ca`.
    pub fn with_ca(
        signing: Option<Signing>,
        egress: SharedEgress,
        timeout: Duration,
        ca: &WebhookCa,
    ) -> WebhookClient {
        // A proxy from the environment would connect on the host's behalf to
        // addresses the resolver never sees. `https` connects through the
        // same resolver, so TLS changes nothing of where a call may go.
        let http = ca.certificates().and_then(|certificates| {
            certificates
                .into_iter()
                .fold(crate::tls::client_builder(), |builder, certificate| {
                    builder.add_root_certificate(certificate)
                })
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .dns_resolver(Arc::new(resolver::EgressResolver {
                    egress: egress.clone(),
                }))
                .build()
                .map_err(|error| error.to_string())
        });
        if let Err(error) = &http {
            tracing::error!(%error, "cannot build the webhook client: every webhook call will fail");
        }
        WebhookClient {
            http,
            signing,
            egress,
            timeout,
            faults: Arc::new(NoCallFaults),
        }
    }

    /// The client of a host that gets its calls wrong (the kill matrix).
    #[must_use]
    pub fn with_faults(mut self, faults: Arc<dyn CallFaults>) -> WebhookClient {
        self.faults = faults;
        self
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn egress(&self) -> &SharedEgress {
        &self.egress
    }

    /// POSTs `body` to `url`, signed for `caller`'s tenant, and returns the
    /// answer if it is a 2xx JSON document valid against `answer_schema`.
    pub async fn call(
        &self,
        url: &str,
        body: &Value,
        answer_schema: &'static str,
        caller: Caller<'_>,
    ) -> Result<Value, WebhookError> {
        let http = self
            .http
            .as_ref()
            .map_err(|error| WebhookError::Unavailable(error.clone()))?;
        let body = self.faults.request_body(body);
        let bytes = serde_json::to_vec(&*body)
            .map_err(|error| WebhookError::Unavailable(format!("body: {error}")))?;
        let request = self.signed(http, url, bytes, caller)?;
        let exchange = async {
            let mut response = request.send().await.map_err(|error| failure(&error))?;
            let status = self.faults.status(response.status());
            if !status.is_success() {
                return Err(WebhookError::Status(status.as_u16()));
            }
            if response
                .content_length()
                .is_some_and(|length| length > MAX_ANSWER_BYTES as u64)
            {
                return Err(WebhookError::TooLarge);
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| WebhookError::Transport(crate::tls::describe(&error)))?
            {
                if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(WebhookError::TooLarge);
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(bytes)
        };
        let bytes = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| WebhookError::Timeout(self.timeout))??;
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|error| WebhookError::NotJson(error.to_string()))?;
        self.faults.answer(answer_schema, answer)
    }
}

impl WebhookClient {
    /// A JSON `POST` of `bytes` to `url` with the caller's headers and,
    /// when calls are signed, the signature over `bytes` under the
    /// tenant's key: the one way every call is made. An IP literal the
    /// egress policy denies is refused here (names are judged by the
    /// resolver when they resolve).
    fn signed(
        &self,
        http: &reqwest::Client,
        url: &str,
        bytes: Vec<u8>,
        caller: Caller<'_>,
    ) -> Result<reqwest::RequestBuilder, WebhookError> {
        let parsed =
            url::Url::parse(url).map_err(|error| WebhookError::Transport(error.to_string()))?;
        // The resolver never sees an IP literal: judge it here.
        if let (Some(host), Some(port)) = (parsed.host(), parsed.port_or_known_default()) {
            self.egress
                .policy()
                .check_host(&host, port)
                .map_err(|denied| WebhookError::Denied(denied.to_string()))?;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
            });
        let mut request = http
            .post(parsed)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(TENANT_HEADER, caller.tenant)
            .header(GOAL_HEADER, caller.goal);
        if let Some(signing) = &self.signing {
            let key = signing.key_for(caller.tenant);
            request = request.header(SIGNATURE_HEADER, signature::sign(&key, now, &bytes));
        }
        Ok(request.body(bytes))
    }

    /// POSTs the JSON `bytes` to `url` as [`WebhookClient::call`] does
    /// (signed for `caller`'s tenant, egress-checked, no redirects), with
    /// `headers` besides, within `timeout`, and returns the answer's
    /// status without reading its body: a notification (an event webhook)
    /// only needs to know whether the receiver took it.
    pub async fn notify(
        &self,
        url: &str,
        bytes: Vec<u8>,
        headers: &[(&'static str, String)],
        caller: Caller<'_>,
        timeout: Duration,
    ) -> Result<u16, WebhookError> {
        let http = self
            .http
            .as_ref()
            .map_err(|error| WebhookError::Unavailable(error.clone()))?;
        let mut request = self.signed(http, url, bytes, caller)?;
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let response = tokio::time::timeout(timeout, request.send())
            .await
            .map_err(|_| WebhookError::Timeout(timeout))?
            .map_err(|error| failure(&error))?;
        Ok(response.status().as_u16())
    }
}

/// A failed send: denied by the resolver, or a transport error.
fn failure(error: &reqwest::Error) -> WebhookError {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(denied) = cause.downcast_ref::<EgressDenied>() {
            return WebhookError::Denied(denied.to_string());
        }
        source = cause.source();
    }
    WebhookError::Transport(crate::tls::describe(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_header_safe_and_never_printed() {
        assert!(WebhookSecret::new("s3cret-value").is_some());
        assert!(WebhookSecret::new("").is_none());
        assert!(WebhookSecret::new("has space").is_none());
        assert!(WebhookSecret::new("line\nbreak").is_none());
        let secret = WebhookSecret::generate();
        assert_eq!(secret.expose().len(), 32);
        assert_ne!(secret, WebhookSecret::generate());
        assert_eq!(format!("{secret:?}"), "\"***\"");
    }

    #[tokio::test]
    async fn an_unreachable_receiver_is_a_transport_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let egress = SharedEgress::new(crate::domain::egress::EgressPolicy::new(vec![
            crate::domain::egress::AllowEntry::parse(&addr.to_string()).expect("entry"),
        ]));
        let client = WebhookClient::new(
            Some(Signing::new(WebhookSecret::generate())),
            egress,
            Duration::from_secs(2),
        );
        let error = client
            .call(
                &format!("http://{addr}/"),
                &Value::Null,
                "webhook-heartbeat-response",
                Caller {
                    tenant: "acme",
                    goal: "g",
                },
            )
            .await
            .expect_err("nobody listens");
        assert!(matches!(error, WebhookError::Transport(_)), "{error}");
    }
}
