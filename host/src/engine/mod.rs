//! The engine runs tasks: one turn loop per open task (drain → assemble → maybe compact → one
//! model call → tool calls → record), journaled step by step so that a restart resumes every
//! open task without repeating a recorded step.

pub mod budget;
pub mod children;
pub mod embedded;
pub mod host_effects;
mod inbox;
pub mod journal;
mod participant_task;
#[cfg(feature = "temporal")]
pub mod temporal;
mod turn;
pub mod wakeups;

pub use crate::tools::{
    ChildRequest, Effect, EffectPort, ToolContext, ToolError, ToolHost, ToolOutcome,
};
pub use embedded::{EmbeddedEngine, EngineParts, EngineSettings};
pub use host_effects::HostEffects;
pub use inbox::FirstInput;
pub(crate) use inbox::first_input;
pub use wakeups::{WakeReceiver, WakeSender, wake_queue};

/// What the task service and the runtime need from an engine. The embedded engine runs each
/// task's loop in this process; the Temporal engine (`--features temporal`) runs each task as a
/// workflow on a Temporal server. Both take the same steps ([`turn::step`]), so a task behaves
/// the same on either.
#[async_trait::async_trait]
pub trait Engine: Send + Sync {
    /// Begins working a task that was just created.
    fn start(&self, task_id: &str);
    /// Begins working a task created with its first message already journaled (the entry of
    /// `first` at sequence number `seq`) and its state set working: the loop goes on from there
    /// without reading or draining. An engine that reads the journal anyway starts it as any.
    fn start_drained(&self, task_id: &str, first: &FirstInput, seq: i64) {
        let _ = (first, seq);
        self.start(task_id);
    }
    /// Tells the task that new input arrived (a message, a sub-task's news).
    fn wake(&self, task_id: &str);
    /// Stops working a task whose state is already terminal (canceled), and cancels its open
    /// children on their agents.
    fn cancel(&self, task_id: &str);
    /// Picks up every task the store holds open (after a restart); returns how many.
    fn resume_open(&self) -> Result<usize, crate::store::StoreError>;
    /// Stops working tasks: they stay as they are, to resume at the next start.
    async fn shutdown(&self);
}
