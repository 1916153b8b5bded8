//! `goalpost doctor`: before a first run, what a host can be judged on and
//! what a run would conclude. It reads discovery and probes the goals
//! collection with reads only (one goal is created, and abandoned, only
//! with `--probe-write`, which also probes the seams discovery advertises),
//! gates every scenario as a run would, and predicts per profile the
//! verdict of a run whose every check holds: certified, and the scope it
//! would cover; or why not (a minimum scope not met, a second token
//! missing, a seam advertised but absent), with the PROFILE.md section
//! that tells how to add what is missing. The prediction is the run's own
//! rules ([`ledger::predict`] and [`ledger::summarize`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use goalpost_schemas::Schemas;
use serde_json::{json, Value};

use crate::error::RunError;
use crate::http::{Exchange, Http, Outgoing, OutgoingBody, DEFAULT_BODY_CAP};
use crate::model::Scenario;
use crate::report::legend::PROFILE_DOCUMENT;
use crate::run::discovery::{self, Capabilities, Discovery};
use crate::run::gate::{every_option, gate};
use crate::run::ledger::{self, Disposition, ProfileSummary};
use crate::run::loader::Catalog;
use crate::run::outcome::SkipReason;
use crate::run::scope::{self, Offer, Status};
use crate::start::StartError;

/// What `doctor` is pointed at.
#[derive(Debug, Clone)]
pub struct DoctorConfig {
    /// Base URL, without a trailing slash.
    pub base_url: String,
    pub token_a: String,
    pub token_b: Option<String>,
    /// `--base-path`: the goals collection, over what discovery says.
    pub base_path: Option<String>,
    /// `--probe-write`: create one goal and abandon it.
    pub probe_write: bool,
    pub timeout_scale: f64,
}

/// One request doctor made and what it concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `GET /v1/host/sample/goals (tenant A)`.
    pub what: String,
    /// `None`: as the profile says; else what is wrong.
    pub problem: Option<String>,
    /// `PROFILE.md#<anchor>`: the section the answer is judged by.
    pub section: String,
    /// Something worth knowing that is no failure of the host: data that
    /// was there before doctor came, an optional view not served.
    pub note: Option<String>,
    /// The seam this probe called, when it probed one the host advertises:
    /// a problem here means the seam is advertised but absent.
    pub seam: Option<String>,
}

/// Something the host lacks that a profile's scenarios need.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Missing {
    /// No `agents.goals` in discovery.
    Goals,
    /// A `conformanceSeams.goals` flag that is not `true`.
    Seam(String),
    /// A continuation mode not in `agents.goals.continuation`.
    Mode(String),
    /// No `--token-b`: a run option, not the host.
    SecondTenant,
    /// One endpoint where the scenario needs several of one deployment
    /// (`goalpost run --host` once per replica): a run option.
    Endpoints,
}

impl Missing {
    pub fn describe(&self) -> String {
        match self {
            Missing::Goals => "agents.goals is not advertised".to_string(),
            Missing::Seam(seam) => format!("seam `{seam}` is not in conformanceSeams.goals"),
            Missing::Mode(mode) => format!(
                "continuation mode `{mode}` is not in agents.goals.continuation (a legal choice: add it only if the host offers it)"
            ),
            Missing::SecondTenant => "no --token-b (a second tenant's token)".to_string(),
            Missing::Endpoints => "one endpoint: needs two or more endpoints of one deployment (goalpost run --host once per replica)".to_string(),
        }
    }

    /// The PROFILE.md section that says how to add it.
    pub fn section(&self) -> String {
        let anchor = match self {
            Missing::Goals => "core.discovery.shape".to_string(),
            Missing::Seam(seam) => format!("seam-{seam}"),
            Missing::Mode(_) => "core.discovery.shape".to_string(),
            Missing::SecondTenant => "skip-needs-second-tenant".to_string(),
            Missing::Endpoints => "skip-needs-endpoints".to_string(),
        };
        format!("{PROFILE_DOCUMENT}#{anchor}")
    }

    /// Whether it makes doctor exit 1: something the host must add to be
    /// judged. A continuation mode is not (any non-empty subset is a legal
    /// choice), nor is a run option like `--token-b`.
    pub fn blocks(&self) -> bool {
        matches!(self, Missing::Goals | Missing::Seam(_))
    }
}

