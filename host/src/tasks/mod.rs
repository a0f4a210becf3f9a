//! Tasks as the harness keeps them: the A2A task and its extension, who may see and change it,
//! and the hub through which every change is written and announced.

pub mod envelope;
pub mod extension;
pub mod handler;
pub mod hub;
pub mod record;
pub mod service;

pub use handler::Tasks;
pub use service::{Caller, Subscription, TaskError, TaskService};
