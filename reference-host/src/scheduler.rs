//! The scheduler: one step, [`Scheduler::tick`], that closes goals past
//! their deadline and fires due `schedule` goals. Tests call `tick` with a
//! manual clock; the host runs [`Scheduler::run`] every 100 ms. No task per
//! goal: a fire is a short task that exists only while its run does.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Mutex as AsyncMutex};
use tokio::task::JoinSet;

use crate::clock::Clock;
use crate::domain::{GoalId, Timestamp};
use crate::engine::{Engine, EngineError};

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tick {
    /// Goals closed as `bound-exceeded` because their deadline passed.
    pub closed: Vec<GoalId>,
    /// Goals whose fire was started (each fire re-checks under the goal's
    /// lock, so a started fire may still find nothing to do).
    pub fired: Vec<GoalId>,
}

pub struct Scheduler {
    engine: Arc<Engine>,
    fires: AsyncMutex<JoinSet<()>>,
    /// Goals with a fire under way, so a slow run is not fired again.
    firing: Arc<Mutex<HashSet<GoalId>>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

/// Removes a goal from the firing set however its fire task ends.
struct Firing {
    set: Arc<Mutex<HashSet<GoalId>>>,
    goal: GoalId,
}

impl Drop for Firing {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.goal);
    }
}

impl Scheduler {
    pub fn new(engine: Arc<Engine>) -> Scheduler {
        Scheduler {
            engine,
            fires: AsyncMutex::new(JoinSet::new()),
            firing: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// One step at `now`. Fires run in the background; [`Scheduler::settle`]
    /// waits for them.
    pub async fn tick(&self, now: Timestamp) -> Result<Tick, EngineError> {
        let mut tick = Tick::default();
        let mut fires = self.fires.lock().await;
        while fires.try_join_next().is_some() {}

        for id in self.engine.goals_past_deadline(now).await? {
            if self.engine.close_if_past_deadline(&id).await? {
                tick.closed.push(id);
            }
        }
        for id in self.engine.due_schedule_goals(now).await? {
            let newly_firing = self
                .firing
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.clone());
            if !newly_firing {
                continue;
            }
            let firing = Firing {
                set: Arc::clone(&self.firing),
                goal: id.clone(),
            };
            let engine = Arc::clone(&self.engine);
            fires.spawn(async move {
                if let Err(error) = engine.fire(&firing.goal).await {
                    tracing::warn!(goal = %firing.goal, %error, "scheduled fire failed");
                }
            });
            tick.fired.push(id);
        }
        Ok(tick)
    }

    /// Waits until every fire started so far has finished.
    pub async fn settle(&self) {
        let mut fires = self.fires.lock().await;
        while fires.join_next().await.is_some() {}
    }

    /// Ticks every `every` with `clock` until `shutdown` turns true, then
    /// waits up to `grace` for fires in flight (a run cut off here is
    /// recorded as an environmental failure at the next start).
    pub async fn run(
        self: Arc<Self>,
        clock: Arc<dyn Clock>,
        every: Duration,
        grace: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut interval = tokio::time::interval(every.max(Duration::from_millis(1)));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = interval.tick() => {
                    if let Err(error) = self.tick(clock.now()).await {
                        tracing::warn!(%error, "scheduler tick failed");
                    }
                }
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        break;
                    }
                }
            }
        }
        if tokio::time::timeout(grace, self.settle()).await.is_err() {
            self.fires.lock().await.abort_all();
        }
    }
}
