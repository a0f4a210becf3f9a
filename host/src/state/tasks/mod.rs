//! Tasks as the harness keeps them: the A2A task and its extension, who may see and change it,
//! the hub through which every change is written and announced, and the trusted delegators who
//! may shape a new task's brief.

pub mod creator;
pub mod engine_port;
pub mod envelope;
pub mod events;
pub mod handler;
pub mod hops;
pub mod hub;
pub mod input_limit;
pub mod live_records;
pub mod service;
pub mod trust;

pub use handler::Tasks;
pub use service::{Caller, Subscription, TaskError, TaskService};
pub use trust::Delegators;
