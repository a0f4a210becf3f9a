//! Cancelling children: each open child of a parent that ended is sent an A2A `CancelTask`, its
//! follower stopped, and its row records the state its agent reports. Apart from creating and
//! following children.

use std::sync::Arc;
use std::time::Duration;

use super::report::{self, ChildNews};
use super::{ChildKey, Children, lock};
use crate::base::protocol::types::Task;
use crate::base::telemetry;
use crate::work::agents::client::{A2aClient, ClientError};

/// How long cancelling one child may take before the parent gives up on it (and logs it).
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

impl Children {
    /// Cancels each open child of a parent that was just canceled, with A2A `CancelTask` on
    /// its agent; each child's row then records the state its agent reports.
    pub fn cancel_open(self: &Arc<Self>, parent: &str) {
        for (child, agent) in self.open_children_to_cancel(parent) {
            let children = self.clone();
            let parent = parent.to_string();
            self.tracker.spawn(async move {
                children.cancel_child(&parent, &child, &agent).await;
            });
        }
    }

    /// [`Children::cancel_open`], returning once every child's cancel has been answered (or has
    /// timed out): for an engine that must know the work is done (a Temporal activity).
    pub async fn cancel_open_and_wait(&self, parent: &str) {
        let cancels = self
            .open_children_to_cancel(parent)
            .into_iter()
            .map(|(child, agent)| async move { self.cancel_child(parent, &child, &agent).await });
        futures::future::join_all(cancels).await;
    }

    /// The open children of a parent as `(child, agent)`, their followers stopped.
    fn open_children_to_cancel(&self, parent: &str) -> Vec<(String, String)> {
        let record = match self.hub.store().task(parent) {
            Ok(Some(record)) => record,
            Ok(None) => return Vec::new(),
            Err(err) => {
                tracing::error!(task = %parent, "cannot read the task to cancel its sub-tasks: {err}");
                return Vec::new();
            }
        };
        let mut open = Vec::new();
        for link in record.ext.sub_tasks.iter().filter(|l| !l.has_ended()) {
            let agent = link.agent_id().to_string();
            let key = ChildKey::new(parent, &agent, &link.task_id);
            if let Some(token) = lock(&self.followers).remove(&key) {
                token.cancel();
            }
            open.push((link.task_id.clone(), agent));
        }
        open
    }

    async fn cancel_child(&self, parent: &str, child: &str, agent: &str) {
        let client = match self.client(agent) {
            Ok(client) => client,
            Err(err) => {
                tracing::warn!(%parent, %child, %agent, "cannot cancel the sub-task: {err}");
                return;
            }
        };
        let trace = self.trace_of(parent);
        match telemetry::within(trace, cancel_on_agent(&client, child)).await {
            Ok(Ok(task)) => {
                tracing::info!(%parent, %child, %agent, state = task.status.state.short_name(), "sub-task canceled with its parent");
                let news = ChildNews {
                    note: None,
                    ..report::news_of(&task, agent)
                };
                if let Err(err) = report::record(&self.hub, parent, child, agent, &news).await {
                    tracing::error!(%parent, %child, "cannot record the sub-task's state: {err}");
                }
            }
            Ok(Err(err)) => {
                tracing::warn!(%parent, %child, %agent, "could not cancel the sub-task: {}", self.mask(&err.to_string()))
            }
            Err(_) => tracing::warn!(%parent, %child, %agent, "cancelling the sub-task timed out"),
        }
    }
}

/// Cancels the child on its agent with `CancelTask`, waiting at most [`CANCEL_TIMEOUT`]: the task
/// as its agent then reports it (a child that had already ended, as it ended).
pub(super) async fn cancel_on_agent(
    client: &A2aClient,
    child: &str,
) -> Result<Result<Task, ClientError>, tokio::time::error::Elapsed> {
    tokio::time::timeout(CANCEL_TIMEOUT, async {
        match client.cancel_task(child).await {
            Ok(task) => Ok(task),
            // Already finished: read how it ended.
            Err(err)
                if err.rpc_code() == Some(crate::base::protocol::jsonrpc::TASK_NOT_CANCELABLE) =>
            {
                client.get_task(child, Some(0)).await
            }
            Err(err) => Err(err),
        }
    })
    .await
}
