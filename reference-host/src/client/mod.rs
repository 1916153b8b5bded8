//! `goalpost-host goals …`: an operator's client for any host that
//! advertises `agents.goals`. It reads discovery first, sends one request per
//! verb (two for views that show attention), prints a rendered view or the
//! raw JSON, and exits with the goal's state (see [`exit`]).

pub mod args;
pub mod discovery;
pub mod exit;
pub mod http;
pub mod render;
pub mod stream;
pub mod watch;

use std::io::Write;

use serde_json::{json, Map, Value};

pub use args::GoalsArgs;
use args::{CreateArgs, GoalsCommand};
use discovery::{require_goals, Advertised, DiscoveryError};
use http::{parse_base_url, printable, segment, ClientError, HostClient};

/// Where a command's output goes: results on `out`, diagnostics on `err`.
pub struct Output<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

impl Output<'_> {
    fn fail(&mut self, message: &str) -> u8 {
        // Nothing better to do if stderr is gone; the exit code still says it.
        let _ = writeln!(self.err, "error: {message}");
        exit::FAILED
    }

    fn usage(&mut self, message: &str) -> u8 {
        let _ = writeln!(self.err, "error: {message}");
        exit::USAGE
    }
}

/// Runs one `goals` command and returns its exit code.
pub async fn run(args: GoalsArgs, output: &mut Output<'_>) -> u8 {
    let connection = &args.connection;
    let Some(host) = connection.host.as_deref() else {
        return output.usage("--host URL (or GOALPOST_HOST) is required");
    };
    let base = match parse_base_url(host) {
        Ok(base) => base,
        Err(message) => return output.usage(&format!("--host: {message}")),
    };
    let Some(token) = connection.token.clone() else {
        return output.usage("--token TOKEN (or GOALPOST_TOKEN) is required");
    };
    if let GoalsCommand::Watch {
        id: Some(id),
        goal: Some(goal),
        ..
    } = &args.command
    {
        if id != goal {
            return output.usage("watch: give the goal id once (ID or --goal ID)");
        }
    }
    if let GoalsCommand::Abandon { id, yes: false } = &args.command {
        return output.usage(&format!(
            "refusing to abandon goal {} without --yes (abandoning cannot be undone)",
            printable(id)
        ));
    }
    let client = match HostClient::new(base, Some(token), connection.request_timeout_ms) {
        Ok(client) => client,
        Err(message) => return output.fail(&message),
    };
    let advertised = match require_goals(&client).await {
        Ok(advertised) => advertised,
        Err(DiscoveryError::Client(error)) => return report(output, connection.json, &error),
        Err(refusal) => return output.fail(&refusal.to_string()),
    };
    let command = Command {
        client: &client,
        advertised: &advertised,
        json: connection.json,
    };
    match command.run(args.command, output.out).await {
        Ok(code) => code,
        Err(Failure::Client(error)) => report(output, connection.json, &error),
        Err(Failure::Output(error)) => output.fail(&format!("cannot write the output: {error}")),
    }
}

/// Prints a client error; with `--json`, a refusal's envelope also goes to
/// stdout so scripts can read it.
fn report(output: &mut Output<'_>, json: bool, error: &ClientError) -> u8 {
    if json {
        if let ClientError::Refused {
            body: Some(body), ..
        } = error
        {
            let _ = writeln!(output.out, "{body}");
        }
    }
    output.fail(&error.to_string())
}

/// Goals a `list` asks for per page.
const LIST_PAGE: usize = 500;
/// Pages a `list` follows before it calls the host's links a loop.
const MAX_LIST_PAGES: usize = 10_000;

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Output(#[from] std::io::Error),
}

impl From<watch::WatchError> for Failure {
    fn from(error: watch::WatchError) -> Failure {
        match error {
            watch::WatchError::Client(error) => Failure::Client(error),
            watch::WatchError::Output(error) => Failure::Output(error),
        }
    }
}

