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
        phase: Phase::Snapshot(subscription.snapshot),
    };
    Sse::new(events(follower))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE_INTERVAL))
        .into_response()
}

fn events(follower: Follower) -> impl Stream<Item = Result<Event, Infallible>> + Send {
    futures::stream::unfold(follower, |mut follower| async move {
        let event = follower.next().await?;
        Some((Ok(event), follower))
    })
}

/// Where a stream is: about to send the snapshot, following events, or finished.
enum Phase {
    Snapshot(Task),
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
    /// The next SSE event, or `None` once the stream is over.
    async fn next(&mut self) -> Option<Event> {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Done => None,
            Phase::Snapshot(mut task) => {
                if !task.status.state.is_settled() {
                    self.phase = Phase::Following;
                }
                trim_history(&mut task, self.history_length);
                Some(self.result(&StreamResponse::Task(task)))
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
    async fn resync(&mut self, continue_after: bool) -> Event {
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

    fn result(&self, response: &StreamResponse) -> Event {
        match serde_json::to_value(response) {
            Ok(value) => self.data(&jsonrpc::Response::success(self.id.clone(), value)),
            Err(err) => self.error(RpcError::internal(err)),
        }
    }

    fn error(&self, error: RpcError) -> Event {
        self.data(&jsonrpc::Response::failure(self.id.clone(), error))
    }

    fn data(&self, response: &jsonrpc::Response) -> Event {
        // A response of plain data cannot fail to serialise; the fallback is only for the type.
        let text = serde_json::to_string(response).unwrap_or_else(|_| {
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
                .to_string()
        });
        Event::default().data(text)
    }
}
