//! The JSON-RPC endpoint: reads the body, checks the envelope and the A2A headers, and runs the
//! method against the task service. Every JSON-RPC error is an HTTP 200 with a JSON body.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::a2a::headers;
use crate::a2a::jsonrpc::{
    self, EXTENDED_AGENT_CARD_NOT_CONFIGURED, PUSH_NOTIFICATION_NOT_SUPPORTED, Request, RequestId,
    RpcError, parse_params,
};
use crate::a2a::server::App;
use crate::a2a::sse;
use crate::a2a::types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task,
};
use crate::a2a::validate;
use crate::tasks::{Caller, Subscription};

/// How long a blocking `SendMessage` waits for its task to settle before answering with the task
/// as it is. A client that needs longer should stream or poll; an HTTP request held open for
/// hours helps nobody.
pub const BLOCKING_SEND_MAX_WAIT: Duration = Duration::from_secs(10 * 60);

/// What a method produces: one JSON result, or a stream of them.
enum Reply {
    Result(Value),
    Stream {
        subscription: Box<Subscription>,
        history_length: Option<i32>,
    },
}

/// `POST /`: one JSON-RPC request.
pub(crate) async fn rpc(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        // 413 when over the size limit; 400 when the body could not be read at all.
        Err(rejection) => return (rejection.status(), rejection.body_text()).into_response(),
    };
    let request = match Request::parse(&body) {
        Ok(request) => request,
        Err((id, error)) => return json(jsonrpc::Response::failure(id, error)),
    };
    let Request { id, method, params } = request;
    tracing::debug!(%method, ?id, "JSON-RPC request");
    let caller = match checked_headers(&app, &headers) {
        Ok(caller) => caller,
        Err(error) => return failure(id, &method, error),
    };
    match call(&app, &caller, &method, params).await {
        Ok(Reply::Result(value)) => json(jsonrpc::Response::success(id, value)),
        Ok(Reply::Stream {
            subscription,
            history_length,
        }) => {
            let service = app.state.service.clone();
            sse::respond(service, caller, id, *subscription, history_length)
        }
        Err(error) => failure(id, &method, error),
    }
}

fn failure(id: RequestId, method: &str, error: RpcError) -> Response {
    tracing::debug!(%method, code = error.code, message = %error.message, "JSON-RPC error");
    json(jsonrpc::Response::failure(id, error))
}

fn checked_headers(app: &App, headers: &HeaderMap) -> Result<Caller, RpcError> {
    headers::check_version(headers)?;
    headers::check_extensions(headers, &app.supported_extensions)?;
    Ok(headers::caller(headers))
}

