//! `goalpost-host`: serve until SIGINT or SIGTERM (`serve`, also the
//! default), or manage goals on a running host (`goals …`).

use std::process::ExitCode;

use clap::Parser;
use goalpost_host::cli::{self, Cli, Invocation};
use goalpost_host::client::{self, GoalsArgs};
use goalpost_host::Ports;

// glibc's malloc made the two runtime workers queue on its arena lock when
// one frees what the other allocated (a request's buffers: `futex` in the
// GET profile); mimalloc frees across threads without a shared lock. Its
// price: an idle host starts at about 18 MiB rather than 9.5, as mimalloc
// reserves its segments up front.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        Invocation::Serve(args) => {
            let log_format = args.log_format;
            cli::serve(args.config(), log_format, Ports::faithful())
        }
        Invocation::Goals(args) => goals_main(args),
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
