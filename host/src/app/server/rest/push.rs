//! The REST routes of the push-config operations (§11.3.3): the task id (and config id) from
//! the path, a config from the body of a POST, each answered by the same [`push_ops`] as the
//! other bindings.

use std::collections::HashMap;

use axum::http::Method;
use serde_json::Value;

use crate::app::server::push_ops;
use crate::base::protocol::jsonrpc::{RpcError, parse_params};
use crate::base::protocol::requests::{
    ListTaskPushNotificationConfigsRequest, TaskPushNotificationConfig,
    TaskPushNotificationConfigRequest,
};
use crate::state::tasks::Caller;
use crate::state::tasks::push_configs::PushConfigs;

/// Runs the operation the method and path name: `POST` and `GET` on the collection create and
/// list; `GET` and `DELETE` on a config read and delete it. `body` is the request's JSON object.
pub(super) async fn answer(
    push: Option<&PushConfigs>,
    caller: &Caller,
    method: &Method,
    path: HashMap<String, String>,
    mut body: Value,
) -> Result<Value, RpcError> {
    let push = Some(push.ok_or_else(push_ops::push_not_supported)?);
    let task_id = path.get("id").cloned().unwrap_or_default();
    match (path.get("config"), method) {
        (None, &Method::POST) => {
            body["taskId"] = Value::String(task_id);
            let config: TaskPushNotificationConfig = parse_params(body)?;
            json(&push_ops::create_push_config(push, caller, config).await?)
        }
        (None, _) => {
            let request = ListTaskPushNotificationConfigsRequest {
                tenant: String::new(),
                task_id,
                page_size: 0,
                page_token: String::new(),
            };
            json(&push_ops::list_push_configs(push, caller, request).await?)
        }
        (Some(id), method) => {
            let request = TaskPushNotificationConfigRequest {
                tenant: String::new(),
                task_id,
                id: id.clone(),
            };
            if method == Method::DELETE {
                push_ops::delete_push_config(push, caller, request).await?;
                return Ok(Value::Object(Default::default()));
            }
            json(&push_ops::get_push_config(push, caller, request).await?)
        }
    }
}

/// A result as JSON.
fn json<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(RpcError::internal)
}
