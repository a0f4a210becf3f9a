//! The state of one plugin `invoke` that the host functions act on: the task as the call
//! found it, the effects accepted so far, and what children are checked against. Apart from
//! both the sandbox (which holds it in the guest's store) and the host functions (which change
//! it), so each imports it and neither imports the other for it.

use std::sync::Arc;

use tokio::runtime::Handle;

use crate::state::records::record::TaskRecord;
use crate::work::tools::{Effect, EffectPort};

/// The state of one `invoke`: the task as it was when the call began, the effects accepted so
/// far, and what sub-tasks are checked against and created with.
#[derive(Clone)]
pub struct CallState {
    pub record: TaskRecord,
    /// The model's id of the call, which names the children it creates.
    pub call_id: String,
    pub effects: Vec<Effect>,
    /// What checks and makes every effect: the engine's side of the port.
    pub port: Arc<dyn EffectPort>,
    /// The runtime that asked for the call (the engine's): where the host's own network work
    /// runs. `None` outside a runtime, where no child can be created.
    pub host: Option<Handle>,
    /// Messages sent to agents so far in this call (children created, messages to children).
    pub spawned: usize,
    /// The `model` argument of the call in flight, as the model wrote it (already validated
    /// against the tool's schema): the model a sub-task on this harness is asked to run on. It
    /// is read from the model's own arguments, not from the plugin, so no plugin can pick a
    /// model the model did not ask for, and the plugin interface stays as it is.
    pub requested_model: Option<String>,
    /// The skills loaded on the task when the call began, sorted by name.
    pub loaded_skills: Vec<String>,
    /// Whether the call runs before its model call is journaled, so may do nothing outside the
    /// process: a request to create a child is refused with `host.not_yet` and marked in
    /// [`CallState::asked_outside`]; the engine then journals the model call and runs the call
    /// again, allowed. (A child created before its call is journaled could be created twice:
    /// after a restart the model would be asked again, and its new call would name another.)
    pub in_process_only: bool,
    /// Whether the call asked to create a child while it was [`CallState::in_process_only`].
    pub asked_outside: bool,
}

impl CallState {
    /// The message id of the call's next message to an agent (one that creates a child, or one
    /// to a child): the same after a restart replays the call, so the agent finds the child it
    /// already made rather than making another.
    pub(super) fn next_message_id(&mut self) -> String {
        use sha2::{Digest, Sha256};
        let n = self.spawned;
        self.spawned += 1;
        let digest = Sha256::digest(format!("{}\0{}\0{n}", self.record.id, self.call_id));
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("subtask-{hex}")
    }
}
