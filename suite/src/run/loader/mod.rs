//! Loading `scenarios/`: the requirement registry and every
//! `<profile>/<name>.json`, validated against their schemas, parsed into the
//! typed model and cross-checked, so that a broken scenario stops the run
//! before any request is sent.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use goalpost_schemas::Schemas;
use serde::Deserialize;
use serde_json::Value;

use crate::model::{
    Action, Assertion, Body, Capability, Capture, ClockFormat, CompareOp, Expect, LengthOp, Needs,
    Parallel, Predicate, Principal, Repeat, Request, RequestStep, Requirement, Scenario,
    StatusMatch, Step, Target, When,
};
use crate::run::outcome::VIOLATIONS_SHOWN;
use crate::run::scripted_judge;
use crate::template::{names_in_str, names_in_value, BUILTINS};

mod mock;
mod request;

pub const REQUIREMENTS_FILE: &str = "requirements.json";

/// Everything under `scenarios/`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub requirements: Vec<Requirement>,
    /// Sorted by name.
    pub scenarios: Vec<Scenario>,
}

impl Catalog {
    /// Profiles that have a scenario or a requirement, sorted.
    pub fn profiles(&self) -> BTreeSet<String> {
        self.scenarios
            .iter()
            .map(|scenario| scenario.profile.clone())
            .chain(self.requirements.iter().map(|req| req.profile.clone()))
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not JSON: {message}", path.display())]
    NotJson { path: PathBuf, message: String },
    #[error("{}: invalid at {}: {message}", path.display(), show_pointer(pointer))]
    Invalid {
        path: PathBuf,
        pointer: String,
        message: String,
    },
    #[error("no scenario files matched in {} (profiles: {profiles})", dir.display())]
    NoScenarios { dir: PathBuf, profiles: String },
    #[error("{}: {} names unknown requirement `{id}`", path.display(), show_pointer(pointer))]
    UnknownRequirement {
        path: PathBuf,
        pointer: String,
        id: String,
    },
    #[error("requirement `{id}` is named by no scenario")]
    Unproven { id: String },
    #[error(
        "{}: {} names `{id}`, which names {capability} in its capability, but the scenario does not need it: add it to `needs`, so the scenario runs only where the requirement applies and can be judged",
        path.display(), show_pointer(pointer)
    )]
    CapabilityUnneeded {
        path: PathBuf,
        pointer: String,
        id: String,
        capability: Capability,
    },
}

/// The capabilities `requirement` names that `scenario` does not need
/// (PROFILE.md "Capabilities"): a scenario that proves a requirement must
/// need every feature and run need it names, so that it never runs where
/// the requirement does not apply or cannot be judged, and a
/// `not-applicable` requirement never hides a result.
pub fn capability_gaps(requirement: &Requirement, scenario: &Scenario) -> Vec<Capability> {
    let needs = &scenario.needs;
    requirement
        .capability
        .iter()
        .copied()
        .filter(|capability| match *capability {
            Capability::Mode(mode) => !needs.continuation.iter().any(|m| m == mode),
            Capability::Judge(judge) => needs.judge.as_deref() != Some(judge),
            Capability::ReportedRuns => !needs.reported_runs,
            Capability::EgressPolicy => !needs.egress_policy,
            Capability::RequiresBounds => needs.requires_bounds != Some(true),
            Capability::Attention => !needs.attention,
            Capability::HostEvents(surface) => needs.host_events.as_deref() != Some(surface),
            Capability::Seam(seam) => !needs.seams.iter().any(|s| s == seam),
            Capability::SecondTenant => needs.tenants < 2,
            Capability::Endpoints => needs.endpoints < 2,
        })
        .collect()
}

/// Refuses a step's first header assertion and first header capture, for
/// steps with no single answer to take headers from; the messages say what
/// to read instead.
fn no_headers(
    path: &Path,
    pointer: &str,
    (expect, capture): (&Expect, &BTreeMap<String, Capture>),
    (assert_instead, capture_instead): (&str, &str),
) -> Result<(), LoadError> {
    if let Some(assertion) = expect
        .assertions
        .iter()
        .find(|a| matches!(a.target, Target::Header(_)))
    {
        return Err(invalid(path, assertion.pointer.clone(), assert_instead));
    }
    match capture
        .iter()
        .find(|(_, source)| matches!(source, Capture::Header(_)))
    {
        Some((name, _)) => Err(invalid(
            path,
            format!("{pointer}/capture/{name}"),
            capture_instead,
        )),
        None => Ok(()),
    }
}

fn show_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

fn invalid(path: &Path, pointer: impl Into<String>, message: impl fmt::Display) -> LoadError {
    LoadError::Invalid {
        path: path.to_path_buf(),
        pointer: pointer.into(),
        message: message.to_string(),
    }
}

/// Loads and checks the whole folder.
pub fn load(dir: &Path, schemas: &Schemas) -> Result<Catalog, LoadError> {
    let registry_path = dir.join(REQUIREMENTS_FILE);
    let registry = read_json(&registry_path)?;
    let mut files = Vec::new();
    for (profile, path) in scenario_files(dir)? {
        let value = read_json(&path)?;
        files.push((profile, path, value));
    }
    assemble(dir, (&registry_path, registry), files, schemas)
}

