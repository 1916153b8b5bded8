//! Create, read and a person's transitions. Each transition is one
//! versioned write: read, decide in the domain, write if unchanged, retry on
//! a race.

use serde_json::Value;

use super::idempotency::{fingerprint, IdempotencyKey, IDEMPOTENCY_TTL_MS};
use super::quota::{is_armed, Quota};
use super::{Engine, EngineError, IfMatch, Lookup};
use crate::choices::ArmlessSchedule;
use crate::domain::transition::{self, Change, TransitionError};
use crate::domain::{
    parse_create, parse_patch, CostReading, Evaluation, Event, Goal, GoalId, GoalPatch, GoalState,
    Mode, Tenant, Timestamp,
};
use crate::storage::{CreateGuard, Inserted, Pending, Store, StoredKey, Written, WrittenIfIdle};

/// A versioned write loses only to another write of the same goal; that
/// cannot happen forever, but a bound keeps a bug from spinning.
pub(super) const MAX_ATTEMPTS: usize = 32;

const VERIFIER_REF: &str = "/completion/verifierRef";

impl From<TransitionError> for EngineError {
    fn from(error: TransitionError) -> EngineError {
        match error {
            TransitionError::Terminal => EngineError::Terminal,
            TransitionError::Escalated => EngineError::Escalated,
        }
    }
}

/// What a create answered: the goal as it is now and, when the create was
/// made before under the same `Idempotency-Key`, that original answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    pub goal: Goal,
    pub replay: Option<Replay>,
}

/// The answer a create first got, kept with its key: replayed as it was
/// (the goal's body and `ETag` at creation), whatever happened since.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub answer: Value,
    pub etag: String,
}

/// How a transition writes the change it decided.
#[derive(Debug, Clone, Copy)]
enum TransitionWrite {
    /// A versioned write, nothing more.
    Plain,
    /// An edit: a change that puts the goal on an arm is written only
    /// within its owner's armed quota (the limit here), counted in the
    /// store's write ([`Store::apply_arming`]); any other change is a
    /// plain write.
    WithinArmQuota(u64),
}

/// Keys stored at or before this instant have expired.
fn keys_expire_at_or_before(now: Timestamp) -> Timestamp {
    Timestamp::from_unix_ms(now.unix_ms().saturating_sub(IDEMPOTENCY_TTL_MS)).unwrap_or(now)
}

impl Engine {
    pub async fn create(&self, tenant: &Tenant, body: &Value) -> Result<Goal, EngineError> {
        self.create_once(tenant, body, None, None)
            .await
            .map(|created| created.goal)
    }

    /// Create with an optional `Idempotency-Key`: a key the tenant used for
    /// the same body (as parsed JSON) within 24 h answers the goal it made;
    /// with another body it is a conflict. The key, the quotas and the
    /// insert are checked and written in one transaction. `script`: the
    /// judge the seam `scriptedJudge` names for the goal from its first
    /// run ([`Engine::serves_scripted_judge`]; ignored elsewhere), written
    /// in the same transaction; a replay keeps the script its goal had.
    pub async fn create_once(
        &self,
        tenant: &Tenant,
        body: &Value,
        key: Option<&IdempotencyKey>,
        script: Option<&str>,
    ) -> Result<Created, EngineError> {
        let now = self.clock.now();
        let expired = keys_expire_at_or_before(now);
        let key = key.map(|key| (key.as_str().to_string(), fingerprint(body)));
        if let Some((text, print)) = &key {
            if let Some(stored) =
                self.lookup(|store| store.idempotency_key(tenant, text, expired))?
            {
                return self.replay(tenant, stored, print).await;
            }
        }
        let read = self.faults.create_body(body);
        let new = parse_create(&read, self.request_context())?;
        self.check_egress(new.verifier_ref.as_ref(), new.arm_ref.as_ref())?;
        self.check_named(tenant, new.verifier_ref.as_ref(), VERIFIER_REF)
            .await?;
        let judge_script = self.create_script(script)?;
        let mut goal = new.into_goal(GoalId::generate(), tenant.clone(), now);
        self.hold_armless_schedule(&mut goal);
        let goal = self.faults.created(body, goal);
        let quotas = self.settings.quotas;
        // The insert counts armed goals in its transaction; a PATCH counts
        // them under this lock, so the two take turns.
        let _arming = if is_armed(goal.continuation.mode) {
            Some(self.arming.lock(tenant).await)
        } else {
            None
        };
        let guard = CreateGuard {
            max_open_goals: quotas.goals_per_tenant,
            max_open_armed: quotas.active_arms_per_tenant,
            max_stored_goals: quotas.stored_goals_per_tenant,
            key: key.clone(),
            keys_expire_at_or_before: expired,
            judge_script,
        };
        match self.store.insert_goal_guarded(&goal, &guard).await? {
            Inserted::Done => {
                self.armed(&goal, now, true);
                Ok(Created { goal, replay: None })
            }
            Inserted::KeyTaken(stored) => {
                let print = key.map(|(_, print)| print).unwrap_or_default();
                self.replay(tenant, stored, &print).await
            }
            Inserted::TooManyGoals => Err(EngineError::QuotaExceeded {
                quota: Quota::GoalsPerTenant,
                limit: quotas.goals_per_tenant,
            }),
            Inserted::TooManyArmed => Err(EngineError::QuotaExceeded {
                quota: Quota::ActiveArmsPerTenant,
                limit: quotas.active_arms_per_tenant,
            }),
            Inserted::TooManyStored => Err(EngineError::QuotaExceeded {
                quota: Quota::StoredGoalsPerTenant,
                limit: quotas.stored_goals_per_tenant,
            }),
        }
    }

