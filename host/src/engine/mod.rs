//! The engine runs tasks: one turn loop per open task (drain → assemble → maybe compact → one
//! model call → tool calls → record), journaled step by step so that a restart resumes every
//! open task without repeating a recorded step.

pub mod budget;
pub mod children;
pub mod effects;
pub mod embedded;
pub mod host_effects;
mod inbox;
pub mod journal;
mod participant_task;
pub mod tools;
mod turn;
pub mod wakeups;

pub use embedded::{EmbeddedEngine, EngineParts, EngineSettings};
pub use host_effects::HostEffects;
pub use tools::{ChildRequest, Effect, EffectPort, ToolContext, ToolError, ToolHost, ToolOutcome};
pub use wakeups::{WakeReceiver, WakeSender, wake_queue};

/// What the task service needs from an engine. The embedded engine runs loops in this process;
/// a distributed engine would start workflows instead.
pub trait Engine: Send + Sync {
    /// Begins working a task that was just created.
    fn start(&self, task_id: &str);
    /// Tells the task that new input arrived (a message, a sub-task's news).
    fn wake(&self, task_id: &str);
    /// Stops working a task whose state is already terminal (canceled).
    fn cancel(&self, task_id: &str);
}
