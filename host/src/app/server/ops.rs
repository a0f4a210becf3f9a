//! The A2A operations, written once for every binding: JSON-RPC 1.0, its 0.3 dialect and the
//! HTTP+JSON (REST) binding decode their requests into the 1.0 types, call these, and encode
//! what comes back. Every check a request passes before the task service sees it lives here, so
//! the bindings cannot drift apart (§5.1 asks for functional equivalence). So does the shaping of
//! every task that goes out by the extensions the request activated ([`Activated`]).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderValue;
use serde_json::Value;

use crate::app::server::extensions::Activated;
use crate::app::server::identity::{BearerVerifier, Credentials, IdentityError, METADATA_FIELD};
use crate::app::server::push_ops;
pub use crate::app::server::push_ops::push_not_supported;
use crate::app::server::validate;
use crate::base::protocol::card::AgentCard;
use crate::base::protocol::jsonrpc::{CONTENT_TYPE_NOT_SUPPORTED, RpcError};
use crate::base::protocol::requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, SendMessageRequest,
    SubscribeToTaskRequest,
};
use crate::base::protocol::types::{
    DIRECT_REPLY_KEY, Message, SendMessageResponse, StreamResponse, Task, TaskState,
};
use crate::base::telemetry;
use crate::state::tasks::creator::claimed_sender;
use crate::state::tasks::creator::sender_of;
use crate::state::tasks::events::RecvError;
use crate::state::tasks::{Caller, Subscription, TaskService};

/// How long a blocking `SendMessage` waits for its task to settle before answering with the task
/// as it is. A client that needs longer should stream or poll; an HTTP request held open for
/// hours helps nobody.
pub const BLOCKING_SEND_MAX_WAIT: Duration = Duration::from_secs(10 * 60);
/// How often a blocking `SendMessage` also reads its task from the store, for changes made by
/// another harness process sharing it (they announce their events in their own process).
pub const BLOCKING_SEND_RECHECK: Duration = Duration::from_secs(1);

/// What the server needs: the task service, the card it publishes, how it knows its callers,
/// and its limits.
#[derive(Clone)]
pub struct ServerState {
    /// The task service every binding calls into.
    pub service: Arc<dyn TaskService>,
    /// The agent card this server publishes; it also says which bindings and capabilities are on.
    pub card: AgentCard,
    /// The bearer tokens of `self`, the trusted delegators and the token callers; every
    /// binding identifies callers through them.
    pub credentials: Arc<Credentials>,
    /// Verifies a bearer token that is none of `credentials` (a JWT); without one such a token
    /// is refused.
    pub verifier: Option<Arc<dyn BearerVerifier>>,
    /// Whether a request without credentials is served (`server.allow_anonymous`).
    pub allow_anonymous: bool,
    /// The card `GetExtendedAgentCard` serves to authenticated callers; `None` when the public
    /// card does not offer one.
    pub extended_card: Option<AgentCard>,
    /// Larger request bodies get HTTP 413 before they are parsed.
    pub max_request_bytes: usize,
    /// Requests per minute one caller may make before HTTP 429 (a proven participant by its id,
    /// anyone else by peer address; this harness's own calls are never limited); 0 turns
    /// limiting off.
    pub rate_limit_per_minute: u32,
    /// How often an event stream sends a keep-alive comment while its task is quiet
    /// (`server.stream_keep_alive_secs`).
    pub stream_keep_alive: std::time::Duration,
    /// What `/readyz` checks (the store, the engine).
    pub health: Arc<crate::app::server::health::Health>,
    /// Serve `GET /metrics` (`[telemetry] metrics`).
    pub metrics: bool,
    /// The push-config operations; `None` when push is off (`[push] allowed_hosts` empty).
    pub push: Option<Arc<crate::state::tasks::push_configs::PushConfigs>>,
}

/// The state handlers share: the server state and what is derived from it once.
pub(crate) struct App {
    pub(crate) state: ServerState,
    /// Who each request comes from: the credentials, the verifier and the anonymous rule.
    pub(crate) identifier: Arc<crate::app::server::identity::Identifier>,
    /// The URIs of the extensions the card offers: the only ones `A2A-Extensions` may name.
    pub(crate) supported_extensions: Vec<String>,
    pub(crate) card_json: Bytes,
    pub(crate) card_etag: HeaderValue,
    /// When the router was built: the card only changes with a restart.
    pub(crate) card_last_modified: HeaderValue,
}

