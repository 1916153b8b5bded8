//! The attention extension's use cases (PROFILE.md "Profile `attention`"):
//! bindings and their transitions, the completion policy, evidence,
//! confirmations, requests to close, and each binding's runs. Every change
//! is one versioned write of the goal (its attention lives in its record),
//! so attention and the goal's own bookkeeping never disagree.

mod faults;
mod index;
mod run;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::goals::MAX_ATTEMPTS;
use super::{Engine, EngineError};
use crate::choices::{AttentionOffer, PauseWake};
use crate::domain::attention::{
    self, AttentionError, AttentionMode, AttentionState, Authority, Binding, BindingStatus,
    StatusChange,
};
use crate::domain::request::{parse_binding, parse_policy, parse_supersede, PolicyBody};
use crate::domain::transition::Change;
use crate::domain::{
    ArmRef, ArmSpec, BindingId, EvidenceId, Goal, GoalId, RequestError, Tenant, Timestamp,
};
use crate::storage::Written;

pub use faults::{AttentionFaults, NoAttentionFaults};
pub use run::BindingOutcome;

use index::DueIndex;

/// The attention runtime one engine keeps: the bug it runs with, if any,
/// when each goal's attention is next due, and which bindings are running.
pub struct AttentionRuntime {
    faults: Arc<dyn AttentionFaults>,
    due: DueIndex,
    firing: Mutex<HashSet<BindingId>>,
}

impl AttentionRuntime {
    pub fn new(faults: Arc<dyn AttentionFaults>) -> AttentionRuntime {
        AttentionRuntime {
            faults,
            due: DueIndex::default(),
            firing: Mutex::new(HashSet::new()),
        }
    }
}

/// Removes a binding from the running set however its run ends.
struct Firing<'a> {
    set: &'a Mutex<HashSet<BindingId>>,
    binding: BindingId,
}

impl Drop for Firing<'_> {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.binding);
    }
}

/// Which bindings the tenant-wide list shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BindingFilter {
    pub goal: Option<GoalId>,
    pub mode: Option<attention::AttentionMode>,
    /// A status as read now (`active`, `paused`, `superseded`, `stopped`).
    pub status: Option<String>,
}

/// The statuses the tenant-wide list may filter on.
pub const BINDING_STATUSES: [&str; 4] = ["active", "paused", "superseded", "stopped"];

fn lift(error: AttentionError) -> EngineError {
    match error {
        AttentionError::Terminal => EngineError::Terminal,
        AttentionError::Escalated => EngineError::Escalated,
        AttentionError::GoalPaused => EngineError::Paused,
        AttentionError::Invalid { pointer, message } => {
            EngineError::Request(RequestError::Invalid { pointer, message })
        }
        other => EngineError::Attention(other),
    }
}

impl Engine {
    /// Whether this host serves the attention extension: offered, on a
    /// store that can serve it.
    pub fn attention_served(&self) -> bool {
        self.store.serves_attention()
            && !matches!(self.choices().attention_extension, AttentionOffer::Off)
    }

    /// How timed pauses wake on this host.
    pub fn pause_wake(&self) -> PauseWake {
        match self.choices().attention_extension {
            AttentionOffer::On { wake, .. } => wake,
            AttentionOffer::Off => PauseWake::Tick,
        }
    }

