//! Scoped certification against the reference host, one capability taken
//! out of its discovery document at a time: `not-applicable` appears on a
//! requirement exactly when it names a feature the edited document no
//! longer advertises, never on one whose capability was advertised, and a
//! run need taken out (a seam) never makes anything `not-applicable` (its
//! requirements skip, which blocks). Each profile's scope lists as not
//! offered exactly the features its requirements name that are gone.
//!
//! The host is the reference host, in-process and unchanged, behind a small
//! proxy that edits only the discovery document it serves: the host still
//! does what it no longer advertises, which a host may (advertising less
//! is a legal choice). The whole suite (`strict` included) runs through the
//! same library path as `goalpost run`, a few edits at a time
//! (`GOALPOST_SCOPE_JOBS`, default 5: a run mostly waits).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use goalpost::model::Requirement;
use goalpost::report::RunReport;
use goalpost::run::discovery::{Capabilities, DISCOVERY_PATH};
use goalpost::run::scope::{attention_advertised, Offer};
use serde_json::{json, Value};

const SECRET: &str = "goalpost-scope-secret";
const DEFAULT_JOBS: usize = 5;
/// What the proxy reads of a request body: more than any scenario sends
/// (the largest is 1.1 MB).
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// One capability taken out of the reference host's discovery.
struct Removal {
    name: &'static str,
    edit: fn(&mut Value),
}

fn remove_mode(document: &mut Value, mode: &str) {
    if let Some(modes) = document
        .pointer_mut("/agents/goals/continuation")
        .and_then(Value::as_array_mut)
    {
        modes.retain(|m| m != mode);
    }
}

fn remove_seam(document: &mut Value, seam: &str) {
    if let Some(seams) = document
        .pointer_mut("/conformanceSeams/goals")
        .and_then(Value::as_object_mut)
    {
        seams.remove(seam);
    }
}

fn removals() -> Vec<Removal> {
    vec![
        Removal {
            name: "nothing (the reference host as it is)",
            edit: |_| {},
        },
        Removal {
            name: "mode manual",
            edit: |d| remove_mode(d, "manual"),
        },
        Removal {
            name: "mode schedule",
            edit: |d| remove_mode(d, "schedule"),
        },
        Removal {
            name: "mode heartbeat",
            edit: |d| remove_mode(d, "heartbeat"),
        },
        Removal {
            name: "mode commitment",
            edit: |d| remove_mode(d, "commitment"),
        },
        Removal {
            name: "the judge",
            edit: |d| {
                if let Some(goals) = d
                    .pointer_mut("/agents/goals")
                    .and_then(Value::as_object_mut)
                {
                    goals.remove("judge");
                }
            },
        },
        Removal {
            name: "reported runs",
            edit: |d| {
                if let Some(host) = d.get_mut("host").and_then(Value::as_object_mut) {
                    host.remove("reportedRuns");
                }
            },
        },
        Removal {
            name: "the egress policy",
            edit: |d| {
                if let Some(root) = d.as_object_mut() {
                    root.remove("webhookEgress");
                }
            },
        },
        Removal {
            name: "required bounds",
            edit: |d| d["agents"]["goals"]["requiresBounds"] = json!(false),
        },
        Removal {
            name: "seam continue",
            edit: |d| remove_seam(d, "continue"),
        },
        Removal {
            name: "seam events",
            edit: |d| remove_seam(d, "events"),
        },
        Removal {
            name: "seam fixtures",
            edit: |d| remove_seam(d, "fixtures"),
        },
        Removal {
            name: "seam webhooks",
            edit: |d| remove_seam(d, "webhooks"),
        },
    ]
}

/// The proxy's state: where the host is, and the discovery it serves
/// instead of the host's.
#[derive(Clone)]
struct Proxy {
    upstream: String,
    client: reqwest::Client,
    discovery: Value,
}

/// Hop-by-hop and framing headers: the proxy's own business.
fn passes(name: &str) -> bool {
    !matches!(
        name,
        "host" | "content-length" | "transfer-encoding" | "connection" | "keep-alive"
    )
}

async fn forward(State(proxy): State<Proxy>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if parts.uri.path() == DISCOVERY_PATH {
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(proxy.discovery.to_string()))
            .unwrap_or_default();
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return status(StatusCode::PAYLOAD_TOO_LARGE);
    };
    let mut outgoing = proxy
        .client
        .request(parts.method.clone(), format!("{}{path}", proxy.upstream))
        .body(bytes);
    for (name, value) in &parts.headers {
        if passes(name.as_str()) {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(_) => return status(StatusCode::BAD_GATEWAY),
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if passes(name.as_str()) {
            response = response.header(
                HeaderName::from(name),
                HeaderValue::from_bytes(value.as_bytes()).unwrap_or(HeaderValue::from_static("")),
            );
        }
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    response.body(Body::from(bytes)).unwrap_or_default()
}

fn status(code: StatusCode) -> Response {
    Response::builder()
        .status(code)
        .body(Body::empty())
        .unwrap_or_default()
}

/// Serves the proxy on the current runtime; its base URL.
async fn start_proxy(upstream: String, discovery: Value) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| error.to_string())?;
    let app = Router::new().fallback(forward).with_state(Proxy {
        upstream,
        client,
        discovery,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| error.to_string())?;
    let address: SocketAddr = listener.local_addr().map_err(|error| error.to_string())?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{address}"))
}