/// Per profile: how many scenarios a run could attempt, and why not the rest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Readiness {
    pub profile: String,
    pub scenarios: usize,
    pub attemptable: usize,
    /// Skipped because the host made another legal choice (the other judge,
    /// the other `requiresBounds`): never missing, never blocking.
    pub other_choice: usize,
    /// What is missing, and how many scenarios each keeps out.
    pub missing: BTreeMap<Missing, usize>,
}

impl Readiness {
    pub fn verdict(&self) -> &'static str {
        if self.attemptable + self.other_choice == self.scenarios {
            "ready"
        } else if self.attemptable == 0 {
            "cannot attempt"
        } else {
            "partly"
        }
    }
}

/// What a run would conclude of one profile, if every check it makes
/// holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    pub profile: String,
    /// The verdict (`status`, `reason`) and the scope, as a run's report
    /// would give them.
    pub summary: ProfileSummary,
    /// Why it cannot be certified although attempted, one reason a line.
    pub blockers: Vec<String>,
}

impl Prediction {
    /// `would be certified — judge verifier; modes manual`, `not attempted
    /// — needs ...`, `cannot be certified — ...`.
    pub fn line(&self) -> String {
        let summary = &self.summary;
        match summary.status {
            Status::Certified => format!("would be certified — {}", summary.scope),
            Status::NotAttempted => format!(
                "not attempted — {}",
                summary.reason.as_deref().unwrap_or_default()
            ),
            Status::NotCertified if self.blockers.is_empty() => format!(
                "cannot be certified — {}",
                summary.reason.as_deref().unwrap_or_default()
            ),
            Status::NotCertified => {
                format!("cannot be certified — {}", self.blockers.join("; "))
            }
            Status::OptedOut => "opted out".to_string(),
        }
    }
}

/// Everything doctor found.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub base_url: String,
    pub discovery_status: u16,
    pub capabilities: Capabilities,
    pub probes: Vec<Probe>,
    pub profiles: Vec<Readiness>,
    /// Per profile, in the suite's order: what a run would conclude.
    pub predictions: Vec<Prediction>,
}

impl Diagnosis {
    /// 0: every probe answered as the profile says and nothing the host
    /// lacks keeps a scenario out; 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        let probes_ok = self.probes.iter().all(|probe| probe.problem.is_none());
        let complete = self
            .profiles
            .iter()
            .all(|profile| profile.missing.keys().all(|missing| !missing.blocks()));
        u8::from(!(probes_ok && complete))
    }
}

/// Which needs of `scenario` the host or the command line does not meet.
/// Empty for a skipped scenario means it is about another legal choice of
/// the host (the other judge, the other `requiresBounds`).
fn unmet(scenario: &Scenario, capabilities: &Capabilities, second_tenant: bool) -> Vec<Missing> {
    let needs = &scenario.needs;
    let mut missing = Vec::new();
    if !capabilities.goals {
        missing.push(Missing::Goals);
    }
    for mode in &needs.continuation {
        if !capabilities.continuation.contains(mode) {
            missing.push(Missing::Mode(mode.clone()));
        }
    }
    for seam in &needs.seams {
        if !capabilities.seams.contains(seam) {
            missing.push(Missing::Seam(seam.clone()));
        }
    }
    if needs.endpoints >= 2 {
        missing.push(Missing::Endpoints);
    }
    if needs.tenants >= 2 && !second_tenant {
        missing.push(Missing::SecondTenant);
    }
    missing
}

/// Gates every scenario of the catalog as a run selecting every profile
/// would (every suite option counted as given: doctor judges the host).
pub fn readiness(
    catalog: &Catalog,
    capabilities: &Capabilities,
    second_tenant: bool,
) -> Vec<Readiness> {
    let selected = catalog.profiles();
    let options = every_option();
    let mut by_profile: BTreeMap<String, Readiness> = BTreeMap::new();
    for scenario in &catalog.scenarios {
        let entry = by_profile
            .entry(scenario.profile.clone())
            .or_insert_with(|| Readiness {
                profile: scenario.profile.clone(),
                ..Readiness::default()
            });
        entry.scenarios += 1;
        // Doctor reads one endpoint: the cluster profile's scenarios say
        // they need more (`--host` once per replica in `goalpost run`).
        let Some(reason) = gate(
            scenario,
            capabilities,
            &selected,
            second_tenant,
            &options,
            1,
        ) else {
            entry.attemptable += 1;
            continue;
        };
        let missing = unmet(scenario, capabilities, second_tenant);
        if missing.is_empty() && reason == SkipReason::NotAdvertised {
            entry.other_choice += 1;
        }
        for item in missing {
            *entry.missing.entry(item).or_default() += 1;
        }
    }
    let mut profiles: Vec<Readiness> = by_profile.into_values().collect();
    profiles.sort_by_key(|readiness| profile_rank(&readiness.profile));
    profiles
}

