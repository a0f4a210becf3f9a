//! The engine runs tasks: one turn loop per open task (drain → assemble → maybe compact → one
//! model call → tool calls → record), journaled step by step so that a restart resumes every
//! open task without repeating a recorded step.

pub mod budget;
pub mod children;
pub mod embedded;
pub mod host_effects;
pub(crate) mod inbox;
pub mod journal;
mod participant_task;
pub mod progress;
mod shared;
mod status;
#[cfg(feature = "temporal")]
pub mod temporal;
mod turn;
pub mod wakeups;

pub use crate::state::tasks::engine_port::{Engine, FirstInput};
pub use crate::work::tools::{
    ChildRequest, Effect, EffectPort, ToolContext, ToolError, ToolHost, ToolOutcome,
};
pub use embedded::{EmbeddedEngine, EngineParts, EngineSettings};
pub use host_effects::HostEffects;
pub use wakeups::{WakeReceiver, WakeSender, wake_queue};