/// A JSON-RPC response as HTTP 200 `application/json`.
pub(crate) fn json(response: jsonrpc::Response) -> Response {
    match serde_json::to_vec(&response) {
        Ok(body) => (
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(err) => json(jsonrpc::Response::failure(
            RequestId::Null,
            RpcError::internal(err),
        )),
    }
}

async fn call(app: &App, caller: &Caller, method: &str, params: Value) -> Result<Reply, RpcError> {
    let service = app.state.service.as_ref();
    let capabilities = &app.state.card.capabilities;
    match method {
        "SendMessage" => {
            let request: SendMessageRequest = parse_params(params)?;
            check_send(&request)?;
            let config = request.configuration.clone().unwrap_or_default();
            let subscription = service.send_message(caller, request).await?;
            let task = if config.return_immediately {
                let mut task = subscription.snapshot;
                validate::trim_history(&mut task, config.history_length);
                task
            } else {
                wait_until_settled(app, caller, subscription, config.history_length).await?
            };
            to_value(&SendMessageResponse::Task(task))
        }
        "SendStreamingMessage" => {
            check_streaming(capabilities.streaming)?;
            let request: SendMessageRequest = parse_params(params)?;
            check_send(&request)?;
            let history_length = request
                .configuration
                .as_ref()
                .and_then(|c| c.history_length);
            let subscription = service.send_message(caller, request).await?;
            Ok(Reply::Stream {
                subscription: Box::new(subscription),
                history_length,
            })
        }
        "SubscribeToTask" => {
            check_streaming(capabilities.streaming)?;
            let request: SubscribeToTaskRequest = parse_params(params)?;
            validate::task_id("id", &request.id)?;
            let subscription = service.subscribe(caller, &request.id).await?;
            Ok(Reply::Stream {
                subscription: Box::new(subscription),
                history_length: None,
            })
        }
        "GetTask" => {
            let request: GetTaskRequest = parse_params(params)?;
            validate::task_id("id", &request.id)?;
            validate::history_length("historyLength", request.history_length)?;
            let task = service
                .get_task(caller, &request.id, request.history_length)
                .await?;
            to_value(&task)
        }
        "ListTasks" => {
            let request: ListTasksRequest = parse_params(params)?;
            validate::page_size(request.page_size)?;
            validate::history_length("historyLength", request.history_length)?;
            to_value(&service.list_tasks(caller, request).await?)
        }
        "CancelTask" => {
            let request: CancelTaskRequest = parse_params(params)?;
            validate::task_id("id", &request.id)?;
            to_value(&service.cancel_task(caller, &request.id).await?)
        }
        // The card says `pushNotifications: false`, so §3.3.4 requires this error for all four.
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Err(push_not_supported()),
        "GetExtendedAgentCard" => Err(match capabilities.extended_agent_card {
            Some(true) => RpcError::new(
                EXTENDED_AGENT_CARD_NOT_CONFIGURED,
                "this agent has no extended agent card configured",
            ),
            _ => RpcError::unsupported(
                "GetExtendedAgentCard is not supported: the agent card does not declare \
                 capabilities.extendedAgentCard",
            ),
        }),
        other => Err(RpcError::method_not_found(other)),
    }
}

/// Checks a `SendMessage` or `SendStreamingMessage` before the service sees it.
fn check_send(request: &SendMessageRequest) -> Result<(), RpcError> {
    validate::sent_message(&request.message)?;
    if let Some(config) = &request.configuration {
        validate::history_length("configuration.historyLength", config.history_length)?;
        // A client that asks for pushes must not believe it will get them.
        if config.task_push_notification_config.is_some() {
            return Err(push_not_supported());
        }
    }
    Ok(())
}

fn push_not_supported() -> RpcError {
    RpcError::new(
        PUSH_NOTIFICATION_NOT_SUPPORTED,
        "push notifications are not supported: the agent card declares pushNotifications false",
    )
}

fn check_streaming(streaming: Option<bool>) -> Result<(), RpcError> {
    match streaming {
        Some(true) => Ok(()),
        _ => Err(RpcError::unsupported(
            "streaming is not supported: the agent card does not declare capabilities.streaming",
        )),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Reply, RpcError> {
    serde_json::to_value(value)
        .map(Reply::Result)
        .map_err(RpcError::internal)
}

/// Waits for the task to settle (terminal, input or auth required), then answers with the task
/// as the service then has it, so the reply carries every artifact and status message.
async fn wait_until_settled(
    app: &App,
    caller: &Caller,
    subscription: Subscription,
    history_length: Option<i32>,
) -> Result<Task, RpcError> {
    let service = app.state.service.as_ref();
    let Subscription {
        snapshot,
        mut events,
    } = subscription;
    let task_id = snapshot.id;
    if !snapshot.status.state.is_settled() {
        let deadline = tokio::time::sleep(BLOCKING_SEND_MAX_WAIT);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => {
                    tracing::warn!(task = %task_id, "blocking SendMessage gave up waiting");
                    break;
                }
                event = events.recv() => match event {
                    Ok(event) if sse::settles(&event) => break,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => {
                        let task = service.get_task(caller, &task_id, Some(0)).await?;
                        if task.status.state.is_settled() {
                            break;
                        }
                    }
                    Err(RecvError::Closed) => break,
                },
            }
        }
    }
    Ok(service.get_task(caller, &task_id, history_length).await?)
}
