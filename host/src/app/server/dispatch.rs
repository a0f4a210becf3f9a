//! The JSON-RPC endpoint: reads the body, checks the envelope and the A2A headers, and runs the
//! method through [`ops`]. Every JSON-RPC error is an HTTP 200 with a JSON body. A 0.3 method
//! name (`message/send`) hands the request to [`v03`], which speaks the 0.3 shapes over the same
//! operations.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::app::server::extended_card;
use crate::app::server::extensions::Activated;
use crate::app::server::headers;
use crate::app::server::identity::{self, Identified};
use crate::app::server::ops::{self, App, Reply, Requester, to_value};
use crate::app::server::push_ops;
use crate::app::server::sse::{self, Framing, to_text};
use crate::app::server::v03;
use crate::base::protocol::jsonrpc::{
    self, CONTENT_TYPE_NOT_SUPPORTED, Request, RequestId, RpcError, parse_params,
};
use crate::base::protocol::requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::base::protocol::types::StreamResponse;
use crate::base::protocol::v03::EXTENDED_CARD as LEGACY_EXTENDED_CARD;
use crate::base::text::log_field;
use crate::state::tasks::Caller;

/// The 1.0 method name of `GetExtendedAgentCard`.
const EXTENDED_CARD_METHOD: &str = "GetExtendedAgentCard";

/// `POST /`: one JSON-RPC request.
pub(crate) async fn rpc(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        // 413 when over the size limit; 400 when the body could not be read at all.
        Err(rejection) => return (rejection.status(), rejection.body_text()).into_response(),
    };
    if let Err(error) = check_content_type(&headers) {
        return json(jsonrpc::Response::failure(RequestId::Null, error));
    }
    let request = match Request::parse(&body) {
        Ok(request) => request,
        Err((id, error)) => return json(jsonrpc::Response::failure(id, error)),
    };
    let Request { id, method, params } = request;
    tracing::debug!(method = %log_field::escape(&method), ?id, "JSON-RPC request");
    let legacy = v03::is_method(&method);
    let caller = match identified.0 {
        Ok(caller) => caller,
        Err(refusal) => return identity::refusal_response(&refusal, true),
    };
    // A message naming its sender is checked before anything runs, in 1.0 and 0.3 alike (the
    // path is the same in both): a refusal of who the caller is is an HTTP status.
    let claimed = params
        .pointer("/message/metadata/participant_id")
        .and_then(Value::as_str);
    if let Err(refusal) = ops::check_sender(&app, &caller, claimed) {
        return identity::refusal_response(&refusal, true);
    }
    let requester = match checked_headers(&app, &headers, legacy, caller) {
        Ok(requester) => requester,
        Err(error) => return failure(id, &method, error),
    };
    if matches!(method.as_str(), EXTENDED_CARD_METHOD | LEGACY_EXTENDED_CARD)
        && let Some(error) = extended_card::extended_card_unauthenticated(&app, &requester.caller)
    {
        return requester.activated.echo(unauthorized(id, &method, error));
    }
    let (reply, framing) = if legacy {
        let reply = v03::call(&app, &requester, &method, params).await;
        (reply, JsonRpcFraming::V03(id.clone()))
    } else {
        let reply = call(&app, &requester, &method, params).await;
        (reply, JsonRpcFraming::V1(id.clone()))
    };
    let response = match reply {
        Ok(Reply::Result(value)) => json(jsonrpc::Response::success(id, value)),
        Ok(Reply::Stream(streaming)) => sse::respond(
            app.state.service.clone(),
            framing,
            *streaming,
            app.state.stream_keep_alive,
        ),
        Err(error) => failure(id, &method, error),
    };
    requester.activated.echo(response)
}

/// Stream items as JSON-RPC responses carrying the request's id: the result a 1.0
/// `StreamResponse`, or (for a 0.3 method) the event in its 0.3 shape (`kind`, `final`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsonRpcFraming {
    V1(RequestId),
    V03(RequestId),
}

impl Framing for JsonRpcFraming {
    fn encode(&self, item: Result<&StreamResponse, RpcError>) -> String {
        let value = match (self, item) {
            (JsonRpcFraming::V1(id), Ok(event)) => match serde_json::to_value(event) {
                Ok(value) => jsonrpc::Response::success(id.clone(), value),
                Err(err) => jsonrpc::Response::failure(id.clone(), RpcError::internal(err)),
            },
            (JsonRpcFraming::V03(id), Ok(event)) => {
                jsonrpc::Response::success(id.clone(), v03::stream_event(event))
            }
            (JsonRpcFraming::V1(id) | JsonRpcFraming::V03(id), Err(error)) => {
                jsonrpc::Response::failure(id.clone(), error)
            }
        };
        to_text(&value)
    }
}

