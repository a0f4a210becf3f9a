//! The A2A 0.3 shapes on the JSON-RPC wire: objects tagged with `kind`, parts with nested files,
//! lower-case roles and kebab-case states, `final` on status updates, `blocking` instead of
//! `returnImmediately`. Only what the 0.3 core methods carry lives here; [`super::convert`]
//! maps each to and from the 1.0 types the server works with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::types::Struct;

/// `kind` of a message.
pub const KIND_MESSAGE: &str = "message";
/// `kind` of a task.
pub const KIND_TASK: &str = "task";
/// `kind` of a status update.
pub const KIND_STATUS_UPDATE: &str = "status-update";
/// `kind` of an artifact update.
pub const KIND_ARTIFACT_UPDATE: &str = "artifact-update";

fn kind_message() -> String {
    KIND_MESSAGE.to_string()
}

fn kind_task() -> String {
    KIND_TASK.to_string()
}

fn kind_status_update() -> String {
    KIND_STATUS_UPDATE.to_string()
}

fn kind_artifact_update() -> String {
    KIND_ARTIFACT_UPDATE.to_string()
}

/// Who wrote a message: `user` or `agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

/// A task's state, in kebab-case (`input-required`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
    AuthRequired,
    Unknown,
}

/// A file's content: exactly one of `bytes` (base64) and `uri`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One part, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
    File {
        file: FileContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
    Data {
        /// 0.3 requires an object here.
        data: Struct,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
}

/// A message, `kind: "message"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default = "kind_message")]
    pub kind: String,
    pub message_id: String,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A task's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A task, `kind: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default = "kind_task")]
    pub kind: String,
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A status change, `kind: "status-update"`; `final` marks the last event of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(default = "kind_status_update")]
    pub kind: String,
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(rename = "final")]
    pub is_final: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// An artifact produced or extended, `kind: "artifact-update"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(default = "kind_artifact_update")]
    pub kind: String,
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// What `message/send` answers and `message/stream` streams: one of the four kinds. Each
/// variant carries its own `kind` field, so the enum is written untagged.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Event {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl Event {
    /// Reads an event by its `kind`, so a malformed one is reported against the right shape.
    pub fn from_value(value: Value) -> Result<Event, String> {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let read = |err: serde_json::Error| format!("{kind}: {err}");
        match kind.as_str() {
            KIND_TASK => serde_json::from_value(value).map(Event::Task).map_err(read),
            KIND_MESSAGE => serde_json::from_value(value)
                .map(Event::Message)
                .map_err(read),
            KIND_STATUS_UPDATE => serde_json::from_value(value)
                .map(Event::StatusUpdate)
                .map_err(read),
            KIND_ARTIFACT_UPDATE => serde_json::from_value(value)
                .map(Event::ArtifactUpdate)
                .map_err(read),
            other => Err(format!("unknown kind {other:?}")),
        }
    }
}

/// `configuration` of `message/send`. `blocking` absent means blocking, as 0.3 servers read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_output_modes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<Value>,
}

/// Params of `message/send` and `message/stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Params of `tasks/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Params of `tasks/cancel` and `tasks/resubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}
