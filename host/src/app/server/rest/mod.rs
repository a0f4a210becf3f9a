//! The HTTP+JSON (REST) binding of A2A 1.0 (§11): resource URLs, bodies in the protobuf-JSON
//! shape, SSE streams of bare `StreamResponse`s, and errors as `google.rpc.Status` objects with
//! the HTTP status §5.4 maps each A2A error to. Every route decodes its request and calls the
//! same [`ops`] as JSON-RPC does.
//!
//! Routes whose last segment carries a verb (`/tasks/{id}:cancel`) are matched on the whole
//! segment and split at its last `:`, so they work whatever the router makes of a colon.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

mod push;
mod status;

pub use status::{http_status, status_body};

use crate::app::server::extended_card;
use crate::app::server::extensions::Activated;
use crate::app::server::headers::{self};
use crate::app::server::identity::Identified;
use crate::app::server::ops::{self, App, Requester, Streaming};
use crate::app::server::sse::{self, Framing, to_text};
use crate::base::protocol::headers::A2A_VERSION_HEADER;
use crate::base::protocol::jsonrpc::{self, RpcError, parse_params};
use crate::base::protocol::requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::base::protocol::types::StreamResponse;
use crate::base::text::log_field;
use status::{Refusal, error_response, with_json};

/// The media type of REST response bodies unless the client asks for `application/a2a+json`,
/// which A2A 1.0.1 prefers (§11.1): [`a2a_media_type`] answers it then. Errors stay
/// `application/json`: a `google.rpc.Status` is no A2A payload.
pub const RESPONSE_MEDIA_TYPE: &str = "application/json";
/// The verb suffix of the cancel route.
const CANCEL: &str = "cancel";
/// The verb suffix of the subscribe route.
const SUBSCRIBE: &str = "subscribe";

/// The REST routes, relative to the interface URL (the agent's base URL).
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/message:send", post(send_message))
        .route("/message:stream", post(send_streaming_message))
        .route("/tasks", get(list_tasks))
        .route("/tasks/{segment}", get(get_task).post(task_action))
        .route(
            "/tasks/{id}/pushNotificationConfigs",
            get(push_config).post(push_config),
        )
        .route(
            "/tasks/{id}/pushNotificationConfigs/{config}",
            get(push_config).delete(push_config),
        )
        .route("/extendedAgentCard", get(extended_agent_card))
        .layer(axum::middleware::from_fn(a2a_media_type))
}

/// A successful JSON answer labelled `application/a2a+json` for a client that asks for it
/// ([`headers::prefers_a2a_json`]); any other answer as it is.
async fn a2a_media_type(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let wanted = headers::prefers_a2a_json(request.headers());
    let mut response = next.run(request).await;
    if wanted
        && response.status().is_success()
        && response.headers().get(header::CONTENT_TYPE)
            == Some(&HeaderValue::from_static(RESPONSE_MEDIA_TYPE))
    {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(headers::A2A_JSON_MEDIA_TYPE),
        );
    }
    response
}

/// Unknown paths get a §11.6 body too, so REST clients can read every error the same way.
pub(crate) async fn not_found(uri: Uri) -> Response {
    let error = RpcError::new(
        jsonrpc::METHOD_NOT_FOUND,
        format!("no route for {}", uri.path()),
    )
    .with_metadata("path", uri.path());
    error_response(&error)
}

fn ok<T: serde::Serialize>(result: Result<T, RpcError>) -> Response {
    match result {
        Ok(value) => with_json(StatusCode::OK, &value),
        Err(error) => error_response(&error),
    }
}

fn stream(app: &App, result: Result<Streaming, RpcError>) -> Response {
    match result {
        Ok(streaming) => sse::respond(
            app.state.service.clone(),
            RestFraming,
            streaming,
            app.state.stream_keep_alive,
        ),
        Err(error) => error_response(&error),
    }
}

/// The version and extension checks every REST request passes, then who the caller is. §3.6.1
/// lets a client name the version in an `A2A-Version` query parameter instead of the header.
fn checked(
    app: &App,
    identified: Identified,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Requester, Refusal> {
    // The caller was identified before the limits; a refused one never gets here.
    let caller = identified.0.map_err(Refusal::Identity)?;
    let mut headers = headers.clone();
    if !headers.contains_key(A2A_VERSION_HEADER)
        && let Some(version) = query_pairs(uri).find(|(key, _)| key == "A2A-Version")
        && let Ok(value) = HeaderValue::from_str(&version.1)
    {
        headers.insert(A2A_VERSION_HEADER, value);
    }
    headers::check_version(&headers)?;
    let activated = Activated::from_headers(&headers, false, &app.supported_extensions)?;
    Ok(Requester { caller, activated })
}

fn query_pairs(uri: &Uri) -> impl Iterator<Item = (String, String)> + '_ {
    let query = uri.query().unwrap_or_default();
    Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map(|Query(pairs)| pairs)
        .unwrap_or_else(|_| {
            tracing::debug!(query = %log_field::escape(query), "unreadable query string");
            Vec::new()
        })
        .into_iter()
}