/// What a method produces: one JSON result, or a stream of them.
pub(crate) enum Reply {
    Result(Value),
    Stream(Box<Streaming>),
}

/// A result as JSON.
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> Result<Reply, RpcError> {
    serde_json::to_value(value)
        .map(Reply::Result)
        .map_err(RpcError::internal)
}

/// Whether an event leaves its task in a state where a stream ends and a blocking send returns.
pub fn settles(event: &StreamResponse) -> bool {
    state_of(event).is_some_and(TaskState::is_settled)
}

pub(crate) fn state_of(event: &StreamResponse) -> Option<TaskState> {
    match event {
        StreamResponse::StatusUpdate(update) => Some(update.status.state),
        StreamResponse::Task(task) => Some(task.status.state),
        StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
    }
}

/// When a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// At the first event that settles the task (terminal, input or auth required): the stream
    /// of a message just sent. The snapshot ends it only when terminal, since it was taken before
    /// the message was worked (a task waiting for input is still waiting in it).
    Settled,
    /// When the task is terminal (§3.1.6): a subscription watches a task through its questions.
    Terminal,
}

impl StreamEnd {
    pub(crate) fn ends_at_snapshot(self, state: TaskState) -> bool {
        state.is_terminal()
    }

    pub(crate) fn ends_at(self, state: TaskState) -> bool {
        match self {
            StreamEnd::Settled => state.is_settled(),
            StreamEnd::Terminal => state.is_terminal(),
        }
    }
}

/// Who made a request and what its headers activated: everything about the asker that decides
/// what an operation may do and what its answer holds.
pub(crate) struct Requester {
    pub caller: Caller,
    pub activated: Activated,
}

/// Whether the caller may send a message as the participant its metadata names (`claimed`,
/// trimmed): a proven caller only as itself (else 403), an unproven one never as an id a
/// credential stands for (else 401). Every binding checks this before the operation runs, so
/// the refusal is an HTTP status like every other refusal of who the caller is.
pub(crate) fn check_sender(
    app: &App,
    caller: &Caller,
    claimed: Option<&str>,
) -> Result<(), IdentityError> {
    let claimed = claimed.map(str::trim).filter(|id| !id.is_empty());
    app.identifier.check_claim(caller, METADATA_FIELD, claimed)
}

/// [`check_sender`] for a decoded message.
pub(crate) fn check_message_sender(
    app: &App,
    caller: &Caller,
    message: &Message,
) -> Result<(), IdentityError> {
    check_sender(app, caller, claimed_sender(message))
}

/// A stream to send: who it follows the task as, the subscription, how much history each task
/// snapshot carries, what each event may hold, and when the stream ends.
pub(crate) struct Streaming {
    /// The caller the stream reads the task as when it resynchronises: for a message, its
    /// sender, who may see the task it created.
    pub caller: Caller,
    pub subscription: Subscription,
    pub history_length: Option<i32>,
    /// The extensions the request activated; every event is shaped by them.
    pub activated: Activated,
    pub end: StreamEnd,
}

/// `SendMessage`: creates or continues a task, then (unless `returnImmediately`) waits for it to
/// settle. A task whose final message is a direct reply is answered with that message. The task
/// is read back as the message's sender, who may see it whoever the headers named.
pub(crate) async fn send_message(
    app: &App,
    requester: &Requester,
    request: SendMessageRequest,
) -> Result<SendMessageResponse, RpcError> {
    telemetry::name_current("SendMessage", None);
    check_send(app, &request)?;
    let caller = &requester.caller;
    push_ops::prepare_send(app.state.push.as_deref(), caller, &request).await?;
    let config = request.configuration.clone().unwrap_or_default();
    let sender = sender_of(caller, &request.message)?;
    let subscription = app.state.service.send_message(caller, request).await?;
    telemetry::name_current("SendMessage", Some(&subscription.snapshot.id));
    let mut response = if config.return_immediately {
        let mut task = subscription.snapshot;
        validate::trim_history(&mut task, config.history_length);
        SendMessageResponse::Task(task)
    } else {
        let task = wait_until_settled(app, &sender, subscription, config.history_length).await?;
        match direct_reply(&task) {
            Some(message) => SendMessageResponse::Message(message),
            None => SendMessageResponse::Task(task),
        }
    };
    requester.activated.shape_send(&mut response);
    Ok(response)
}

