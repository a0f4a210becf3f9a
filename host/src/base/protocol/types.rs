//! A2A 1.0 protocol types in their protobuf-JSON shape: camelCase fields, enum names as strings,
//! parts without a `kind` tag. Only what `a2a.proto` 1.0 defines lives here. Request types also
//! read a field by its proto name (`history_length`), as protobuf-JSON parsers must.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object, as `google.protobuf.Struct` is in protobuf-JSON.
pub type Struct = Map<String, Value>;

/// The `Message.metadata` key that marks an agent message as itself the reply to the message
/// that started its task (a direct reply), not a report on the task: a blocking `SendMessage`
/// answers with such a message instead of the task.
pub const DIRECT_REPLY_KEY: &str = "io.github.madarauchiha-314.tiny-harness/directReply";

/// The lifecycle state of a task. Serialised as `TASK_STATE_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TaskState {
    /// The proto default: no state set; never a state the harness gives a task.
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Received and stored, not yet worked; where every new task starts.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// The agent is working on it.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Done, with its answer. Terminal.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended in an error (a model failure, a budget or turn limit). Terminal.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Canceled by a participant. Terminal.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waiting for a participant's answer; a message resumes it.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// The agent declined the task. Terminal.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waiting for the client to authenticate; the harness never sets it, but a child may.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Completed, failed, canceled and rejected tasks accept no further messages.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// States in which a blocking `SendMessage` returns: terminal or waiting on the client.
    pub fn is_settled(self) -> bool {
        self.is_terminal() || matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// The wire name, `TASK_STATE_…`.
    pub fn wire_name(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// The short upper-case name the model reads (`COMPLETED`, `INPUT_REQUIRED`).
    pub fn short_name(self) -> &'static str {
        &self.wire_name()["TASK_STATE_".len()..]
    }

    /// Parses a wire name (`TASK_STATE_WORKING`).
    pub fn from_wire(name: &str) -> Option<TaskState> {
        serde_json::from_value(Value::String(name.to_string())).ok()
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Role {
    /// The proto default: no role set.
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// Sent by the client (a participant).
    #[serde(rename = "ROLE_USER")]
    User,
    /// Sent by the agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One piece of content. Exactly one of `text`, `raw`, `url` and `data` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Part {
    /// Plain text; the text parts are what the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, base64-encoded as protobuf-JSON writes `bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A URL pointing at the content, which the harness never fetches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured JSON, such as the task envelope (identified by its media type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Metadata of this part alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    /// A file name for `raw` or `url` content.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filename: String,
    /// The content's media type (`text/plain`, the envelope's type, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "media_type")]
    pub media_type: String,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A structured data part with its media type.
    pub fn data(data: Value, media_type: &str) -> Part {
        Part {
            data: Some(data),
            media_type: media_type.to_string(),
            ..Part::default()
        }
    }

    /// How many of the content fields are set; a valid part has exactly one.
    pub fn content_count(&self) -> usize {
        [
            self.text.is_some(),
            self.raw.is_some(),
            self.url.is_some(),
            self.data.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id for the message; resending the message that created a task returns that task, not a new one.
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The conversation the message belongs to; the server assigns one when absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The task the message continues; empty starts a new task.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Who wrote the message.
    pub role: Role,
    /// The content, in order.
    pub parts: Vec<Part>,
    /// Free extension data; the harness reads its participant id and delegation keys here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    /// URIs of the extensions this message uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Other tasks the message refers to, as context for the agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message from the agent with one text part.
    pub fn agent_text(task_id: &str, context_id: &str, text: impl Into<String>) -> Message {
        Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: context_id.to_string(),
            task_id: task_id.to_string(),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    /// The text parts joined by newlines.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| part.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A task's current state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// Where the task stands.
    pub state: TaskState,
    /// The agent's message about the state (the question while `INPUT_REQUIRED`, the answer or error at the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// ISO 8601 in UTC with milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    pub artifact_id: String,
    /// A short human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// What the artifact holds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The content.
    pub parts: Vec<Part>,
    /// Free extension data of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    /// URIs of the extensions this artifact uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work and everything known about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id, assigned by the server.
    pub id: String,
    /// The conversation the task belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// The current state and its message.
    pub status: TaskStatus,
    /// `None` where a listing leaves artifacts out, as `ListTasks` must by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// The messages exchanged, oldest first, cut to `historyLength` when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    /// Extension data; the task extension lives here under its key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A status change, as streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task that changed.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Free extension data of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// An artifact produced or extended, as streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task that produced it.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The artifact, whole or the chunk being added.
    pub artifact: Artifact,
    /// Whether the parts extend an artifact sent before with the same id; the harness sends whole artifacts.
    #[serde(default)]
    pub append: bool,
    /// Whether this is the artifact's last chunk; always true from the harness.
    #[serde(default)]
    pub last_chunk: bool,
    /// Free extension data of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// One item of a stream: the `oneof payload` of `StreamResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as a whole; a stream starts with it.
    Task(Task),
    /// A message that is the whole answer, with no task.
    Message(Message),
    /// The task's status changed.
    StatusUpdate(TaskStatusUpdateEvent),
    /// The task produced an artifact.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The result of `SendMessage`: a task, or a direct message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message created or continued.
    Task(Task),
    /// A direct reply (marked with [`DIRECT_REPLY_KEY`]), sent instead of the task.
    Message(Message),
}

/// The current time as the protocol writes timestamps: `YYYY-MM-DDTHH:MM:SS.sssZ`.
pub fn timestamp_now() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::requests::{GetTaskRequest, ListTasksRequest};
    use serde_json::json;

    #[test]
    fn task_serialises_in_protobuf_json_shape() {
        let task = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: Some(vec![Message {
                message_id: "m1".into(),
                role: Role::User,
                parts: vec![Part::text("hi")],
                ..Message::default()
            }]),
            metadata: None,
        };
        assert_eq!(
            serde_json::to_value(&task).unwrap(),
            json!({"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"},
                   "history":[{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}]})
        );
    }

    #[test]
    fn stream_response_is_a_oneof_keyed_by_payload_name() {
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            metadata: None,
        });
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value["statusUpdate"]["status"]["state"],
            "TASK_STATE_WORKING"
        );
    }

    #[test]
    fn request_fields_are_read_by_their_proto_names_too() {
        let request: GetTaskRequest =
            serde_json::from_value(json!({"id": "t", "history_length": 1})).unwrap();
        assert_eq!(request.history_length, Some(1));
        let request: ListTasksRequest =
            serde_json::from_value(json!({"context_id": "c", "pageSize": 2})).unwrap();
        assert_eq!(
            (request.context_id.as_str(), request.page_size),
            ("c", Some(2))
        );
        let part: Part =
            serde_json::from_value(json!({"raw": "eA==", "media_type": "text/plain"})).unwrap();
        assert_eq!(part.media_type, "text/plain");
    }

    #[test]
    fn a_state_filter_is_read_by_name_or_number_and_unrecognized_means_none() {
        let read = |status: Value| {
            serde_json::from_value::<ListTasksRequest>(json!({ "status": status }))
                .map(|request| request.status)
        };
        assert_eq!(
            read(json!("TASK_STATE_WORKING")).unwrap(),
            Some(TaskState::Working)
        );
        assert_eq!(read(json!(3)).unwrap(), Some(TaskState::Completed));
        assert_eq!(read(json!("UNRECOGNIZED")).unwrap(), None);
        assert_eq!(read(json!(-1)).unwrap(), None);
        assert!(read(json!("TASK_STATE_DONE")).is_err());
        assert!(read(json!(42)).is_err());
    }

    #[test]
    fn timestamps_are_utc_with_milliseconds() {
        let stamp = timestamp_now();
        assert_eq!(stamp.len(), "2025-10-28T10:30:00.000Z".len());
        assert!(stamp.ends_with('Z'));
    }

    #[test]
    fn terminal_and_settled_states() {
        assert!(TaskState::Canceled.is_terminal());
        assert!(!TaskState::InputRequired.is_terminal());
        assert!(TaskState::InputRequired.is_settled());
        assert_eq!(TaskState::InputRequired.short_name(), "INPUT_REQUIRED");
        assert_eq!(
            TaskState::from_wire("TASK_STATE_WORKING"),
            Some(TaskState::Working)
        );
    }
}
