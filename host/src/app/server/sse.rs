//! Server-Sent Events for `SendStreamingMessage` and `SubscribeToTask`: the task snapshot first,
//! then each event, until the task settles. The framing below the bindings: each binding hands in
//! its `Framing`, which writes each item the way it wants it.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use crate::app::server::extensions::Activated;
use crate::app::server::ops::{StreamEnd, Streaming, state_of};
use crate::app::server::validate::trim_history;
use crate::base::metrics::{METRICS, Open};
use crate::base::protocol::jsonrpc::RpcError;
use crate::base::protocol::types::{StreamResponse, Task};
use crate::state::tasks::events::{RecvError, TaskEvents};
use crate::state::tasks::{Caller, TaskService};

/// The comment an idle stream sends every `server.stream_keep_alive_secs` (`: keep-alive`):
/// proxies and clients with read timeouts keep the connection open while a task thinks, and a
/// write to a client that went away fails, which ends the stream and frees its connection (and
/// its place in the caller's share) instead of holding it until the task ends.
pub const KEEP_ALIVE_TEXT: &str = "keep-alive";

/// How each item of a stream is written as the `data` of one SSE event: each binding brings its
/// own (a JSON-RPC response in the 1.0 or 0.3 shape, or a bare `StreamResponse` for REST).
pub(crate) trait Framing: Send + 'static {
    /// The event data for one item.
    fn encode(&self, item: Result<&StreamResponse, RpcError>) -> String;
}

/// The HTTP response streaming a subscription until its end (the task terminal, or for
/// `SendStreamingMessage` settled), with a keep-alive comment every `keep_alive` while nothing
/// else is sent. Its `history_length` trims every task snapshot sent, and every event is shaped
/// by the extensions the request activated; the response names them.
pub(crate) fn respond(
    service: Arc<dyn TaskService>,
    framing: impl Framing,
    streaming: Streaming,
    keep_alive: Duration,
) -> Response {
    let echo = streaming.activated.clone();
    let response = Sse::new(events(follow(service, streaming), framing))
        .keep_alive(KeepAlive::new().interval(keep_alive).text(KEEP_ALIVE_TEXT))
        .into_response();
    echo.echo(response)
}

/// The items of a subscription until its end, each shaped for its client, before any framing:
/// the SSE bindings frame them as events, the gRPC binding as stream messages.
pub(crate) fn follow(
    service: Arc<dyn TaskService>,
    streaming: Streaming,
) -> impl Stream<Item = Result<StreamResponse, RpcError>> + Send {
    let Streaming {
        caller,
        subscription,
        history_length,
        activated,
        end,
    } = streaming;
    let follower = Follower {
        service,
        caller,
        end,
        task_id: subscription.snapshot.id.clone(),
        history_length,
        activated,
        events: subscription.events,
        phase: Phase::Snapshot(Box::new(subscription.snapshot)),
        _open: METRICS.open_stream(),
    };
    futures::stream::unfold(follower, |mut follower| async move {
        let item = follower.next().await?;
        Some((item, follower))
    })
}

fn events(
    items: impl Stream<Item = Result<StreamResponse, RpcError>> + Send,
    framing: impl Framing,
) -> impl Stream<Item = Result<Event, Infallible>> + Send {
    use futures::StreamExt;
    items.map(move |item| {
        Ok(Event::default().data(framing.encode(item.as_ref().map_err(Clone::clone))))
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
    end: StreamEnd,
    task_id: String,
    history_length: Option<i32>,
    /// What each event may carry, by the extensions the request activated.
    activated: Activated,
    events: TaskEvents,
    phase: Phase,
    /// Counts the stream among the open ones while it lives.
    _open: Open,
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
                    // Shared with every follower; this client's copy is shaped for it.
                    Some(Ok(StreamResponse::clone(&event)))
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
pub(crate) fn to_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| {
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    // The JSON-RPC binding's framing, so the tests read what a client reads.
    use crate::app::server::dispatch::JsonRpcFraming;
    use crate::base::protocol::jsonrpc::RequestId;
    use crate::base::protocol::requests::{
        ListTasksRequest, ListTasksResponse, SendMessageRequest,
    };
    use crate::base::protocol::types::TaskState;
    use crate::base::protocol::types::{TaskStatus, TaskStatusUpdateEvent};
    use crate::state::tasks::events::TaskEvent;
    use crate::state::tasks::{Subscription, TaskError};
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

    fn follower(events: broadcast::Receiver<TaskEvent>) -> Follower {
        Follower {
            service: Arc::new(Completed),
            caller: Caller::from_header(None),
            end: StreamEnd::Settled,
            task_id: "t".into(),
            history_length: None,
            activated: Activated::none(),
            events: TaskEvents::from_receiver(events),
            phase: Phase::Snapshot(Box::new(task(TaskState::Submitted))),
            _open: METRICS.open_stream(),
        }
    }

    async fn states(mut follower: Follower) -> Vec<String> {
        let mut states = Vec::new();
        while let Some(item) = follower.next().await {
            let framing = JsonRpcFraming::V1(RequestId::Number(9.into()));
            let data = framing.encode(item.as_ref().map_err(Clone::clone));
            let response: crate::base::protocol::jsonrpc::Response =
                serde_json::from_str(&data).unwrap();
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
        sender.send(Arc::new(update(TaskState::Working))).unwrap();
        sender
            .send(Arc::new(update(TaskState::InputRequired)))
            .unwrap();
        sender.send(Arc::new(update(TaskState::Working))).unwrap();
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
        sender
            .send(Arc::new(update(TaskState::InputRequired)))
            .unwrap();
        sender.send(Arc::new(update(TaskState::Working))).unwrap();
        sender.send(Arc::new(update(TaskState::Completed))).unwrap();
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
        sender.send(Arc::new(update(TaskState::Working))).unwrap();
        sender.send(Arc::new(update(TaskState::Completed))).unwrap();
        let mut reply = follower(receiver);
        reply.phase = Phase::Snapshot(Box::new(task(TaskState::InputRequired)));
        let expected = [
            "task TASK_STATE_INPUT_REQUIRED",
            "update TASK_STATE_WORKING",
            "update TASK_STATE_COMPLETED",
        ];
        assert_eq!(states(reply).await, expected);
    }

    #[tokio::test]
    async fn a_lagging_stream_resends_the_task_and_ends_when_it_has_settled() {
        let (sender, receiver) = broadcast::channel(1);
        for _ in 0..3 {
            sender.send(Arc::new(update(TaskState::Working))).unwrap();
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
