//! The stand-in follower of one child: it catches up with `GetTask`, then follows
//! `SubscribeToTask`, falling back to polling with backoff when the stream is refused or ends
//! (and for good once a stream breaks the client's caps), and tells the parent of every change.
//! A parent never waits forever: an agent that stays unreachable for
//! `limits.subtask_unreachable_secs`, or a child still open at its deadline
//! (`limits.subtask_deadline_secs` from its creation, canceled then with `CancelTask`), ends the
//! child FAILED for the parent, with the reason.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Children;
use super::report::{ChildNews, news_of, note_text};
use crate::base::protocol::jsonrpc::TASK_NOT_FOUND;
use crate::base::protocol::types::{StreamResponse, Task, TaskState};
use crate::work::agents::client::{A2aClient, ClientError};

/// The first wait between polls, doubled after each quiet poll up to [`MAX_POLL_INTERVAL`].
const FIRST_POLL_INTERVAL: Duration = Duration::from_millis(200);
/// The longest wait between polls: how late, at worst, a parent hears of a child that cannot
/// be streamed.
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// Follows the child until it ends, its deadline (`remaining` from now) or `stop`, reporting
/// each change to the parent.
pub(super) async fn run(
    children: &Children,
    parent: &str,
    child: &str,
    agent: &str,
    remaining: Duration,
    stop: CancellationToken,
) {
    let client = match children.client(agent) {
        Ok(client) => client,
        Err(err) => {
            let reason = format!(
                "{agent} cannot be reached from this harness: {}",
                err.message
            );
            fail(children, parent, child, agent, &reason).await;
            return;
        }
    };
    let mut follower = Follower {
        children,
        client: &client,
        parent,
        child,
        agent,
        last_answer: Instant::now(),
        last_state: None,
        streams: true,
        refused_since_change: false,
    };
    let ended = tokio::select! {
        _ = stop.cancelled() => true,
        _ = follower.follow() => true,
        _ = tokio::time::sleep(remaining) => false,
    };
    if !ended {
        past_deadline(children, &client, parent, child, agent).await;
    }
}

/// The child is still open at its deadline: it is canceled on its agent and ends FAILED for the
/// parent, unless the agent says it had ended by then (then the parent hears how, as usual).
async fn past_deadline(
    children: &Children,
    client: &A2aClient,
    parent: &str,
    child: &str,
    agent: &str,
) {
    let limit = children.settings.deadline.as_secs();
    tracing::warn!(%parent, %child, %agent, limit, "sub-task past its deadline; canceling it");
    if let Ok(Ok(task)) = super::cancel::cancel_on_agent(client, child).await {
        let state = task.status.state;
        if state.is_terminal() && state != TaskState::Canceled {
            children
                .report(parent, child, agent, &news_of(&task, agent))
                .await;
            return;
        }
    }
    let reason = format!(
        "it did not finish within limits.subtask_deadline_secs ({limit} s), so it was canceled"
    );
    fail(children, parent, child, agent, &reason).await;
}

struct Follower<'a> {
    children: &'a Children,
    client: &'a A2aClient,
    parent: &'a str,
    child: &'a str,
    agent: &'a str,
    /// When the agent last answered anything.
    last_answer: Instant,
    last_state: Option<TaskState>,
    /// Whether to subscribe: false once a stream broke the client's caps or sent what is not
    /// an event, after which the child is only polled.
    streams: bool,
    /// Whether a subscription was refused since the child last changed. The first refusal is
    /// usually a child that ended between the poll and the subscription (a quick child on
    /// `self`): it is polled again at once, not after a backoff.
    refused_since_change: bool,
}

