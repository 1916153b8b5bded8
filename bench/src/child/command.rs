//! The hidden `child` command: what a child process runs, one measurement
//! side each.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use serde_json::Value;

#[derive(Debug, Clone, Subcommand)]
pub enum ChildCommand {
    /// Insert `goals` schedule goals, first fires spread over one interval.
    SeedSchedule {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        goals: usize,
        #[arg(long)]
        interval_ms: u64,
        #[arg(long)]
        first_due_ms: i64,
        #[arg(long)]
        dues: PathBuf,
    },
    /// Insert `goals` goals, mostly closed.
    SeedMixed {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        goals: usize,
    },
    /// Run the engine's scheduler on `db` until the wall clock reads
    /// `until_ms`.
    Scheduler {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        until_ms: i64,
        /// The scheduler's tick; the host's default when absent.
        #[arg(long)]
        tick_ms: Option<u64>,
    },
    /// Insert `goals` schedule goals with a webhook arm into PostgreSQL.
    SeedPostgres {
        #[arg(long)]
        db: String,
        #[arg(long)]
        goals: usize,
        #[arg(long)]
        arm: String,
        #[arg(long)]
        interval_ms: u64,
        #[arg(long)]
        first_due_ms: i64,
        #[arg(long)]
        dues: PathBuf,
    },
    /// Run one host replica on the PostgreSQL `db` until the wall clock
    /// reads `until_ms`.
    PostgresReplica {
        #[arg(long)]
        db: String,
        #[arg(long)]
        until_ms: i64,
    },
    /// Start the host on `db`, answer one request, idle `idle_ms`.
    Startup {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        idle_ms: u64,
    },
}

pub fn run(command: ChildCommand) -> Result<Value> {
    match command {
        ChildCommand::SeedSchedule {
            db,
            goals,
            interval_ms,
            first_due_ms,
            dues,
        } => crate::seed::schedule_goals(&db, goals, interval_ms, first_due_ms, &dues),
        ChildCommand::SeedMixed { db, goals } => crate::seed::mixed_goals(&db, goals),
        ChildCommand::Scheduler {
            db,
            until_ms,
            tick_ms,
        } => crate::scale::child(&db, until_ms, tick_ms),
        ChildCommand::Startup { db, idle_ms } => crate::startup::child(&db, idle_ms),
        ChildCommand::SeedPostgres {
            db,
            goals,
            arm,
            interval_ms,
            first_due_ms,
            dues,
        } => crate::replicas::seed(&db, goals, &arm, interval_ms, first_due_ms, &dues),
        ChildCommand::PostgresReplica { db, until_ms } => crate::replicas::replica(&db, until_ms),
    }
}
