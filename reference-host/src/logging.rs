//! Structured logs for `serve`: human text or JSON lines on stderr, filtered
//! by `RUST_LOG` (default `info`).
//!
//! What is logged is decided where events are emitted: requests are logged
//! by method, path, status and latency (`http::trace`), never with bodies or
//! headers, so objective text and bearer tokens stay out of the logs.

use std::io::IsTerminal;

use tracing::Subscriber;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// The filter used when `RUST_LOG` is unset or unreadable.
pub const DEFAULT_FILTER: &str = "info";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, with the request span's fields.
    Json,
}

/// `RUST_LOG`, or [`DEFAULT_FILTER`].
pub fn filter_from_env() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// The subscriber `serve` installs. Tests hand it a buffer as `writer` to
/// see exactly what production would print.
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    ansi: bool,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.with_ansi(ansi).finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// Installs the `serve` subscriber on stderr (colour only on a terminal).
pub fn init(format: LogFormat) -> Result<(), tracing::subscriber::SetGlobalDefaultError> {
    let ansi = std::io::stderr().is_terminal();
    tracing::subscriber::set_global_default(subscriber(
        format,
        filter_from_env(),
        ansi,
        std::io::stderr,
    ))
}
