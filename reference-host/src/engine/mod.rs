//! The use cases: what `http` and the scheduler ask for. The engine owns the
//! iteration procedure (DESIGN "Engine") and every goal's lock.

mod attention;
mod cancel;
mod egress;
mod error;
mod event_webhooks;
mod faults;
mod feed;
mod goals;
mod heartbeat;
mod idempotency;
mod iteration;
mod locks;
mod outbound;
mod precondition;
mod quota;
mod reported;
mod scripted_judge;
mod verifiers;
mod wake;

use std::sync::Arc;
use std::time::Duration;

use crate::arms::Arms;
use crate::choices::{Choices, WebhookSigning};
use crate::clock::Clock;
use crate::domain::egress::EgressPolicy;
use crate::domain::{Evaluation, Goal, GoalId, RequestContext};
use crate::judge::{JudgePool, Judges};
use crate::storage::{Store, StoreError};
use crate::webhook::{
    SharedEgress, Signing, WebhookCa, WebhookClient, WebhookSecret, DEFAULT_TIMEOUT,
};

pub use attention::{
    AttentionFaults, AttentionRuntime, BindingFilter, BindingOutcome, NoAttentionFaults,
    BINDING_STATUSES,
};
pub use cancel::{CancelWatch, Cancels};
pub use error::EngineError;
pub use event_webhooks::{EVENT_TYPE_HEADER, IDEMPOTENCY_KEY_HEADER};
pub use faults::{Decision, Faults, IterationLock, Lookup, NoFaults};
pub use feed::{
    Feed, FeedEvent, FeedItem, FeedSettings, Subscription, DEFAULT_COALESCE, DEFAULT_HEARTBEAT,
    DEFAULT_MAX_SUBSCRIBERS_PER_TENANT, DEFAULT_SUBSCRIBER_BUFFER, MAX_COALESCE,
};
pub use goals::{Created, Replay};
pub use heartbeat::Heartbeat;
pub use idempotency::{fingerprint, IdempotencyKey, IDEMPOTENCY_TTL_MS, MAX_KEY_CHARS};
pub use iteration::{FireOutcome, ORPHAN_SWEEP_EVERY};
pub use locks::{GoalLocks, TenantLocks};
pub use outbound::{Outbound, OutboundLimit};
pub use precondition::IfMatch;
pub use quota::{
    Quota, Quotas, DEFAULT_MAX_ACTIVE_ARMS_PER_TENANT, DEFAULT_MAX_GOALS_PER_TENANT,
    DEFAULT_MAX_STORED_GOALS_PER_TENANT, MAX_VERIFIERS_PER_TENANT,
};
pub use reported::{ReportOutcome, TAKES_REPORTED_RUNS};
pub use verifiers::VerifierFileError;
pub use wake::SchedulerWake;

/// The outbound rate a served host without the seams allows one tenant's
/// scheduled work: with the 1 s interval floor and 1,000 armed goals a
/// tenant could otherwise start 1,000 arm calls a second.
pub const DEFAULT_OUTBOUND_PER_TENANT_PER_SEC: u32 = 100;

/// Tunables of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSettings {
    /// The conformance seams are on: `conformance:` fixture refs are
    /// accepted (and `http` serves the seam routes).
    pub conformance_seams: bool,
    /// A run still going after this long fails environmentally.
    pub run_limit: Duration,
    /// A webhook judge still deciding after this long fails
    /// environmentally. (A criteria judgement is bounded by its step
    /// budget instead: see `judge::pool`.)
    pub judge_limit: Duration,
    /// Criteria judgements running at once, all tenants together (one per
    /// core by default).
    pub judge_slots: usize,
    /// Steps of criteria judging one tenant may take per second; `None`:
    /// no budget.
    pub judge_steps_per_sec: Option<u64>,
    /// What an evaluation keeps of its verdict's criteria.
    pub kept_criteria: crate::domain::KeptCriteria,
    /// The runs whose history (run id, evaluation, events) a goal keeps,
    /// the most recent ones; `None`: all.
    pub history_per_goal: Option<usize>,
    /// The most recent contributing run ids a goal body lists.
    pub run_ids_shown: usize,
    /// How many replicas share the database: each enforces its share of
    /// every per-tenant rate and of the live streams a tenant may hold
    /// (the quotas are counted in the database, exactly, whatever this
    /// says). 1 for a host alone.
    pub replicas: u32,
    /// One webhook call (arm, verifier or heartbeat probe), connect to last
    /// byte; no retries.
    pub webhook_timeout: Duration,
    /// The master secret tenants' signing keys are derived from.
    pub webhook_secret: WebhookSecret,
    /// Tenants whose calls are signed with a key the operator gave instead.
    pub webhook_tenant_secrets: Vec<(String, WebhookSecret)>,
    /// Where webhook calls may go (internal addresses only when allowed).
    pub egress: EgressPolicy,
    /// Authorities `https` webhooks may chain to besides the system's.
    pub webhook_ca: WebhookCa,
    /// Per-tenant limits on open, armed and stored goals.
    pub quotas: Quotas,
    /// How long closed goals are kept before the scheduler forgets them;
    /// `None` keeps them forever.
    pub retain_closed: Option<Duration>,
    /// The choices the profile leaves open, as this host makes them.
    pub choices: Choices,
    /// The live event stream's bounds.
    pub feed: FeedSettings,
    /// Fires and heartbeat probes the scheduler starts per second for one
    /// tenant; `None`: no limit (conformance runs and benchmarks). A
    /// served host without the seams sets
    /// [`DEFAULT_OUTBOUND_PER_TENANT_PER_SEC`].
    pub outbound_per_tenant_per_sec: Option<u32>,
}