/// The reference host behind the proxy serving its discovery edited by
/// `edit`; the whole suite's report, and the document the run was given.
fn run_without(edit: fn(&mut Value)) -> Result<(RunReport, Value), String> {
    let callback = common::callback_listen()?;
    let config = common::host_config(SECRET, callback)?;
    let served = std::cell::RefCell::new(None);
    let report = common::run_suite_checked(
        config,
        SECRET,
        callback,
        "scope-host",
        |runtime, url| {
            let host = url.trim_end_matches('/').to_string();
            let mut document: Value = runtime
                .block_on(async {
                    reqwest::get(format!("{host}{DISCOVERY_PATH}"))
                        .await?
                        .json()
                        .await
                })
                .map_err(|error| format!("cannot read the host's discovery: {error}"))?;
            edit(&mut document);
            let proxy = runtime.block_on(start_proxy(host, document.clone()))?;
            *served.borrow_mut() = Some((proxy, document));
            Ok(())
        },
        |run| {
            run.profiles = None;
            run.strict = true;
            if let Some((proxy, _)) = served.borrow().as_ref() {
                run.host = goalpost::HostChoice::Remote(proxy.clone());
            }
        },
    )?;
    let (_, document) = served.into_inner().ok_or("the proxy did not start")?;
    Ok((report, document))
}

/// Everything wrong with a run of the suite against discovery `document`.
fn problems(
    name: &str,
    report: &RunReport,
    document: &Value,
    registry: &BTreeMap<String, Requirement>,
) -> Vec<String> {
    let offer = Offer {
        capabilities: Capabilities::from_document(Some(document)),
        attention: attention_advertised(Some(document)),
        second_tenant: true,
        endpoints: 1,
    };
    let mut found = Vec::new();
    let mut not_applicable = 0;
    for ended in &report.requirements {
        let Some(requirement) = registry.get(&ended.id) else {
            found.push(format!("{name}: {} is not in the registry", ended.id));
            continue;
        };
        let gone: BTreeSet<String> = requirement
            .features()
            .filter(|feature| !offer.has(*feature))
            .map(|feature| feature.token())
            .collect();
        let disposition = ended.disposition.as_str();
        if disposition == "not-applicable" {
            not_applicable += 1;
        }
        match (gone.is_empty(), disposition) {
            (true, "not-applicable") => found.push(format!(
                "{name}: {} is not-applicable ({}), yet every feature it names is advertised",
                ended.id,
                ended.reason.as_deref().unwrap_or("no reason")
            )),
            (false, "not-applicable") => {
                if !ended.reason.as_ref().is_some_and(|r| gone.contains(r)) {
                    found.push(format!(
                        "{name}: {} is not-applicable for `{}`, not for what is gone ({gone:?})",
                        ended.id,
                        ended.reason.as_deref().unwrap_or("no reason")
                    ));
                }
            }
            (false, other) => found.push(format!(
                "{name}: {} names {gone:?}, which the host no longer advertises, yet it ended `{other}`",
                ended.id
            )),
            (true, _) => {}
        }
    }
    for (profile, summary) in &report.profiles {
        let gone: BTreeSet<String> = registry
            .values()
            .filter(|r| &r.profile == profile)
            .flat_map(Requirement::features)
            .filter(|feature| !offer.has(*feature))
            .map(|feature| feature.token())
            .collect();
        let listed: BTreeSet<String> = summary.scope.not_offered.iter().cloned().collect();
        if listed != gone {
            found.push(format!(
                "{name}: `{profile}`'s scope lists {listed:?} as not offered; its requirements name {gone:?} that the host does not advertise"
            ));
        }
    }
    // Not vacuous: a feature taken out makes something not applicable, a
    // seam taken out nothing (its requirements skip instead).
    let removed_feature = registry
        .values()
        .flat_map(Requirement::features)
        .any(|feature| !offer.has(feature));
    if removed_feature && not_applicable == 0 {
        found.push(format!(
            "{name}: a feature requirements name is gone, yet nothing ended not-applicable"
        ));
    }
    if name.starts_with("seam ") {
        let seam = name.trim_start_matches("seam ");
        let skipped = report.requirements.iter().any(|r| {
            r.disposition.as_str() == "skip" && r.reason.as_deref() == Some("seam-absent")
        });
        if !skipped || not_applicable != 0 {
            found.push(format!(
                "{name}: without the `{seam}` seam, requirements must skip `seam-absent` ({skipped}) and none become not-applicable ({not_applicable})"
            ));
        }
    }
    found
}

#[test]
fn not_applicable_appears_only_where_an_advertised_feature_was_taken_out() {
    let schemas = goalpost_schemas::Schemas::embedded().expect("the schemas compile");
    let registry: BTreeMap<String, Requirement> = goalpost::run::loader::load_requirements(
        &common::scenarios().join("requirements.json"),
        &schemas,
    )
    .expect("the registry loads")
    .into_iter()
    .map(|requirement| (requirement.id.clone(), requirement))
    .collect();
    let jobs = common::jobs("GOALPOST_SCOPE_JOBS", DEFAULT_JOBS);
    let results = common::in_parallel(removals(), jobs, |removal| {
        (removal.name, run_without(removal.edit))
    });
    let mut found = Vec::new();
    let mut measured = Vec::new();
    for (name, run) in results {
        match run {
            Ok((report, document)) => {
                let na: Vec<String> = report
                    .requirements
                    .iter()
                    .filter(|r| r.disposition.as_str() == "not-applicable")
                    .map(|r| r.id.clone())
                    .collect();
                measured.push(format!("{name}: {} not-applicable {na:?}", na.len()));
                found.extend(problems(name, &report, &document, &registry));
            }
            Err(error) => found.push(format!("{name}: {error}")),
        }
    }
    measured.sort();
    eprintln!("scope: {}", measured.join("\nscope: "));
    found.sort();
    assert!(found.is_empty(), "{}", found.join("\n"));
}
