//! The A2A 0.3 shapes on the JSON-RPC wire: objects tagged with `kind`, parts with nested files,
//! lower-case roles and kebab-case states, `final` on status updates, `blocking` instead of
//! `returnImmediately`. Only what the 0.3 core methods carry lives here; [`super::convert`]
//! maps each to and from the 1.0 types the server works with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::protocol::types::Struct;

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
    /// Sent by the client; 1.0's `ROLE_USER`.
    User,
    /// Sent by the agent; 1.0's `ROLE_AGENT`.
    Agent,
}

/// A task's state, in kebab-case (`input-required`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Received, not yet worked.
    Submitted,
    /// Being worked on.
    Working,
    /// Waiting for the client's answer.
    InputRequired,
    /// Done. Terminal.
    Completed,
    /// Canceled. Terminal.
    Canceled,
    /// Ended in an error. Terminal.
    Failed,
    /// Declined by the agent. Terminal.
    Rejected,
    /// Waiting for the client to authenticate.
    AuthRequired,
    /// A state the sender could not name; 1.0's `TASK_STATE_UNSPECIFIED`.
    Unknown,
}

/// A file's content: exactly one of `bytes` (base64) and `uri`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// The file's bytes, base64-encoded; 1.0's `raw`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Where the file is; 1.0's `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The file's media type; 1.0's `mediaType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The file's name; 1.0's `filename`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One part, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    /// `kind: "text"`: plain text.
    Text {
        /// The text.
        text: String,
        /// Metadata of this part alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
    /// `kind: "file"`: a file, inline or by URI.
    File {
        /// The file's content and description.
        file: FileContent,
        /// Metadata of this part alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
    /// `kind: "data"`: structured JSON, such as the task envelope.
    Data {
        /// 0.3 requires an object here.
        data: Struct,
        /// Metadata of this part alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
}

/// A message, `kind: "message"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Always `message`.
    #[serde(default = "kind_message")]
    pub kind: String,
    /// The sender's id for the message.
    pub message_id: String,
    /// Who wrote it.
    pub role: Role,
    /// The content, in order.
    pub parts: Vec<Part>,
    /// The conversation the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task the message continues; absent starts a new task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Other tasks the message refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_task_ids: Option<Vec<String>>,
    /// URIs of the extensions this message uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Free extension data, as in 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A task's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// Where the task stands.
    pub state: TaskState,
    /// The agent's message about the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was set (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    pub artifact_id: String,
    /// The content.
    pub parts: Vec<Part>,
    /// A short human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the artifact holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// URIs of the extensions this artifact uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Free extension data of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A task, `kind: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Always `task`.
    #[serde(default = "kind_task")]
    pub kind: String,
    /// The task's id.
    pub id: String,
    /// The conversation the task belongs to.
    pub context_id: String,
    /// The current state and its message.
    pub status: TaskStatus,
    /// What the task has produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// The messages exchanged, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    /// Extension data; the task extension lives here, as in 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A status change, `kind: "status-update"`; `final` marks the last event of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// Always `status-update`.
    #[serde(default = "kind_status_update")]
    pub kind: String,
    /// The task that changed.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// `final`: true on the last event of the stream (the task settled).
    #[serde(rename = "final")]
    pub is_final: bool,
    /// Free extension data of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// An artifact produced or extended, `kind: "artifact-update"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// Always `artifact-update`.
    #[serde(default = "kind_artifact_update")]
    pub kind: String,
    /// The task that produced it.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The artifact, whole or the chunk being added.
    pub artifact: Artifact,
    /// Whether the parts extend an artifact sent before with the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// Whether this is the artifact's last chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    /// Free extension data of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// What `message/send` answers and `message/stream` streams: one of the four kinds. Each
/// variant carries its own `kind` field, so the enum is written untagged.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Event {
    /// A task, the first event of a stream or the answer.
    Task(Task),
    /// A message that is the whole answer.
    Message(Message),
    /// The task's status changed.
    StatusUpdate(TaskStatusUpdateEvent),
    /// The task produced an artifact.
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
    /// Media types the client can take in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_output_modes: Option<Vec<String>>,
    /// `false` answers at once (1.0's `returnImmediately`); absent or `true` waits until the task settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// The most history messages the returned task carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Push settings; the harness refuses them, as in 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<Value>,
}

/// Params of `message/send` and `message/stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    /// The message to send.
    pub message: Message,
    /// How the call should behave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendConfiguration>,
    /// Free extension data of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Params of `tasks/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    /// The task's id.
    pub id: String,
    /// The most history messages to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Free extension data of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Params of `tasks/cancel` and `tasks/resubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task's id.
    pub id: String,
    /// Free extension data of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}
