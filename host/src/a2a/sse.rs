//! Server-Sent Events for `SendStreamingMessage` and `SubscribeToTask`: the task snapshot first,
//! then each event, until the task settles. A [`Framing`] writes each item the way its binding
//! wants it: a JSON-RPC response (1.0 or 0.3 shapes) or a bare `StreamResponse` (REST).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use tokio::sync::broadcast::error::RecvError;

use crate::a2a::extensions::Activated;
use crate::a2a::jsonrpc::{self, RequestId, RpcError};
use crate::a2a::ops::Streaming;
use crate::a2a::types::{StreamResponse, Task, TaskState};
use crate::a2a::validate::trim_history;
use crate::a2a::{rest, v03};
use crate::tasks::{Caller, TaskService};

/// How often an idle stream sends a comment, so proxies and clients with read timeouts keep the
/// connection open while a task thinks.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// Whether an event leaves its task in a state where a stream ends and a blocking send returns.
pub fn settles(event: &StreamResponse) -> bool {
    state_of(event).is_some_and(TaskState::is_settled)
}

fn state_of(event: &StreamResponse) -> Option<TaskState> {
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
    fn ends_at_snapshot(self, state: TaskState) -> bool {
        state.is_terminal()
    }

    fn ends_at(self, state: TaskState) -> bool {
        match self {
            StreamEnd::Settled => state.is_settled(),
            StreamEnd::Terminal => state.is_terminal(),
        }
    }
}

/// How each item of a stream is written as the `data` of one SSE event.
#[derive(Debug, Clone, PartialEq)]
pub enum Framing {
    /// A JSON-RPC response carrying the request's id; the result is a 1.0 `StreamResponse`.
    JsonRpc(RequestId),
    /// A JSON-RPC response whose result is the event in its 0.3 shape (`kind`, `final`).
    JsonRpcV03(RequestId),
    /// The bare `StreamResponse` (§11.7); an error as a `google.rpc.Status` object.
    Rest,
}

impl Framing {
    /// The event data for one item.
    pub fn encode(&self, item: Result<&StreamResponse, RpcError>) -> String {
        let value = match (self, item) {
            (Framing::JsonRpc(id), Ok(event)) => match serde_json::to_value(event) {
                Ok(value) => jsonrpc::Response::success(id.clone(), value),
                Err(err) => jsonrpc::Response::failure(id.clone(), RpcError::internal(err)),
            },
            (Framing::JsonRpcV03(id), Ok(event)) => {
                jsonrpc::Response::success(id.clone(), v03::stream_event(event))
            }
            (Framing::JsonRpc(id) | Framing::JsonRpcV03(id), Err(error)) => {
                jsonrpc::Response::failure(id.clone(), error)
            }
            (Framing::Rest, Ok(event)) => return to_text(event),
            (Framing::Rest, Err(error)) => return to_text(&rest::status_body(&error)),
        };
        to_text(&value)
    }
}

/// The HTTP response streaming a subscription until its end. Its `history_length` trims every
/// task snapshot sent, and every event is shaped by the extensions the request activated; the
/// response names them.
pub(crate) fn respond(
    service: Arc<dyn TaskService>,
    framing: Framing,
    streaming: Streaming,
) -> Response {
    let Streaming {
        caller,
        subscription,
        history_length,
        activated,
        end,
    } = streaming;
    let echo = activated.clone();
    let follower = Follower {
        service,
        caller,
        framing,
        end,
        task_id: subscription.snapshot.id.clone(),
        history_length,
        activated,
        events: subscription.events,
        phase: Phase::Snapshot(Box::new(subscription.snapshot)),
    };
    let response = Sse::new(events(follower))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE_INTERVAL))
        .into_response();
    echo.echo(response)
}

fn events(follower: Follower) -> impl Stream<Item = Result<Event, Infallible>> + Send {
    futures::stream::unfold(follower, |mut follower| async move {
        let item = follower.next().await?;
        let data = follower.framing.encode(item.as_ref().map_err(Clone::clone));
        Some((Ok(Event::default().data(data)), follower))
    })
}

/// Where a stream is: about to send the snapshot, following events, or finished.
enum Phase {
    Snapshot(Box<Task>),
    Following,
    Done,
}

