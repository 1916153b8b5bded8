//! Where the webhook client lets a bug in (the suite's kill matrix:
//! `crate::mutants`). Every hook's default is the faithful call, so the
//! client runs each one unconditionally.

use std::borrow::Cow;

use serde_json::Value;

use super::WebhookError;

/// How a call goes wrong: what is sent and how loosely the answer is read.
pub trait CallFaults: Send + Sync {
    /// The body actually sent.
    fn request_body<'a>(&self, body: &'a Value) -> Cow<'a, Value> {
        Cow::Borrowed(body)
    }

    /// The status the client acts on.
    fn status(&self, status: reqwest::StatusCode) -> reqwest::StatusCode {
        status
    }

    /// The answer as the client takes it: checked against `schema`
    /// ([`super::checked_answer`]).
    fn answer(&self, schema: &'static str, answer: Value) -> Result<Value, WebhookError> {
        super::checked_answer(schema, answer)
    }
}

/// The faithful client: every hook its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCallFaults;

impl CallFaults for NoCallFaults {}
