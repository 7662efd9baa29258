//! Logging setup: `tracing` to stderr, filtered by `HERMES_LOG` (or `RUST_LOG`), with every
//! registered secret scrubbed from every line before it is written — whatever a dependency
//! decides to log at debug or trace level (request URLs carry the Telegram token).

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

pub use hermes_adapter::{register_secret, scrub};

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (journald adds its own timestamps).
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Install the global subscriber. Message texts are logged only at debug level.
pub fn init(format: LogFormat) {
    init_with_default(format, "info,hyper=warn,reqwest=warn,teloxide=warn");
}

/// [`init`] with another filter when `HERMES_LOG` is unset (`hermes setup` keeps its prompts
/// clear of info lines with `warn`).
pub fn init_with_default(format: LogFormat, default_filter: &str) {
    let filter = EnvFilter::try_from_env("HERMES_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Scrubbing);
    match format {
        LogFormat::Text => builder
            .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

/// Writes log lines to stderr through [`scrub`].
struct Scrubbing;

/// One log event's bytes, scrubbed and written when the event is complete.
struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let text = scrub(&String::from_utf8_lossy(&self.0));
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}

impl<'a> MakeWriter<'a> for Scrubbing {
    type Writer = Line;

    fn make_writer(&'a self) -> Self::Writer {
        Line(Vec::with_capacity(256))
    }
}
