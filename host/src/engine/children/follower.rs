//! The stand-in follower of one child: it catches up with `GetTask`, then follows
//! `SubscribeToTask`, falling back to polling with backoff when the stream is refused or ends,
//! and tells the parent of every change. An agent that stays unreachable for
//! `limits.subtask_unreachable_secs` ends the child FAILED for the parent, with the reason, so a
//! parent never waits forever.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Children;
use super::report::{ChildNews, news_of, note_text};
use crate::a2a::client::{A2aClient, ClientError};
use crate::a2a::jsonrpc::TASK_NOT_FOUND;
use crate::a2a::types::{StreamResponse, Task, TaskState};

/// The first wait between polls, doubled after each quiet poll up to [`MAX_POLL_INTERVAL`].
const FIRST_POLL_INTERVAL: Duration = Duration::from_millis(200);
/// The longest wait between polls: how late, at worst, a parent hears of a child that cannot
/// be streamed.
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// Follows the child until it ends (or `stop`), reporting each change to the parent.
pub(super) async fn run(
    children: &Children,
    parent: &str,
    child: &str,
    agent: &str,
    stop: CancellationToken,
) {
    let client = match children.client(agent) {
        Ok(client) => client,
        Err(err) => {
            let reason = format!(
                "{agent} cannot be reached from this harness: {}",
                err.message
            );
            fail(children, parent, child, agent, &reason);
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
    };
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = follower.follow() => {}
    }
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
}

impl Follower<'_> {
    async fn follow(&mut self) {
        let mut interval = FIRST_POLL_INTERVAL;
        loop {
            match self.client.get_task(self.child, Some(0)).await {
                Ok(task) => {
                    if self.heard(&task) {
                        return;
                    }
                }
                Err(err) if err.rpc_code() == Some(TASK_NOT_FOUND) => {
                    let reason = format!("{} no longer knows task {}", self.agent, self.child);
                    fail(self.children, self.parent, self.child, self.agent, &reason);
                    return;
                }
                Err(err) => {
                    if self.gave_up(&err) {
                        return;
                    }
                    tokio::time::sleep(interval).await;
                    interval = (interval * 2).min(MAX_POLL_INTERVAL);
                    continue;
                }
            }
            match self.client.subscribe(self.child).await {
                Ok(mut events) => {
                    let mut changed = false;
                    while let Some(event) = events.next().await {
                        let Ok(event) = event else { break };
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
                Err(_) => {
                    // No stream (refused, unsupported, or the task is already settled): poll.
                    tokio::time::sleep(interval).await;
                    interval = (interval * 2).min(MAX_POLL_INTERVAL);
                }
            }
        }
    }

    /// Reports the child as it is; true when it has ended.
    fn heard(&mut self, task: &Task) -> bool {
        self.last_answer = Instant::now();
        let state = task.status.state;
        if self.last_state != Some(state) {
            self.last_state = Some(state);
            let news = news_of(task, self.agent);
            self.children
                .report(self.parent, self.child, self.agent, &news);
        }
        state.is_terminal()
    }

    /// After a failed call: true (and the child FAILED for the parent) once the agent has not
    /// answered for longer than the configured bound.
    fn gave_up(&self, err: &ClientError) -> bool {
        let silent = self.last_answer.elapsed();
        if silent < self.children.settings.unreachable_after {
            tracing::debug!(parent = %self.parent, child = %self.child, "sub-task's agent did not answer: {err}");
            return false;
        }
        tracing::warn!(parent = %self.parent, child = %self.child, agent = %self.agent, "giving up on the sub-task: {err}");
        let reason = format!(
            "{} stopped answering for {} s, so the sub-task is given up (last error: {})",
            self.agent,
            silent.as_secs(),
            describe(err)
        );
        fail(self.children, self.parent, self.child, self.agent, &reason);
        true
    }
}

/// Ends the child FAILED for the parent with the reason.
fn fail(children: &Children, parent: &str, child: &str, agent: &str, reason: &str) {
    let news = ChildNews {
        state: TaskState::Failed,
        note: Some(note_text(child, agent, TaskState::Failed, reason)),
    };
    children.report(parent, child, agent, &news);
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
    }
}
