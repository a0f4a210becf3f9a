//! The Temporal engine (cargo feature `temporal`): each task is a workflow on a Temporal server
//! (workflow id = the A2A task id), each model call and each tool call an activity whose result
//! is the journaled step, and every harness process serving the same task queue and store is a
//! worker. A crashed worker's tasks go on in another; a task's conversation stays in the store.
//!
//! - `workflow`: the deterministic loop of one task (steps, wake signals, cancel, continue-as-new);
//! - `activities`: the steps themselves, the same `turn::step` the embedded engine takes;
//! - `worker`: the Temporal worker of this process, on a thread of its own.

mod activities;
mod worker;
// `#[workflow_methods]` adds a public marker constant per workflow method, which no doc comment
// can reach; every item written here is documented.
#[allow(missing_docs)]
mod workflow;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, Url, WorkflowCancelOptions,
    WorkflowIdConflictPolicy, WorkflowStartOptions,
};

use super::Engine;
use super::embedded::EngineParts;
use super::inbox;
use super::shared::Shared;
use super::wakeups::WakeReceiver;
use crate::base::protocol::types::Message;
use crate::state::records::record::TaskRecord;
use crate::state::store::StoreError;
use crate::state::store::Tx;
use crate::state::tasks::engine_port::FirstInput;

pub use activities::{HEARTBEAT_EVERY, StepOutcome};
pub use workflow::{CHILDREN_RECHECK, STEPS_PER_RUN, TaskInput, TaskWorkflow, WORKFLOW_TYPE};

