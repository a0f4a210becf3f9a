//! Agents a task may be delegated to, and what the model may know of them.

pub mod clean;
pub mod unknown;

pub use clean::clean;
pub use unknown::{UNKNOWN_AGENT_CODE, UnknownAgent};
