//! Tasks as the harness keeps them: the A2A task and its extension, who may see and change it,
//! and the hub through which every change is written and announced.

pub mod conversation;
pub mod creator;
pub mod engine_port;
pub mod envelope;
pub mod events;
pub mod handler;
pub mod hops;
pub mod hub;
pub mod ids;
pub mod input_limit;
pub mod live_records;
pub mod push_configs;
pub mod push_queue;
pub mod service;
mod snapshot;
mod story;

pub use handler::Tasks;
pub use service::{Caller, Subscription, TaskError, TaskService};