/// Loads and checks the scenarios embedded in this binary
/// ([`crate::embedded`]), named `scenarios/<profile>/<file>` in messages.
pub fn load_embedded(schemas: &Schemas) -> Result<Catalog, LoadError> {
    let dir = Path::new(crate::embedded::ROOT);
    let parse = |relative: &str, text: &str| {
        let path = dir.join(relative);
        parse_json(&path, text).map(|value| (path, value))
    };
    let text = crate::embedded::file(REQUIREMENTS_FILE).ok_or_else(|| LoadError::Read {
        path: dir.join(REQUIREMENTS_FILE),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "not embedded"),
    })?;
    let registry = parse(REQUIREMENTS_FILE, text)?;
    let mut files = Vec::new();
    for (relative, text) in crate::embedded::FILES {
        // The same files a folder gives: `<profile>/<name>.json`, one level.
        let Some((profile, name)) = relative.split_once('/') else {
            continue;
        };
        if name.contains('/') {
            continue;
        }
        let (path, value) = parse(relative, text)?;
        files.push((profile.to_string(), path, value));
    }
    assemble(dir, (&registry.0, registry.1), files, schemas)
}

fn assemble(
    dir: &Path,
    (registry_path, registry): (&Path, Value),
    files: Vec<(String, PathBuf, Value)>,
    schemas: &Schemas,
) -> Result<Catalog, LoadError> {
    let requirements = requirements_from(registry_path, registry, schemas)?;
    let mut scenarios = Vec::new();
    for (profile, path, value) in files {
        scenarios.push(scenario_from(&path, value, &profile, schemas)?);
    }
    if scenarios.is_empty() {
        return Err(LoadError::NoScenarios {
            dir: dir.to_path_buf(),
            profiles: "all".to_string(),
        });
    }
    scenarios.sort_by(|a, b| a.name.cmp(&b.name));
    cross_check(&requirements, &scenarios)?;
    for scenario in &mut scenarios {
        scenario.set_levels(&requirements);
    }
    Ok(Catalog {
        requirements,
        scenarios,
    })
}

/// A file as JSON; `Read` or `NotJson` when it is neither.
pub fn read_json(path: &Path) -> Result<Value, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_json(path, &text)
}

fn parse_json(path: &Path, text: &str) -> Result<Value, LoadError> {
    serde_json::from_str(text).map_err(|error| LoadError::NotJson {
        path: path.to_path_buf(),
        message: error.to_string(),
    })
}

fn validate(path: &Path, schema: &str, value: &Value, schemas: &Schemas) -> Result<(), LoadError> {
    let Err(violations) = schemas.validate(schema, value) else {
        return Ok(());
    };
    let first = violations
        .first()
        .map(|v| v.pointer.clone())
        .unwrap_or_default();
    let mut message: Vec<String> = violations
        .iter()
        .take(VIOLATIONS_SHOWN)
        .map(ToString::to_string)
        .collect();
    if violations.len() > VIOLATIONS_SHOWN {
        message.push(format!("and {} more", violations.len() - VIOLATIONS_SHOWN));
    }
    Err(invalid(
        path,
        first,
        format!(
            "does not match the `{schema}` schema: {}",
            message.join("; ")
        ),
    ))
}