/// The runs whose history a goal keeps by default: their run ids,
/// evaluations and events. With the stored-goals quota this bounds what a
/// tenant can make the host store, whatever its goals' bounds.
pub const DEFAULT_HISTORY_PER_GOAL: usize = 10_000;

/// How long a closed goal stays readable: long enough for a client to see
/// how it ended and read its events, short enough that a tenant's history
/// does not fill its stored-goals quota.
pub const DEFAULT_RETAIN_CLOSED: Duration = Duration::from_secs(30 * 24 * 3600);

impl Default for EngineSettings {
    /// A random webhook secret: set one to let receivers check it.
    fn default() -> EngineSettings {
        EngineSettings {
            conformance_seams: false,
            run_limit: Duration::from_secs(20),
            judge_limit: Duration::from_secs(10),
            judge_slots: crate::judge::pool::default_slots(),
            // Tests drive a manual clock, on which a budget would never
            // fill again; a served host sets one (`config::WorkLimits`).
            judge_steps_per_sec: None,
            kept_criteria: crate::domain::KeptCriteria::default(),
            history_per_goal: Some(DEFAULT_HISTORY_PER_GOAL),
            run_ids_shown: crate::domain::wire::DEFAULT_RUN_IDS_SHOWN,
            replicas: 1,
            webhook_timeout: DEFAULT_TIMEOUT,
            webhook_secret: WebhookSecret::generate(),
            webhook_tenant_secrets: Vec::new(),
            egress: EgressPolicy::default(),
            webhook_ca: WebhookCa::none(),
            quotas: Quotas::default(),
            retain_closed: Some(DEFAULT_RETAIN_CLOSED),
            choices: Choices::default(),
            feed: FeedSettings::default(),
            outbound_per_tenant_per_sec: None,
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
    /// The webhook client, for calls that are neither an arm's nor a
    /// judge's (event webhooks).
    notifier: Arc<WebhookClient>,
    arms: Arms,
    judges: Judges,
    /// Where criteria judgements run, shared fairly between tenants.
    judge_pool: JudgePool,
    /// What each tenant may start per second: fires, probes, `continue`s
    /// and reported runs draw from it.
    outbound: Outbound,
    locks: GoalLocks,
    /// Held while a write checks and changes a tenant's armed goals.
    arming: TenantLocks,
    /// Held while a registration checks and changes a tenant's verifiers.
    registering: TenantLocks,
    cancels: Cancels,
    /// Wakes the scheduler when a write arms a goal earlier than it knew.
    wake: SchedulerWake,
    egress: SharedEgress,
    /// Committed events, fanned out to live streams.
    feed: Arc<Feed>,
    settings: EngineSettings,
    /// The bug this host runs with, if any ([`NoFaults`]: none).
    faults: Arc<dyn Faults>,
    /// The attention extension's timers and running bindings.
    attention: AttentionRuntime,
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
        Engine::with_faults(store, clock, settings, Arc::new(NoFaults))
    }

    /// An engine that runs with `faults` (a mutant of the kill matrix).
    pub fn with_faults(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        settings: EngineSettings,
        faults: Arc<dyn Faults>,
    ) -> Engine {
        let settings = faults.settings(settings);
        // Signing is a choice a conforming host may leave out (the
        // unsigned-webhooks variant): then calls carry no signature.
        let signing = match settings.choices.webhook_signing {
            WebhookSigning::Signed => Some(settings.webhook_tenant_secrets.iter().fold(
                Signing::new(settings.webhook_secret.clone()),
                |signing, (tenant, key)| signing.with_tenant(tenant, key.clone()),
            )),
            WebhookSigning::Unsigned => None,
        };
        let egress = SharedEgress::new(settings.egress.clone());
        let mut client = WebhookClient::with_ca(
            signing,
            egress.clone(),
            settings.webhook_timeout,
            &settings.webhook_ca,
        );
        if let Some(calls) = faults.calls() {
            client = client.with_faults(calls);
        }
        let webhooks = Arc::new(client);
        // Rates and stream caps that live in this process are divided
        // between the replicas, so together they allow what one host
        // would (`--replicas`).
        let replicas = settings.replicas.max(1);
        let mut feed_settings = settings.feed.clone();
        feed_settings.max_subscribers_per_tenant = (feed_settings.max_subscribers_per_tenant
            / usize::try_from(replicas).unwrap_or(1))
        .max(1);
        let feed = Arc::new(Feed::new(feed_settings));
        store.set_event_sink(Arc::clone(&feed) as Arc<dyn crate::storage::EventSink>);
        let cancels = Cancels::default();
        // A goal closed on another replica cancels its run in flight here,
        // as a local abandon does.
        {
            let (cancels, faults) = (cancels.clone(), Arc::clone(&faults));
            store.watch_closes(Arc::new(move |goal: &GoalId| {
                faults.cancel_closed_run(&cancels, goal)
            }));
        }
        let judge_pool = JudgePool::new(
            settings.judge_slots,
            settings
                .judge_steps_per_sec
                .map(|steps| (steps / u64::from(replicas)).max(1)),
            Arc::clone(&clock),
        );
        Engine {
            store,
            clock,
            notifier: Arc::clone(&webhooks),
            arms: Arms::new(Arc::clone(&webhooks)),
            judges: Judges::new(webhooks),
            judge_pool,
            outbound: Outbound::new(
                settings
                    .outbound_per_tenant_per_sec
                    .map(|per_sec| (per_sec / replicas).max(1)),
            ),
            locks: GoalLocks::default(),
            arming: TenantLocks::default(),
            registering: TenantLocks::default(),
            cancels,
            wake: SchedulerWake::default(),
            egress,
            feed,
            settings,
            attention: AttentionRuntime::new(faults.attention()),
            faults,
        }
    }

    pub fn settings(&self) -> &EngineSettings {
        &self.settings
    }

    pub fn choices(&self) -> &Choices {
        &self.settings.choices
    }

    /// The egress policy in force (writable: see [`SharedEgress`]).
    pub fn egress(&self) -> &SharedEgress {
        &self.egress
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The per-tenant outbound limit.
    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// Takes one outbound start for `tenant` now, or says how long it must
    /// wait (429 `rate_limited`).
    fn start_outbound(&self, tenant: &crate::domain::Tenant) -> Result<(), EngineError> {
        self.outbound
            .take(tenant, self.clock.now())
            .map_err(|wait| EngineError::RateLimited { wait })
    }

    fn request_context(&self) -> RequestContext {
        RequestContext {
            fixtures_enabled: self.settings.conformance_seams,
            judge: self.settings.choices.judge,
            modes: self.settings.choices.modes,
            unappliable: self.settings.choices.unappliable,
        }
    }

    /// Runs a lookup by key on the calling async worker. It answers from
    /// the goal cache or SQLite's page cache in microseconds and, on a file
    /// database, from a read connection that never waits for a writer
    /// (WAL); the two thread hand-offs of [`Engine::db`] cost more than the
    /// read itself. Measured: with every lookup on the blocking pool, 50k
    /// GETs made 113k context switches (50k hello-world requests: 2.4k),
    /// and GET served 0.26–0.38 of a hello-world route's rate; inline, on
    /// read connections, 0.54–0.55 in the same session. Running *writes*
    /// inline on the workers was tried and not kept: create fell 10–20%,
    /// and a write holding the connection (or a checkpoint's fsync) stalled
    /// a worker. Scans and lists go through `db`; writes are the store's
    /// `Pending` futures, awaited where they are made.
    fn lookup<T>(
        &self,
        call: impl FnOnce(&dyn Store) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        call(self.store.as_ref()).map_err(EngineError::from)
    }

    /// Runs a scan or list off the async workers (SQLite is synchronous).
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
