//! `goalpost-bench [--full] [--only NAME]`: every measurement of the host,
//! each against a baseline measured in the same run on the same machine,
//! printed as one Markdown table. Not a test: nothing here asserts a time.
//! Build it with `--release`; see BENCHMARKS.md.

// The allocator the host binary uses, so host, load generator and
// baseline all run on it (see reference-host/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod certify;
mod child;
mod fairness;
mod fanout;
mod growth;
mod load;
mod overhead;
mod postgres;
mod replicas;
mod scale;
mod seed;
mod startup;
mod stats;
mod table;
mod throughput;
mod waits;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::table::Row;

const NAMES: [&str; 10] = [
    "certify",
    "overhead",
    "throughput",
    "scheduler",
    "fairness",
    "startup",
    "growth",
    "fanout",
    "postgres",
    "replicas",
];

#[derive(Debug, Parser)]
#[command(
    name = "goalpost-bench",
    about = "goalpost's benchmarks, as ratios against same-run baselines"
)]
struct Args {
    /// Also the big sizes: 100k scheduled goals, 1M stored goals.
    #[arg(long)]
    full: bool,
    /// Run only these measurements (repeatable): certify, overhead,
    /// throughput, scheduler, fairness, startup, growth, fanout, postgres,
    /// replicas.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(NAMES))]
    only: Vec<String>,
    /// For profiling: only these phases of `throughput` (hello, get,
    /// create, continue, continue-deep).
    #[arg(long, hide = true)]
    phase: Vec<String>,
    /// For profiling: `throughput` sends exactly this many requests per
    /// phase, without a warm-up or a time limit.
    #[arg(long, hide = true)]
    requests: Option<u64>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A measurement's own process (used by the measurements themselves).
    #[command(hide = true, subcommand)]
    Child(child::command::ChildCommand),
}

/// The workspace this binary was built in: where `scenarios/` is.
fn workspace_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    goalpost::config::workspace_root(&cwd)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")))
}

fn first_line_with(path: &str, prefix: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.split_once(':'))
        .map(|(_, value)| value.trim().to_string())
}

/// What the table was measured on.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let cpu = first_line_with("/proc/cpuinfo", "model name").unwrap_or_else(|| "?".into());
    let memory = first_line_with("/proc/meminfo", "MemTotal").unwrap_or_else(|| "?".into());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "{cores} cores ({cpu}), {memory} memory, load average {} at start",
        load.join(" ")
    )
}

fn measure(name: &str, args: &Args) -> Result<Vec<Row>> {
    let full = args.full;
    match name {
        "certify" => certify::measure(&workspace_root()),
        "overhead" => overhead::measure(),
        "throughput" => throughput::measure(&args.phase, args.requests),
        "scheduler" => scale::measure(full),
        "fairness" => fairness::measure(),
        "startup" => startup::measure(full),
        "growth" => growth::measure(),
        "fanout" => fanout::measure(),
        "postgres" => postgres::measure(),
        // Minutes of seeding and firing: only when asked for.
        "replicas" if full || args.only.iter().any(|only| only == "replicas") => {
            replicas::measure()
        }
        "replicas" => Ok(vec![table::Row::info(
            "scheduler on PostgreSQL with 1, 2, 3 replicas",
            "not measured in the default run (about 4 minutes): --only replicas, or --full",
        )]),
        _ => Ok(Vec::new()),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Child(command)) = args.command {
        return match child::command::run(command) {
            Ok(result) => {
                println!("{result}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("goalpost-bench child: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    println!("goalpost-bench: {}", machine());
    if cfg!(debug_assertions) {
        println!("(a debug build: numbers mean little; use cargo run --release -p goalpost-bench)");
    }
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut failed = false;
    for name in NAMES {
        if !args.only.is_empty() && !args.only.iter().any(|only| only == name) {
            continue;
        }
        eprintln!("== {name}");
        match measure(name, &args) {
            Ok(measured) => {
                for row in &measured {
                    eprintln!("{}", table::render_row(row));
                }
                rows.extend(measured);
            }
            Err(error) => {
                eprintln!("goalpost-bench: {name} failed: {error:#}");
                rows.push(Row::info(
                    format!("{name}: could not be measured"),
                    format!("{error:#}"),
                ));
                failed = true;
            }
        }
    }
    println!();
    print!("{}", table::render(&rows));
    println!();
    println!(
        "({} in {:.0} s{})",
        if args.full { "full run" } else { "default run" },
        started.elapsed().as_secs_f64(),
        if failed {
            "; something could not be measured"
        } else {
            ""
        }
    );
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