impl Follower<'_> {
    async fn follow(&mut self) {
        let mut interval = FIRST_POLL_INTERVAL;
        loop {
            match self.client.get_task(self.child, Some(0)).await {
                Ok(task) => {
                    if self.heard(&task).await {
                        return;
                    }
                }
                Err(err) if err.rpc_code() == Some(TASK_NOT_FOUND) => {
                    let reason = format!("{} no longer knows task {}", self.agent, self.child);
                    fail(self.children, self.parent, self.child, self.agent, &reason).await;
                    return;
                }
                Err(err) => {
                    if self.gave_up(&err).await {
                        return;
                    }
                    tokio::time::sleep(interval).await;
                    interval = (interval * 2).min(MAX_POLL_INTERVAL);
                    continue;
                }
            }
            if !self.streams {
                tokio::time::sleep(interval).await;
                interval = (interval * 2).min(MAX_POLL_INTERVAL);
                continue;
            }
            match self.client.subscribe(self.child).await {
                Ok(mut events) => {
                    let mut changed = false;
                    while let Some(event) = events.next().await {
                        let event = match event {
                            Ok(event) => event,
                            Err(err) => {
                                if matches!(err, ClientError::InvalidResponse { .. }) {
                                    tracing::warn!(parent = %self.parent, child = %self.child, agent = %self.agent, "the sub-task's event stream is not usable; polling it instead: {}", self.children.mask(&err.to_string()));
                                    self.streams = false;
                                }
                                break;
                            }
                        };
                        self.last_answer = Instant::now();
                        let state = match &event {
                            StreamResponse::Task(task) => Some(task.status.state),
                            StreamResponse::StatusUpdate(update) => Some(update.status.state),
                            _ => None,
                        };
                        // A change is read whole with GetTask, which carries the answer and
                        // the child's lifecycle.
                        if state.is_some() && state != self.last_state {
                            changed = true;
                            break;
                        }
                    }
                    if changed {
                        interval = FIRST_POLL_INTERVAL;
                    } else {
                        // The stream ended with nothing new (the agent closes streams of a
                        // settled task): poll rather than resubscribe at once.
                        tokio::time::sleep(interval).await;
                        interval = (interval * 2).min(MAX_POLL_INTERVAL);
                    }
                }
                Err(_) if !self.refused_since_change => {
                    // Most likely the child settled since the poll: look again at once.
                    self.refused_since_change = true;
                }
                Err(_) => {
                    // No stream (refused, unsupported, or the task is already settled): poll.
                    tokio::time::sleep(interval).await;
                    interval = (interval * 2).min(MAX_POLL_INTERVAL);
                }
            }
        }
    }

    /// Reports the child as it is; true when it has ended.
    async fn heard(&mut self, task: &Task) -> bool {
        self.last_answer = Instant::now();
        let state = task.status.state;
        if self.last_state != Some(state) {
            self.last_state = Some(state);
            self.refused_since_change = false;
            let news = news_of(task, self.agent);
            self.children
                .report(self.parent, self.child, self.agent, &news)
                .await;
        }
        state.is_terminal()
    }

    /// After a failed call: true (and the child FAILED for the parent) once the agent has not
    /// answered for longer than the configured bound.
    async fn gave_up(&self, err: &ClientError) -> bool {
        let silent = self.last_answer.elapsed();
        if silent < self.children.settings.unreachable_after {
            tracing::debug!(parent = %self.parent, child = %self.child, "sub-task's agent did not answer: {}", self.children.mask(&err.to_string()));
            return false;
        }
        tracing::warn!(parent = %self.parent, child = %self.child, agent = %self.agent, "giving up on the sub-task: {}", self.children.mask(&err.to_string()));
        let reason = format!(
            "{} stopped answering for {} s, so the sub-task is given up (last error: {})",
            self.agent,
            silent.as_secs(),
            describe(err)
        );
        fail(self.children, self.parent, self.child, self.agent, &reason).await;
        true
    }
}

/// Ends the child FAILED for the parent with the reason.
async fn fail(children: &Children, parent: &str, child: &str, agent: &str, reason: &str) {
    let news = ChildNews {
        state: TaskState::Failed,
        note: Some(note_text(child, agent, TaskState::Failed, reason)),
        spent: None,
    };
    children.report(parent, child, agent, &news).await;
}

/// A call's failure without the agent's URL, which the model must not read.
fn describe(err: &ClientError) -> String {
    match err {
        ClientError::Transport { source, .. } if source.is_connect() => "connection refused".into(),
        ClientError::Transport { source, .. } if source.is_timeout() => "timed out".into(),
        ClientError::Transport { .. } => "the connection failed".into(),
        ClientError::Status { status, .. } => format!("HTTP {status}"),
        ClientError::Rpc { code, message, .. } => format!("error {code}: {message}"),
        ClientError::InvalidResponse { .. } => "an invalid response".into(),
        ClientError::Build(_) | ClientError::Unsupported(_) => "no client".into(),
        ClientError::Credentials(_) => "no access token".into(),
    }
}
