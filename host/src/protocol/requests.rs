//! The parameters and results of the A2A 1.0 operations (`SendMessage`, `GetTask`,
//! `ListTasks`, `CancelTask`, `SubscribeToTask`) in their protobuf-JSON shape, as
//! [`super::types`] holds the objects they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{Message, Struct, Task, TaskState};

/// Push-notification settings; accepted on the wire, refused as unsupported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Value>,
}

/// How a `SendMessage` should behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default)]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// Parameters of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Parameters of `GetTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

/// Parameters of `ListTasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// Read leniently: see [`state_filter`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "state_filter"
    )]
    pub status: Option<TaskState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "page_token")]
    pub page_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// ISO 8601; only tasks whose status changed after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<String>,
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
    pub tasks: Vec<Task>,
    /// Empty on the last page, never absent.
    pub next_page_token: String,
    pub page_size: i32,
    pub total_size: i32,
}

/// Parameters of `CancelTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// Parameters of `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub id: String,
}
