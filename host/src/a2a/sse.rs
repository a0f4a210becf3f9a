//! Server-Sent Events for `SendStreamingMessage` and `SubscribeToTask`: the task snapshot first,
//! then each event as a JSON-RPC response, until the task settles.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use tokio::sync::broadcast::error::RecvError;

use crate::a2a::jsonrpc::{self, RequestId, RpcError};
use crate::a2a::types::{StreamResponse, Task};
use crate::a2a::validate::trim_history;
use crate::tasks::{Caller, Subscription, TaskService};

/// How often an idle stream sends a comment, so proxies and clients with read timeouts keep the
/// connection open while a task thinks.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// Whether an event leaves its task in a state where a stream ends and a blocking send returns.
pub fn settles(event: &StreamResponse) -> bool {
    match event {
        StreamResponse::StatusUpdate(update) => update.status.state.is_settled(),
        StreamResponse::Task(task) => task.status.state.is_settled(),
        StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => false,
    }
}

/// The HTTP response streaming a subscription. `history_length` trims every task snapshot sent.
pub fn respond(
    service: Arc<dyn TaskService>,
    caller: Caller,
    id: RequestId,
    subscription: Subscription,
    history_length: Option<i32>,
) -> Response {
    let follower = Follower {
        service,
        caller,
        id,
        task_id: subscription.snapshot.id.clone(),
        history_length,
        events: subscription.events,
        phase: Phase::Snapshot(Box::new(subscription.snapshot)),
    };
    Sse::new(events(follower))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE_INTERVAL))
        .into_response()
}

fn events(follower: Follower) -> impl Stream<Item = Result<Event, Infallible>> + Send {
    futures::stream::unfold(follower, |mut follower| async move {
        let response = follower.next().await?;
        Some((Ok(to_event(&response)), follower))
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
    id: RequestId,
    task_id: String,
    history_length: Option<i32>,
    events: tokio::sync::broadcast::Receiver<StreamResponse>,
    phase: Phase,
}

impl Follower {
    /// The next response to send, or `None` once the stream is over.
    async fn next(&mut self) -> Option<jsonrpc::Response> {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done => None,
            Phase::Snapshot(mut task) => {
                if !task.status.state.is_settled() {
                    self.phase = Phase::Following;
                }
                trim_history(&mut task, self.history_length);
                Some(self.result(&StreamResponse::Task(*task)))
            }
            Phase::Following => match self.events.recv().await {
                Ok(event) => {
                    if !settles(&event) {
                        self.phase = Phase::Following;
                    }
                    Some(self.result(&event))
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
    async fn resync(&mut self, continue_after: bool) -> jsonrpc::Response {
        let fetched = self
            .service
            .get_task(&self.caller, &self.task_id, self.history_length)
            .await;
        match fetched {
            Ok(task) => {
                if continue_after && !task.status.state.is_settled() {
                    self.phase = Phase::Following;
                }
                self.result(&StreamResponse::Task(task))
            }
            Err(err) => self.error(RpcError::from(err)),
        }
    }

    fn result(&self, response: &StreamResponse) -> jsonrpc::Response {
        match serde_json::to_value(response) {
            Ok(value) => jsonrpc::Response::success(self.id.clone(), value),
            Err(err) => self.error(RpcError::internal(err)),
        }
    }

    fn error(&self, error: RpcError) -> jsonrpc::Response {
        jsonrpc::Response::failure(self.id.clone(), error)
    }
}

/// One response as one SSE event.
fn to_event(response: &jsonrpc::Response) -> Event {
    // A response of plain data cannot fail to serialise; the fallback is only for the type.
    let text = serde_json::to_string(response).unwrap_or_else(|_| {
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
            .to_string()
    });
    Event::default().data(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{ListTasksRequest, ListTasksResponse, SendMessageRequest, TaskState};
    use crate::a2a::types::{TaskStatus, TaskStatusUpdateEvent};
    use crate::tasks::TaskError;
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
            id: RequestId::Number(9.into()),
            task_id: "t".into(),
            history_length: None,
            events,
            phase: Phase::Snapshot(Box::new(task(TaskState::Submitted))),
        }
    }

    async fn states(mut follower: Follower) -> Vec<String> {
        let mut states = Vec::new();
        while let Some(response) = follower.next().await {
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