struct Command<'a> {
    client: &'a HostClient,
    advertised: &'a Advertised,
    json: bool,
}

impl Command<'_> {
    fn goal_path(&self, id: &str) -> String {
        format!("{}/{}", self.advertised.base, segment(id))
    }

    async fn run(&self, command: GoalsCommand, out: &mut dyn Write) -> Result<u8, Failure> {
        match command {
            GoalsCommand::List { state } => self.list(state.as_deref(), out).await,
            GoalsCommand::Get { id } => {
                let goal = self.client.get(&self.goal_path(&id)).await?;
                self.show(&goal, None, out).await
            }
            GoalsCommand::Create(create) => {
                let body = create_body(&create, self.advertised);
                let goal = self.client.post(&self.advertised.base, Some(&body)).await?;
                self.show(&goal, Some("created"), out).await
            }
            GoalsCommand::Pause { id } => self.transition(&id, "pause", None, "paused", out).await,
            GoalsCommand::Resume { id, note } => {
                let body = note.map(|note| json!({ "note": note }));
                self.transition(&id, "resume", body.as_ref(), "resumed", out)
                    .await
            }
            GoalsCommand::Abandon { id, .. } => {
                self.transition(&id, "abandon", None, "abandoned", out)
                    .await
            }
            GoalsCommand::Watch {
                id,
                goal,
                interval_ms,
            } => {
                let watch = watch::Watch {
                    client: self.client,
                    advertised: self.advertised,
                    id: id.as_deref().or(goal.as_deref()),
                    interval: interval_ms,
                    json: self.json,
                };
                Ok(watch.run(out).await?)
            }
        }
    }

    /// Every page of the list, following the host's `Link: rel="next"`.
    /// Pages are asked for with `limit`; a host that refuses the parameter
    /// (400) is asked again without it, and one that ignores it answers
    /// everything in one page.
    async fn list(&self, state: Option<&str>, out: &mut dyn Write) -> Result<u8, Failure> {
        let filter = state.map(|state| format!("state={}", segment(state)));
        let with = |limit: Option<usize>| {
            let query: Vec<String> = limit
                .map(|limit| format!("limit={limit}"))
                .into_iter()
                .chain(filter.clone())
                .collect();
            let path = if query.is_empty() {
                self.advertised.base.clone()
            } else {
                format!("{}?{}", self.advertised.base, query.join("&"))
            };
            self.client.url(&path)
        };
        let first = match self.client.page(with(Some(LIST_PAGE))).await {
            Err(ClientError::Refused { status: 400, .. }) => self.client.page(with(None)).await?,
            answer => answer?,
        };
        let (mut list, mut next) = first;
        let mut pages = 1;
        while let Some(url) = next {
            pages += 1;
            if pages > MAX_LIST_PAGES {
                return Err(Failure::from(ClientError::BadAnswer {
                    url,
                    status: 200,
                    reason: format!("more than {MAX_LIST_PAGES} pages"),
                }));
            }
            let (page, after) = self.client.page(url).await?;
            let more = page
                .get("goals")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(goals) = list.get_mut("goals").and_then(Value::as_array_mut) {
                goals.extend(more);
            }
            next = after;
        }
        if self.json {
            writeln!(out, "{list}")?;
        } else {
            let goals = list
                .get("goals")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            out.write_all(render::goal_list(&goals, state).as_bytes())?;
        }
        Ok(exit::SATISFIED)
    }

    async fn transition(
        &self,
        id: &str,
        verb: &str,
        body: Option<&Value>,
        done: &str,
        out: &mut dyn Write,
    ) -> Result<u8, Failure> {
        let path = format!("{}/{verb}", self.goal_path(id));
        let goal = self.client.post(&path, body).await?;
        self.show(&goal, Some(done), out).await
    }

    /// Prints the goal (with its attention status when the host has the
    /// attention endpoint) and returns the exit code of its state.
    async fn show(
        &self,
        goal: &Value,
        headline: Option<&str>,
        out: &mut dyn Write,
    ) -> Result<u8, Failure> {
        let state = goal.get("state").and_then(Value::as_str);
        if self.json {
            writeln!(out, "{goal}")?;
            return Ok(exit::for_state(state));
        }
        let id = goal.get("id").and_then(Value::as_str).unwrap_or_default();
        let attention = match self
            .client
            .get(&format!("{}/attention", self.goal_path(id)))
            .await
        {
            Ok(answer) => answer
                .get("status")
                .and_then(Value::as_str)
                .map(str::to_string),
            // Attention is extra detail; the goal itself was answered.
            Err(_) => None,
        };
        if let Some(headline) = headline {
            writeln!(out, "{headline} goal {}", printable(id))?;
        }
        out.write_all(render::goal(goal, attention.as_deref()).as_bytes())?;
        Ok(exit::for_state(state))
    }
}