/// The suite's order of profiles (core first); unknown ones last.
fn profile_rank(profile: &str) -> usize {
    crate::cli::KNOWN_PROFILES
        .iter()
        .position(|known| *known == profile)
        .unwrap_or(usize::MAX)
}

/// What a run selecting every profile would conclude of each, every check
/// it makes holding, on a host whose advertised seams in `absent` answer as
/// if they were not there (seam → what the probe found): the requirements
/// a run of those seams would judge fail. Uses the run's own rules
/// ([`ledger::predict`], [`ledger::summarize`]), so the prediction cannot
/// drift from a run's verdict.
pub fn predict(
    catalog: &Catalog,
    offer: &Offer,
    absent: &BTreeMap<String, String>,
) -> Vec<Prediction> {
    let selected = catalog.profiles();
    // Every suite option counted as given, as `readiness` counts them.
    let options = every_option();
    let gated = |scenario: &Scenario| {
        gate(
            scenario,
            &offer.capabilities,
            &selected,
            offer.second_tenant,
            &options,
            offer.endpoints,
        )
    };
    let mut results = ledger::predict(&catalog.requirements, &catalog.scenarios, offer, gated);
    let mut broken_seams: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for result in &mut results {
        if result.disposition != Disposition::Pass {
            continue;
        }
        let seam = catalog
            .scenarios
            .iter()
            .filter(|scenario| result.scenarios.contains(&scenario.name))
            .flat_map(|scenario| &scenario.needs.seams)
            .find(|seam| absent.contains_key(*seam));
        if let Some(seam) = seam {
            result.disposition = Disposition::Fail;
            broken_seams
                .entry(result.requirement.profile.clone())
                .or_default()
                .insert(seam.clone());
        }
    }
    let summaries = ledger::summarize(&results, &selected, &selected, offer);
    let mut predictions: Vec<Prediction> = summaries
        .into_iter()
        .map(|(profile, summary)| {
            let mut blockers = Vec::new();
            if summary.status == Status::NotCertified {
                let mut skips: BTreeMap<SkipReason, Vec<&str>> = BTreeMap::new();
                for result in results.iter().filter(|r| {
                    r.requirement.profile == profile && ledger::is_blocking(&r.requirement)
                }) {
                    if let Disposition::Skip(reason) = result.disposition {
                        skips
                            .entry(reason)
                            .or_default()
                            .push(&result.requirement.id);
                    }
                }
                for (reason, ids) in skips {
                    blockers.push(format!(
                        "{} MUST requirement{} would skip `{reason}` ({}): {}",
                        ids.len(),
                        if ids.len() == 1 { "" } else { "s" },
                        skip_cause(reason),
                        shortened(&ids)
                    ));
                }
                for seam in broken_seams.get(&profile).into_iter().flatten() {
                    blockers.push(format!(
                        "the `{seam}` seam is advertised but absent ({}): its scenarios would fail",
                        absent.get(seam).map(String::as_str).unwrap_or_default()
                    ));
                }
            }
            Prediction {
                profile,
                summary,
                blockers,
            }
        })
        .collect();
    predictions.sort_by_key(|prediction| profile_rank(&prediction.profile));
    predictions
}

/// What a predicted skip comes from, in words.
fn skip_cause(reason: SkipReason) -> &'static str {
    match reason {
        SkipReason::NotAdvertised => {
            "the suite has no scenario for them on this host's choices of judge and modes"
        }
        SkipReason::SeamAbsent => "a seam they are judged through is not advertised",
        SkipReason::NeedsSecondTenant => "no second tenant's token: give --token-b",
        SkipReason::NeedsEndpoints => "one endpoint: give --host once per replica",
        SkipReason::NotConfigured => "a suite option is missing",
        SkipReason::OptedOut | SkipReason::Filtered => "left out of the run",
    }
}

/// Up to three ids, and how many more.
fn shortened(ids: &[&str]) -> String {
    const SHOWN: usize = 3;
    let mut text = ids
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        text.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    text
}

