//! The worker of a goal without an `armRef`: does nothing, costs nothing.

use serde_json::Value;

use super::{RunError, RunReport, RunRequest, Worker};
use crate::domain::MicroUsd;
use crate::future::BoxFuture;

#[derive(Debug, Clone, Copy, Default)]
pub struct NoopWorker;

impl Worker for NoopWorker {
    fn run(&self, _request: RunRequest) -> BoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(async {
            Ok(RunReport {
                output: Value::String(String::new()),
                cost: MicroUsd::ZERO,
                escalation: None,
                commitment_ms: None,
            })
        })
    }
}
