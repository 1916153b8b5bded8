//! A binding's arm (the attention extension): one POST of the binding's
//! typed projection per run, answered per `attention-arm-response`.

use std::sync::Arc;

use serde_json::Value;

use super::{Arms, RunError, MAX_ARM_REQUEST_BYTES};
use crate::domain::{ArmRef, ArmSpec, GoalId, Tenant};
use crate::webhook::{Caller, WebhookClient};

/// Where one binding's runs go.
#[derive(Debug)]
pub struct BindingArm {
    client: Arc<WebhookClient>,
    url: String,
    owner: Tenant,
}

impl Arms {
    /// The arm of a binding: its URL, called on behalf of the goal's
    /// tenant. `None` for a ref that is not a URL (bindings take none).
    pub fn binding_arm(&self, arm: &ArmRef, owner: &Tenant) -> Option<BindingArm> {
        match arm.spec() {
            ArmSpec::Webhook(webhook) => Some(BindingArm {
                client: Arc::clone(&self.webhooks),
                url: webhook.url().to_string(),
                owner: owner.clone(),
            }),
            ArmSpec::Fixture(_) => None,
        }
    }
}

impl BindingArm {
    /// Sends `projection` and returns the answer, valid against its schema.
    pub async fn call(&self, goal: &GoalId, projection: &Value) -> Result<Value, RunError> {
        let size = serde_json::to_vec(projection).map_or(usize::MAX, |bytes| bytes.len());
        if size > MAX_ARM_REQUEST_BYTES {
            return Err(RunError(format!(
                "the projection would be {size} bytes, over {MAX_ARM_REQUEST_BYTES}"
            )));
        }
        self.client
            .call(
                &self.url,
                projection,
                "attention-arm-response",
                Caller {
                    tenant: self.owner.as_str(),
                    goal: goal.as_str(),
                },
            )
            .await
            .map_err(|error| RunError(error.to_string()))
    }
}
