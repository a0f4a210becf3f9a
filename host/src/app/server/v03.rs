//! A2A 0.3 on the JSON-RPC endpoint: the 0.3 method names (`message/send`, `tasks/get`, …) and
//! shapes ([`wire`]), translated ([`convert`]) onto the same 1.0 operations the rest of the
//! server runs. The method name chooses the dialect: every 0.3 name has a `/`, no 1.0 name does.

use serde_json::Value;

pub use crate::base::protocol::v03::is_method;
use crate::base::protocol::v03::{
    CANCEL, EXTENDED_CARD, GET, PUSH_CONFIG_PREFIX, RESUBSCRIBE, SEND, STREAM, convert, wire,
};

use crate::app::server::extended_card;
use crate::app::server::ops::{self, App, Reply, Requester, to_value};
use crate::app::server::push_ops;
use crate::base::protocol::jsonrpc::{RpcError, parse_params};
use crate::base::protocol::requests::{
    CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    SubscribeToTaskRequest, TaskPushNotificationConfig, TaskPushNotificationConfigRequest,
};
use crate::base::protocol::types::StreamResponse;
use crate::state::tasks::TaskError;

fn send_request(
    params: Value,
) -> Result<crate::base::protocol::requests::SendMessageRequest, RpcError> {
    let params: wire::SendParams = parse_params(params)?;
    convert::send_params_to_v10(params)
        .map_err(|(field, why)| RpcError::invalid_params(&field, why))
}

/// One stream item in its 0.3 shape.
pub fn stream_event(event: &StreamResponse) -> Value {
    serde_json::to_value(convert::event_from_v10(event)).unwrap_or(Value::Null)
}

/// Runs a 0.3 method: its params read as 0.3 and converted, its result converted back.
pub(crate) async fn call(
    app: &App,
    requester: &Requester,
    method: &str,
    params: Value,
) -> Result<Reply, RpcError> {
    match method {
        SEND => {
            let request = send_request(params)?;
            let response = ops::send_message(app, requester, request).await?;
            to_value(&convert::send_result_from_v10(&response))
        }
        STREAM => {
            let request = send_request(params)?;
            let streaming = ops::send_streaming_message(app, requester, request).await?;
            Ok(Reply::Stream(Box::new(streaming)))
        }
        GET => {
            let params: wire::TaskQueryParams = parse_params(params)?;
            let request = GetTaskRequest {
                tenant: String::new(),
                id: params.id,
                history_length: params.history_length,
            };
            let task = ops::get_task(app, requester, request).await?;
            to_value(&convert::task_from_v10(&task))
        }
        CANCEL => {
            let params: wire::TaskIdParams = parse_params(params)?;
            let request = CancelTaskRequest {
                tenant: String::new(),
                id: params.id,
                metadata: params.metadata,
            };
            let task = ops::cancel_task(app, requester, request).await?;
            to_value(&convert::task_from_v10(&task))
        }
        RESUBSCRIBE => {
            let params: wire::TaskIdParams = parse_params(params)?;
            let request = SubscribeToTaskRequest {
                tenant: String::new(),
                id: params.id,
            };
            let streaming = ops::subscribe(app, requester, request).await?;
            Ok(Reply::Stream(Box::new(streaming)))
        }
        // The 1.0 card, as at the well-known path: no 0.3-shaped card is served.
        EXTENDED_CARD => to_value(&extended_card::extended_agent_card(app, &requester.caller)?),
        push if push.starts_with(PUSH_CONFIG_PREFIX) => {
            let operation = &push[PUSH_CONFIG_PREFIX.len()..];
            push_config(app, requester, operation, params).await
        }
        other => Err(RpcError::method_not_found(other)),
    }
}

