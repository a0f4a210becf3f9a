//! The process's log: `RUST_LOG` (else `info`) chooses what is written, `[log] format` how
//! (`text` or one JSON object a line), always to stderr, with colour codes only when stderr is a
//! terminal, so a file or a pipe never holds escape sequences.

use std::io::IsTerminal;

use crate::base::config::LogFormat;

/// What is logged when `RUST_LOG` is not set: each task's story (created, sub-tasks, ended),
/// start-up and warnings; model and tool calls are at `debug`.
pub const DEFAULT_FILTER: &str = "info";

/// Installs the process's log in `format`. Called once, as soon as the configuration is read;
/// a second call (a test's process already has a log) changes nothing.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        // Spans' fields stay out of each line: every line of a task's story names its task.
        LogFormat::Json => builder
            .json()
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}