/// Runs doctor against a host and writes what it found; the exit code.
pub fn doctor(config: &DoctorConfig, catalog: &Catalog, out: impl Write) -> Result<u8, StartError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;
    let http = Http::new(config.timeout_scale, DEFAULT_BODY_CAP).map_err(StartError::Client)?;
    let schemas = Schemas::embedded()?;
    let diagnosis = runtime.block_on(diagnose(config, catalog, &http, &schemas))?;
    write(&diagnosis, out).map_err(|source| StartError::Report {
        path: "stdout".into(),
        source,
    })?;
    Ok(diagnosis.exit_code())
}

/// Fetches discovery and probes the host.
pub async fn diagnose(
    config: &DoctorConfig,
    catalog: &Catalog,
    http: &Http,
    schemas: &Schemas,
) -> Result<Diagnosis, StartError> {
    let (discovery, unreadable) = match discovery::fetch(http, &config.base_url).await {
        Ok(found) => (found, None),
        // Nobody is there: doctor cannot start.
        Err(error @ RunError::Connect { .. }) => return Err(StartError::Discovery(error)),
        Err(error) => (Discovery::unusable(), Some(error.to_string())),
    };
    let capabilities = discovery
        .capabilities
        .clone()
        .with_base_path(config.base_path.as_ref());
    let mut probes = vec![Probe {
        what: format!("GET {}", discovery::DISCOVERY_PATH),
        problem: match (discovery.status, &discovery.document) {
            _ if unreadable.is_some() => unreadable,
            (200, Some(document)) if document.pointer("/agents/goals").is_some() => None,
            (200, Some(_)) => Some("answered without agents.goals".to_string()),
            (status, _) => Some(format!("answered {status}, not 200 with a JSON document")),
        },
        section: format!("{PROFILE_DOCUMENT}#core.discovery.shape"),
        note: None,
        seam: None,
    }];
    let prober = Prober {
        http,
        schemas,
        base: format!("{}{}", config.base_url, capabilities.base_path),
    };
    probes.push(prober.list(&config.token_a, "tenant A").await);
    if let Some(token_b) = &config.token_b {
        probes.push(prober.list(token_b, "tenant B").await);
    }
    let unknown = format!("/{}", uuid::Uuid::new_v4());
    probes.push(
        prober
            .expect(
                Ask::get(unknown, Some(&config.token_a)),
                "an unknown id",
                (&[404], Some("error")),
                "core.lookup.unknown-id",
            )
            .await,
    );
    probes.push(
        prober
            .expect(
                Ask::get("", None),
                "no credential",
                (&[401], Some("error")),
                "core.auth.credential-required",
            )
            .await,
    );
    if config.probe_write {
        probes.extend(prober.write_probe(&config.token_a, &capabilities).await);
    }
    let offer = Offer {
        capabilities: capabilities.clone(),
        attention: scope::attention_advertised(discovery.document.as_ref()),
        second_tenant: config.token_b.is_some(),
        // Doctor reads one endpoint: `cluster` is predicted unattempted,
        // with what a run would need.
        endpoints: 1,
    };
    let absent: BTreeMap<String, String> = probes
        .iter()
        .filter_map(|probe| Some((probe.seam.clone()?, probe.problem.clone()?)))
        .collect();
    Ok(Diagnosis {
        base_url: config.base_url.clone(),
        discovery_status: discovery.status,
        profiles: readiness(catalog, &capabilities, config.token_b.is_some()),
        predictions: predict(catalog, &offer, &absent),
        capabilities,
        probes,
    })
}

struct Prober<'a> {
    http: &'a Http,
    schemas: &'a Schemas,
    /// The goals collection URL.
    base: String,
}

/// One request a probe sends: a method, a path below the goals
/// collection, a tenant's token if any and a JSON body if any.
struct Ask<'a> {
    method: &'static str,
    suffix: String,
    token: Option<&'a str>,
    body: Option<&'a Value>,
}

impl<'a> Ask<'a> {
    fn get(suffix: impl Into<String>, token: Option<&'a str>) -> Self {
        Self::new("GET", suffix.into(), token)
    }

    fn post(suffix: impl Into<String>, token: Option<&'a str>) -> Self {
        Self::new("POST", suffix.into(), token)
    }

