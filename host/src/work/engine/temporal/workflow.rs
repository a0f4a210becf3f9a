//! The workflow of one task (workflow id = the A2A task id). Its code is deterministic, as
//! Temporal requires (see docs/architecture.md): no I/O, no clock, no randomness, no threads and
//! no tokio timers — only activities, Temporal timers and signals, through the workflow context.
//! Everything that touches the world is an activity (`activities`); the workflow only decides
//! which to run next from their small outcomes and the wake signals it has counted.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, CancellableFuture, ContinueAsNewOptions,
    SyncWorkflowContext, TimerResult, WorkflowCancellationToken, WorkflowContext, WorkflowResult,
    WorkflowTermination,
};

use super::activities::{StepOutcome, TaskActivities};

/// The workflow type's name, fixed so that renaming Rust items never breaks running histories.
pub const WORKFLOW_TYPE: &str = "tiny-harness.task";
/// Steps one run takes before it continues as new: the history stays small (each step is a few
/// events) however long the task works.
pub const STEPS_PER_RUN: u32 = 200;
/// How long a task parked on open children waits before it looks again (a follower lost with a
/// worker process is then started again by the worker that takes the step).
pub const CHILDREN_RECHECK: Duration = Duration::from_secs(10);
/// A step is a model call or a tool call: as long as the slowest of them may take, retries
/// included. The heartbeat timeout, not this, notices a worker that died.
const STEP_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// How long a step may go without a heartbeat before Temporal gives it to another worker.
const STEP_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(2);
/// Cancelling a task's children (one `CancelTask` each, bounded on the harness's side).
const CANCEL_CHILDREN_TIMEOUT: Duration = Duration::from_secs(60);

/// What a run starts from: the task, and nothing else (its state is in the store).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TaskInput {
    /// The A2A task id, which is also the workflow id.
    pub task_id: String,
}

/// The workflow's own state: how many wake signals arrived.
#[workflow]
#[derive(Default)]
pub struct TaskWorkflow {
    wakes: u64,
}

#[workflow_methods]
impl TaskWorkflow {
    /// Steps until the task ends; waits for a wake signal while it is parked.
    #[run(name = "tiny-harness.task")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, input: TaskInput) -> WorkflowResult<()> {
        let mut steps = 0u32;
        loop {
            // Wakes counted before the step: one that arrives while it runs is not missed.
            let wakes_before = ctx.state(|s| s.wakes);
            let outcome = match ctx
                .execute_activity(TaskActivities::step, input.task_id.clone(), step_options())
                .await
            {
                Ok(outcome) => outcome,
                Err(ActivityExecutionError::Cancelled(_)) => {
                    return cancel_children(ctx, &input).await;
                }
                Err(err) => return Err(err.into()),
            };
            steps += 1;
            match outcome {
                StepOutcome::Stop => return Ok(()),
                StepOutcome::Continue => {}
                StepOutcome::Park { children_open } => {
                    if !wait_for_wake(ctx, wakes_before, children_open).await {
                        return cancel_children(ctx, &input).await;
                    }
                }
            }
            if steps >= STEPS_PER_RUN {
                ctx.continue_as_new(input.clone(), ContinueAsNewOptions::default())?;
            }
        }
    }

    /// News for the task (a message, a child's report): its loop looks again.
    #[signal(name = "wake")]
    pub fn wake(&mut self, _ctx: &mut SyncWorkflowContext<Self>, _reason: String) {
        self.wakes += 1;
    }
}

/// Waits until a wake signal arrives after `wakes_before` (or, with children open, until the
/// recheck timer fires). False when the workflow was canceled meanwhile.
async fn wait_for_wake(
    ctx: &mut WorkflowContext<TaskWorkflow>,
    wakes_before: u64,
    children_open: bool,
) -> bool {
    if !children_open {
        return ctx
            .wait_condition(move |s| s.wakes > wakes_before)
            .await
            .is_ok();
    }
    let timer = ctx.timer(CHILDREN_RECHECK);
    let mut timer = std::pin::pin!(timer);
    let woken = temporalio_sdk::workflows::select! {
        woken = ctx.wait_condition(move |s| s.wakes > wakes_before) => woken.is_ok(),
        fired = timer.as_mut() => fired == TimerResult::Fired,
    };
    // A timer left running would wake the workflow again for nothing.
    timer.cancel();
    woken
}

/// On cancel: the task's open children are canceled on their agents (an activity under a
/// token of its own, since the workflow's is canceled), then the workflow ends canceled.
async fn cancel_children(
    ctx: &mut WorkflowContext<TaskWorkflow>,
    input: &TaskInput,
) -> WorkflowResult<()> {
    let options = ActivityOptions::with_start_to_close_timeout(CANCEL_CHILDREN_TIMEOUT)
        .cancellation_token(WorkflowCancellationToken::new())
        .build();
    ctx.execute_activity(
        TaskActivities::cancel_children,
        input.task_id.clone(),
        options,
    )
    .await?;
    Err(WorkflowTermination::cancelled())
}

fn step_options() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(STEP_TIMEOUT)
        .heartbeat_timeout(STEP_HEARTBEAT_TIMEOUT)
        .retry_policy(
            RetryPolicy::builder()
                .initial_interval(Duration::from_millis(200))
                .backoff_coefficient(2.0)
                .maximum_interval(Duration::from_secs(30))
                .build(),
        )
        .build()
}