/// One client's view of one task. The broadcast receiver never blocks the service: a client too
/// slow to keep up lags, and gets a fresh snapshot instead of the events it missed.
struct Follower {
    service: Arc<dyn TaskService>,
    caller: Caller,
    framing: Framing,
    end: StreamEnd,
    task_id: String,
    history_length: Option<i32>,
    /// What each event may carry, by the extensions the request activated.
    activated: Activated,
    events: tokio::sync::broadcast::Receiver<StreamResponse>,
    phase: Phase,
}

impl Follower {
    /// The next item to send, shaped for this client, or `None` once the stream is over.
    async fn next(&mut self) -> Option<Result<StreamResponse, RpcError>> {
        let mut item = self.next_event().await?;
        if let Ok(event) = &mut item {
            self.activated.shape_event(event);
        }
        Some(item)
    }

    /// The next item as the task service has it.
    async fn next_event(&mut self) -> Option<Result<StreamResponse, RpcError>> {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done => None,
            Phase::Snapshot(mut task) => {
                if !self.end.ends_at_snapshot(task.status.state) {
                    self.phase = Phase::Following;
                }
                trim_history(&mut task, self.history_length);
                Some(Ok(StreamResponse::Task(*task)))
            }
            Phase::Following => match self.events.recv().await {
                Ok(event) => {
                    if !state_of(&event).is_some_and(|state| self.end.ends_at(state)) {
                        self.phase = Phase::Following;
                    }
                    Some(Ok(event))
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(task = %self.task_id, missed, "stream lagged; resending the task");
                    Some(self.resync(true).await)
                }
                // The service dropped the task's channel: send how the task ended up and stop.
                Err(RecvError::Closed) => Some(self.resync(false).await),
            },
        }
    }

    /// A fresh snapshot; the stream goes on after it if `continue_after` and it is unsettled.
    async fn resync(&mut self, continue_after: bool) -> Result<StreamResponse, RpcError> {
        let fetched = self
            .service
            .get_task(&self.caller, &self.task_id, self.history_length)
            .await;
        match fetched {
            Ok(task) => {
                if continue_after && !self.end.ends_at(task.status.state) {
                    self.phase = Phase::Following;
                }
                Ok(StreamResponse::Task(task))
            }
            Err(err) => Err(RpcError::from(err)),
        }
    }
}

