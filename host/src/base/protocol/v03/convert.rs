//! Conversions between the 0.3 shapes of [`super::wire`] and the 1.0 types, both ways: the
//! server reads 0.3 requests into 1.0 and writes 1.0 results as 0.3; the client does the
//! reverse. What 0.3 cannot say is dropped (an empty media type), and what 1.0 cannot say
//! is refused with the path of the offending field.

use serde_json::{Map, Value};

use super::wire;
use crate::base::protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use crate::base::protocol::types::{
    Artifact, Message, Part, Role, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// The key a 1.0 data part that is not a JSON object is wrapped under, since 0.3 data parts are
/// objects.
pub const WRAPPED_DATA_KEY: &str = "value";

// ---- 0.3 → 1.0 -------------------------------------------------------------------------------

/// `message/send` params as a 1.0 `SendMessage` request. `blocking: false` becomes
/// `returnImmediately`; a push config is kept whole (id, url, token, authentication).
pub fn send_params_to_v10(
    params: wire::SendParams,
) -> Result<SendMessageRequest, (String, String)> {
    let message =
        message_to_v10(params.message).map_err(|(field, why)| (format!("message.{field}"), why))?;
    let configuration = params.configuration.map(|config| SendMessageConfiguration {
        accepted_output_modes: config.accepted_output_modes.unwrap_or_default(),
        // 0.3's config has 1.0's fields (`id`, `url`, `token`, `authentication`); one that
        // does not read as them is kept empty, for the server to refuse by its `url`.
        task_push_notification_config: config
            .push_notification_config
            .map(|value| serde_json::from_value(value).unwrap_or_default()),
        history_length: config.history_length,
        return_immediately: config.blocking == Some(false),
    });
    Ok(SendMessageRequest {
        tenant: String::new(),
        message,
        configuration,
        metadata: params.metadata,
    })
}

/// A 0.3 message; on failure, the field (`parts[1].file`) and why.
pub fn message_to_v10(message: wire::Message) -> Result<Message, (String, String)> {
    let parts = message
        .parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| part_to_v10(part).map_err(|why| (format!("parts[{index}].file"), why)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Message {
        message_id: message.message_id,
        context_id: message.context_id.unwrap_or_default(),
        task_id: message.task_id.unwrap_or_default(),
        role: match message.role {
            wire::Role::User => Role::User,
            wire::Role::Agent => Role::Agent,
        },
        parts,
        metadata: message.metadata,
        extensions: message.extensions.unwrap_or_default(),
        reference_task_ids: message.reference_task_ids.unwrap_or_default(),
    })
}

/// A 0.3 part; a file needs exactly one of `bytes` and `uri`.
pub fn part_to_v10(part: wire::Part) -> Result<Part, String> {
    Ok(match part {
        wire::Part::Text { text, metadata } => Part {
            metadata,
            ..Part::text(text)
        },
        wire::Part::Data { data, metadata } => Part {
            data: Some(Value::Object(data)),
            metadata,
            ..Part::default()
        },
        wire::Part::File { file, metadata } => {
            let (raw, url) = match (file.bytes, file.uri) {
                (Some(bytes), None) => (Some(bytes), None),
                (None, Some(uri)) => (None, Some(uri)),
                _ => return Err("a file needs exactly one of bytes and uri".to_string()),
            };
            Part {
                raw,
                url,
                metadata,
                filename: file.name.unwrap_or_default(),
                media_type: file.mime_type.unwrap_or_default(),
                ..Part::default()
            }
        }
    })
}

fn state_to_v10(state: wire::TaskState) -> TaskState {
    match state {
        wire::TaskState::Submitted => TaskState::Submitted,
        wire::TaskState::Working => TaskState::Working,
        wire::TaskState::InputRequired => TaskState::InputRequired,
        wire::TaskState::Completed => TaskState::Completed,
        wire::TaskState::Canceled => TaskState::Canceled,
        wire::TaskState::Failed => TaskState::Failed,
        wire::TaskState::Rejected => TaskState::Rejected,
        wire::TaskState::AuthRequired => TaskState::AuthRequired,
        wire::TaskState::Unknown => TaskState::Unspecified,
    }
}

fn status_to_v10(status: wire::TaskStatus) -> Result<TaskStatus, (String, String)> {
    Ok(TaskStatus {
        state: state_to_v10(status.state),
        message: status.message.map(message_to_v10).transpose()?,
        timestamp: status.timestamp,
    })
}

fn artifact_to_v10(artifact: wire::Artifact) -> Result<Artifact, (String, String)> {
    let parts = artifact
        .parts
        .into_iter()
        .map(|part| part_to_v10(part).map_err(|why| ("parts".to_string(), why)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Artifact {
        artifact_id: artifact.artifact_id,
        name: artifact.name.unwrap_or_default(),
        description: artifact.description.unwrap_or_default(),
        parts,
        metadata: artifact.metadata,
        extensions: artifact.extensions.unwrap_or_default(),
    })
}

/// A 0.3 task.
pub fn task_to_v10(task: wire::Task) -> Result<Task, (String, String)> {
    Ok(Task {
        id: task.id,
        context_id: task.context_id,
        status: status_to_v10(task.status)?,
        artifacts: task
            .artifacts
            .map(|list| list.into_iter().map(artifact_to_v10).collect())
            .transpose()?,
        history: task
            .history
            .map(|list| list.into_iter().map(message_to_v10).collect())
            .transpose()?,
        metadata: task.metadata,
    })
}

/// A 0.3 event as a 1.0 stream item.
pub fn event_to_v10(event: wire::Event) -> Result<StreamResponse, (String, String)> {
    Ok(match event {
        wire::Event::Task(task) => StreamResponse::Task(task_to_v10(task)?),
        wire::Event::Message(message) => StreamResponse::Message(message_to_v10(message)?),
        wire::Event::StatusUpdate(update) => StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: update.task_id,
            context_id: update.context_id,
            status: status_to_v10(update.status)?,
            metadata: update.metadata,
        }),
        wire::Event::ArtifactUpdate(update) => {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: update.task_id,
                context_id: update.context_id,
                artifact: artifact_to_v10(update.artifact)?,
                append: update.append.unwrap_or(false),
                last_chunk: update.last_chunk.unwrap_or(false),
                metadata: update.metadata,
            })
        }
    })
}

