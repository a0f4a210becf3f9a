//! Tasks as the harness keeps them: the A2A task, its extension, who may see and change it.

pub mod extension;
pub mod service;

pub use service::{Caller, Subscription, TaskError, TaskService};