    async fn replay(
        &self,
        tenant: &Tenant,
        stored: StoredKey,
        print: &str,
    ) -> Result<Created, EngineError> {
        if stored.fingerprint != print {
            return Err(EngineError::IdempotencyConflict);
        }
        let goal = self.load_owned(tenant, &stored.goal_id).await?;
        Ok(Created {
            goal,
            replay: Some(Replay {
                answer: stored.answer,
                etag: stored.etag,
            }),
        })
    }

    /// Forgets idempotency keys older than 24 h; returns how many.
    pub async fn purge_idempotency_keys(&self) -> Result<usize, EngineError> {
        let expired = keys_expire_at_or_before(self.clock.now());
        Ok(self.store.purge_idempotency_keys(expired).await?)
    }

    /// Retention: forgets at most `limit` goals closed longer than
    /// `retain_closed` ago, with their events, evaluations, runs and keys;
    /// none when closed goals are kept forever.
    pub async fn purge_closed_goals(&self, limit: usize) -> Result<Vec<GoalId>, EngineError> {
        let Some(retain) = self.settings.retain_closed else {
            return Ok(Vec::new());
        };
        let Some(before) = self.clock.now().checked_sub(retain) else {
            // Nothing closed that long ago yet.
            return Ok(Vec::new());
        };
        Ok(self.store.purge_closed_goals(before, limit).await?)
    }

    /// Any goal, whoever owns it (for the scheduler and the engine itself).
    pub(super) async fn load(&self, id: &GoalId) -> Result<Option<Goal>, EngineError> {
        self.lookup(|store| store.goal(id))
    }