    fn new(method: &'static str, suffix: String, token: Option<&'a str>) -> Self {
        Ask {
            method,
            suffix,
            token,
            body: None,
        }
    }
}

impl Prober<'_> {
    async fn send(&self, ask: &Ask<'_>) -> Result<Exchange, RunError> {
        let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
        if let Some(token) = ask.token {
            headers.push(("Authorization".to_string(), format!("Bearer {token}")));
        }
        self.http
            .send(&Outgoing {
                method: ask.method.to_string(),
                url: format!("{}{}", self.base, ask.suffix),
                headers,
                body: ask.body.map(|body| OutgoingBody {
                    bytes: body.to_string().into_bytes(),
                    content_type: "application/json".to_string(),
                }),
            })
            .await
    }

    /// Sends one request and checks its status and, if named, its schema.
    async fn expect(
        &self,
        ask: Ask<'_>,
        who: &str,
        (statuses, schema): (&[u16], Option<&str>),
        anchor: &str,
    ) -> Probe {
        let what = format!(
            "{} {}{} ({who})",
            ask.method,
            path_of(&self.base),
            ask.suffix
        );
        let problem = match self.send(&ask).await {
            Err(error) => Some(error.to_string()),
            Ok(exchange) => judge(&exchange, statuses, schema, self.schemas),
        };
        Probe {
            what,
            problem,
            section: format!("{PROFILE_DOCUMENT}#{anchor}"),
            note: None,
            seam: None,
        }
    }

    /// Lists a tenant's goals. The answer's shape is judged (`{goals: [...]}`
    /// and the rest of the list envelope); the goals in it are not: they are
    /// whatever the tenant holds, earlier runs' goals included, and a run
    /// judges only the goals it creates. Goals openwop's schema refuses are
    /// reported as a note, not as a failure.
    async fn list(&self, token: &str, who: &str) -> Probe {
        let what = format!("GET {} ({who})", path_of(&self.base));
        let section = format!("{PROFILE_DOCUMENT}#wire-list");
        let exchange = match self.send(&Ask::get("", Some(token))).await {
            Ok(exchange) => exchange,
            Err(error) => {
                return Probe {
                    what,
                    problem: Some(error.to_string()),
                    section,
                    note: None,
                    seam: None,
                }
            }
        };
        let (problem, note) = judge_list(&exchange, self.schemas);
        Probe {
            what,
            problem,
            section,
            note,
            seam: None,
        }
    }

    /// Creates one goal and abandons it.
    async fn write_probe(&self, token: &str, capabilities: &Capabilities) -> Vec<Probe> {
        let body = json!({
            "objective": "goalpost doctor probe",
            "completion": {"check": capabilities.judge.clone().unwrap_or_else(|| discovery::DEFAULT_JUDGE.to_string())},
            "continuation": {"mode": capabilities.mode()},
            "bounds": {"maxLoopIterations": 1}
        });
        let section = format!("{PROFILE_DOCUMENT}#core.create.returns-active-goal");
        let created = self
            .send(&Ask {
                body: Some(&body),
                ..Ask::post("", Some(token))
            })
            .await;
        let (create, id) = match created {
            Err(error) => (Some(error.to_string()), None),
            Ok(exchange) => {
                let problem = judge(&exchange, &[200, 201], Some("goal"), self.schemas);
                let id = exchange
                    .json()
                    .ok()
                    .and_then(|goal| goal.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                (problem, id)
            }
        };
        let mut probes = vec![Probe {
            what: format!("POST {} (create one goal)", path_of(&self.base)),
            problem: create,
            section,
            note: None,
            seam: None,
        }];
        if let Some(id) = id {
            probes.push(self.attention(token, &id).await);
            if capabilities.seams.contains("events") {
                for view in ["events", "evaluations"] {
                    probes.push(
                        self.seam(
                            "events",
                            Ask::get(format!("/{id}/{view}"), Some(token)),
                            &[200],
                            &format!("the probe goal's {view}"),
                        )
                        .await,
                    );
                }
            }
            probes.push(
                self.expect(
                    Ask::post(format!("/{id}/abandon"), Some(token)),
                    "abandon the probe goal",
                    (&[200, 204], None),
                    "core.lifecycle.abandon",
                )
                .await,
            );
            // On the abandoned goal, so it runs nothing: a served seam
            // refuses it with 409 (behavior.terminal.continue-refused).
            if capabilities.seams.contains("continue") {
                probes.push(
                    self.seam(
                        "continue",
                        Ask::post(format!("/{id}/continue"), Some(token)),
                        &[409],
                        "continue the abandoned probe goal",
                    )
                    .await,
                );
            }
        }
        probes
    }

    /// Calls a seam discovery advertises: an answer other than `statuses`
    /// means the seam is advertised but absent (PROFILE.md "Advertising the
    /// seams": a route that answers 404, 405 or 501 breaks the promise).
    async fn seam(&self, seam: &str, ask: Ask<'_>, statuses: &[u16], who: &str) -> Probe {
        let mut probe = self
            .expect(ask, who, (statuses, None), &format!("seam-{seam}"))
            .await;
        probe.seam = Some(seam.to_string());
        probe
    }
}