/// A `message/send` result: a task or a message.
pub fn send_result_to_v10(event: wire::Event) -> Result<SendMessageResponse, (String, String)> {
    match event_to_v10(event)? {
        StreamResponse::Task(task) => Ok(SendMessageResponse::Task(task)),
        StreamResponse::Message(message) => Ok(SendMessageResponse::Message(message)),
        _ => Err((
            "kind".to_string(),
            "message/send answers a task or a message".to_string(),
        )),
    }
}

// ---- 1.0 → 0.3 -------------------------------------------------------------------------------

/// A 1.0 `SendMessage` request as `message/send` params.
pub fn send_params_from_v10(request: &SendMessageRequest) -> wire::SendParams {
    let configuration = request
        .configuration
        .as_ref()
        .map(|config| wire::SendConfiguration {
            accepted_output_modes: Some(config.accepted_output_modes.clone())
                .filter(|modes| !modes.is_empty()),
            blocking: Some(!config.return_immediately),
            history_length: config.history_length,
            push_notification_config: config
                .task_push_notification_config
                .as_ref()
                .map(|push| serde_json::json!({ "url": push.url })),
        });
    wire::SendParams {
        message: message_from_v10(&request.message),
        configuration,
        metadata: request.metadata.clone(),
    }
}

fn non_empty(value: &str) -> Option<String> {
    Some(value.to_string()).filter(|v| !v.is_empty())
}

/// A 1.0 message.
pub fn message_from_v10(message: &Message) -> wire::Message {
    wire::Message {
        kind: wire::KIND_MESSAGE.to_string(),
        message_id: message.message_id.clone(),
        role: match message.role {
            Role::Agent => wire::Role::Agent,
            Role::User | Role::Unspecified => wire::Role::User,
        },
        parts: message.parts.iter().map(part_from_v10).collect(),
        context_id: non_empty(&message.context_id),
        task_id: non_empty(&message.task_id),
        reference_task_ids: Some(message.reference_task_ids.clone()).filter(|ids| !ids.is_empty()),
        extensions: Some(message.extensions.clone()).filter(|uris| !uris.is_empty()),
        metadata: message.metadata.clone(),
    }
}