/// `tasks/pushNotificationConfig/{set,get,list,delete}`: 0.3 nests the config under
/// `pushNotificationConfig` beside `taskId`, names the task `id` in the others, and lets `get`
/// omit the config id (the task's first config is meant).
async fn push_config(
    app: &App,
    requester: &Requester,
    operation: &str,
    params: Value,
) -> Result<Reply, RpcError> {
    let (push, caller) = (app.state.push.as_deref(), &requester.caller);
    let push = Some(push.ok_or_else(push_ops::push_not_supported)?);
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
    let (task_id, config_id) = (text("id").to_string(), text("pushNotificationConfigId"));
    let request = TaskPushNotificationConfigRequest {
        tenant: String::new(),
        task_id: task_id.clone(),
        id: config_id.to_string(),
    };
    match operation {
        "set" => {
            let nested = params.get("pushNotificationConfig").cloned();
            let mut config: TaskPushNotificationConfig =
                parse_params(nested.unwrap_or(Value::Null))?;
            config.task_id = text("taskId").to_string();
            let created = push_ops::create_push_config(push, caller, config).await?;
            to_value(&push_config_v03(created))
        }
        "get" if config_id.is_empty() => {
            let list = list_request(task_id);
            let configs = push_ops::list_push_configs(push, caller, list)
                .await?
                .configs;
            match configs.into_iter().next() {
                Some(config) => to_value(&push_config_v03(config)),
                None => {
                    Err(TaskError::NotFound(format!("{} has no push config", text("id"))).into())
                }
            }
        }
        "get" => to_value(&push_config_v03(
            push_ops::get_push_config(push, caller, request).await?,
        )),
        "list" => {
            let configs = push_ops::list_push_configs(push, caller, list_request(task_id)).await?;
            let configs: Vec<Value> = configs.configs.into_iter().map(push_config_v03).collect();
            to_value(&configs)
        }
        "delete" => {
            push_ops::delete_push_config(push, caller, request).await?;
            Ok(Reply::Result(Value::Null))
        }
        other => Err(RpcError::method_not_found(&format!(
            "{PUSH_CONFIG_PREFIX}{other}"
        ))),
    }
}

fn list_request(task_id: String) -> ListTaskPushNotificationConfigsRequest {
    ListTaskPushNotificationConfigsRequest {
        tenant: String::new(),
        task_id,
        page_size: 0,
        page_token: String::new(),
    }
}