impl Prober<'_> {
    /// Reads the attention view of the probe goal. RFC 0097 defines no such
    /// view, so its absence is a note, not a failure: `core` reads it only
    /// to prove `core.pause.resume-attention`, a SHOULD.
    async fn attention(&self, token: &str, id: &str) -> Probe {
        let mut probe = self
            .expect(
                Ask::get(format!("/{id}/attention"), Some(token)),
                "the probe goal's attention view",
                (&[200], Some("attention")),
                "seam-attention",
            )
            .await;
        if let Some(problem) = probe.problem.take() {
            probe.note = Some(format!(
                "not served as PROFILE.md describes ({problem}): \
                 core.pause.resume-attention (a SHOULD) will end advisory"
            ));
        }
        probe
    }
}

/// A list answer's problem (its status, or its envelope against the
/// `goal-list` schema with the goals left out) and a note on goals in it
/// openwop's goal schema refuses.
fn judge_list(exchange: &Exchange, schemas: &Schemas) -> (Option<String>, Option<String>) {
    if let Some(problem) = judge(exchange, &[200], None, schemas) {
        return (Some(problem), None);
    }
    let mut list = match exchange.json() {
        Ok(value) => value.clone(),
        Err(error) => return (Some(error.to_string()), None),
    };
    let goals = match list.get_mut("goals").map(Value::take) {
        Some(Value::Array(goals)) => goals,
        _ => return (Some("the body has no `goals` array".to_string()), None),
    };
    if let Some(object) = list.as_object_mut() {
        object.insert("goals".to_string(), Value::Array(Vec::new()));
    }
    if let Err(violations) = schemas.validate("goal-list", &list) {
        let first = violations
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        return (
            Some(format!(
                "the list (goals left out) does not match the `goal-list` schema: {first}"
            )),
            None,
        );
    }
    let refused: Vec<String> = goals
        .iter()
        .filter_map(|goal| {
            let violations = schemas.validate("goal", goal).err()?;
            let id = goal.get("id").and_then(Value::as_str).unwrap_or("(no id)");
            let first = violations
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            Some(format!("{id}: {first}"))
        })
        .collect();
    let note = refused.first().map(|first| {
        format!(
            "{} of {} goals this tenant already holds do not match openwop's goal schema \
             (first: {first}); not judged here: a run judges only the goals it creates",
            refused.len(),
            goals.len()
        )
    });
    (None, note)
}

/// The path of a URL, for printing.
fn path_of(url: &str) -> &str {
    url.split_once("//").map_or(url, |(_, rest)| {
        rest.find('/').map_or("/", |slash| &rest[slash..])
    })
}

fn judge(
    exchange: &Exchange,
    statuses: &[u16],
    schema: Option<&str>,
    schemas: &Schemas,
) -> Option<String> {
    if !statuses.contains(&exchange.status) {
        let wanted: Vec<String> = statuses.iter().map(u16::to_string).collect();
        return Some(format!(
            "answered {}, expected {}: {}",
            exchange.status,
            wanted.join(" or "),
            exchange.excerpt()
        ));
    }
    let schema = schema?;
    let value = match exchange.json() {
        Ok(value) => value,
        Err(error) => return Some(error.to_string()),
    };
    schemas.validate(schema, value).err().map(|violations| {
        let first = violations
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        format!("the body does not match the `{schema}` schema: {first}")
    })
}

