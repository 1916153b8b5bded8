//! The fault test: three `goalpost-host` processes on one PostgreSQL
//! database fire schedule goals whose arm this test serves, while the test
//! SIGKILLs a replica at a random moment and starts it again, over and
//! over. Afterwards: no `(goal, iteration)` reached the arm twice, no goal
//! ran past its bound, every goal is closed, and each goal's events are
//! numbered without a gap or a repeat and close it once.
//!
//! Sized for 2 cores in well under a minute: 120 goals of 6 iterations
//! 600 ms apart, so the runs span the 10 kills. Needs `GOALPOST_TEST_POSTGRES` (`scripts/start-postgres.sh`);
//! without it the test prints why it did not run and passes.

mod pg;
mod support;

use std::collections::{HashMap, HashSet};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::receiver::{Answer, Receiver};

const ARM: &str = "/arm";
const VERIFIER: &str = "/verifier";
const TOKEN: &str = "fault-token";
const GOALS: usize = 120;
const BOUND: u64 = 6;
const KILLS: usize = 10;
const GOALS_PATH: &str = "/v1/host/sample/goals";

/// One replica: a child process on a port of its own.
struct Replica {
    child: Child,
    url: String,
}

impl Replica {
    fn start(db: &str) -> Replica {
        // A free port: bound by the OS, let go, and handed to the child.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_goalpost-host"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--db", db])
            .args(["--token", &format!("{TOKEN}=tenant-a")])
            .args(["--conformance-seams", "--webhook-allow", "127.0.0.1"])
            .args(["--tick-ms", "20", "--webhook-secret", "fault-secret"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("goalpost-host starts");
        Replica {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    fn kill(mut self) {
        // `Child::kill` is SIGKILL on Unix: no shutdown path runs.
        self.child.kill().expect("the replica is killed");
        self.child.wait().expect("the replica is reaped");
    }
}

async fn ready(client: &reqwest::Client, replica: &Replica) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answered = client
            .get(format!("{}{GOALS_PATH}?limit=1", replica.url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .is_ok_and(|reply| reply.status().is_success());
        if answered {
            return;
        }
        assert!(Instant::now() < deadline, "{} never answered", replica.url);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A small deterministic generator: the kill points vary from kill to
/// kill, and a failure can be replayed from the printed seed.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_killed_at_random_never_double_dispatch_or_overrun() {
    let Some(server) = pg::server() else { return };
    let schema = pg::Schema::fresh(&server).await;
    let started = Instant::now();
    let receiver = Receiver::start(|call, _| {
        if call.path == ARM {
            // Long enough that kills land while runs are out.
            Answer::Delayed(
                Duration::from_millis(40),
                Box::new(Answer::Json(json!({ "output": call.body["iteration"] }))),
            )
        } else {
            Answer::Json(json!({ "satisfied": false, "confidence": 0.5 }))
        }
    })
    .await;
    let client = reqwest::Client::new();
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&schema.url)).collect();
    for replica in &replicas {
        ready(&client, replica).await;
    }
    let body = json!({
        "objective": "keep the mirror in sync",
        "completion": { "check": "verifier", "verifierRef": receiver.url(VERIFIER) },
        "continuation": { "mode": "schedule", "armRef": format!("{}#intervalMs=600", receiver.url(ARM)) },
        "bounds": { "maxLoopIterations": BOUND },
    });
    let mut ids = Vec::new();
    for n in 0..GOALS {
        let reply = client
            .post(format!("{}{GOALS_PATH}", replicas[n % 3].url))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .expect("the create is answered");
        assert_eq!(reply.status(), reqwest::StatusCode::CREATED);
        let goal: Value = reply.json().await.expect("a goal");
        ids.push(goal["id"].as_str().expect("id").to_string());
    }

    let seed = u64::try_from(started.elapsed().as_nanos() % 1_000_003).unwrap_or(1) | 1;
    eprintln!("kill seed {seed}");
    let mut random = Random(seed);
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(200 + random.below(500))).await;
        let victim = usize::try_from(random.below(3)).unwrap_or(0);
        let replica = replicas.remove(victim);
        replica.kill();
        let restarted = Replica::start(&schema.url);
        ready(&client, &restarted).await;
        replicas.insert(victim, restarted);
    }

    // Every goal ends: the runs the killed replicas left are closed by the
    // others once their leases lapse.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let open = schema
            .query("SELECT COUNT(*) FROM goals WHERE state = 'active'")
            .await;
        if open[0][0].as_deref() == Some("0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "goals still active after the kills: {open:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let in_flight = schema
        .query("SELECT COUNT(*) FROM runs WHERE status = 'in-flight'")
        .await;
    assert_eq!(in_flight[0][0].as_deref(), Some("0"), "runs left in flight");

    // Zero double dispatches: each (goal, iteration) reached the arm at
    // most once, and only for an iteration a run was reserved for.
    let dispatched: Vec<(String, u64)> = receiver
        .calls_to(ARM)
        .iter()
        .map(|call| {
            (
                call.body["goalId"].as_str().expect("goalId").to_string(),
                call.body["iteration"].as_u64().expect("iteration"),
            )
        })
        .collect();
    let distinct: HashSet<&(String, u64)> = dispatched.iter().collect();
    let twice: Vec<&(String, u64)> = dispatched
        .iter()
        .filter(|pair| dispatched.iter().filter(|other| other == pair).count() > 1)
        .collect();
    assert!(twice.is_empty(), "dispatched twice: {twice:?}");
    assert!(distinct.iter().all(|(_, iteration)| *iteration <= BOUND));

    // Zero overruns, every goal terminal, one verdict per run.
    let rows = schema
        .query(
            "SELECT g.id, g.state,
                    (SELECT COUNT(*) FROM runs r WHERE r.goal_id = g.id),
                    (SELECT COUNT(*) FROM evaluations e WHERE e.goal_id = g.id),
                    (SELECT COUNT(*) FROM events v WHERE v.goal_id = g.id),
                    (SELECT COALESCE(MAX(sequence), 0) FROM events v WHERE v.goal_id = g.id)
             FROM goals g",
        )
        .await;
    assert_eq!(rows.len(), GOALS);
    for row in &rows {
        let text = |index: usize| row[index].clone().unwrap_or_default();
        assert_eq!(text(1), "bound-exceeded", "{row:?}");
        assert_eq!(text(2), BOUND.to_string(), "runs of {row:?}");
        assert_eq!(text(3), BOUND.to_string(), "verdicts of {row:?}");
        // Events numbered 1..n: none lost, none twice.
        assert_eq!(text(4), text(5), "event sequence of {row:?}");
    }

    // The kills landed while runs were out: some runs were closed by the
    // restart rule (an environmental verdict, never dispatched again).
    let orphaned = schema
        .query("SELECT COUNT(*) FROM evaluations WHERE record LIKE '%\"failure_class\":\"environmental\"%'")
        .await;
    let orphaned: usize = orphaned[0][0]
        .as_deref()
        .unwrap_or("0")
        .parse()
        .expect("a count");
    assert!(
        orphaned > 0,
        "no kill landed while a run was out: the test showed nothing"
    );

    // One goal.closed per goal, read through the replicas.
    let mut closes = HashMap::new();
    for (n, id) in ids.iter().enumerate() {
        let reply = client
            .get(format!("{}{GOALS_PATH}/{id}/events", replicas[n % 3].url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("events are answered");
        let events: Value = reply.json().await.expect("an event list");
        let closed = events["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|event| event["type"] == "goal.closed")
            .count();
        closes.insert(id.clone(), closed);
    }
    assert!(closes.values().all(|count| *count == 1), "{closes:?}");
    eprintln!(
        "{GOALS} goals, {} arm calls, {orphaned} runs closed by the restart rule, {KILLS} kills, {:?}",
        dispatched.len(),
        started.elapsed()
    );
    for replica in replicas {
        replica.kill();
    }
    schema.drop().await;
}