/// `SendStreamingMessage`: creates or continues a task and follows it.
pub(crate) async fn send_streaming_message(
    app: &App,
    requester: &Requester,
    request: SendMessageRequest,
) -> Result<Streaming, RpcError> {
    telemetry::name_current("SendStreamingMessage", None);
    let caller = &requester.caller;
    check_streaming(app)?;
    check_send(app, &request)?;
    push_ops::prepare_send(app.state.push.as_deref(), caller, &request).await?;
    let history_length = request
        .configuration
        .as_ref()
        .and_then(|c| c.history_length);
    let sender = sender_of(caller, &request.message)?;
    let subscription = app.state.service.send_message(caller, request).await?;
    telemetry::name_current("SendStreamingMessage", Some(&subscription.snapshot.id));
    Ok(Streaming {
        caller: sender,
        subscription,
        history_length,
        activated: requester.activated.clone(),
        end: StreamEnd::Settled,
    })
}

/// `SubscribeToTask`: follows a task that is not terminal.
pub(crate) async fn subscribe(
    app: &App,
    requester: &Requester,
    request: SubscribeToTaskRequest,
) -> Result<Streaming, RpcError> {
    telemetry::name_current("SubscribeToTask", Some(&request.id));
    check_streaming(app)?;
    validate::task_id("id", &request.id)?;
    let caller = &requester.caller;
    let subscription = app.state.service.subscribe(caller, &request.id).await?;
    Ok(Streaming {
        caller: caller.clone(),
        subscription,
        history_length: None,
        activated: requester.activated.clone(),
        end: StreamEnd::Terminal,
    })
}

/// `GetTask`.
pub(crate) async fn get_task(
    app: &App,
    requester: &Requester,
    request: GetTaskRequest,
) -> Result<Task, RpcError> {
    telemetry::name_current("GetTask", Some(&request.id));
    validate::task_id("id", &request.id)?;
    validate::history_length("historyLength", request.history_length)?;
    let service = &app.state.service;
    let mut task = service
        .get_task(&requester.caller, &request.id, request.history_length)
        .await?;
    requester.activated.shape_task(&mut task);
    Ok(task)
}

/// `ListTasks`.
pub(crate) async fn list_tasks(
    app: &App,
    requester: &Requester,
    request: ListTasksRequest,
) -> Result<ListTasksResponse, RpcError> {
    telemetry::name_current("ListTasks", None);
    validate::page_size(request.page_size)?;
    validate::history_length("historyLength", request.history_length)?;
    let service = &app.state.service;
    let mut listing = service.list_tasks(&requester.caller, request).await?;
    requester.activated.shape_tasks(&mut listing.tasks);
    Ok(listing)
}

/// `CancelTask`.
pub(crate) async fn cancel_task(
    app: &App,
    requester: &Requester,
    request: CancelTaskRequest,
) -> Result<Task, RpcError> {
    telemetry::name_current("CancelTask", Some(&request.id));
    validate::task_id("id", &request.id)?;
    let service = &app.state.service;
    let mut task = service.cancel_task(&requester.caller, &request.id).await?;
    requester.activated.shape_task(&mut task);
    Ok(task)
}

/// The direct reply a settled task carries: a completed task whose status message is marked
/// as the answer itself rather than a report on the task.
fn direct_reply(task: &Task) -> Option<Message> {
    let message = task.status.message.as_ref()?;
    let marked = message
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get(DIRECT_REPLY_KEY))
        .and_then(|value| value.as_bool())
        .unwrap_or(false);
    (task.status.state == TaskState::Completed && marked).then(|| message.clone())
}

/// Checks a `SendMessage` or `SendStreamingMessage` before the service sees it.
fn check_send(app: &App, request: &SendMessageRequest) -> Result<(), RpcError> {
    validate::sent_message(&request.message)?;
    check_media_types(app, &request.message)?;
    if let Some(config) = &request.configuration {
        validate::history_length("configuration.historyLength", config.history_length)?;
    }
    Ok(())
}

