//! The use cases: what `http` and the scheduler ask for. The engine owns the
//! iteration procedure (DESIGN "Engine") and every goal's lock.

mod error;
mod goals;
mod iteration;
mod locks;
mod precondition;

use std::sync::Arc;
use std::time::Duration;

use crate::arms::Arms;
use crate::clock::Clock;
use crate::domain::{Evaluation, Goal, RequestContext};
use crate::judge::Judges;
use crate::storage::{Store, StoreError};

pub use error::EngineError;
pub use iteration::FireOutcome;
pub use locks::GoalLocks;
pub use precondition::IfMatch;

/// Tunables of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineSettings {
    /// The conformance seams are on: `conformance:` fixture refs are
    /// accepted (and `http` serves the seam routes).
    pub conformance_seams: bool,
    /// A run still going after this long fails environmentally.
    pub run_limit: Duration,
    /// A judge still deciding after this long fails environmentally.
    pub judge_limit: Duration,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings {
            conformance_seams: false,
            run_limit: Duration::from_secs(20),
            judge_limit: Duration::from_secs(10),
        }
    }
}

/// The answer of `continue`: the goal after the iteration and its
/// evaluation (`None` when the run escalated).
#[derive(Debug, Clone, PartialEq)]
pub struct ContinueOutcome {
    pub goal: Goal,
    pub evaluation: Option<Evaluation>,
}

pub struct Engine {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    arms: Arms,
    judges: Judges,
    locks: GoalLocks,
    settings: EngineSettings,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Engine {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, settings: EngineSettings) -> Engine {
        Engine {
            store,
            clock,
            arms: Arms::new(),
            judges: Judges::new(),
            locks: GoalLocks::default(),
            settings,
        }
    }

    pub fn settings(&self) -> EngineSettings {
        self.settings
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    fn request_context(&self) -> RequestContext {
        RequestContext {
            fixtures_enabled: self.settings.conformance_seams,
        }
    }

    /// Runs a storage call off the async workers (SQLite is synchronous).
    async fn db<T, F>(&self, call: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || call(store.as_ref()))
            .await
            .map_err(|error| EngineError::Internal(format!("storage task failed: {error}")))?
            .map_err(EngineError::from)
    }
}