/// A POST body as a JSON object: JSON content only (else `ContentTypeNotSupportedError`), an
/// empty body read as `{}`.
fn body_object(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Value, Refusal> {
    let body = body.map_err(Refusal::Body)?;
    if body.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    if let Some(value) = headers.get(header::CONTENT_TYPE) {
        let value = String::from_utf8_lossy(value.as_bytes()).to_string();
        if !headers::is_json_media_type(&value) {
            let error = RpcError::new(
                jsonrpc::CONTENT_TYPE_NOT_SUPPORTED,
                format!("Content-Type {value:?} is not supported; send application/json"),
            )
            .with_metadata("contentType", value);
            return Err(error.into());
        }
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(RpcError::invalid_params("", "the body must be a JSON object").into()),
        Err(err) => Err(RpcError::parse_error(err).into()),
    }
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, Refusal> {
    Ok(parse_params(value)?)
}

/// The value of a check, or the handler (or the answer being built) is its refusal.
macro_rules! try_response {
    ($expr:expr) => {
        match $expr {
            Ok(value) => value,
            Err(refusal) => return Refusal::from(refusal).into_response(),
        }
    };
}

/// `POST /message:send`.
async fn send_message(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    headers: HeaderMap,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = async {
        let request: SendMessageRequest =
            try_response!(body_object(&headers, body).and_then(decode));
        try_response!(
            ops::check_message_sender(&app, &requester.caller, &request.message)
                .map_err(Refusal::Identity)
        );
        ok(ops::send_message(&app, &requester, request).await)
    };
    requester.activated.echo(answer.await)
}

/// `POST /message:stream`.
async fn send_streaming_message(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    headers: HeaderMap,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = async {
        let request: SendMessageRequest =
            try_response!(body_object(&headers, body).and_then(decode));
        try_response!(
            ops::check_message_sender(&app, &requester.caller, &request.message)
                .map_err(Refusal::Identity)
        );
        stream(
            &app,
            ops::send_streaming_message(&app, &requester, request).await,
        )
    };
    requester.activated.echo(answer.await)
}

/// `GET /tasks`, its parameters in the query string (§11.5).
async fn list_tasks(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    headers: HeaderMap,
    uri: Uri,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = async {
        let pairs = match query {
            Ok(Query(pairs)) => pairs,
            Err(rejection) => {
                return error_response(&RpcError::invalid_params("", rejection.body_text()));
            }
        };
        let request: ListTasksRequest = try_response!(decode(list_params(&pairs)));
        ok(ops::list_tasks(&app, &requester, request).await)
    };
    requester.activated.echo(answer.await)
}

/// The query of `GET /tasks` as the JSON of a `ListTasksRequest`: numbers and booleans typed,
/// unknown names ignored (§5.7: a receiver ignores fields it does not know).
fn list_params(pairs: &[(String, String)]) -> Value {
    let mut params = Map::new();
    for (key, value) in pairs {
        let typed = match key.as_str() {
            "pageSize" | "historyLength" => value
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(value.clone())),
            "includeArtifacts" => match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(value.clone()),
            },
            "contextId" | "status" | "pageToken" | "statusTimestampAfter" | "tenant" => {
                Value::String(value.clone())
            }
            _ => continue,
        };
        params.insert(key.clone(), typed);
    }
    Value::Object(params)
}