/// §3.1.1: a part whose media type the agent does not take (its card's `defaultInputModes`) is
/// refused with `ContentTypeNotSupportedError`, naming the part. Parts that name no media type
/// are text, data or files the agent reads as they come.
fn check_media_types(app: &App, message: &Message) -> Result<(), RpcError> {
    let accepted = &app.state.card.default_input_modes;
    for (index, part) in message.parts.iter().enumerate() {
        if part.media_type.is_empty() || accepts(accepted, &part.media_type) {
            continue;
        }
        let message = format!(
            "message.parts[{index}]: media type {:?} is not supported; this agent accepts {}",
            part.media_type,
            accepted.join(", ")
        );
        return Err(RpcError::new(CONTENT_TYPE_NOT_SUPPORTED, message)
            .with_metadata("mediaType", part.media_type.clone()));
    }
    Ok(())
}

/// Whether a media type (parameters ignored, case-insensitive) is among `accepted`, which may
/// hold wildcards such as `text/*` or `*/*`.
pub(crate) fn accepts(accepted: &[String], media_type: &str) -> bool {
    let essence = |value: &str| {
        value
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    };
    let wanted = essence(media_type);
    let major = wanted.split('/').next().unwrap_or_default().to_string();
    accepted.iter().map(|mode| essence(mode)).any(|mode| {
        mode == wanted || mode == "*/*" || mode.strip_suffix("/*") == Some(major.as_str())
    })
}

fn check_streaming(app: &App) -> Result<(), RpcError> {
    match app.state.card.capabilities.streaming {
        Some(true) => Ok(()),
        _ => Err(RpcError::unsupported(
            "streaming is not supported: the agent card does not declare capabilities.streaming",
        )),
    }
}

/// Waits for the task to settle (terminal, input or auth required), then answers with the task
/// as the service then has it, so the reply carries every artifact and status message. Only a
/// terminal snapshot ends the wait at once: one waiting for input was taken before the message
/// just sent was worked.
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
    // Whether an event of this follower settled the task: its record then came with it.
    let mut announced = false;
    if !snapshot.status.state.is_terminal() {
        let deadline = tokio::time::sleep(BLOCKING_SEND_MAX_WAIT);
        tokio::pin!(deadline);
        let mut recheck = tokio::time::interval(BLOCKING_SEND_RECHECK);
        recheck.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => {
                    tracing::warn!(task = %task_id, "blocking SendMessage gave up waiting");
                    break;
                }
                _ = recheck.tick() => {
                    // A step taken by another process sharing the store (a distributed engine)
                    // is announced there, not here: the store says whether the task settled.
                    let task = service.get_task(caller, &task_id, Some(0)).await?;
                    if task.status.state.is_settled()
                        && task.status.timestamp != snapshot.status.timestamp
                    {
                        break;
                    }
                }
                event = events.recv() => match event {
                    Ok(event) if settles(&event) => {
                        announced = true;
                        break;
                    }
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
    if announced {
        return Ok(service
            .settled_task(caller, &task_id, history_length, &events)
            .await?);
    }
    Ok(service.get_task(caller, &task_id, history_length).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::{Part, Role, TaskStatus};

    fn modes(list: &[&str]) -> Vec<String> {
        list.iter().map(|m| m.to_string()).collect()
    }

    #[test]
    fn media_types_match_by_essence_and_wildcard() {
        let accepted = modes(&["text/plain", "application/json", "image/*"]);
        assert!(accepts(&accepted, "text/plain"));
        assert!(accepts(&accepted, "Text/Plain; charset=utf-8"));
        assert!(accepts(&accepted, "image/png"));
        assert!(!accepts(&accepted, "application/x-unsupported-tck-type"));
        assert!(!accepts(&accepted, "text/html"));
        assert!(accepts(&modes(&["*/*"]), "anything/at-all"));
    }

    #[test]
    fn only_a_completed_task_with_a_marked_message_is_a_direct_reply() {
        let mut message = Message {
            message_id: "m".into(),
            role: Role::Agent,
            parts: vec![Part::text("hi")],
            ..Message::default()
        };
        let mut task = Task {
            id: "t".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(message.clone()),
                timestamp: None,
            },
            ..Task::default()
        };
        assert!(direct_reply(&task).is_none());
        let mut metadata = serde_json::Map::new();
        metadata.insert(DIRECT_REPLY_KEY.into(), true.into());
        message.metadata = Some(metadata);
        task.status.message = Some(message);
        assert_eq!(direct_reply(&task).unwrap().text(), "hi");
        task.status.state = TaskState::Failed;
        assert!(direct_reply(&task).is_none());
    }
}
