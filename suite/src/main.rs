//! `goalpost run`: exit 0 when nothing failed or errored, 1 when something
//! did, 2 when the run could not start. `validate`, `schemas` and `explain`
//! document their own codes (`validate`: 0 valid, 1 invalid, 2 unreadable).

use std::process::ExitCode;

use anyhow::Context;
use goalpost::cli::{
    self, Command, DiffArgs, DoctorArgs, ExplainArgs, LintArgs, ListArgs, MatrixArgs, RunArgs,
    ValidateArgs,
};
use goalpost::config::ProfileSource;
use goalpost::report::console::{self, Style};
use goalpost::RunConfig;

const EXIT_CANNOT_START: u8 = 2;
/// Where `--quiet` sends the harness's progress lines, in the report folder.
const HARNESS_LOG: &str = "harness.log";

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
    let result = match cli.command {
        Command::Run(args) => run(args, harness),
        Command::Validate(args) => validate(args),
        Command::Schemas => goalpost::commands::validate::list(std::io::stdout().lock())
            .map(|()| 0)
            .context("cannot write to stdout"),
        Command::Explain(args) => explain(args),
        Command::Lint(args) => lint(args),
        Command::List(args) => list(args),
        Command::Doctor(args) => doctor(args),
        Command::Diff(args) => diff(args),
        Command::Matrix(args) => matrix(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("goalpost: error: {error:#}");
            ExitCode::from(EXIT_CANNOT_START)
        }
    }
}

fn run(args: RunArgs, harness: libtest_mimic::Arguments) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let quiet = args.quiet;
    let mut config = RunConfig::resolve(args, harness, &cwd)?;
    let mut harness_log = None;
    if quiet && !config.harness.list && config.harness.logfile.is_none() {
        let log = config.report_dir.join(HARNESS_LOG);
        config.harness.logfile = Some(log.to_string_lossy().into_owned());
        harness_log = Some(log);
    }
    let style = Style::for_stdout(config.harness.color);
    let outcome = goalpost::run(config)?;
    if let Some(report) = &outcome.report {
        let mut stdout = std::io::stdout().lock();
        console::write_styled(report, &mut stdout, style).context("cannot write to stdout")?;
        drop(stdout);
        for path in outcome.written.iter().chain(&harness_log) {
            println!("wrote {}", path.display());
        }
        if outcome.filtered {
            println!("(a filter or --skip left trials out: their requirements are reported as skipped, reason filtered)");
        }
    }
    Ok(outcome.exit_code())
}

fn validate(args: ValidateArgs) -> anyhow::Result<u8> {
    let schemas = match &args.schemas {
        Some(dir) => goalpost_schemas::Schemas::from_dir(dir),
        None => goalpost_schemas::Schemas::embedded(),
    }
    .context("cannot compile the JSON Schemas")?;
    goalpost::commands::validate::validate(
        &schemas,
        &args.schema,
        &args.files,
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        std::io::stderr().lock(),
    )
    .context("cannot write the result")
}

fn explain(args: ExplainArgs) -> anyhow::Result<u8> {
    let (cwd, catalog) = load_catalog(args.scenarios.as_deref())?;
    goalpost::commands::explain::explain(
        &catalog,
        &args.id,
        &cwd,
        std::io::stdout().lock(),
        std::io::stderr().lock(),
    )
    .context("cannot write the explanation")
}

/// The catalog of `--scenarios`, else of the checkout around the current
/// directory, else the embedded one (with the embedded schemas), and that
/// directory.
fn load_catalog(
    scenarios: Option<&std::path::Path>,
) -> anyhow::Result<(std::path::PathBuf, goalpost::run::loader::Catalog)> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let source = ProfileSource::resolve(scenarios, None, &cwd);
    let schemas = source
        .schemas()
        .context("cannot compile the JSON Schemas")?;
    let catalog = source
        .load(&schemas)
        .with_context(|| match &source.scenarios_dir {
            Some(dir) => format!("cannot load {}", dir.display()),
            None => "cannot load the embedded scenarios".to_string(),
        })?;
    Ok((cwd, catalog))
}

fn lint(args: LintArgs) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let source = ProfileSource::resolve(args.scenarios.as_deref(), args.schemas.as_deref(), &cwd);
    // Lint reads files as they are on disk: the embedded ones are never
    // linted in place.
    let dir = source.scenarios_dir.as_deref().context(
        "no scenarios/requirements.json found above the current directory; pass --scenarios DIR",
    )?;
    let schemas = source
        .schemas()
        .context("cannot compile the JSON Schemas")?;
    let report = goalpost::commands::lint::lint_dir(dir, &schemas)?;
    goalpost::commands::lint::write(&report, std::io::stdout().lock())
        .context("cannot write to stdout")?;
    Ok(report.exit_code())
}

fn list(args: ListArgs) -> anyhow::Result<u8> {
    let (_, catalog) = load_catalog(args.scenarios.as_deref())?;
    goalpost::mutation::write_requirements(&catalog, std::io::stdout().lock())
        .context("cannot write to stdout")?;
    Ok(0)
}

fn doctor(args: DoctorArgs) -> anyhow::Result<u8> {
    let (_, catalog) = load_catalog(args.scenarios.as_deref())?;
    let base_url = goalpost::config::check_url(&args.host, "--host")?;
    let config = goalpost::commands::doctor::DoctorConfig {
        base_url,
        token_a: args.token,
        token_b: args.token_b,
        base_path: args.base_path,
        probe_write: args.probe_write,
        timeout_scale: args.timeout_scale,
    };
    Ok(goalpost::commands::doctor::doctor(
        &config,
        &catalog,
        std::io::stdout().lock(),
    )?)
}

fn diff(args: DiffArgs) -> anyhow::Result<u8> {
    use goalpost::report::RunReport;
    let old = RunReport::read(&args.old)?;
    let new = RunReport::read(&args.new)?;
    let diff = goalpost::commands::diff::Diff::between(&old, &new);
    goalpost::commands::diff::write(&diff, std::io::stdout().lock())
        .context("cannot write to stdout")?;
    Ok(diff.exit_code())
}

fn matrix(args: MatrixArgs) -> anyhow::Result<u8> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let columns = goalpost::commands::matrix::columns(&args.reports, &args.out)?;
    for path in goalpost::commands::matrix::write(&columns, &args.out)
        .with_context(|| format!("cannot write into {}", args.out.display()))?
    {
        println!("wrote {}", path.display());
    }
    Ok(0)
}
