//! Why a plugin failed, said so an operator (at start-up) or the model (at a call) can act on it.

use std::sync::atomic::Ordering;

use super::compose::PromptError;
use super::sandbox::{CallLimits, StoreData};

/// A plugin that could not be loaded or composed stops start-up with one of these.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("plugin {file}: cannot load: {reason}")]
    Load { file: String, reason: String },
    #[error("plugin {file}: {function} failed: {reason}")]
    Call {
        file: String,
        function: String,
        reason: String,
    },
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("plugin {file}: {reason}")]
    Contribution { file: String, reason: String },
    #[error("tool \"{tool}\" is defined by both {first} and {second}; tool names must be unique")]
    ToolClash {
        tool: String,
        first: String,
        second: String,
    },
    #[error("plugins.dir: cannot read {path}: {reason}")]
    Dir { path: String, reason: String },
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