/// The human-readable diagnosis.
pub fn write(diagnosis: &Diagnosis, mut out: impl Write) -> io::Result<()> {
    let caps = &diagnosis.capabilities;
    writeln!(out, "goalpost doctor: {}", diagnosis.base_url)?;
    writeln!(out)?;
    writeln!(
        out,
        "Advertised (discovery answered {}):",
        diagnosis.discovery_status
    )?;
    let or_none = |items: &BTreeSet<String>| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    writeln!(
        out,
        "  agents.goals: {}",
        if caps.goals { "yes" } else { "no" }
    )?;
    writeln!(out, "  judge: {}", caps.judge.as_deref().unwrap_or("none"))?;
    writeln!(out, "  continuation modes: {}", or_none(&caps.continuation))?;
    writeln!(out, "  requiresBounds: {}", caps.requires_bounds)?;
    writeln!(
        out,
        "  reported runs (manual goals): {}",
        if caps.reported_runs.contains("manual") {
            "yes"
        } else {
            "no"
        }
    )?;
    writeln!(
        out,
        "  egress policy (webhookEgress.internal denied): {}",
        if caps.egress_denies_internal {
            "yes"
        } else {
            "no"
        }
    )?;
    writeln!(out, "  conformance seams: {}", or_none(&caps.seams))?;
    writeln!(out, "  goals collection: {}", caps.base_path)?;
    writeln!(out)?;
    writeln!(out, "Probes (reads only unless --probe-write):")?;
    for probe in &diagnosis.probes {
        match (&probe.problem, &probe.note) {
            (None, None) => writeln!(out, "  ok    {}", probe.what)?,
            (None, Some(note)) => writeln!(
                out,
                "  note  {}: {note} (see {})",
                probe.what, probe.section
            )?,
            (Some(problem), _) => writeln!(
                out,
                "  WRONG {}: {problem} (see {})",
                probe.what, probe.section
            )?,
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "Profiles (what `goalpost run` would conclude here, if every check it makes holds):"
    )?;
    let seams_probed = diagnosis.probes.iter().any(|probe| probe.seam.is_some());
    if !caps.seams.is_empty() && !seams_probed {
        writeln!(
            out,
            "  (the advertised seams are taken at their word: --probe-write calls `continue` and `events`)"
        )?;
    }
    let readiness: BTreeMap<&str, &Readiness> = diagnosis
        .profiles
        .iter()
        .map(|profile| (profile.profile.as_str(), profile))
        .collect();
    for prediction in &diagnosis.predictions {
        let with = if prediction.profile == "strict" {
            " (with --strict)"
        } else {
            ""
        };
        writeln!(out, "  {}: {}{with}", prediction.profile, prediction.line())?;
        let Some(profile) = readiness.get(prediction.profile.as_str()) else {
            continue;
        };
        writeln!(
            out,
            "    {}: {} of {} scenarios can be attempted{}",
            profile.verdict(),
            profile.attemptable,
            profile.scenarios,
            if profile.other_choice > 0 {
                format!(
                    " ({} are for another legal choice of judge, modes or requiresBounds)",
                    profile.other_choice
                )
            } else {
                String::new()
            }
        )?;
        for (missing, count) in &profile.missing {
            if *missing == Missing::Endpoints {
                // Not the host's to add: doctor reads one endpoint.
                writeln!(
                    out,
                    "    run option: {} ({count} scenarios); see: {}",
                    missing.describe(),
                    missing.section()
                )?;
                continue;
            }
            writeln!(
                out,
                "    missing: {} ({count} scenarios); implement: {}",
                missing.describe(),
                missing.section()
            )?;
        }
    }
    let code = diagnosis.exit_code();
    let certifiable: Vec<&str> = diagnosis
        .predictions
        .iter()
        .filter(|p| p.summary.status == Status::Certified && p.profile != "strict")
        .map(|p| p.profile.as_str())
        .collect();
    let unattempted: Vec<String> = diagnosis
        .predictions
        .iter()
        .filter(|p| p.summary.status == Status::NotAttempted)
        .map(|p| p.profile.clone())
        .collect();
    writeln!(out)?;
    if code == 0 {
        writeln!(
            out,
            "Nothing missing or wrong. A run would certify: {}{}.",
            if certifiable.is_empty() {
                "nothing".to_string()
            } else {
                certifiable.join(", ")
            },
            if unattempted.is_empty() {
                String::new()
            } else {
                format!(
                    "; it would not attempt {} (each line says what it needs)",
                    unattempted.join(", ")
                )
            }
        )?;
    } else {
        writeln!(
            out,
            "Something is missing or answered wrong: each line above names the PROFILE.md section to implement."
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
