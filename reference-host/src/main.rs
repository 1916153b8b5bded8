//! `goalpost-host`: serve until SIGINT or SIGTERM (`serve`, also the
//! default), or manage goals on a running host (`goals …`).

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use goalpost_host::cli::{Cli, Invocation, ServeArgs};
use goalpost_host::client::{self, GoalsArgs};
use goalpost_host::{logging, RunningHost};

// glibc's malloc made the two runtime workers queue on its arena lock when
// one frees what the other allocated (a request's buffers: `futex` in the
// GET profile); mimalloc frees across threads without a shared lock. Its
// price: an idle host starts at about 18 MiB rather than 9.5, as mimalloc
// reserves its segments up front.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Threads for store reads (and other blocking work); as many as the
/// store keeps idle read connections. tokio's default of 512 let a burst
/// of 64 concurrent lists of 1,000 goals grow hundreds of threads, each
/// with its own mimalloc heap: 1,885 MiB resident right after, 978 MiB
/// 30 s later. With 4: 78 MiB (16 threads: 136 MiB).
const BLOCKING_THREADS: usize = 4;

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_e` of the
/// mimalloc v3 sources libmimalloc-sys 0.1.49 builds (`include/mimalloc.h`;
/// the crate's own constants describe v2's numbering).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

extern "C" {
    /// Part of the mimalloc library the global allocator links.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Freed memory goes back to the OS at once instead of after mimalloc's
/// default delay (1 s in v3), which is only honoured when the thread that
/// freed it allocates again: after a burst of large answers the idle
/// workers kept it. 64 concurrent lists of 1,000 goals left the host at
/// 2.50× its idle RSS 30 s later by default, 1.58× with this, with creates
/// unchanged within the noise (`goalpost-bench --only growth`). An operator's
/// `MIMALLOC_PURGE_DELAY` wins.
fn purge_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option of the allocator, which reads it
        // atomically; valid at any time.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

fn main() -> ExitCode {
    purge_freed_memory_at_once();
    // Usage errors exit 2, `--help`/`--version` exit 0 (clap's codes).
    match Cli::parse().invocation() {
        Invocation::Serve(args) => serve_main(*args),
        Invocation::Goals(args) => goals_main(args),
    }
}

fn serve_main(args: ServeArgs) -> ExitCode {
    if let Err(error) = logging::init(args.log_format) {
        eprintln!("goalpost-host: cannot set up logging: {error}");
        return ExitCode::FAILURE;
    }
    let config = args.config();
    // Store reads run on tokio's blocking threads, up to 512 of them by
    // default. Under 64 concurrent lists the pool grew to hundreds of
    // threads, and mimalloc gives each thread its own heap and segments:
    // the host went from 37 MiB to 1.9 GiB resident, and a thread's freed
    // pages are only returned when that thread next allocates, so 30 s
    // later it still held 978 MiB (BENCHMARKS.md, "growth"). Reads are
    // short and the machine has few cores: a small pool does the same work
    // with a bounded number of heaps, and the threads that stay are the
    // ones that keep allocating, so their freed pages are purged.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("goalpost-host: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("goalpost-host: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn goals_main(args: GoalsArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::from(client::exit::FAILED);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let mut output = client::Output {
        out: &mut stdout,
        err: &mut stderr,
    };
    ExitCode::from(runtime.block_on(client::run(args, &mut output)))
}

async fn serve(config: goalpost_host::Config) -> anyhow::Result<()> {
    let host = RunningHost::start(config).await.context("cannot start")?;
    shutdown_signal().await.context("cannot wait for signals")?;
    tracing::info!("shutting down");
    host.shutdown().await;
    Ok(())
}

async fn shutdown_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted,
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