    /// The completion policies this host offers, in discovery's order.
    pub fn attention_policies(&self) -> Vec<&'static str> {
        let mut offered = attention::REQUIRED_POLICIES.to_vec();
        if matches!(
            self.choices().attention_extension,
            AttentionOffer::On {
                supervisor: true,
                ..
            }
        ) {
            offered.push("supervisor");
        }
        offered
    }

    pub fn attention_faults(&self) -> &Arc<dyn AttentionFaults> {
        &self.attention.faults
    }

    fn served(&self) -> Result<(), EngineError> {
        if self.attention_served() {
            Ok(())
        } else {
            Err(EngineError::AttentionNotServed)
        }
    }

    /// The caller's goal and its attention (a new, empty record for a goal
    /// nobody attends yet: it reads `verifier`, no binding).
    pub async fn attention_of(
        &self,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<(Goal, AttentionState), EngineError> {
        self.served()?;
        let goal = self.attended_goal(tenant, id).await?;
        let state = goal
            .notes
            .attention
            .as_deref()
            .cloned()
            .unwrap_or_else(|| AttentionState::new(&goal));
        Ok((goal, state))
    }

    /// The goal's attention events (content-free), oldest first: stored
    /// with its RFC 0097 events, listed apart from them.
    pub async fn attention_events(
        &self,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<Vec<crate::domain::Event>, EngineError> {
        self.served()?;
        self.attended_goal(tenant, id).await?;
        let id = id.clone();
        let mut events = self.db(move |store| store.events(&id, 0)).await?;
        events.retain(|event| !event.payload.is_rfc_0097());
        Ok(events)
    }

    /// Approving verdicts on `revision`, as this host counts them.
    pub fn approvals(&self, state: &AttentionState, revision: u64) -> usize {
        self.attention.faults.approvals(state, revision)
    }

    /// The policy's answer to a request to close at `revision`.
    pub fn decide_closure(
        &self,
        state: &AttentionState,
        revision: u64,
    ) -> Result<(), Vec<attention::Missing>> {
        let faithful = attention::closure(state, revision, self.approvals(state, revision));
        self.attention.faults.closure(state, faithful)
    }

    /// The caller's goal (another tenant's is not found).
    async fn attended_goal(&self, tenant: &Tenant, id: &GoalId) -> Result<Goal, EngineError> {
        self.load(id)
            .await?
            .filter(|goal| self.attention.faults.visible_to(goal, tenant))
            .ok_or(EngineError::NotFound)
    }

    /// Read, decide, write if unchanged (retried when the goal moved); the
    /// due index and the scheduler learn of the write.
    async fn attention_write<T>(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        decide: impl Fn(&Goal, Timestamp) -> Result<(Option<Change>, T), EngineError>,
    ) -> Result<(Goal, T), EngineError> {
        self.served()?;
        for _ in 0..MAX_ATTEMPTS {
            let goal = self.attended_goal(tenant, id).await?;
            let now = self.clock.now();
            let (change, answer) = decide(&goal, now)?;
            let Some(change) = change else {
                return Ok((goal, answer));
            };
            if let Written::Done(_) = self.write(change.clone(), goal.version, now).await? {
                return Ok((change.goal, answer));
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing under an attention write"
        )))
    }

    fn check_binding_arm(&self, arm: &ArmRef) -> Result<(), EngineError> {
        let ArmSpec::Webhook(webhook) = arm.spec() else {
            return Ok(());
        };
        let policy = self.egress.policy();
        super::egress::check(self.faults.as_ref(), &policy, webhook, "/armRef")
            .map_err(EngineError::Request)
    }

    /// `POST {base}/{id}/attention/bindings`.
    pub async fn create_binding(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        body: &Value,
    ) -> Result<(Goal, BindingId), EngineError> {
        self.served()?;
        let new = parse_binding(body, self.settings.conformance_seams);
        let holder = |state: &AttentionState, mode: AttentionMode| {
            self.attention.faults.mode_holder(state, mode)
        };
        let (goal, created) = self
            .attention_write(tenant, id, |goal, now| {
                let new = new
                    .as_ref()
                    .map_err(|error| EngineError::Request(error.clone()))?;
                self.check_binding_arm(&new.arm)?;
                let (change, created) =
                    attention::create_binding(goal, new, now, holder).map_err(lift)?;
                Ok((Some(change), Some(created)))
            })
            .await?;
        let created = created.ok_or_else(|| EngineError::Internal("no binding".into()))?;
        Ok((goal, created))
    }

    /// `POST …/bindings/{binding}/supersede`: the replacement's id.
    pub async fn supersede_binding(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        binding: &BindingId,
        body: &Value,
    ) -> Result<(Goal, BindingId), EngineError> {
        self.served()?;
        let _guard = self.locks.lock(id).await;
        let parsed = parse_supersede(body, self.settings.conformance_seams);
        let holder = |state: &AttentionState, mode: AttentionMode| {
            self.attention.faults.mode_holder(state, mode)
        };
        let (goal, created) = self
            .attention_write(tenant, id, |goal, now| {
                let (arm, mode) = parsed
                    .as_ref()
                    .map_err(|error| EngineError::Request(error.clone()))?;
                self.check_binding_arm(arm)?;
                let (change, created) =
                    attention::supersede(goal, binding, arm.clone(), *mode, now, holder)
                        .map_err(lift)?;
                Ok((Some(change), Some(created)))
            })
            .await?;
        let created = created.ok_or_else(|| EngineError::Internal("no binding".into()))?;
        Ok((goal, created))
    }

    /// Pause (optionally `until`), resume or stop one binding.
    pub async fn change_binding(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        binding: &BindingId,
        change: StatusChange,
    ) -> Result<Goal, EngineError> {
        // Under the goal's lock, as a goal's pause: once a pause or stop
        // answers, no run of the binding is in flight and none will start.
        let _guard = self.locks.lock(id).await;
        let wake = self.pause_wake();
        let (goal, ()) = self
            .attention_write(tenant, id, |goal, now| {
                let mut seen = goal.clone();
                if let Some(item) = seen
                    .notes
                    .attention
                    .as_deref_mut()
                    .and_then(|state| state.binding_mut(binding))
                {
                    item.status = self
                        .attention
                        .faults
                        .status_before_change(item.status.clone(), &change);
                }
                let change =
                    attention::change_status(&seen, binding, &change, now, wake).map_err(lift)?;
                Ok((change, ()))
            })
            .await?;
        Ok(goal)
    }

    /// `PUT {base}/{id}/attention/policy`.
    pub async fn set_policy(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        body: &Value,
    ) -> Result<Goal, EngineError> {
        self.served()?;
        let offered = self.attention_policies();
        let policy = match parse_policy(body, &offered)? {
            PolicyBody::Policy(policy) => policy,
            PolicyBody::Unsupported(kind) => return Err(EngineError::PolicyUnsupported(kind)),
        };
        let (goal, ()) = self
            .attention_write(tenant, id, |goal, _| {
                Ok((attention::set_policy(goal, &policy).map_err(lift)?, ()))
            })
            .await?;
        Ok(goal)
    }

    /// `POST {base}/{id}/attention/evidence/{evidence}/resolve`.
    pub async fn resolve_evidence(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        evidence: &EvidenceId,
    ) -> Result<Goal, EngineError> {
        let (goal, ()) = self
            .attention_write(tenant, id, |goal, _| {
                Ok((
                    attention::resolve_evidence(goal, evidence).map_err(lift)?,
                    (),
                ))
            })
            .await?;
        Ok(goal)
    }

    /// `POST {base}/{id}/attention/confirmations`, by a credential that
    /// holds `authority` for the goal's tenant.
    pub async fn confirm(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        authority: Authority,
        evidence: Option<(String, String)>,
    ) -> Result<Goal, EngineError> {
        let (goal, ()) = self
            .attention_write(tenant, id, |goal, now| {
                let change =
                    attention::confirm(goal, authority, evidence.clone(), now).map_err(lift)?;
                Ok((Some(change), ()))
            })
            .await?;
        Ok(goal)
    }

    /// `POST {base}/{id}/attention/close`: granted by the policy, the goal
    /// closes `satisfied`; refused, nothing changes. Under the goal's lock,
    /// so no binding's run is in flight when it closes.
    pub async fn request_close(&self, tenant: &Tenant, id: &GoalId) -> Result<Goal, EngineError> {
        self.served()?;
        let _guard = self.locks.lock(id).await;
        let (goal, ()) = self
            .attention_write(tenant, id, |goal, now| {
                let change = attention::request_close(goal, now, |state, revision| {
                    self.decide_closure(state, revision)
                })
                .map_err(lift)?;
                Ok((Some(change), ()))
            })
            .await?;
        self.cancels.cancel(id);
        Ok(goal)
    }

    /// Every binding of the tenant's goals that `filter` lets through, with
    /// its goal, goals in id order, bindings in creation order.
    pub async fn tenant_bindings(
        &self,
        tenant: &Tenant,
        filter: BindingFilter,
    ) -> Result<Vec<(Goal, Binding)>, EngineError> {
        self.served()?;
        let filter = self.attention.faults.list_filter(filter);
        let goals = match &filter.goal {
            Some(id) => match self.load_owned(tenant, id).await {
                Ok(goal) => vec![goal],
                Err(EngineError::NotFound) => Vec::new(),
                Err(error) => return Err(error),
            },
            None => self.list(tenant, None).await?,
        };
        let now = self.clock.now();
        let wake = self.pause_wake();
        let mut found = Vec::new();
        for goal in goals {
            let Some(state) = goal.notes.attention.as_deref() else {
                continue;
            };
            for binding in &state.bindings {
                let shown = attention::wire::binding(&goal, binding, now, wake);
                let status_ok = filter
                    .status
                    .as_deref()
                    .is_none_or(|status| shown["status"] == status);
                if filter.mode.is_none_or(|mode| binding.mode == mode) && status_ok {
                    found.push((goal.clone(), binding.clone()));
                }
            }
        }
        Ok(found)
    }

    /// The scheduler's attention work at `now`: wakes the timed pauses
    /// that are due (when this host wakes them by its tick) and returns
    /// the interval bindings due to run, each marked running until
    /// [`Engine::fire_binding`] for it ends.
    pub async fn attention_tick(&self, now: Timestamp) -> Vec<(GoalId, BindingId)> {
        if !self.attention_served() {
            return Vec::new();
        }
        let wake = self.pause_wake();
        let mut due = Vec::new();
        for id in self.attention.due.due(now) {
            let goal = match self.load(&id).await {
                Ok(Some(goal)) => goal,
                Ok(None) => {
                    self.attention.due.set(&id, None);
                    continue;
                }
                Err(error) => {
                    tracing::warn!(goal = %id, %error, "reading a goal's attention failed");
                    continue;
                }
            };
            let goal = if wake == PauseWake::Tick {
                match self.wake_pauses(goal, now).await {
                    Ok(goal) => goal,
                    Err(error) => {
                        tracing::warn!(goal = %id, %error, "waking timed pauses failed");
                        continue;
                    }
                }
            } else {
                goal
            };
            let Some(state) = goal.notes.attention.as_deref() else {
                self.attention.due.set(&id, None);
                continue;
            };
            for binding in &state.bindings {
                let status = self
                    .attention
                    .faults
                    .dispatch_status(binding.status_at(now, wake));
                let fires = status == BindingStatus::Active
                    && binding.next_fire().is_some_and(|at| at <= now);
                let newly = fires
                    && self
                        .attention
                        .firing
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(binding.id.clone());
                if newly {
                    due.push((id.clone(), binding.id.clone()));
                }
            }
            self.attention_armed(&goal, now);
        }
        due
    }

    /// When the attention work next comes due strictly after `now` (a
    /// timed pause's instant, an interval binding's next run), so the
    /// scheduler sleeps until then rather than until its next periodic
    /// tick.
    pub fn attention_next_due(&self, now: Timestamp) -> Option<Timestamp> {
        self.attention.due.next_after(now)
    }

    /// Writes the wake of every due timed pause of `goal`; the goal as it
    /// is afterwards.
    async fn wake_pauses(&self, mut goal: Goal, now: Timestamp) -> Result<Goal, EngineError> {
        for _ in 0..MAX_ATTEMPTS {
            let Some(change) = self.attention.faults.woken(&goal, now) else {
                return Ok(goal);
            };
            if let Written::Done(_) = self.write(change.clone(), goal.version, now).await? {
                return Ok(change.goal);
            }
            match self.load(&goal.id).await? {
                Some(fresh) => goal = fresh,
                None => return Ok(goal),
            }
        }
        Err(EngineError::Internal(format!(
            "goal {} kept changing under a wake",
            goal.id
        )))
    }

    /// Tells the due index (and the scheduler) about `goal`, just written:
    /// every goal write passes here ([`Engine::armed`]), so a goal paused,
    /// resumed or closed by its own endpoints is seen too.
    pub(super) fn attention_armed(&self, goal: &Goal, now: Timestamp) {
        let Some(state) = goal.notes.attention.as_deref() else {
            return;
        };
        let next = state.next_due(goal, now, self.pause_wake());
        self.attention.due.set(&goal.id, next);
        if let Some(at) = next {
            self.wake.arm(at);
        }
    }

    /// Rebuilds the due index from the open goals of `tenants` (at start:
    /// the index is memory only).
    pub async fn attention_recover(&self, tenants: &[Tenant]) -> Result<usize, EngineError> {
        if !self.attention_served() {
            return Ok(0);
        }
        let now = self.clock.now();
        let mut found = 0;
        for tenant in tenants {
            for goal in self
                .list(tenant, Some(crate::domain::GoalState::Active))
                .await?
            {
                if goal.notes.attention.is_some() {
                    found += 1;
                    self.attention_armed(&goal, now);
                }
            }
        }
        Ok(found)
    }

    /// Ends the running mark the tick set for `binding`.
    fn firing_of(&self, binding: &BindingId) -> Firing<'_> {
        Firing {
            set: &self.attention.firing,
            binding: binding.clone(),
        }
    }
}
