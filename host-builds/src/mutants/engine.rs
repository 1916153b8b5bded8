//! The engine's side of the mutants: what each hook in `engine/` does when
//! its mutant is on. With no mutant (or another one) every function here
//! hands its input back unchanged.

mod dispatch;
mod record;
mod reported;
mod requests;
mod transitions;

pub(crate) use dispatch::{
    deadline_sweep, dispatch_view, dispatched, due, iterations_serialised, queued_fire, verifier,
    worker,
};
pub(crate) use record::record;
pub(crate) use reported::{claimed_verdict, reported_mode};
pub(crate) use requests::{create_body, created, events, events_after, list_filter};
pub(crate) use transitions::{abandon, abandon_cancels, patch, patch_answer, resume, UPSERT_STATE};

use super::Mutant;
use goalpost_host::engine::EngineSettings;
use goalpost_host::webhook::WebhookSecret;

/// How long a webhook call may take under `webhook-no-timeout`: longer than
/// any answer the suite delays.
const NO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Settings a host's bug changes before the engine is built.
pub(crate) fn settings(mutant: Option<Mutant>, mut settings: EngineSettings) -> EngineSettings {
    match mutant {
        Some(Mutant::WrongWebhookSecret) => settings.webhook_secret = WebhookSecret::generate(),
        Some(Mutant::WebhookNoTimeout) => settings.webhook_timeout = NO_TIMEOUT,
        _ => {}
    }
    settings
}
