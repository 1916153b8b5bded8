//! `goalpost run`: exit 0 when nothing failed or errored, 1 when something
//! did, 2 when the run could not start.

use std::process::ExitCode;

use anyhow::Context;
use goalpost::cli::{self, Command};
use goalpost::report::console;
use goalpost::RunConfig;

const EXIT_CANNOT_START: u8 = 2;

fn main() -> ExitCode {
    let (cli, harness) = match cli::parse(std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(error) => {
            // Help and version print to stdout and are not failures.
            let code = if error.use_stderr() {
                EXIT_CANNOT_START
            } else {
                0
            };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    match run(cli, harness) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("goalpost: error: {error:#}");
            ExitCode::from(EXIT_CANNOT_START)
        }
    }
}

fn run(cli: cli::Cli, harness: libtest_mimic::Arguments) -> anyhow::Result<u8> {
    let Command::Run(args) = cli.command;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let config = RunConfig::resolve(args, harness, &cwd)?;
    let outcome = goalpost::run(config)?;
    if let Some(report) = &outcome.report {
        console::write(report, std::io::stdout().lock()).context("cannot write to stdout")?;
        for path in &outcome.written {
            println!("wrote {}", path.display());
        }
        if outcome.filtered {
            println!("(a filter left trials out: their requirements are reported as opted-out)");
        }
    }
    Ok(outcome.exit_code())
}
