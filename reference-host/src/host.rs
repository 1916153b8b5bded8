//! A running host: the HTTP server and the scheduler loop on the current
//! tokio runtime. This is what `main` and the suite start.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::{Clock, SystemClock};
use crate::config::{read_tokens_file, Config, TokensFileError};
use crate::domain::egress::{AllowEntry, EgressPolicy};
use crate::domain::event_webhook::check_subscriptions;
use crate::engine::{
    Engine, EngineError, EngineSettings, Faults, Feed, NoFaults, VerifierFileError,
};
use crate::event_webhooks::EventWebhooks;
use crate::http::{app, AppState, NoRouteFaults, RouteFaults, TokenError, Tokens};
use crate::scheduler::Scheduler;
use crate::storage::{DbLocation, Store, StoreError};
use crate::webhook::{SharedEgress, WebhookCa, WebhookSecret};

/// How long shutdown waits for scheduled runs in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("invalid credentials: {0}")]
    Tokens(#[from] TokenError),
    #[error("cannot load the tokens file: {0}")]
    TokensFile(#[from] TokensFileError),
    #[error(transparent)]
    Storage(#[from] StoreError),
    #[error("cannot recover runs left in flight: {0}")]
    Recovery(#[from] EngineError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the storage task failed: {0}")]
    Task(String),
    #[error("the webhook secret must be non-empty visible ASCII")]
    WebhookSecret,
    #[error("cannot load the verifiers file: {0}")]
    Verifiers(#[from] VerifierFileError),
    #[error("cannot use --webhook-ca {path}: {reason}")]
    WebhookCa { path: String, reason: String },
    #[error("cannot deliver event webhooks: {0}")]
    EventWebhook(String),
}

/// Opens a host's store at its configured location (blocking).
pub type OpenStore = Box<dyn FnOnce(&DbLocation) -> Result<Arc<dyn Store>, StoreError> + Send>;

/// What a host is assembled from that another build may replace: how its
/// store is opened, the engine's rules and the router's outer layer.
/// [`Ports::faithful`] is this host. The crate `goalpost-host-builds`
/// wraps or replaces them to make the suite's deliberately broken hosts
/// (its kill matrix); nothing in this crate makes another.
pub struct Ports {
    /// Opens the store at the configured location. Blocking: it runs on
    /// a blocking thread.
    pub open_store: OpenStore,
    /// The engine's rules (who may see a goal, whether egress allows a
    /// URL, …), each answering as the profile says.
    pub rules: Arc<dyn Faults>,
    /// The router's body limit and outermost layer.
    pub routes: Arc<dyn RouteFaults>,
}

impl Ports {
    /// This host's own ports.
    pub fn faithful() -> Ports {
        Ports {
            open_store: Box::new(crate::storage::open),
            rules: Arc::new(NoFaults),
            routes: Arc::new(NoRouteFaults),
        }
    }
}

impl std::fmt::Debug for Ports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ports").finish_non_exhaustive()
    }
}

pub struct RunningHost {
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    scheduler: JoinHandle<()>,
    /// The event webhook worker, when any tenant is subscribed.
    deliveries: Option<JoinHandle<()>>,
    egress: SharedEgress,
    feed: Arc<Feed>,
    connections: Arc<crate::serve::Connections>,
}

impl std::fmt::Debug for RunningHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningHost")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RunningHost {
    /// Opens the database (recording runs a previous process left in flight
    /// as environmental failures), binds, and spawns the server and the
    /// scheduler loop on the current runtime.
    pub async fn start(config: Config) -> Result<RunningHost, HostError> {
        RunningHost::start_with(config, Ports::faithful()).await
    }

    /// [`RunningHost::start`] assembled from `ports` in place of this
    /// host's own.
    pub async fn start_with(config: Config, ports: Ports) -> Result<RunningHost, HostError> {
        let mut pairs = config.tokens.clone();
        if let Some(path) = &config.tokens_file {
            pairs.extend(read_tokens_file(path)?);
        }
        let tokens = Tokens::new(&pairs)?;
        // Authority credentials are apart from tenant tokens: one token is
        // never both (a tenant's token must not confirm as a principal).
        let authorities = crate::http::attention::Authorities::new(
            &config.host_authority_tokens,
            &config.principal_tokens,
        )?;
        let every: Vec<(String, String)> = pairs
            .iter()
            .chain(&config.host_authority_tokens)
            .chain(&config.principal_tokens)
            .cloned()
            .collect();
        Tokens::new(&every)?;
        let webhook_secret = match &config.webhook_secret {
            Some(text) => WebhookSecret::new(text).ok_or(HostError::WebhookSecret)?,
            None => WebhookSecret::generate(),
        };
        if tokens.is_empty() {
            tracing::warn!("no tokens configured: every goal endpoint will answer 401");
        }
        check_event_webhooks(&config, &pairs)?;
        let location = config.db.clone();
        let open_store = ports.open_store;
        let store: Arc<dyn Store> = tokio::task::spawn_blocking(move || open_store(&location))
            .await
            .map_err(|error| HostError::Task(error.to_string()))??;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let settings = EngineSettings {
            conformance_seams: config.conformance_seams,
            webhook_secret,
            egress: EgressPolicy::new(config.webhook_allow.clone()),
            webhook_ca: match &config.webhook_ca {
                None => WebhookCa::none(),
                Some(path) => {
                    let failed = |reason: String| HostError::WebhookCa {
                        path: path.display().to_string(),
                        reason,
                    };
                    let pem = std::fs::read(path).map_err(|error| failed(error.to_string()))?;
                    WebhookCa::from_pem(&pem).map_err(failed)?
                }
            },
            quotas: config.quotas,
            retain_closed: config.retain_closed,
            choices: config.choices,
            feed: config.feed.clone(),
            // The suite's 20 ms intervals need no limit in conformance mode.
            outbound_per_tenant_per_sec: config.work.outbound_per_sec.or_else(|| {
                (!config.conformance_seams)
                    .then_some(crate::engine::DEFAULT_OUTBOUND_PER_TENANT_PER_SEC)
            }),
            judge_slots: config.work.judge_threads,
            kept_criteria: crate::domain::KeptCriteria {
                count: config.history.criteria_kept,
                id_chars: config.history.criterion_id_chars,
            },
            history_per_goal: config.history.history_per_goal,
            run_ids_shown: config.history.run_ids_shown,
            replicas: config.replicas,
            judge_steps_per_sec: Some(config.work.judge_steps_per_sec),
            ..EngineSettings::default()
        };
        if config.choices != crate::choices::Choices::default() {
            tracing::info!(choices = ?config.choices, "running with choices other than the reference host's");
        }
        let engine = Arc::new(Engine::with_faults(
            store,
            Arc::clone(&clock),
            settings,
            ports.rules,
        ));
        if let Some(path) = &config.verifiers {
            let loaded = engine.load_verifier_file(path).await?;
            tracing::info!(loaded, path = %path.display(), "criteria verifiers loaded");
        }
        // Always stored, none included: a subscription the operator
        // removed stops holding its tenant's undelivered events.
        let deliveries = EventWebhooks::start(
            Arc::clone(&engine),
            config.event_webhooks.clone(),
            crate::event_webhooks::Settings::default(),
        )
        .await?;
        let purged = engine.purge_idempotency_keys().await?;
        if purged > 0 {
            tracing::info!(purged, "expired idempotency keys forgotten");
        }
        let recovered = engine.recover().await?;
        let tenants: Vec<crate::domain::Tenant> = pairs
            .iter()
            .filter_map(|(_, tenant)| crate::domain::Tenant::parse(tenant))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let attended = engine.attention_recover(&tenants).await?;
        if attended > 0 {
            tracing::info!(attended, "goals with attention found");
        }
        if recovered > 0 {
            tracing::warn!(
                recovered,
                "runs left in flight were recorded as environmental failures"
            );
        }

        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| HostError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| HostError::Bind {
            addr: config.listen,
            source,
        })?;

        let (shutdown, signal) = watch::channel(false);
        let egress = engine.egress().clone();
        let feed = Arc::clone(engine.feed());
        let router = app(AppState::new(Arc::clone(&engine), tokens)
            .with_trusted_proxies(config.trusted_proxies.clone())
            .with_faults(ports.routes)
            .with_authorities(authorities));
        let connections =
            crate::serve::Connections::new(config.connections, config.trusted_proxies.clone());
        let server = tokio::spawn(crate::serve::serve(
            listener,
            router,
            config.connections,
            Arc::clone(&connections),
            signal.clone(),
        ));
        let deliveries = (!config.event_webhooks.is_empty()).then(|| {
            for hook in &config.event_webhooks {
                tracing::info!(tenant = %hook.tenant, url = %hook.url, "event webhook subscribed");
            }
            tokio::spawn(Arc::new(deliveries).run(config.tick, signal.clone()))
        });
        let scheduler = Arc::new(Scheduler::new(engine));
        let scheduler = tokio::spawn(scheduler.run(clock, config.tick, SHUTDOWN_GRACE, signal));
        tracing::info!(%addr, db = %config.db, seams = config.conformance_seams, "goalpost-host listening");
        Ok(RunningHost {
            addr,
            shutdown,
            server,
            scheduler,
            deliveries,
            egress,
            feed,
            connections,
        })
    }

    /// Client connections open now.
    pub fn open_connections(&self) -> usize {
        self.connections.open()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Lets webhook calls reach `entry` from now on (an embedding that
    /// learns its receiver's address after start, like the suite's
    /// callback).
    pub fn allow_egress(&self, entry: AllowEntry) {
        self.egress.allow(entry);
    }

    /// The live event feed (how many streams a tenant holds open).
    pub fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }

    /// `http://IP:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting connections, lets requests in flight finish, stops
    /// the scheduler and waits for both.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        self.feed.close();
        match self.server.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::error!(%error, "server failed"),
            Err(error) => tracing::error!(%error, "server task failed"),
        }
        if let Err(error) = self.scheduler.await {
            tracing::error!(%error, "scheduler task failed");
        }
        if let Some(deliveries) = self.deliveries {
            if let Err(error) = deliveries.await {
                tracing::error!(%error, "event webhook task failed");
            }
        }
    }
}

/// Refuses event webhooks the host could never serve: a tenant no token
/// belongs to, a second URL for one tenant, or a URL the egress policy
/// denies (names are judged again, by what they resolve to, on every
/// POST).
fn check_event_webhooks(config: &Config, pairs: &[(String, String)]) -> Result<(), HostError> {
    check_subscriptions(&config.event_webhooks, |tenant| {
        pairs.iter().any(|(_, known)| known == tenant.as_str())
    })
    .map_err(|error| HostError::EventWebhook(error.to_string()))?;
    let policy = EgressPolicy::new(config.webhook_allow.clone());
    for hook in &config.event_webhooks {
        policy.check_url(&hook.url).map_err(|denied| {
            HostError::EventWebhook(format!(
                "--event-webhook {}: {denied} (allow it with --webhook-allow)",
                hook
            ))
        })?;
    }
    Ok(())
}
