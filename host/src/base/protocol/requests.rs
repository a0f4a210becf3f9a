//! The parameters and results of the A2A 1.0 operations (`SendMessage`, `GetTask`,
//! `ListTasks`, `CancelTask`, `SubscribeToTask`, the push-config operations) in their
//! protobuf-JSON shape, as
//! [`super::types`] holds the objects they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{Message, Struct, Task, TaskState};

/// A webhook the agent POSTs each of a task's updates to (`StreamResponse` bodies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant the config belongs to; this harness serves one tenant and ignores it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The config's id, unique per task.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The task whose updates would be pushed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Where the agent would POST each update.
    #[serde(default)]
    pub url: String,
    /// A token the agent would send with each push, for the receiver to check.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// How the agent would authenticate to the receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Value>,
}

/// How a `SendMessage` should behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client can take in the answer; read but not used to shape it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// A webhook for this task's updates, set with the message (refused when push is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// The most history messages the returned task carries; absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Answer at once with the task as it is, instead of waiting until it settles.
    #[serde(default)]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// Parameters of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant, in a multi-tenant server; this harness serves one and ignores it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The message to send: a new task's first message, or one for the task it names.
    pub message: Message,
    /// How the call should behave (blocking, history, pushes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Free extension data of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Parameters of `GetTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant, in a multi-tenant server; ignored here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task's id.
    pub id: String,
    /// The most history messages to return, newest kept; absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

/// Parameters of `ListTasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant, in a multi-tenant server; ignored here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// Only tasks of this context; empty for any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// Read leniently: see `state_filter`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "state_filter"
    )]
    pub status: Option<TaskState>,
    /// Tasks per page: 1 to 100, 50 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the page before; empty for the first page.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "page_token")]
    pub page_token: String,
    /// The most history messages each task carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// ISO 8601; only tasks whose status changed after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<String>,
    /// Whether each task carries its artifacts; false when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
}

/// The name protobuf code generators give an enum value they cannot name; some SDKs send it for
/// a filter that is not set.
pub const UNRECOGNIZED_ENUM: &str = "UNRECOGNIZED";

/// A state filter as protobuf-JSON writes an enum: by name or by number. `UNRECOGNIZED`, -1
/// and null leave the filter unset (what the official JavaScript SDK sends when none is given);
/// another unknown name is an error, so a misspelt filter does not silently list everything.
fn state_filter<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<TaskState>, D::Error> {
    use serde::de::Error;
    const STATES: [TaskState; 9] = [
        TaskState::Unspecified,
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ];
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(None),
        Value::String(name) if name == UNRECOGNIZED_ENUM => Ok(None),
        Value::String(name) => TaskState::from_wire(&name)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("unknown task state {name:?}"))),
        Value::Number(number) => match number.as_i64() {
            Some(-1) => Ok(None),
            Some(n) => usize::try_from(n)
                .ok()
                .and_then(|n| STATES.get(n).copied())
                .map(Some)
                .ok_or_else(|| D::Error::custom(format!("unknown task state number {n}"))),
            None => Err(D::Error::custom("a task state number must be an integer")),
        },
        other => Err(D::Error::custom(format!(
            "a task state must be a name, not {other}"
        ))),
    }
}

/// The result of `ListTasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// This page's tasks the caller may see, most recently updated first.
    pub tasks: Vec<Task>,
    /// Empty on the last page, never absent.
    pub next_page_token: String,
    /// How many tasks this page holds.
    pub page_size: i32,
    /// How many tasks match the filter across all pages.
    pub total_size: i32,
}

/// Parameters of `CancelTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// The tenant, in a multi-tenant server; ignored here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task to cancel.
    pub id: String,
    /// Free extension data of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Parameters of `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// The tenant, in a multi-tenant server; ignored here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task to stream.
    pub id: String,
}

/// Parameters of `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRequest {
    /// The tenant, in a multi-tenant server; ignored here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task the config belongs to.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config's id.
    pub id: String,
}

/// Parameters of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant, in a multi-tenant server; ignored here.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task whose configs to list.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Read but not needed: a task has few configs, all on one page.
    #[serde(default, alias = "page_size")]
    pub page_size: i32,
    /// Read but not needed, as `pageSize`.
    #[serde(default, alias = "page_token")]
    pub page_token: String,
}

/// The result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The task's configs, oldest first.
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Always empty: every config is on the one page.
    pub next_page_token: String,
}
