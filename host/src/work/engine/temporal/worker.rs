//! This process's Temporal worker: it polls the task queue for workflow tasks (running
//! `TaskWorkflow`) and activities (running `TaskActivities`). The SDK's worker future is not
//! `Send` (workflows run on thread-local state), so it runs on a thread of its own with its own
//! tokio runtime; the activities it runs go to that runtime's threads.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use temporalio_client::Client;
use temporalio_common::worker::WorkerDeploymentOptions;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};
use tokio::sync::oneshot;

use super::activities::TaskActivities;
use super::workflow::TaskWorkflow;
use super::{TemporalError, TemporalSettings};
use crate::work::engine::shared::Shared;

/// Threads of the worker's own runtime, on which activities (model and tool calls) run.
const WORKER_THREADS: usize = 2;
/// How long a workflow task waits on this worker's sticky queue before the server offers it to
/// any worker: after a crash, the time before another worker takes the task's next step.
const STICKY_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the worker lets in-flight steps go on when the harness stops before it cancels them.
/// Short: a canceled step leaves nothing half-recorded, and the task's next step is taken by
/// another worker, or by this one when it starts again.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// How long stopping waits for the worker to end before giving up on it (it then ends with the
/// process).
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The worker's thread and how to stop it.
pub struct WorkerThread {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    /// Resolves when the worker's thread has ended (its sender is dropped with the thread).
    ended: Mutex<Option<oneshot::Receiver<()>>>,
}

impl WorkerThread {
    /// Starts the worker; returns once it is built (and so polling), or with why it could not be.
    pub fn start(
        client: Client,
        settings: &TemporalSettings,
        shared: Arc<Shared>,
    ) -> Result<WorkerThread, TemporalError> {
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (ended_tx, ended_rx) = oneshot::channel::<()>();
        let task_queue = settings.task_queue.clone();
        std::thread::Builder::new()
            .name("temporal-worker".into())
            .spawn(move || {
                run(client, task_queue, shared, stop_rx, ready_tx);
                drop(ended_tx);
            })
            .map_err(|err| TemporalError::Worker(err.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(WorkerThread {
                stop: Mutex::new(Some(stop_tx)),
                ended: Mutex::new(Some(ended_rx)),
            }),
            Ok(Err(reason)) => Err(TemporalError::Worker(reason)),
            Err(_) => Err(TemporalError::Worker(
                "the worker thread ended before it was ready".to_string(),
            )),
        }
    }

    /// Whether the worker's thread still runs: not stopped, not ended on its own.
    pub fn is_running(&self) -> bool {
        match lock(&self.ended).as_mut() {
            Some(ended) => matches!(ended.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
            None => false,
        }
    }

    /// Stops polling, lets in-flight steps go on for a moment, then cancels them, and waits for
    /// the worker's thread to end (without blocking the caller's runtime).
    pub async fn stop(&self) {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
        let Some(ended) = lock(&self.ended).take() else {
            return;
        };
        if tokio::time::timeout(STOP_TIMEOUT, ended).await.is_err() {
            tracing::warn!("the Temporal worker did not stop in time");
        }
    }
}

fn run(
    client: Client,
    task_queue: String,
    shared: Arc<Shared>,
    stop: oneshot::Receiver<()>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("temporal-activity")
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = ready.send(Err(format!("its runtime did not start: {err}")));
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        // The SDK runtime lives as long as its worker runs.
        let (_runtime, mut worker) = match build(client, &task_queue, shared) {
            Ok(built) => built,
            Err(reason) => {
                let _ = ready.send(Err(reason));
                return;
            }
        };
        let shutdown = worker.shutdown_handle();
        tokio::task::spawn_local(async move {
            let _ = stop.await;
            shutdown();
        });
        let _ = ready.send(Ok(()));
        if let Err(err) = worker.run().await {
            tracing::error!("the Temporal worker stopped: {err}");
        }
    });
}

fn build(
    client: Client,
    task_queue: &str,
    shared: Arc<Shared>,
) -> Result<(Runtime, Worker), String> {
    let runtime = Runtime::from_current_tokio(Default::default())
        .map_err(|err| format!("its runtime did not start: {err}"))?;
    let options = WorkerOptions::new(task_queue.to_string())
        .sticky_queue_schedule_to_start_timeout(STICKY_TIMEOUT)
        .graceful_shutdown_period(SHUTDOWN_GRACE)
        // A fixed build id: the default hashes the whole executable at every start.
        .deployment_options(WorkerDeploymentOptions::from_build_id(format!(
            "tiny-harness-{}",
            env!("CARGO_PKG_VERSION")
        )))
        .register_activities(TaskActivities { shared })
        .register_workflow::<TaskWorkflow>()
        .map_err(|err| format!("the task workflow could not be registered: {err}"))?
        .build();
    let worker = Worker::new(&runtime, client, options).map_err(|err| err.to_string())?;
    Ok((runtime, worker))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
