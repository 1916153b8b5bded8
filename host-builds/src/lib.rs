//! The reference host's other builds, which only the suite's own tests
//! and the published variant matrix start; `goalpost-host` carries none of
//! them.
//!
//! - [`mutants`]: deliberately broken builds, one bug each, that the suite
//!   must catch (its kill matrix, `suite/tests/it/kill_matrix.rs`).
//! - [`variants`]: conforming builds that each make one other choice the
//!   profile allows, that the suite must certify (its variant matrix,
//!   `suite/tests/it/variant_matrix.rs`).
//!
//! Both are clients of the host's public ports ([`goalpost_host::Ports`],
//! [`goalpost_host::Config`]): a mutant wraps or replaces a port, a
//! variant is a value of the configuration's choices.

pub mod mutants;
pub mod variants;

/// A host that is one of these builds: its configuration and the ports it
/// is assembled from.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Build {
    #[command(flatten)]
    pub mutant: mutants::Selection,

    /// Run as a conforming variant: one other choice the profile allows.
    #[arg(long, value_parser = variants::parse_arg)]
    pub variant: Option<variants::Variant>,
}

impl Build {
    /// `config` as this build makes it, and the ports to start it with.
    pub fn assemble(
        &self,
        config: goalpost_host::Config,
    ) -> (goalpost_host::Config, goalpost_host::Ports) {
        let config = match self.variant {
            Some(variant) => variant.apply(config),
            None => config,
        };
        (config, self.mutant.ports())
    }
}

/// `goalpost-host-builds`'s command line: every `goalpost-host serve` flag,
/// plus the build to serve as.
#[derive(Debug, clap::Parser)]
#[command(
    name = "goalpost-host-builds",
    version,
    about = "goalpost-host serve as one of the reference host's other builds: a mutant (deliberately broken) or a variant (another legal choice). For the suite's tests; never a host to deploy."
)]
pub struct Cli {
    #[command(flatten)]
    pub build: Build,

    #[command(flatten)]
    pub serve: goalpost_host::cli::ServeArgs,
}
