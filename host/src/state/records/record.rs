//! A task as the harness stores it: the A2A task without its history, the extension as a typed
//! value, and the participant who created it.

use serde::{Deserialize, Serialize};

use super::extension::{METADATA_KEY, TaskExtension};
use crate::base::protocol::types::{Artifact, Message, Struct, Task, TaskState, TaskStatus};

/// One task. Its history lives beside it in the store, one row per message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task's id, unique in the store.
    pub id: String,
    /// The A2A context the task belongs to.
    pub context_id: String,
    /// The current state and its message.
    pub status: TaskStatus,
    /// What the task has produced so far.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// Client metadata other than the extension.
    #[serde(default)]
    pub metadata: Struct,
    /// The extension data, typed; written to `metadata` under the extension key on the wire.
    pub ext: TaskExtension,
    /// The participant that created the task.
    pub owner: String,
}

#[cfg(test)]
impl TaskRecord {
    /// A task for unit tests: id `t` in context `c`, `owner`'s, in `state`, with the brief
    /// `ext` and nothing else set.
    pub(crate) fn for_test(ext: TaskExtension, state: TaskState, owner: &str) -> TaskRecord {
        TaskRecord {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                ..TaskStatus::default()
            },
            artifacts: vec![],
            metadata: Default::default(),
            ext,
            owner: owner.into(),
        }
    }
}

impl TaskRecord {
    /// The task's state.
    pub fn state(&self) -> TaskState {
        self.status.state
    }

    /// The A2A task, the extension under its metadata key. `history` is omitted when `None`;
    /// artifacts are omitted unless `include_artifacts`. The extension is always here, for the
    /// harness's own readers; what a client gets is shaped by the extensions its request
    /// activated (`server::extensions`), so one that did not ask for it never sees it.
    pub fn to_task(&self, history: Option<Vec<Message>>, include_artifacts: bool) -> Task {
        let mut metadata = self.metadata.clone();
        metadata.insert(METADATA_KEY.to_string(), self.ext.to_value());
        Task {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: self.status.clone(),
            artifacts: include_artifacts.then(|| self.artifacts.clone()),
            history,
            metadata: Some(metadata),
        }
    }

    /// Whether the participant may see and talk to this task.
    pub fn is_visible_to(&self, participant_id: &str) -> bool {
        self.owner == participant_id || self.ext.participant(participant_id).is_some()
    }
}