fn failure(id: RequestId, method: &str, error: RpcError) -> Response {
    tracing::debug!(
        method = %log_field::escape(method),
        code = error.code,
        message = %log_field::escape(&error.message),
        "JSON-RPC error"
    );
    json(jsonrpc::Response::failure(id, error))
}

/// The version a request names must be the one its method names: 1.0 for `SendMessage`, 0.3 for
/// `message/send` (§3.6.2); the extensions it activates must be ones this server implements. The
/// caller was identified before the limits (`identity`); a refused one never gets here.
fn checked_headers(
    app: &App,
    headers: &HeaderMap,
    legacy: bool,
    caller: Caller,
) -> Result<Requester, RpcError> {
    if legacy {
        headers::check_legacy_version(headers)?;
    } else {
        headers::check_version(headers)?;
    }
    let activated = Activated::from_headers(headers, legacy, &app.supported_extensions)?;
    Ok(Requester { caller, activated })
}

/// A body declared as something other than JSON is refused before it is parsed; a request that
/// declares no type is read as JSON.
fn check_content_type(headers: &HeaderMap) -> Result<(), RpcError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let value = String::from_utf8_lossy(value.as_bytes()).to_string();
    if headers::is_json_media_type(&value) {
        return Ok(());
    }
    Err(RpcError::new(
        CONTENT_TYPE_NOT_SUPPORTED,
        format!("Content-Type {value:?} is not supported; send application/json"),
    )
    .with_metadata("contentType", value))
}

/// A JSON-RPC error that asks for credentials: HTTP 401 with `WWW-Authenticate: Bearer`, the
/// error in the body as ever, so a client that reads only bodies still reads why.
fn unauthorized(id: RequestId, method: &str, error: RpcError) -> Response {
    let mut response = failure(id, method, error);
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    response
}

/// A JSON-RPC response as HTTP 200 `application/json`.
pub(crate) fn json(response: jsonrpc::Response) -> Response {
    match serde_json::to_vec(&response) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(err) => json(jsonrpc::Response::failure(
            RequestId::Null,
            RpcError::internal(err),
        )),
    }
}

/// Runs a 1.0 method.
async fn call(
    app: &App,
    requester: &Requester,
    method: &str,
    params: Value,
) -> Result<Reply, RpcError> {
    let (push, caller) = (app.state.push.as_deref(), &requester.caller);
    if push.is_none() && method.contains("PushNotificationConfig") {
        return Err(push_ops::push_not_supported());
    }
    match method {
        "SendMessage" => {
            let request: SendMessageRequest = parse_params(params)?;
            to_value(&ops::send_message(app, requester, request).await?)
        }
        "SendStreamingMessage" => {
            let request: SendMessageRequest = parse_params(params)?;
            let streaming = ops::send_streaming_message(app, requester, request).await?;
            Ok(Reply::Stream(Box::new(streaming)))
        }
        "SubscribeToTask" => {
            let request: SubscribeToTaskRequest = parse_params(params)?;
            let streaming = ops::subscribe(app, requester, request).await?;
            Ok(Reply::Stream(Box::new(streaming)))
        }
        "GetTask" => {
            let request: GetTaskRequest = parse_params(params)?;
            to_value(&ops::get_task(app, requester, request).await?)
        }
        "ListTasks" => {
            let request: ListTasksRequest = parse_params(params)?;
            to_value(&ops::list_tasks(app, requester, request).await?)
        }
        "CancelTask" => {
            let request: CancelTaskRequest = parse_params(params)?;
            to_value(&ops::cancel_task(app, requester, request).await?)
        }
        "CreateTaskPushNotificationConfig" => {
            let config = parse_params(params)?;
            to_value(&push_ops::create_push_config(push, caller, config).await?)
        }
        "GetTaskPushNotificationConfig" => {
            let request = parse_params(params)?;
            to_value(&push_ops::get_push_config(push, caller, request).await?)
        }
        "ListTaskPushNotificationConfigs" => {
            let request = parse_params(params)?;
            to_value(&push_ops::list_push_configs(push, caller, request).await?)
        }
        "DeleteTaskPushNotificationConfig" => {
            let request = parse_params(params)?;
            push_ops::delete_push_config(push, caller, request).await?;
            Ok(Reply::Result(Value::Object(Default::default())))
        }
        EXTENDED_CARD_METHOD => {
            to_value(&extended_card::extended_agent_card(app, &requester.caller)?)
        }
        other => Err(RpcError::method_not_found(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};

    #[test]
    fn a_0_3_stream_item_is_the_event_in_its_0_3_shape() {
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            metadata: None,
        });
        let legacy = JsonRpcFraming::V03(RequestId::Number(1.into())).encode(Ok(&event));
        let data: serde_json::Value = serde_json::from_str(&legacy).unwrap();
        assert_eq!(data["result"]["kind"], "status-update");
        assert_eq!(data["result"]["final"], false);
    }
}