/// A 1.0 part. Data that is not an object is wrapped under [`WRAPPED_DATA_KEY`].
pub fn part_from_v10(part: &Part) -> wire::Part {
    let metadata = part.metadata.clone();
    let file = |bytes: Option<String>, uri: Option<String>| wire::Part::File {
        file: wire::FileContent {
            bytes,
            uri,
            mime_type: non_empty(&part.media_type),
            name: non_empty(&part.filename),
        },
        metadata: metadata.clone(),
    };
    if let Some(raw) = &part.raw {
        return file(Some(raw.clone()), None);
    }
    if let Some(url) = &part.url {
        return file(None, Some(url.clone()));
    }
    if let Some(data) = &part.data {
        let data = match data {
            Value::Object(object) => object.clone(),
            other => Map::from_iter([(WRAPPED_DATA_KEY.to_string(), other.clone())]),
        };
        return wire::Part::Data { data, metadata };
    }
    wire::Part::Text {
        text: part.text.clone().unwrap_or_default(),
        metadata,
    }
}

/// A 1.0 state; `UNSPECIFIED` is 0.3's `unknown`.
pub fn state_from_v10(state: TaskState) -> wire::TaskState {
    match state {
        TaskState::Unspecified => wire::TaskState::Unknown,
        TaskState::Submitted => wire::TaskState::Submitted,
        TaskState::Working => wire::TaskState::Working,
        TaskState::Completed => wire::TaskState::Completed,
        TaskState::Failed => wire::TaskState::Failed,
        TaskState::Canceled => wire::TaskState::Canceled,
        TaskState::InputRequired => wire::TaskState::InputRequired,
        TaskState::Rejected => wire::TaskState::Rejected,
        TaskState::AuthRequired => wire::TaskState::AuthRequired,
    }
}

fn status_from_v10(status: &TaskStatus) -> wire::TaskStatus {
    wire::TaskStatus {
        state: state_from_v10(status.state),
        message: status.message.as_ref().map(message_from_v10),
        timestamp: status.timestamp.clone(),
    }
}

fn artifact_from_v10(artifact: &Artifact) -> wire::Artifact {
    wire::Artifact {
        artifact_id: artifact.artifact_id.clone(),
        parts: artifact.parts.iter().map(part_from_v10).collect(),
        name: non_empty(&artifact.name),
        description: non_empty(&artifact.description),
        extensions: Some(artifact.extensions.clone()).filter(|uris| !uris.is_empty()),
        metadata: artifact.metadata.clone(),
    }
}

/// A 1.0 task.
pub fn task_from_v10(task: &Task) -> wire::Task {
    wire::Task {
        kind: wire::KIND_TASK.to_string(),
        id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: status_from_v10(&task.status),
        artifacts: task
            .artifacts
            .as_ref()
            .map(|list| list.iter().map(artifact_from_v10).collect()),
        history: task
            .history
            .as_ref()
            .map(|list| list.iter().map(message_from_v10).collect()),
        metadata: task.metadata.clone(),
    }
}

/// A 1.0 stream item. A status update is `final` when it settles the task, as 0.3 streams end
/// there.
pub fn event_from_v10(event: &StreamResponse) -> wire::Event {
    match event {
        StreamResponse::Task(task) => wire::Event::Task(task_from_v10(task)),
        StreamResponse::Message(message) => wire::Event::Message(message_from_v10(message)),
        StreamResponse::StatusUpdate(update) => {
            wire::Event::StatusUpdate(wire::TaskStatusUpdateEvent {
                kind: wire::KIND_STATUS_UPDATE.to_string(),
                task_id: update.task_id.clone(),
                context_id: update.context_id.clone(),
                status: status_from_v10(&update.status),
                is_final: update.status.state.is_settled(),
                metadata: update.metadata.clone(),
            })
        }
        StreamResponse::ArtifactUpdate(update) => {
            wire::Event::ArtifactUpdate(wire::TaskArtifactUpdateEvent {
                kind: wire::KIND_ARTIFACT_UPDATE.to_string(),
                task_id: update.task_id.clone(),
                context_id: update.context_id.clone(),
                artifact: artifact_from_v10(&update.artifact),
                append: Some(update.append),
                last_chunk: Some(update.last_chunk),
                metadata: update.metadata.clone(),
            })
        }
    }
}

/// A 1.0 `SendMessage` result.
pub fn send_result_from_v10(response: &SendMessageResponse) -> wire::Event {
    match response {
        SendMessageResponse::Task(task) => wire::Event::Task(task_from_v10(task)),
        SendMessageResponse::Message(message) => wire::Event::Message(message_from_v10(message)),
    }
}
