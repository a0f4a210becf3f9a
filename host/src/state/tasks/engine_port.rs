//! The engine as the task service sees it: the port an engine implements (declared here, below
//! the engines, so the task service never imports one) and the first input it may take when a
//! task is created.

use crate::base::protocol::types::Message;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::store::Tx;

/// What the task service and the runtime need from an engine. The embedded engine runs each
/// task's loop in this process; the Temporal engine (`--features temporal`) runs each task as a
/// workflow on a Temporal server. Both take the same steps, so a task behaves
/// the same on either.
#[async_trait::async_trait]
pub trait Engine: Send + Sync {
    /// A new task's first message as the model's input, when the engine takes it at once (see
    /// the engine's inbox for when): task creation then has the engine record it
    /// ([`Engine::record_first_input`]) in the creating transaction, sets the task working and
    /// starts it with [`Engine::start_drained`], so its first step is the model call. `None`
    /// leaves the message to the loop's first drain.
    fn first_input(&self, record: &TaskRecord, message: &Message) -> Option<FirstInput>;
    /// Records `first` (the task's first message, stored at `seq`) as the engine's own step, in
    /// the transaction `tx` that creates the task: the task service writes no engine record.
    fn record_first_input(
        &self,
        tx: &mut Tx<'_>,
        task_id: &str,
        first: &FirstInput,
        seq: i64,
    ) -> Result<(), StoreError>;
    /// Records `text`, the earlier exchanges of the new task's context
    /// (`tasks::conversation`), as the engine's own step in the transaction `tx` that creates
    /// the task, before its first input: every turn of the task reads it as its `conversation`
    /// section, the same after a restart.
    fn record_conversation(
        &self,
        tx: &mut Tx<'_>,
        task_id: &str,
        text: &str,
    ) -> Result<(), StoreError>;
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
    fn resume_open(&self) -> Result<usize, StoreError>;
    /// Stops working tasks: they stay as they are, to resume at the next start.
    async fn shutdown(&self);
    /// Whether the engine can take work now (`/readyz`). `Err` is a short fixed reason, safe
    /// to show anyone: never an address or an error's text (those go to the log).
    async fn readiness(&self) -> Result<(), &'static str> {
        Ok(())
    }
}

/// What [`Engine::first_input`] found: the drain's entry for the message, less its sequence number.
#[derive(Debug, Clone)]
pub struct FirstInput {
    pub(crate) from: String,
    pub(crate) trusted: bool,
    pub(crate) text: String,
    pub(crate) message_id: String,
    /// The conversation recorded before it ([`Engine::record_conversation`]), so the loop that
    /// starts drained holds what the journal holds.
    pub(crate) conversation: Option<String>,
}
