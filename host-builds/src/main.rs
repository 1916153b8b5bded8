//! `goalpost-host-builds`: `goalpost-host serve` as one of the reference
//! host's other builds, `--mutant NAME` (deliberately broken) or
//! `--variant NAME` (another legal choice). For the published variant
//! matrix (scripts/publish-matrix.sh) and for trying a mutant by hand;
//! never a host to deploy.

use std::process::ExitCode;

use clap::Parser;
use goalpost_host_builds::Cli;

fn main() -> ExitCode {
    let Cli { build, serve } = Cli::parse();
    let log_format = serve.log_format;
    let (config, ports) = build.assemble(serve.config());
    goalpost_host::cli::serve(config, log_format, ports)
}
