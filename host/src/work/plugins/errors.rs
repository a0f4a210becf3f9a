//! Why a plugin failed, said so an operator (at start-up) or the model (at a call) can act on it.

use std::sync::atomic::Ordering;

use super::compose::PromptError;
use super::sandbox::{CallLimits, StoreData};
use crate::base::metrics::METRICS;

/// A plugin that could not be loaded or composed stops start-up with one of these.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The file is not a component this harness can link (invalid, foreign imports, or not
    /// exporting the plugin world).
    #[error("plugin {file}: cannot load: {reason}")]
    Load {
        /// The plugin's file name.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A call made while loading (`instantiate`, `info`, `sections`, `tools`) trapped or hit a
    /// limit.
    #[error("plugin {file}: {function} failed: {reason}")]
    Call {
        /// The plugin's file name.
        file: String,
        /// The export that failed.
        function: String,
        /// The deadline, the memory cap, or the trap, in words.
        reason: String,
    },
    /// The plugins' section edits could not be composed into a prompt.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// A plugin's tools break a rule (too many, a bad name, a description or schema too long).
    #[error("plugin {file}: {reason}")]
    Contribution {
        /// The plugin's file name.
        file: String,
        /// The rule broken.
        reason: String,
    },
    /// Two plugins define a tool of the same name.
    #[error("tool \"{tool}\" is defined by both {first} and {second}; tool names must be unique")]
    ToolClash {
        /// The tool's name.
        tool: String,
        /// The plugin loaded first.
        first: String,
        /// The plugin that defined it again.
        second: String,
    },
    /// The plugins folder could not be read.
    #[error("plugins.dir: cannot read {path}: {reason}")]
    Dir {
        /// The folder.
        path: String,
        /// The file system's reason.
        reason: String,
    },
    /// A grant (`[plugins.grants.<name>]`) cannot be honoured: it names no loaded plugin, or a
    /// secret's environment variable is not set.
    #[error("{setting}: {reason}")]
    Grant {
        /// The dotted setting at fault.
        setting: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// The WebAssembly engine, its cache or its threads could not be set up.
    #[error("cannot start the plugin engine: {0}")]
    Engine(String),
}

/// A failed guest call in words: the deadline, the memory cap, or the trap itself.
pub fn describe_failure(err: &wasmtime::Error, data: &StoreData, limits: CallLimits) -> String {
    if data.limiter.memory_denied.load(Ordering::Relaxed) {
        return format!(
            "it tried to use more than {} MiB of memory (plugins.memory_mb)",
            limits.memory_bytes / (1024 * 1024)
        );
    }
    if matches!(
        err.downcast_ref::<wasmtime::Trap>(),
        Some(wasmtime::Trap::Interrupt)
    ) {
        METRICS.plugin_deadline_hit();
        return format!(
            "it ran past its {} ms deadline (plugins.call_timeout_ms)",
            limits.deadline.as_millis()
        );
    }
    // The outermost message is often just "error while executing at wasm backtrace"; the cause
    // (the trap, or the guest's own error) is at the root of the chain.
    let cause = match err.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => err.root_cause().to_string(),
    };
    let first_line = cause.lines().next().unwrap_or("unknown failure");
    format!("it trapped: {first_line}")
}