/// `(profile, file)` for every `<profile>/*.json`, sorted: the files a run
/// loads and `lint` checks. Fails only when a folder cannot be read.
pub fn scenario_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, LoadError> {
    let read_dir = |path: &Path| {
        std::fs::read_dir(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut files = Vec::new();
    for entry in read_dir(dir)? {
        let entry = entry.map_err(|source| LoadError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let folder = entry.path();
        if !folder.is_dir() {
            continue;
        }
        let Some(profile) = folder
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        for file in read_dir(&folder)? {
            let file = file
                .map_err(|source| LoadError::Read {
                    path: folder.clone(),
                    source,
                })?
                .path();
            if file.is_file() && file.extension().is_some_and(|ext| ext == "json") {
                files.push((profile.clone(), file));
            }
        }
    }
    files.sort();
    Ok(files)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistry {
    requirements: Vec<Requirement>,
    #[serde(default, rename = "$schema")]
    _schema: Option<String>,
    #[serde(default, rename = "description")]
    _description: Option<String>,
    /// The PROFILE.md version; the registry schema checks its form.
    #[serde(default, rename = "profileVersion")]
    _profile_version: Option<String>,
}

/// `profileVersion` of the requirements registry a run judges by: the
/// scenarios folder's, or the embedded one when no folder is given. `None`
/// when it names none (an ad-hoc folder, not a published profile).
pub fn profile_version(scenarios_dir: Option<&Path>) -> Option<String> {
    let text = match scenarios_dir {
        Some(dir) => std::fs::read_to_string(dir.join(REQUIREMENTS_FILE)).ok()?,
        None => crate::embedded::file(REQUIREMENTS_FILE)?.to_string(),
    };
    let document: Value = serde_json::from_str(&text).ok()?;
    document.get("profileVersion")?.as_str().map(str::to_string)
}

pub fn load_requirements(path: &Path, schemas: &Schemas) -> Result<Vec<Requirement>, LoadError> {
    requirements_from(path, read_json(path)?, schemas)
}

fn requirements_from(
    path: &Path,
    value: Value,
    schemas: &Schemas,
) -> Result<Vec<Requirement>, LoadError> {
    validate(path, "requirements", &value, schemas)?;
    let registry: RawRegistry = serde_json::from_value(value).map_err(|e| invalid(path, "", e))?;
    let mut seen = BTreeSet::new();
    for (index, requirement) in registry.requirements.iter().enumerate() {
        let pointer = format!("/requirements/{index}/id");
        if !seen.insert(requirement.id.as_str()) {
            return Err(invalid(
                path,
                pointer,
                format!("duplicate id `{}`", requirement.id),
            ));
        }
        if !requirement
            .id
            .starts_with(&format!("{}.", requirement.profile))
        {
            return Err(invalid(
                path,
                pointer,
                format!(
                    "id `{}` does not start with its profile `{}`",
                    requirement.id, requirement.profile
                ),
            ));
        }
    }
    Ok(registry.requirements)
}

fn cross_check(requirements: &[Requirement], scenarios: &[Scenario]) -> Result<(), LoadError> {
    let known: BTreeMap<&str, &Requirement> =
        requirements.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut named = BTreeSet::new();
    for scenario in scenarios {
        for (index, id) in scenario.requirements.iter().enumerate() {
            let Some(requirement) = known.get(id.as_str()) else {
                return Err(LoadError::UnknownRequirement {
                    path: scenario.path.clone(),
                    pointer: format!("/requirements/{index}"),
                    id: id.clone(),
                });
            };
            if let Some(capability) = capability_gaps(requirement, scenario).first() {
                return Err(LoadError::CapabilityUnneeded {
                    path: scenario.path.clone(),
                    pointer: format!("/requirements/{index}"),
                    id: id.clone(),
                    capability: *capability,
                });
            }
            named.insert(id.as_str());
        }
    }
    match requirements.iter().find(|r| !named.contains(r.id.as_str())) {
        Some(unproven) => Err(LoadError::Unproven {
            id: unproven.id.clone(),
        }),
        None => Ok(()),
    }
}

// ---- scenario files -------------------------------------------------------

/// `Some(value)` even for an explicit `null`, so `"equals": null` is a
/// predicate rather than a missing key.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    title: String,
    profile: String,
    requirements: Vec<String>,
    #[serde(default)]
    needs: RawNeeds,
    checks: u32,
    steps: Vec<Value>,
    mock: Option<Value>,
    #[serde(default)]
    observations: Vec<mock::RawObservation>,
    #[serde(default)]
    generate: BTreeMap<String, request::RawGenerate>,
    #[serde(default, rename = "$schema")]
    _schema: Option<String>,
    #[serde(default, rename = "description")]
    _description: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawNeeds {
    #[serde(default)]
    seams: Vec<String>,
    #[serde(default)]
    continuation: Vec<String>,
    #[serde(default)]
    tenants: Option<u8>,
    #[serde(default, rename = "requiresBounds")]
    requires_bounds: Option<bool>,
    #[serde(default)]
    judge: Option<String>,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default, rename = "egressPolicy")]
    egress_policy: bool,
    #[serde(default, rename = "reportedRuns")]
    reported_runs: bool,
    #[serde(default, rename = "hostEvents")]
    host_events: Option<String>,
    #[serde(default)]
    attention: bool,
    #[serde(default)]
    endpoints: Option<u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawStep {
    name: String,
    proves: Option<Vec<String>>,
    when: Option<RawWhen>,
    request: Option<RawRequest>,
    expect: Option<Value>,
    capture: Option<BTreeMap<String, RawCapture>>,
    poll: Option<RawPoll>,
    observe: Option<RawObserve>,
    quiet_ms: Option<u64>,
    why: Option<String>,
    mock_log: Option<mock::RawMockLog>,
    parallel: Option<request::RawParallel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWhen {
    step: String,
    status: RawWhenStatuses,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawWhenStatuses {
    One(RawWhenStatus),
    Many(Vec<RawWhenStatus>),
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum RawWhenStatus {
    Code(u16),
    Class(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRequest {
    method: String,
    path: String,
    #[serde(default, rename = "as")]
    principal: Option<RawPrincipal>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "present")]
    body: Option<Value>,
    raw_body: Option<String>,
    raw_body_base64: Option<String>,
    content_type: Option<String>,
    seam: Option<String>,
    endpoint: Option<u8>,
    stream_ms: Option<u64>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawPrincipal {
    A,
    B,
    Anonymous,
    Principal,
    #[serde(rename = "host-authority")]
    HostAuthority,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    status: Option<RawStatus>,
    schema: Option<String>,
    #[serde(default, rename = "assert")]
    assertions: Vec<Value>,
    #[serde(default)]
    schemas: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawStatus {
    One(u16),
    Many(Vec<u16>),
}

/// One key names the source; the schema admits exactly one.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum RawCapture {
    Pointer(String),
    Header(String),
    Clock(RawClock),
    Later(RawLater),
}

/// An instant `ms` after the step's final answer arrived, on one clock.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLater {
    clock: RawClock,
    ms: u64,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawClock {
    Ms,
    Rfc3339,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPoll {
    timeout_ms: u64,
    interval_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawObserve {
    for_ms: u64,
    interval_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAssertion {
    pointer: Option<String>,
    header: Option<String>,
    #[serde(rename = "where")]
    filter: Option<serde_json::Map<String, Value>>,
    map: Option<String>,
    proves: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    equals: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    not_equals: Option<Value>,
    one_of: Option<Vec<Value>>,
    exists: Option<bool>,
    absent: Option<bool>,
    gt: Option<Value>,
    gte: Option<Value>,
    lt: Option<Value>,
    lte: Option<Value>,
    length: Option<Value>,
    min_length: Option<Value>,
    max_length: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    contains: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    not_contains: Option<Value>,
    increasing: Option<bool>,
    within_ms: Option<RawWithin>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWithin {
    of: String,
    min: Option<Value>,
    max: Option<Value>,
}

fn parse_at<T: serde::de::DeserializeOwned>(
    path: &Path,
    pointer: &str,
    value: &Value,
) -> Result<T, LoadError> {
    T::deserialize(value).map_err(|error| invalid(path, pointer, error))
}

fn check_json_pointer(path: &Path, at: &str, pointer: &str) -> Result<(), LoadError> {
    if pointer.is_empty() || pointer.starts_with('/') {
        Ok(())
    } else {
        Err(invalid(
            path,
            at,
            format!("`{pointer}` is not a JSON pointer (it must be empty or start with `/`)"),
        ))
    }
}

/// Loads one scenario file found in the folder of `profile`.
pub fn load_scenario(path: &Path, profile: &str, schemas: &Schemas) -> Result<Scenario, LoadError> {
    scenario_from(path, read_json(path)?, profile, schemas)
}

fn scenario_from(
    path: &Path,
    value: Value,
    profile: &str,
    schemas: &Schemas,
) -> Result<Scenario, LoadError> {
    validate(path, "scenario", &value, schemas)?;
    let raw: RawScenario = parse_at(path, "", &value)?;
    if raw.profile != profile {
        return Err(invalid(
            path,
            "/profile",
            format!(
                "profile `{}` but the file is in the `{profile}` folder",
                raw.profile
            ),
        ));
    }
    let stem = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or_else(|| invalid(path, "", "file name is not UTF-8"))?;
    let needs = Needs {
        seams: raw.needs.seams,
        continuation: raw.needs.continuation,
        tenants: raw.needs.tenants.unwrap_or(1),
        requires_bounds: raw.needs.requires_bounds,
        judge: raw.needs.judge,
        options: raw.needs.options,
        egress_policy: raw.needs.egress_policy,
        reported_runs: raw.needs.reported_runs,
        attention: raw.needs.attention,
        host_events: raw.needs.host_events,
        endpoints: raw.needs.endpoints.unwrap_or(1),
    };
    let generated = request::generate(path, raw.generate)?;
    let mock = raw
        .mock
        .as_ref()
        .map(|block| mock::parse_mock(path, block, &needs))
        .transpose()?;
    let mut steps = Vec::with_capacity(raw.steps.len());
    for (index, step) in raw.steps.iter().enumerate() {
        let step = parse_step(path, index, step, &needs, &steps)?;
        steps.push(step);
    }
    let scenario = Scenario {
        name: format!("{profile}::{stem}"),
        profile: profile.to_string(),
        path: path.to_path_buf(),
        title: raw.title,
        requirements: raw.requirements,
        should: BTreeSet::new(),
        needs,
        checks: raw.checks,
        steps,
        mock,
        observations: raw
            .observations
            .into_iter()
            .map(mock::RawObservation::into_spec)
            .collect(),
        generated,
    };
    mock::check_mock_use(&scenario)?;
    check_variables(&scenario)?;
    check_proves(&scenario)?;
    // Refused now rather than when a host that judges itself is met.
    if scenario.needs.judge.as_deref() == Some(scripted_judge::SCRIPTED) {
        scripted_judge::through_seam(&scenario)
            .map_err(|refused| invalid(path, refused.pointer, refused.message))?;
    }
    for step in &scenario.steps {
        if let Action::Request(request) = &step.action {
            if let Some(schema) = &request.expect.schema {
                if !goalpost_schemas::NAMES.contains(&schema.as_str()) {
                    return Err(invalid(
                        path,
                        format!("{}/expect/schema", step.pointer),
                        format!("unknown schema `{schema}`"),
                    ));
                }
            }
            for (status, schema) in &request.expect.schemas {
                if !goalpost_schemas::NAMES.contains(&schema.as_str()) {
                    return Err(invalid(
                        path,
                        format!("{}/expect/schemas/{status}", step.pointer),
                        format!("unknown schema `{schema}`"),
                    ));
                }
            }
        }
    }
    Ok(scenario)
}

/// `earlier`: the scenario's steps before this one, which a `when` may read.
fn parse_step(
    path: &Path,
    index: usize,
    value: &Value,
    needs: &Needs,
    earlier: &[Step],
) -> Result<Step, LoadError> {
    let pointer = format!("/steps/{index}");
    let raw: RawStep = parse_at(path, &pointer, value)?;
    let when = raw
        .when
        .map(|when| parse_when(path, &format!("{pointer}/when"), when, earlier))
        .transpose()?;
    if when.is_some() {
        if raw.quiet_ms.is_some() {
            return Err(invalid(
                path,
                format!("{pointer}/when"),
                "a quiet step cannot be conditional: it waits for what later steps check",
            ));
        }
        if raw
            .capture
            .as_ref()
            .is_some_and(|capture| !capture.is_empty())
        {
            return Err(invalid(
                path,
                format!("{pointer}/capture"),
                "a step with `when` captures nothing: when it does not run, a later step would read a variable that was never set",
            ));
        }
    }
    // The schema (checked first) gives each kind of step its own fields
    // (a quiet step has no request, expect or proves; a mockLog step no
    // request or parallel), lets `poll` and `observe` exclude each other
    // and keeps intervals positive: what is left here is building the
    // model and the cross-checks a schema cannot express.
    let action = if let Some(ms) = raw.quiet_ms {
        Action::Quiet {
            ms,
            why: raw.why.unwrap_or_default(),
        }
    } else {
        let expect = match &raw.expect {
            Some(expect) => parse_expect(path, &format!("{pointer}/expect"), expect)?,
            None => Expect::default(),
        };
        let repeat = match (raw.poll, raw.observe) {
            (Some(poll), _) => Repeat::Poll {
                timeout_ms: poll.timeout_ms,
                interval_ms: poll.interval_ms,
            },
            (None, Some(observe)) => Repeat::Observe {
                for_ms: observe.for_ms,
                interval_ms: observe.interval_ms,
            },
            (None, None) => Repeat::Once,
        };
        let mut capture = BTreeMap::new();
        for (name, raw) in raw.capture.unwrap_or_default() {
            let at = format!("{pointer}/capture/{name}");
            let source = match raw {
                RawCapture::Pointer(json) => {
                    check_json_pointer(path, &at, &json)?;
                    Capture::Pointer(json)
                }
                RawCapture::Header(header) => Capture::Header(header),
                RawCapture::Clock(RawClock::Ms) => Capture::Clock(ClockFormat::Ms),
                RawCapture::Clock(RawClock::Rfc3339) => Capture::Clock(ClockFormat::Rfc3339),
                RawCapture::Later(RawLater { clock, ms }) => Capture::Later(
                    match clock {
                        RawClock::Ms => ClockFormat::Ms,
                        RawClock::Rfc3339 => ClockFormat::Rfc3339,
                    },
                    ms,
                ),
            };
            capture.insert(name, source);
        }
        match (raw.request, raw.mock_log) {
            (_, Some(window)) => {
                request::no_schemas(path, &pointer, &expect)?;
                mock::mock_step(path, &pointer, window, expect, capture, repeat)?
            }
            (Some(request), None) => {
                let request = parse_request(path, &format!("{pointer}/request"), request, needs)?;
                let parallel: Option<Parallel> = match raw.parallel {
                    Some(parallel) => {
                        Some(request::check(path, &pointer, parallel, &expect, &capture)?)
                    }
                    None => {
                        request::no_schemas(path, &pointer, &expect)?;
                        None
                    }
                };
                Action::Request(Box::new(RequestStep {
                    request,
                    expect,
                    capture,
                    repeat,
                    parallel,
                }))
            }
            (None, None) => {
                return Err(invalid(
                    path,
                    &pointer,
                    "a step needs `request`, `mockLog` or `quietMs`",
                ))
            }
        }
    };
    Ok(Step {
        name: raw.name,
        index,
        pointer,
        proves: raw.proves,
        when,
        action,
    })
}

/// A step's `when`, its step name resolved among `earlier` steps: the one
/// of that name, a request step sent once that always runs, so the status
/// it reads is one answer that is always there.
fn parse_when(
    path: &Path,
    pointer: &str,
    raw: RawWhen,
    earlier: &[Step],
) -> Result<When, LoadError> {
    let at_step = format!("{pointer}/step");
    let named: Vec<&Step> = earlier.iter().filter(|s| s.name == raw.step).collect();
    let read = match named.as_slice() {
        [] => {
            return Err(invalid(
                path,
                at_step,
                format!(
                    "no earlier step is named `{}`: a `when` reads the answer of a step before it",
                    raw.step
                ),
            ))
        }
        [one] => *one,
        many => {
            return Err(invalid(
                path,
                at_step,
                format!(
                    "{} earlier steps are named `{}` ({}): a `when` must name exactly one",
                    many.len(),
                    raw.step,
                    many.iter()
                        .map(|s| s.pointer.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        }
    };
    let refuse = |why: &str| {
        Err(invalid(
            path,
            at_step.clone(),
            format!("step `{}` ({}) {why}", raw.step, read.pointer),
        ))
    };
    match &read.action {
        Action::Request(request) if request.parallel.is_some() => {
            return refuse("is a parallel step: it has many answers, a `when` reads one status")
        }
        Action::Request(_) => {}
        Action::MockLog(_) => {
            return refuse("is a mockLog step: it sends nothing and has no status")
        }
        Action::Quiet { .. } => {
            return refuse("is a quiet step: it sends nothing and has no status")
        }
    }
    if read.when.is_some() {
        return refuse("has a `when` of its own: a `when` reads a step that always runs");
    }
    // Where each entry is in the file: `status` itself when it is one.
    let (raws, listed) = match raw.status {
        RawWhenStatuses::One(one) => (vec![one], false),
        RawWhenStatuses::Many(many) => (many, true),
    };
    if raws.is_empty() {
        return Err(invalid(
            path,
            format!("{pointer}/status"),
            "an empty status list matches nothing: the step would never run",
        ));
    }
    let mut status = Vec::with_capacity(raws.len());
    for (index, wanted) in raws.into_iter().enumerate() {
        let parsed = match &wanted {
            RawWhenStatus::Code(code) if (100..=599).contains(code) => {
                Some(StatusMatch::Code(*code))
            }
            RawWhenStatus::Class(class) => match class.as_bytes() {
                [digit @ b'1'..=b'5', b'x', b'x'] => {
                    Some(StatusMatch::Class(u16::from(digit - b'0')))
                }
                _ => None,
            },
            RawWhenStatus::Code(_) => None,
        };
        let Some(parsed) = parsed else {
            let shown = match wanted {
                RawWhenStatus::Code(code) => code.to_string(),
                RawWhenStatus::Class(class) => format!("\"{class}\""),
            };
            let at = if listed {
                format!("{pointer}/status/{index}")
            } else {
                format!("{pointer}/status")
            };
            return Err(invalid(
                path,
                at,
                format!("{shown} is neither a status (100..599) nor a class (\"1xx\"..\"5xx\")"),
            ));
        };
        status.push(parsed);
    }
    Ok(When {
        pointer: pointer.to_string(),
        step: read.index,
        step_name: read.name.clone(),
        status,
    })
}

fn parse_request(
    path: &Path,
    pointer: &str,
    raw: RawRequest,
    needs: &Needs,
) -> Result<Request, LoadError> {
    // The schema lets at most one of the three through.
    let body = match (raw.body, raw.raw_body, raw.raw_body_base64) {
        (Some(json), _, _) => Body::Json(json),
        (None, Some(text), _) => Body::Raw(text),
        (None, None, Some(encoded)) => Body::Bytes(request::decode_base64(
            path,
            &format!("{pointer}/rawBodyBase64"),
            &encoded,
        )?),
        (None, None, None) => Body::None,
    };
    if let Some(seam) = &raw.seam {
        if !needs.seams.contains(seam) {
            return Err(invalid(
                path,
                format!("{pointer}/seam"),
                format!("the request exercises seam `{seam}` but `needs.seams` does not list it"),
            ));
        }
    }
    if let Some(endpoint) = raw.endpoint {
        if endpoint == 0 || endpoint > needs.endpoints {
            return Err(invalid(
                path,
                format!("{pointer}/endpoint"),
                format!(
                    "the request goes to endpoint {endpoint} but `needs.endpoints` is {}",
                    needs.endpoints
                ),
            ));
        }
    }
    if matches!(raw.principal, Some(RawPrincipal::B)) && needs.tenants < 2 {
        return Err(invalid(
            path,
            format!("{pointer}/as"),
            "the request runs as tenant b but `needs.tenants` is not 2",
        ));
    }
    let authority = match raw.principal {
        Some(RawPrincipal::Principal) => Some(crate::run::gate::PRINCIPAL_TOKEN),
        Some(RawPrincipal::HostAuthority) => Some(crate::run::gate::HOST_AUTHORITY_TOKEN),
        _ => None,
    };
    if let Some(option) = authority {
        if !needs.options.iter().any(|needed| needed == option) {
            return Err(invalid(
                path,
                format!("{pointer}/as"),
                format!("the request runs with an authority credential but `needs.options` does not list `{option}`"),
            ));
        }
    }
    Ok(Request {
        method: raw.method,
        path: raw.path,
        principal: match raw.principal {
            None | Some(RawPrincipal::A) => Principal::A,
            Some(RawPrincipal::B) => Principal::B,
            Some(RawPrincipal::Anonymous) => Principal::Anonymous,
            Some(RawPrincipal::Principal) => Principal::PrincipalAuthority,
            Some(RawPrincipal::HostAuthority) => Principal::HostAuthority,
        },
        headers: raw.headers,
        body,
        content_type: raw.content_type,
        seam: raw.seam,
        endpoint: raw.endpoint,
        stream_ms: raw.stream_ms,
    })
}

fn parse_expect(path: &Path, pointer: &str, value: &Value) -> Result<Expect, LoadError> {
    let raw: RawExpect = parse_at(path, pointer, value)?;
    let status = match raw.status {
        None => Vec::new(),
        Some(RawStatus::One(code)) => vec![code],
        Some(RawStatus::Many(codes)) if codes.is_empty() => {
            return Err(invalid(
                path,
                format!("{pointer}/status"),
                "an empty status list accepts nothing",
            ))
        }
        Some(RawStatus::Many(codes)) => codes,
    };
    let mut assertions = Vec::with_capacity(raw.assertions.len());
    for (index, value) in raw.assertions.iter().enumerate() {
        assertions.push(parse_assertion(
            path,
            &format!("{pointer}/assert/{index}"),
            value,
        )?);
    }
    let mut schemas = BTreeMap::new();
    for (status, schema) in raw.schemas {
        let code = status
            .parse::<u16>()
            .ok()
            .filter(|code| (100..=599).contains(code) && status.len() == 3)
            .ok_or_else(|| {
                invalid(
                    path,
                    format!("{pointer}/schemas/{status}"),
                    format!("`{status}` is not an HTTP status"),
                )
            })?;
        schemas.insert(code, schema);
    }
    Ok(Expect {
        status,
        schema: raw.schema,
        assertions,
        schemas,
    })
}

fn parse_assertion(path: &Path, pointer: &str, value: &Value) -> Result<Assertion, LoadError> {
    let raw: RawAssertion = parse_at(path, pointer, value)?;
    let target = match (raw.pointer, raw.header) {
        (Some(json), None) => {
            check_json_pointer(path, pointer, &json)?;
            Target::Pointer(json)
        }
        (None, Some(header)) => Target::Header(header),
        _ => {
            return Err(invalid(
                path,
                pointer,
                "an assertion takes exactly one of `pointer` or `header`",
            ))
        }
    };
    let mut predicates = Vec::new();
    let mut push = |present: bool, predicate: Predicate| {
        if present {
            predicates.push(predicate)
        }
    };
    let flag = |name: &str, value: Option<bool>| match value {
        Some(false) => Err(invalid(
            path,
            format!("{pointer}/{name}"),
            format!("`{name}` only takes `true`"),
        )),
        other => Ok(other.is_some()),
    };
    push(
        raw.equals.is_some(),
        Predicate::Equals(raw.equals.clone().unwrap_or_default()),
    );
    push(
        raw.not_equals.is_some(),
        Predicate::NotEquals(raw.not_equals.clone().unwrap_or_default()),
    );
    push(
        raw.one_of.is_some(),
        Predicate::OneOf(raw.one_of.clone().unwrap_or_default()),
    );
    push(
        raw.exists.is_some(),
        Predicate::Exists(raw.exists.unwrap_or(true)),
    );
    push(flag("absent", raw.absent)?, Predicate::Absent);
    for (op, operand) in [
        (CompareOp::Gt, &raw.gt),
        (CompareOp::Gte, &raw.gte),
        (CompareOp::Lt, &raw.lt),
        (CompareOp::Lte, &raw.lte),
    ] {
        if let Some(operand) = operand {
            push(true, Predicate::Compare(op, operand.clone()));
        }
    }
    for (op, operand) in [
        (LengthOp::Exactly, &raw.length),
        (LengthOp::AtLeast, &raw.min_length),
        (LengthOp::AtMost, &raw.max_length),
    ] {
        if let Some(operand) = operand {
            push(true, Predicate::Length(op, operand.clone()));
        }
    }
    push(
        raw.contains.is_some(),
        Predicate::Contains(raw.contains.clone().unwrap_or_default()),
    );
    push(
        raw.not_contains.is_some(),
        Predicate::NotContains(raw.not_contains.clone().unwrap_or_default()),
    );
    push(flag("increasing", raw.increasing)?, Predicate::Increasing);
    if let Some(within) = raw.within_ms {
        push(
            true,
            Predicate::WithinMs {
                of: within.of,
                min: within.min,
                max: within.max,
            },
        );
    }
    if predicates.len() != 1 {
        return Err(invalid(
            path,
            pointer,
            format!(
                "an assertion takes exactly one predicate, found {}",
                predicates.len()
            ),
        ));
    }
    let mut filter = Vec::new();
    for (sub, wanted) in raw.filter.unwrap_or_default() {
        check_json_pointer(path, &format!("{pointer}/where"), &sub)?;
        filter.push((sub, wanted));
    }
    if let Some(map) = &raw.map {
        check_json_pointer(path, &format!("{pointer}/map"), map)?;
    }
    Ok(Assertion {
        pointer: pointer.to_string(),
        target,
        filter,
        map: raw.map,
        predicate: predicates.remove(0),
        proves: raw.proves,
    })
}

/// Every id a step or an assertion `proves` must be one the scenario
/// names: attribution may narrow what a check proves, never widen it.
fn check_proves(scenario: &Scenario) -> Result<(), LoadError> {
    let named: BTreeSet<&str> = scenario.requirements.iter().map(String::as_str).collect();
    let mut lists: Vec<(String, &[String])> = Vec::new();
    for step in &scenario.steps {
        if let Some(proves) = &step.proves {
            lists.push((format!("{}/proves", step.pointer), proves));
        }
        let expect = match &step.action {
            Action::Request(request) => &request.expect,
            Action::MockLog(mock) => &mock.expect,
            Action::Quiet { .. } => continue,
        };
        for assertion in &expect.assertions {
            if let Some(proves) = &assertion.proves {
                lists.push((format!("{}/proves", assertion.pointer), proves));
            }
        }
    }
    for (at, proves) in lists {
        let mut seen = BTreeSet::new();
        for (index, id) in proves.iter().enumerate() {
            if !named.contains(id.as_str()) {
                return Err(invalid(
                    &scenario.path,
                    format!("{at}/{index}"),
                    format!("proves `{id}`, which the scenario does not name in `requirements`"),
                ));
            }
            if !seen.insert(id.as_str()) {
                return Err(invalid(
                    &scenario.path,
                    format!("{at}/{index}"),
                    format!("names `{id}` twice"),
                ));
            }
        }
    }
    Ok(())
}

/// Every `{name}` a step uses must be a built-in or captured by an earlier
/// step, so an unknown variable is a load error rather than a run error.
fn check_variables(scenario: &Scenario) -> Result<(), LoadError> {
    let mut known: BTreeSet<String> = BUILTINS.iter().map(|name| name.to_string()).collect();
    known.extend(
        crate::run::discovery::VARIABLES
            .iter()
            .map(|name| name.to_string()),
    );
    known.extend(scenario.generated.keys().cloned());
    if scenario.mock.is_some() {
        known.extend(mock::MOCK_VARIABLES.iter().map(|n| n.to_string()));
    }
    mock::check_script_variables(scenario, &known)?;
    for step in &scenario.steps {
        let mut used: Vec<(String, &str)> = Vec::new();
        let (expect, capture) = match &step.action {
            Action::Quiet { .. } => continue,
            Action::Request(request) => {
                let req = &request.request;
                let at = format!("{}/request", step.pointer);
                used.extend(
                    names_in_str(&req.path)
                        .into_iter()
                        .map(|n| (format!("{at}/path"), n)),
                );
                for (header, value) in &req.headers {
                    used.extend(
                        names_in_str(value)
                            .into_iter()
                            .map(|n| (format!("{at}/headers/{header}"), n)),
                    );
                }
                match &req.body {
                    Body::Json(body) => used.extend(
                        names_in_value(body)
                            .into_iter()
                            .map(|n| (format!("{at}/body"), n)),
                    ),
                    Body::Raw(body) => used.extend(
                        names_in_str(body)
                            .into_iter()
                            .map(|n| (format!("{at}/rawBody"), n)),
                    ),
                    Body::None | Body::Bytes(_) => {}
                }
                if request.parallel.is_some() {
                    // Only the request itself differs per copy.
                    used.retain(|(_, name)| *name != request::INDEX_VARIABLE);
                }
                (&request.expect, &request.capture)
            }
            Action::MockLog(mock) => {
                used.extend(mock::window_names(&step.pointer, &mock.window));
                (&mock.expect, &mock.capture)
            }
        };
        for assertion in &expect.assertions {
            let here = assertion.pointer.clone();
            for (_, wanted) in &assertion.filter {
                used.extend(
                    names_in_value(wanted)
                        .into_iter()
                        .map(|n| (here.clone(), n)),
                );
            }
            let operands: Vec<&Value> = match &assertion.predicate {
                Predicate::Equals(v)
                | Predicate::NotEquals(v)
                | Predicate::Compare(_, v)
                | Predicate::Length(_, v)
                | Predicate::Contains(v)
                | Predicate::NotContains(v) => vec![v],
                Predicate::OneOf(values) => values.iter().collect(),
                Predicate::WithinMs { of, min, max } => {
                    for bound in [min, max].into_iter().flatten() {
                        used.extend(names_in_value(bound).into_iter().map(|n| (here.clone(), n)));
                    }
                    let names = names_in_str(of);
                    // A bare variable name is allowed for `of`.
                    if names.is_empty() && !known.contains(of) && time_like(of).is_none() {
                        return Err(invalid(
                            &scenario.path,
                            format!("{here}/withinMs/of"),
                            format!(
                                "`{of}` is neither a timestamp nor a variable captured earlier"
                            ),
                        ));
                    }
                    used.extend(names.into_iter().map(|n| (here.clone(), n)));
                    Vec::new()
                }
                _ => Vec::new(),
            };
            for operand in operands {
                used.extend(
                    names_in_value(operand)
                        .into_iter()
                        .map(|n| (here.clone(), n)),
                );
            }
        }
        if let Some((at, name)) = used.iter().find(|(_, name)| !known.contains(*name)) {
            if *name == request::INDEX_VARIABLE {
                return Err(invalid(
                    &scenario.path,
                    at.clone(),
                    "`{parallel.index}` exists only in the request of a `parallel` step",
                ));
            }
            return Err(invalid(
                &scenario.path,
                at.clone(),
                format!("unknown variable `{{{name}}}` (not a built-in, not captured by an earlier step)"),
            ));
        }
        if let Some(name) = capture
            .keys()
            .find(|name| scenario.generated.contains_key(*name))
        {
            return Err(invalid(
                &scenario.path,
                format!("{}/capture/{name}", step.pointer),
                format!("capture `{name}` would overwrite the generated variable of that name"),
            ));
        }
        known.extend(capture.keys().cloned());
    }
    mock::check_observation_variables(scenario, &known)
}

fn time_like(text: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
}

#[cfg(test)]
mod tests;