/// How long a workflow task (the workflow's own code, between activities) may take on one worker
/// before the server gives it to another: short, since that code only decides the next step.
const WORKFLOW_TASK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long to wait for the server when the harness starts.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `/readyz` waits for a TCP connection to the server: a load balancer's probe
/// times out within a few seconds, and a server that takes longer is not serving anyway.
const READINESS_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the Temporal server is and which queue this harness works: `[engine.temporal]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemporalSettings {
    /// `host:port` of the server's gRPC frontend.
    pub address: String,
    /// `engine.temporal.namespace`: the namespace the workflows live in.
    pub namespace: String,
    /// `engine.temporal.task_queue`: every harness serving the same tasks polls this queue.
    pub task_queue: String,
}

/// Why the Temporal engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum TemporalError {
    /// `engine.temporal.address` cannot be made a server URL.
    #[error("engine.temporal.address: `{address}` is not a host:port the client can use: {reason}")]
    Address {
        /// The configured address, as given.
        address: String,
        /// Why the client refused it.
        reason: String,
    },
    /// The server did not answer within the connect timeout, or refused the connection.
    #[error(
        "cannot reach the Temporal server at {address} (engine.temporal.address): {reason}; start one with scripts/temporal-dev"
    )]
    Connect {
        /// The configured address.
        address: String,
        /// What the client reported.
        reason: String,
    },
    /// The worker of this process could not be built or started.
    #[error("the Temporal worker did not start: {0}")]
    Worker(String),
}

/// Tasks as Temporal workflows, worked by this process's worker (and any other process serving
/// the same task queue and store).
pub struct TemporalEngine {
    workflows: Workflows,
    shared: Arc<Shared>,
    worker: worker::WorkerThread,
    /// `engine.temporal.address`, which `/readyz` checks is reachable.
    address: String,
}

/// Starting, waking and canceling tasks' workflows: the client side of the engine.
#[derive(Clone)]
struct Workflows {
    client: Client,
    task_queue: String,
}

impl TemporalEngine {
    /// Connects to the server, starts this process's worker, and forwards wake requests from
    /// children's followers as signals. Call it inside the tokio runtime.
    pub async fn start(
        parts: EngineParts,
        settings: TemporalSettings,
    ) -> Result<Arc<TemporalEngine>, TemporalError> {
        let (shared, wakes) = Shared::from_parts(parts);
        let shared = Arc::new(shared);
        let client = connect(&settings).await?;
        let worker = worker::WorkerThread::start(client.clone(), &settings, shared.clone())?;
        let workflows = Workflows {
            client,
            task_queue: settings.task_queue.clone(),
        };
        if let Some(wakes) = wakes {
            forward_wakes(workflows.clone(), wakes);
        }
        Ok(Arc::new(TemporalEngine {
            workflows,
            shared,
            worker,
            address: settings.address.clone(),
        }))
    }
}

impl Workflows {
    fn options(&self, task_id: &str) -> WorkflowStartOptions {
        WorkflowStartOptions::new(self.task_queue.clone(), task_id.to_string())
            .id_conflict_policy(WorkflowIdConflictPolicy::UseExisting)
            .maybe_task_timeout(Some(WORKFLOW_TASK_TIMEOUT))
            .build()
    }

    /// Starts the task's workflow unless it runs already.
    async fn start(&self, task_id: &str) {
        let input = TaskInput {
            task_id: task_id.to_string(),
        };
        if let Err(err) = self
            .client
            .start_workflow(TaskWorkflow::run, input, self.options(task_id))
            .await
        {
            tracing::error!(task = %task_id, "cannot start the task's workflow: {err}");
        }
    }

    /// Signals the task's workflow, starting it first when it is not running.
    async fn wake(&self, task_id: &str, reason: &str) {
        let input = TaskInput {
            task_id: task_id.to_string(),
        };
        if let Err(err) = self
            .client
            .signal_with_start_workflow(
                TaskWorkflow::run,
                input,
                TaskWorkflow::wake,
                reason.to_string(),
                self.options(task_id),
            )
            .await
        {
            tracing::error!(task = %task_id, "cannot wake the task's workflow: {err}");
        }
    }

    /// Cancels the task's workflow, which cancels the task's open children.
    async fn cancel(&self, task_id: &str) {
        let handle = self
            .client
            .get_workflow_handle::<TaskWorkflow>(task_id.to_string());
        let options = WorkflowCancelOptions::builder()
            .reason("the task was canceled".to_string())
            .build();
        if let Err(err) = handle.cancel(options).await {
            tracing::warn!(task = %task_id, "cannot cancel the task's workflow: {err}");
        }
    }
}

#[async_trait::async_trait]
impl Engine for TemporalEngine {
    fn first_input(&self, record: &TaskRecord, message: &Message) -> Option<FirstInput> {
        inbox::first_input(record, message)
    }

    fn record_first_input(
        &self,
        tx: &mut Tx<'_>,
        task_id: &str,
        first: &FirstInput,
        seq: i64,
    ) -> Result<(), StoreError> {
        inbox::record_first_input(tx, task_id, first, seq)
    }

    fn record_conversation(
        &self,
        tx: &mut Tx<'_>,
        task_id: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        inbox::record_conversation(tx, task_id, text)
    }

    fn start(&self, task_id: &str) {
        let workflows = self.workflows.clone();
        let id = task_id.to_string();
        tokio::spawn(async move { workflows.start(&id).await });
    }

    fn wake(&self, task_id: &str) {
        let workflows = self.workflows.clone();
        let id = task_id.to_string();
        tokio::spawn(async move { workflows.wake(&id, "news").await });
    }

    fn cancel(&self, task_id: &str) {
        let workflows = self.workflows.clone();
        let id = task_id.to_string();
        tokio::spawn(async move { workflows.cancel(&id).await });
    }

    fn resume_open(&self) -> Result<usize, StoreError> {
        // The server keeps running workflows across restarts; a task the store holds open whose
        // workflow never started (the server was down) is started now. Starting is idempotent.
        let ids = self.shared.hub.store().open_task_ids()?;
        for id in &ids {
            Engine::start(self, id);
        }
        Ok(ids.len())
    }

    async fn shutdown(&self) {
        self.worker.stop().await;
    }

    async fn readiness(&self) -> Result<(), &'static str> {
        if !self.worker.is_running() {
            return Err("the Temporal worker has stopped");
        }
        let connect = tokio::net::TcpStream::connect(self.address.as_str());
        match tokio::time::timeout(READINESS_CONNECT_TIMEOUT, connect).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => {
                tracing::warn!(address = %self.address, "the Temporal server is unreachable: {err}");
                Err("the Temporal server is unreachable")
            }
            Err(_) => {
                tracing::warn!(address = %self.address, "the Temporal server did not answer in time");
                Err("the Temporal server is unreachable")
            }
        }
    }
}

/// Signals each task a child's follower asks to wake, for as long as followers may ask.
fn forward_wakes(workflows: Workflows, wakes: WakeReceiver) {
    let WakeReceiver(mut wakes) = wakes;
    tokio::spawn(async move {
        while let Some(id) = wakes.recv().await {
            workflows.wake(&id, "child").await;
        }
    });
}

async fn connect(settings: &TemporalSettings) -> Result<Client, TemporalError> {
    let url = format!("http://{}", settings.address);
    let target = Url::from_str(&url).map_err(|err| TemporalError::Address {
        address: settings.address.clone(),
        reason: err.to_string(),
    })?;
    let options = ConnectionOptions::new(target)
        .identity(format!("tiny-harness-{}", std::process::id()))
        .build();
    let connection = tokio::time::timeout(CONNECT_TIMEOUT, Connection::connect(options))
        .await
        .map_err(|_| TemporalError::Connect {
            address: settings.address.clone(),
            reason: format!("no answer in {} s", CONNECT_TIMEOUT.as_secs()),
        })?
        .map_err(|err| TemporalError::Connect {
            address: settings.address.clone(),
            reason: err.to_string(),
        })?;
    Client::new(
        connection,
        ClientOptions::new(settings.namespace.clone()).build(),
    )
    .map_err(|err| TemporalError::Connect {
        address: settings.address.clone(),
        reason: err.to_string(),
    })
}