/// JSON text of plain data. It cannot fail to serialise; the fallback is only for the type.
fn to_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| {
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{ListTasksRequest, ListTasksResponse, SendMessageRequest, TaskState};
    use crate::a2a::types::{TaskStatus, TaskStatusUpdateEvent};
    use crate::tasks::{Subscription, TaskError};
    use async_trait::async_trait;
    use tokio::sync::broadcast;

    fn task(state: TaskState) -> Task {
        Task {
            id: "t".into(),
            status: TaskStatus {
                state,
                ..TaskStatus::default()
            },
            ..Task::default()
        }
    }

    fn update(state: TaskState) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: String::new(),
            status: TaskStatus {
                state,
                ..TaskStatus::default()
            },
            metadata: None,
        })
    }

    /// Knows one task, already completed; everything else is unsupported.
    struct Completed;

    #[async_trait]
    impl TaskService for Completed {
        async fn send_message(
            &self,
            _: &Caller,
            _: SendMessageRequest,
        ) -> Result<Subscription, TaskError> {
            Err(TaskError::Unsupported("send".into()))
        }
        async fn get_task(&self, _: &Caller, _: &str, _: Option<i32>) -> Result<Task, TaskError> {
            Ok(task(TaskState::Completed))
        }
        async fn list_tasks(
            &self,
            _: &Caller,
            _: ListTasksRequest,
        ) -> Result<ListTasksResponse, TaskError> {
            Err(TaskError::Unsupported("list".into()))
        }
        async fn cancel_task(&self, _: &Caller, _: &str) -> Result<Task, TaskError> {
            Err(TaskError::Unsupported("cancel".into()))
        }
        async fn subscribe(&self, _: &Caller, _: &str) -> Result<Subscription, TaskError> {
            Err(TaskError::Unsupported("subscribe".into()))
        }
    }

    fn follower(events: broadcast::Receiver<StreamResponse>) -> Follower {
        Follower {
            service: Arc::new(Completed),
            caller: Caller::from_header(None),
            framing: Framing::JsonRpc(RequestId::Number(9.into())),
            end: StreamEnd::Settled,
            task_id: "t".into(),
            history_length: None,
            activated: Activated::none(),
            events,
            phase: Phase::Snapshot(Box::new(task(TaskState::Submitted))),
        }
    }

    async fn states(mut follower: Follower) -> Vec<String> {
        let mut states = Vec::new();
        while let Some(item) = follower.next().await {
            let data = follower.framing.encode(item.as_ref().map_err(Clone::clone));
            let response: jsonrpc::Response = serde_json::from_str(&data).unwrap();
            assert_eq!(response.id, RequestId::Number(9.into()));
            let result = response.result.expect("a result");
            let state = result["task"]["status"]["state"]
                .as_str()
                .map(|s| format!("task {s}"));
            let state = state.or_else(|| {
                let state = result["statusUpdate"]["status"]["state"].as_str()?;
                Some(format!("update {state}"))
            });
            states.push(state.expect("a task or a status update"));
        }
        states
    }

    #[tokio::test]
    async fn a_stream_sends_the_snapshot_then_events_and_ends_once_settled() {
        let (sender, receiver) = broadcast::channel(8);
        sender.send(update(TaskState::Working)).unwrap();
        sender.send(update(TaskState::InputRequired)).unwrap();
        sender.send(update(TaskState::Working)).unwrap();
        let expected = [
            "task TASK_STATE_SUBMITTED",
            "update TASK_STATE_WORKING",
            "update TASK_STATE_INPUT_REQUIRED",
        ];
        assert_eq!(states(follower(receiver)).await, expected);
    }

    #[tokio::test]
    async fn a_subscription_follows_the_task_through_its_questions_until_it_ends() {
        let (sender, receiver) = broadcast::channel(8);
        sender.send(update(TaskState::InputRequired)).unwrap();
        sender.send(update(TaskState::Working)).unwrap();
        sender.send(update(TaskState::Completed)).unwrap();
        let mut subscription = follower(receiver);
        subscription.end = StreamEnd::Terminal;
        let expected = [
            "task TASK_STATE_SUBMITTED",
            "update TASK_STATE_INPUT_REQUIRED",
            "update TASK_STATE_WORKING",
            "update TASK_STATE_COMPLETED",
        ];
        assert_eq!(states(subscription).await, expected);
    }

    #[tokio::test]
    async fn a_reply_to_a_question_streams_past_the_snapshot_that_still_waits() {
        let (sender, receiver) = broadcast::channel(8);
        sender.send(update(TaskState::Working)).unwrap();
        sender.send(update(TaskState::Completed)).unwrap();
        let mut reply = follower(receiver);
        reply.phase = Phase::Snapshot(Box::new(task(TaskState::InputRequired)));
        let expected = [
            "task TASK_STATE_INPUT_REQUIRED",
            "update TASK_STATE_WORKING",
            "update TASK_STATE_COMPLETED",
        ];
        assert_eq!(states(reply).await, expected);
    }

    #[test]
    fn rest_framing_writes_the_bare_event_and_errors_as_a_status() {
        let event = update(TaskState::Working);
        let data: serde_json::Value =
            serde_json::from_str(&Framing::Rest.encode(Ok(&event))).unwrap();
        assert_eq!(
            data["statusUpdate"]["status"]["state"],
            "TASK_STATE_WORKING"
        );
        let error = RpcError::from(TaskError::NotFound("t".into()));
        let data: serde_json::Value =
            serde_json::from_str(&Framing::Rest.encode(Err(error))).unwrap();
        assert_eq!(data["error"]["code"], 404);
        let legacy = Framing::JsonRpcV03(RequestId::Number(1.into())).encode(Ok(&event));
        let data: serde_json::Value = serde_json::from_str(&legacy).unwrap();
        assert_eq!(data["result"]["kind"], "status-update");
        assert_eq!(data["result"]["final"], false);
    }

    #[tokio::test]
    async fn a_lagging_stream_resends_the_task_and_ends_when_it_has_settled() {
        let (sender, receiver) = broadcast::channel(1);
        for _ in 0..3 {
            sender.send(update(TaskState::Working)).unwrap();
        }
        let expected = ["task TASK_STATE_SUBMITTED", "task TASK_STATE_COMPLETED"];
        assert_eq!(states(follower(receiver)).await, expected);
    }

    #[tokio::test]
    async fn a_closed_channel_ends_the_stream_with_the_task_as_it_is() {
        let (sender, receiver) = broadcast::channel(1);
        drop(sender);
        let expected = ["task TASK_STATE_SUBMITTED", "task TASK_STATE_COMPLETED"];
        assert_eq!(states(follower(receiver)).await, expected);
    }
}