/// The create request: only what the operator gave, the judge defaulting to
/// what the host advertises.
fn create_body(create: &CreateArgs, advertised: &Advertised) -> Value {
    let check = create
        .check
        .map(|check| crate::domain::Check::from(check).as_str().to_string())
        .or_else(|| advertised.judge.clone())
        .unwrap_or_else(|| "verifier".into());
    let mut completion = Map::new();
    completion.insert("check".into(), check.into());
    if let Some(verifier) = &create.verifier {
        completion.insert("verifierRef".into(), verifier.clone().into());
    }
    let mut continuation = Map::new();
    continuation.insert(
        "mode".into(),
        crate::domain::Mode::from(create.mode).as_str().into(),
    );
    if let Some(arm) = &create.arm {
        continuation.insert("armRef".into(), arm.clone().into());
    }
    let mut body = json!({
        "objective": create.objective,
        "completion": completion,
        "continuation": continuation,
    });
    let mut bounds = Map::new();
    if let Some(iterations) = create.max_iterations {
        bounds.insert("maxLoopIterations".into(), iterations.into());
    }
    if let Some(cost) = create.max_cost_usd {
        bounds.insert("maxCostUsd".into(), cost.into());
    }
    if let Some(timeout) = create.timeout_ms {
        bounds.insert("runTimeoutMs".into(), timeout.into());
    }
    // No bounds at all: let the host answer (422 `bounds_required` when it
    // requires them), rather than send `bounds: {}`.
    if !bounds.is_empty() {
        if let Some(object) = body.as_object_mut() {
            object.insert("bounds".into(), Value::Object(bounds));
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::args::{Check, Mode};
    use super::*;

    fn create(check: Option<Check>) -> CreateArgs {
        CreateArgs {
            objective: "o".into(),
            check,
            verifier: Some("v".into()),
            mode: Mode::Schedule,
            arm: None,
            max_iterations: Some(3),
            max_cost_usd: Some(0.5),
            timeout_ms: None,
        }
    }

    fn advertised(judge: Option<&str>) -> Advertised {
        Advertised {
            judge: judge.map(str::to_string),
            base: "/b".into(),
            events: false,
            stream: None,
        }
    }

    #[test]
    fn create_sends_what_was_given() {
        let body = create_body(&create(Some(Check::Host)), &advertised(Some("verifier")));
        assert_eq!(
            body,
            json!({
                "objective": "o",
                "completion": { "check": "host", "verifierRef": "v" },
                "continuation": { "mode": "schedule" },
                "bounds": { "maxLoopIterations": 3, "maxCostUsd": 0.5 },
            })
        );
    }

    #[test]
    fn the_judge_defaults_to_the_advertised_one_and_bounds_may_be_absent() {
        let mut args = create(None);
        args.max_iterations = None;
        args.max_cost_usd = None;
        let body = create_body(&args, &advertised(Some("host")));
        assert_eq!(body["completion"]["check"], "host");
        assert!(body.get("bounds").is_none());
        let body = create_body(&args, &advertised(None));
        assert_eq!(body["completion"]["check"], "verifier");
    }
}