    /// The caller's goal; another tenant's goal does not exist for them.
    pub(super) async fn load_owned(
        &self,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<Goal, EngineError> {
        self.load_visible(tenant, id, Lookup::Other).await
    }

    /// The goal if `tenant` may see it (in `lookup`), else not found.
    async fn load_visible(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        lookup: Lookup,
    ) -> Result<Goal, EngineError> {
        match self.load(id).await? {
            Some(goal) if self.faults.visible_to(&goal, tenant, lookup) => Ok(goal),
            _ => Err(EngineError::NotFound),
        }
    }

    pub async fn get(&self, tenant: &Tenant, id: &GoalId) -> Result<Goal, EngineError> {
        self.load_visible(tenant, id, Lookup::Goal).await
    }

    pub async fn list(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
    ) -> Result<Vec<Goal>, EngineError> {
        self.list_page(tenant, state, None, usize::MAX).await
    }

    /// At most `limit` of the tenant's goals in id order, after the id
    /// `after`: what one page of the list shows.
    pub async fn list_page(
        &self,
        tenant: &Tenant,
        state: Option<GoalState>,
        after: Option<GoalId>,
        limit: usize,
    ) -> Result<Vec<Goal>, EngineError> {
        let state = self.faults.list_filter(state);
        let tenant = tenant.clone();
        self.db(move |store| store.goals_page(&tenant, state, after.as_ref(), limit))
            .await
    }

    /// At most `limit` of the goal's events after the sequence `after`.
    pub async fn events(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, EngineError> {
        self.load_owned(tenant, id).await?;
        let (after, answered_after) = self.faults.events_after(after);
        let id = id.clone();
        let mut events = self
            .db(move |store| store.events_page(&id, after, limit))
            .await?;
        // The list is RFC 0097's events and nothing else (PROFILE.md
        // "events"); the attention extension's are streamed, not listed.
        events.retain(|event| event.payload.is_rfc_0097());
        Ok(self.faults.events(events, answered_after))
    }

    /// At most `limit` of the goal's evaluations of an iteration after
    /// `after`.
    pub async fn evaluations(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, EngineError> {
        self.load_owned(tenant, id).await?;
        let id = id.clone();
        self.db(move |store| store.evaluations_page(&id, after, limit))
            .await
    }

    pub async fn patch(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        body: &Value,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        let edit = parse_patch(body, self.request_context()).and_then(|edit| {
            self.check_egress(
                edit.verifier_ref.as_ref().and_then(Option::as_ref),
                edit.arm_ref.as_ref().and_then(Option::as_ref),
            )?;
            Ok(edit)
        });
        // Counted only for a PATCH that names an armed mode, in the
        // store's own write, with the owner's counts locked there: read
        // outside it, racing PATCHes all saw room for one more (quota 5
        // ended with 13 in one process; a process-wide lock still let
        // three replicas arm 7). The lock here only keeps this process's
        // PATCHes from queueing on the database's.
        let _arming = match &edit {
            Ok(GoalPatch {
                mode: Some(mode), ..
            }) if is_armed(*mode) => Some(self.arming.lock(tenant).await),
            _ => None,
        };
        let arm_quota =
            TransitionWrite::WithinArmQuota(self.settings.quotas.active_arms_per_tenant);
        // Looked up now, refused in order: after 404 and 412, like any
        // other field of the body.
        let unknown_verifier = match &edit {
            Ok(GoalPatch {
                verifier_ref: Some(verifier_ref),
                ..
            }) => self
                .check_named(tenant, verifier_ref.as_ref(), VERIFIER_REF)
                .await
                .err(),
            _ => None,
        };
        let goal = self
            .transition(tenant, id, if_match, arm_quota, |goal, now| {
                // A faulty PATCH changes how a body is applied, not where
                // the host may call: an egress refusal stands before it.
                if let Err(error @ crate::domain::RequestError::EgressDenied { .. }) = &edit {
                    return Err(EngineError::Request(error.clone()));
                }
                if let Some(decision) = self.faults.patch(self.request_context(), goal, body, now) {
                    return decision;
                }
                let edit = edit
                    .as_ref()
                    .map_err(|error| EngineError::Request(error.clone()))?;
                if let Some(EngineError::Request(error)) = &unknown_verifier {
                    return Err(EngineError::Request(error.clone()));
                }
                Ok(transition::patch(goal, edit, now)?)
            })
            .await?;
        self.faults.patch_answer(self.request_context(), body, goal)
    }

    /// Waits for an iteration under way to be recorded, so once pause
    /// answers no run of this goal is in flight and none will start.
    pub async fn pause(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        let _guard = self.locks.lock(id).await;
        self.transition(tenant, id, if_match, TransitionWrite::Plain, |goal, now| {
            self.faults.closing(goal, false);
            Ok(transition::pause(goal, now)?)
        })
        .await
    }

    /// Re-arms a paused goal or reactivates an escalated one; `note` is a
    /// person's resolution of the escalation, which the next run receives.
    pub async fn resume(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
        note: Option<String>,
    ) -> Result<Goal, EngineError> {
        self.transition(tenant, id, if_match, TransitionWrite::Plain, |goal, now| {
            if let Some(change) = self.faults.resume(goal, now) {
                return Ok(Some(change));
            }
            let change = transition::resume(goal, now, self.choices().cost_reading)?;
            Ok(change.map(|mut change| {
                transition::resolve(goal, &mut change, note.clone());
                change
            }))
        })
        .await
    }

    /// Why the caller's goal is escalated; `None` when it is not.
    pub async fn escalation(
        &self,
        tenant: &Tenant,
        id: &GoalId,
    ) -> Result<Option<crate::domain::OpenEscalation>, EngineError> {
        let goal = self.load_visible(tenant, id, Lookup::Escalation).await?;
        Ok(match goal.state {
            crate::domain::GoalState::Escalated => goal
                .notes
                .escalation
                .map(|open| self.faults.shown_escalation(open)),
            _ => None,
        })
    }

    /// Answers at once, even with a slow run in flight: the close is written
    /// without the goal's lock, then the run in flight is cancelled and
    /// recorded nowhere (abandon answering at once wins over "every
    /// dispatched run gets a verdict"; DESIGN "Webhooks").
    pub async fn abandon(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
    ) -> Result<Goal, EngineError> {
        let goal = self
            .transition(tenant, id, if_match, TransitionWrite::Plain, |goal, now| {
                self.faults.closing(goal, true);
                if let Some(decision) = self.faults.abandon(goal, now) {
                    return decision;
                }
                Ok(Some(transition::abandon(goal, now)?))
            })
            .await?;
        self.faults.cancel_closed_run(&self.cancels, id);
        Ok(goal)
    }

    /// Read (404), check `If-Match` (412), decide (`decide` refuses with
    /// 400/409/422), write as `write` says if unchanged. `decide` returning
    /// `None` is a no-op answered with the goal as it is.
    async fn transition<F>(
        &self,
        tenant: &Tenant,
        id: &GoalId,
        if_match: Option<&IfMatch>,
        write: TransitionWrite,
        decide: F,
    ) -> Result<Goal, EngineError>
    where
        F: Fn(&Goal, Timestamp) -> Result<Option<Change>, EngineError>,
    {
        for _ in 0..MAX_ATTEMPTS {
            let goal = self.load_owned(tenant, id).await?;
            if if_match.is_some_and(|expected| !expected.matches(goal.version)) {
                return Err(EngineError::PreconditionFailed);
            }
            let now = self.clock.now();
            let Some(change) = decide(&goal, now)? else {
                return Ok(goal);
            };
            if self
                .write_transition(&goal, change.clone(), now, write)
                .await?
            {
                return Ok(change.goal);
            }
        }
        Err(EngineError::Internal(format!(
            "goal {id} kept changing under a write"
        )))
    }

    /// Writes a transition's change over `before`; `false` when the goal
    /// changed under it (the caller reads again).
    async fn write_transition(
        &self,
        before: &Goal,
        change: Change,
        now: Timestamp,
        write: TransitionWrite,
    ) -> Result<bool, EngineError> {
        let version = before.version;
        let arms = is_armed(change.goal.continuation.mode)
            && change.goal.state.is_open()
            && !(is_armed(before.continuation.mode) && before.state.is_open());
        let limit = match write {
            TransitionWrite::WithinArmQuota(limit) if arms => limit,
            _ => {
                let written = self.write(change, version, now).await?;
                return Ok(matches!(written, Written::Done(_)));
            }
        };
        let written = self
            .write_with(
                change,
                now,
                |store, change| store.apply_arming(change, version, now, limit),
                |written| matches!(written, WrittenIfIdle::Done(_)),
            )
            .await?;
        match written {
            WrittenIfIdle::Done(_) => Ok(true),
            WrittenIfIdle::TooManyArmed => Err(EngineError::QuotaExceeded {
                quota: Quota::ActiveArmsPerTenant,
                limit,
            }),
            WrittenIfIdle::Conflict | WrittenIfIdle::RunInFlight => Ok(false),
        }
    }

    /// Closes `goal`, read at `now`, because its bounds are used up
    /// (a dispatch refused as [`Refusal::Exhausted`](crate::domain::Refusal)).
    /// `false` when there is nothing to close after all or the goal changed
    /// since it was read: the caller reads it again.
    pub(super) async fn close_exhausted(
        &self,
        goal: &Goal,
        now: Timestamp,
        cost_reading: CostReading,
    ) -> Result<bool, EngineError> {
        let Some(change) = transition::close_if_exhausted(goal, now, cost_reading) else {
            return Ok(false);
        };
        let written = self.write(change, goal.version, now).await?;
        Ok(matches!(written, Written::Done(_)))
    }

    pub(super) async fn write(
        &self,
        change: Change,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<Written<Vec<Event>>, EngineError> {
        self.write_with(
            change,
            now,
            |store, change| store.apply(change, expected_version, None, now),
            |written| matches!(written, Written::Done(_)),
        )
        .await
    }

    /// [`Engine::write`], unless a run of the goal is in flight anywhere
    /// ([`Goals::apply_unless_run_in_flight`](crate::storage::Goals::apply_unless_run_in_flight)).
    pub(super) async fn write_unless_run_in_flight(
        &self,
        change: Change,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<WrittenIfIdle<Vec<Event>>, EngineError> {
        self.write_with(
            change,
            now,
            |store, change| store.apply_unless_run_in_flight(change, expected_version, now),
            |written| matches!(written, WrittenIfIdle::Done(_)),
        )
        .await
    }

    /// What every goal write does around the store's: the armless-schedule
    /// hold before it, the scheduler told after it when it was `done`.
    async fn write_with<T>(
        &self,
        mut change: Change,
        now: Timestamp,
        write: impl FnOnce(&dyn Store, &Change) -> Pending<T>,
        done: impl FnOnce(&T) -> bool,
    ) -> Result<T, EngineError> {
        self.hold_armless_schedule(&mut change.goal);
        let written = write(self.store.as_ref(), &change).await?;
        if done(&written) {
            self.armed(&change.goal, now, true);
        }
        Ok(written)
    }
}

impl Engine {
    /// Under [`ArmlessSchedule::WaitsForArm`], keeps a `schedule` goal
    /// without an `armRef` from firing: its next fire is put at the end of
    /// time, and taken back (fire at once) as soon as a write gives it an
    /// arm. Every write of a goal passes here, so create, edit, resume and a
    /// recorded `continue` all keep it; nothing else changes for it (no
    /// version, no `updatedAt`), and the scheduler's due lookup never sees
    /// it as due.
    pub(super) fn hold_armless_schedule(&self, goal: &mut Goal) {
        if self.choices().armless_schedule != ArmlessSchedule::WaitsForArm {
            return;
        }
        let waiting =
            goal.continuation.mode == Mode::Schedule && goal.continuation.arm_ref.is_none();
        let held = goal.next_fire_at == Some(Timestamp::max());
        if waiting {
            goal.next_fire_at = Some(Timestamp::max());
        } else if held {
            goal.next_fire_at = None;
        }
    }

    /// Reads these goals ahead of their fires (see [`Goals::warm`]).
    ///
    /// [`Goals::warm`]: crate::storage::Goals::warm
    pub async fn warm(&self, ids: Vec<GoalId>) -> Result<usize, EngineError> {
        self.db(move |store| store.warm(&ids)).await
    }

    /// Who owns a goal, for the scheduler's fair shares; `None` for a goal
    /// that is gone. Served from the goal cache once the goal was read.
    pub async fn owner_of(&self, id: &GoalId) -> Result<Option<Tenant>, EngineError> {
        Ok(self.load(id).await?.map(|goal| goal.owner))
    }

    /// Due `schedule` goals, then due `commitment` goals, each longest due
    /// first, at most `limit`.
    pub async fn due_schedule_goals(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<GoalId>, EngineError> {
        let due = self
            .db(move |store| store.due_schedule_goals(now, limit))
            .await?;
        Ok(self.faults.due(due, now))
    }

    pub async fn goals_past_deadline(&self, now: Timestamp) -> Result<Vec<GoalId>, EngineError> {
        self.db(move |store| store.goals_past_deadline(now)).await
    }

    /// The next scheduled fire or deadline strictly after `after` (the
    /// scheduler's last tick): when it next has something to do. One index
    /// seek after every tick, so a lookup rather than a blocking-pool hop.
    pub async fn next_due_after(&self, after: Timestamp) -> Result<Option<Timestamp>, EngineError> {
        self.lookup(|store| store.next_due_after(after))
    }
}