/// A config in its 0.3 shape: `{taskId, pushNotificationConfig: {id, url, token,
/// authentication}}`.
fn push_config_v03(config: TaskPushNotificationConfig) -> Value {
    let task_id = config.task_id.clone();
    let mut nested = serde_json::to_value(TaskPushNotificationConfig {
        task_id: String::new(),
        ..config
    })
    .unwrap_or(Value::Null);
    if let Some(object) = nested.as_object_mut() {
        object.remove("taskId");
    }
    serde_json::json!({"taskId": task_id, "pushNotificationConfig": nested})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::base::protocol::types::{
        Artifact, Part, Role, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
    };

    fn sent(params: Value) -> crate::base::protocol::requests::SendMessageRequest {
        send_request(params).unwrap()
    }

    #[test]
    fn a_0_3_message_reads_as_1_0_with_roles_parts_and_blocking_mapped() {
        let request = sent(json!({
            "message": {
                "kind": "message", "messageId": "m1", "role": "user", "contextId": "c",
                "parts": [
                    {"kind": "text", "text": "hi"},
                    {"kind": "file", "file": {"uri": "https://x/f.txt", "mimeType": "text/plain", "name": "f.txt"}},
                    {"kind": "file", "file": {"bytes": "dGNr"}},
                    {"kind": "data", "data": {"a": 1}}
                ]
            },
            "configuration": {"blocking": false, "historyLength": 3}
        }));
        let message = &request.message;
        assert_eq!(
            (message.role, message.context_id.as_str()),
            (Role::User, "c")
        );
        assert_eq!(message.parts[0].text.as_deref(), Some("hi"));
        assert_eq!(message.parts[1].url.as_deref(), Some("https://x/f.txt"));
        assert_eq!(message.parts[1].media_type, "text/plain");
        assert_eq!(message.parts[2].raw.as_deref(), Some("dGNr"));
        assert_eq!(message.parts[3].data, Some(json!({"a": 1})));
        let config = request.configuration.unwrap();
        assert!(config.return_immediately);
        assert_eq!(config.history_length, Some(3));
    }

    #[test]
    fn a_0_3_push_config_sent_with_a_message_keeps_its_token_and_authentication() {
        let request = sent(json!({
            "message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}]},
            "configuration": {"pushNotificationConfig": {
                "url": "http://h:1/", "token": "t",
                "authentication": {"schemes": ["Bearer"], "credentials": "c"}
            }}
        }));
        let config = request.configuration.unwrap();
        let config = config.task_push_notification_config.unwrap();
        assert_eq!(
            (config.url.as_str(), config.token.as_str()),
            ("http://h:1/", "t")
        );
        assert_eq!(config.authentication.unwrap()["credentials"], "c");
    }

    #[test]
    fn missing_blocking_means_a_blocking_send() {
        let request = sent(json!({
            "message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}]},
            "configuration": {}
        }));
        assert!(!request.configuration.unwrap().return_immediately);
    }

    #[test]
    fn a_malformed_0_3_part_is_refused_by_its_path() {
        let err = send_request(json!({
            "message": {"messageId": "m", "role": "user", "parts": [
                {"kind": "text", "text": "x"}, {"kind": "file", "file": {"name": "nothing"}}
            ]}
        }))
        .unwrap_err();
        assert!(
            err.message.contains("message.parts[1].file"),
            "{}",
            err.message
        );
        let err = send_request(json!({
            "message": {"messageId": "m", "role": "user", "parts": [{"kind": "video"}]}
        }))
        .unwrap_err();
        assert!(err.message.contains("message.parts[0]"), "{}", err.message);
    }

    #[test]
    fn a_1_0_task_writes_as_0_3_with_kinds_and_kebab_case_states() {
        let task = crate::base::protocol::types::Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(crate::base::protocol::types::Message::agent_text(
                    "t", "c", "which?",
                )),
                timestamp: Some("2025-01-01T00:00:00.000Z".into()),
            },
            artifacts: Some(vec![Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::data(json!([1, 2]), "application/json")],
                ..Artifact::default()
            }]),
            history: None,
            metadata: None,
        };
        let value = serde_json::to_value(convert::task_from_v10(&task)).unwrap();
        assert_eq!(value["kind"], "task");
        assert_eq!(value["status"]["state"], "input-required");
        assert_eq!(value["status"]["message"]["role"], "agent");
        assert_eq!(value["status"]["message"]["kind"], "message");
        assert_eq!(
            value["status"]["message"]["parts"][0],
            json!({"kind":"text","text":"which?"})
        );
        assert_eq!(
            value["artifacts"][0]["parts"][0],
            json!({"kind":"data","data":{"value":[1,2]}})
        );
    }

    #[test]
    fn status_updates_are_final_when_they_settle_the_task() {
        let update = |state| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                status: TaskStatus {
                    state,
                    ..TaskStatus::default()
                },
                metadata: None,
            })
        };
        let working = stream_event(&update(TaskState::Working));
        assert_eq!(
            (working["kind"].as_str(), working["final"].as_bool()),
            (Some("status-update"), Some(false))
        );
        let done = stream_event(&update(TaskState::Completed));
        assert_eq!(
            (done["status"]["state"].as_str(), done["final"].as_bool()),
            (Some("completed"), Some(true))
        );
        let artifact = stream_event(&StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            artifact: Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::text("x")],
                ..Artifact::default()
            },
            append: false,
            last_chunk: true,
            metadata: None,
        }));
        assert_eq!(artifact["kind"], "artifact-update");
        assert_eq!(artifact["lastChunk"], true);
    }

    #[test]
    fn every_shape_survives_a_round_trip_through_0_3() {
        let task = crate::base::protocol::types::Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            artifacts: Some(vec![Artifact {
                artifact_id: "a".into(),
                name: "answer".into(),
                parts: vec![Part {
                    url: Some("https://x".into()),
                    filename: "f".into(),
                    media_type: "text/plain".into(),
                    ..Part::default()
                }],
                ..Artifact::default()
            }]),
            history: Some(vec![crate::base::protocol::types::Message::agent_text(
                "t", "c", "ok",
            )]),
            metadata: None,
        };
        let event =
            wire::Event::from_value(serde_json::to_value(convert::task_from_v10(&task)).unwrap())
                .unwrap();
        let back = convert::event_to_v10(event).unwrap();
        assert_eq!(back, StreamResponse::Task(task));
        assert!(wire::Event::from_value(json!({"kind": "video"})).is_err());
    }

    #[test]
    fn method_names_with_a_slash_are_0_3() {
        assert!(is_method("message/send"));
        assert!(is_method("tasks/pushNotificationConfig/set"));
        assert!(!is_method("SendMessage"));
    }
}