/// `GET /tasks/{id}` and `GET /tasks/{id}:subscribe` (the table of §5.3 says POST for the
/// latter; some clients GET it, and both are served).
async fn get_task(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    Path(segment): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = async {
        if let Some(id) = verb(&segment, SUBSCRIBE) {
            let request = SubscribeToTaskRequest {
                tenant: String::new(),
                id: id.to_string(),
            };
            return stream(&app, ops::subscribe(&app, &requester, request).await);
        }
        let history_length = match query_pairs(&uri).find(|(key, _)| key == "historyLength") {
            None => None,
            Some((_, value)) => match value.parse::<i32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    let error = RpcError::invalid_params("historyLength", "must be an integer");
                    return error_response(&error);
                }
            },
        };
        let request = GetTaskRequest {
            tenant: String::new(),
            id: segment,
            history_length,
        };
        ok(ops::get_task(&app, &requester, request).await)
    };
    requester.activated.echo(answer.await)
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`.
async fn task_action(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    Path(segment): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = async {
        let body = try_response!(body_object(&headers, body));
        if let Some(id) = verb(&segment, CANCEL) {
            let mut params = body;
            params["id"] = Value::String(id.to_string());
            let request: CancelTaskRequest = try_response!(decode(params));
            return ok(ops::cancel_task(&app, &requester, request).await);
        }
        if let Some(id) = verb(&segment, SUBSCRIBE) {
            let request = SubscribeToTaskRequest {
                tenant: String::new(),
                id: id.to_string(),
            };
            return stream(&app, ops::subscribe(&app, &requester, request).await);
        }
        not_found(uri).await
    };
    requester.activated.echo(answer.await)
}

/// The id in a `{id}:{verb}` segment, when the segment ends in that verb.
fn verb<'a>(segment: &'a str, verb: &str) -> Option<&'a str> {
    let (id, found) = segment.rsplit_once(':')?;
    (found == verb).then_some(id)
}

/// Every push-notification-config route (§11.3.3): see [`push::answer`].
async fn push_config(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    Path(path): Path<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = async {
        let body = try_response!(body_object(&headers, body));
        let push = app.state.push.as_deref();
        ok(push::answer(push, &requester.caller, &method, path, body).await)
    };
    requester.activated.echo(answer.await)
}

/// `GET /extendedAgentCard`.
async fn extended_agent_card(
    State(app): State<Arc<App>>,
    Extension(identified): Extension<Identified>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let requester = try_response!(checked(&app, identified, &headers, &uri));
    let answer = match extended_card::extended_agent_card(&app, &requester.caller) {
        Ok(card) => with_json(StatusCode::OK, &card),
        Err(error)
            if extended_card::extended_card_unauthenticated(&app, &requester.caller).is_some() =>
        {
            status::unauthorized(&error)
        }
        Err(error) => error_response(&error),
    };
    requester.activated.echo(answer)
}

/// Stream items as the bare `StreamResponse` (§11.7); an error as a `google.rpc.Status` object.
pub(crate) struct RestFraming;

impl Framing for RestFraming {
    fn encode(&self, item: Result<&StreamResponse, RpcError>) -> String {
        match item {
            Ok(event) => to_text(event),
            Err(error) => to_text(&status_body(&error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_framing_writes_the_bare_event_and_errors_as_a_status() {
        use crate::base::protocol::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};
        use crate::state::tasks::TaskError;
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            metadata: None,
        });
        let data: serde_json::Value =
            serde_json::from_str(&RestFraming.encode(Ok(&event))).unwrap();
        assert_eq!(
            data["statusUpdate"]["status"]["state"],
            "TASK_STATE_WORKING"
        );
        let error = RpcError::from(TaskError::NotFound("t".into()));
        let data: serde_json::Value =
            serde_json::from_str(&RestFraming.encode(Err(error))).unwrap();
        assert_eq!(data["error"]["code"], 404);
    }

    #[test]
    fn verbs_are_split_at_the_last_colon() {
        assert_eq!(verb("abc:cancel", CANCEL), Some("abc"));
        assert_eq!(verb("a:b:subscribe", SUBSCRIBE), Some("a:b"));
        assert_eq!(verb("abc", CANCEL), None);
        assert_eq!(verb("abc:cancel", SUBSCRIBE), None);
    }

    #[test]
    fn list_queries_become_typed_params_and_unknown_names_are_dropped() {
        let pairs = [
            ("contextId", "c"),
            ("pageSize", "2"),
            ("includeArtifacts", "true"),
            ("status", "TASK_STATE_WORKING"),
            ("mystery", "x"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let request: ListTasksRequest = parse_params(list_params(&pairs)).unwrap();
        assert_eq!(request.context_id, "c");
        assert_eq!(request.page_size, Some(2));
        assert_eq!(request.include_artifacts, Some(true));
        let bad = [("pageSize".to_string(), "many".to_string())];
        let err = parse_params::<ListTasksRequest>(list_params(&bad)).unwrap_err();
        assert!(err.message.contains("pageSize"), "{}", err.message);
    }
}
