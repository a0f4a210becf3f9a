//! The Temporal engine's activities: the side effects a task's workflow asks for. Each runs in
//! whichever worker process picks it up, against the one store every process shares.
//!
//! `step` takes the task's next steps exactly as the embedded engine does (`turn::step`): it
//! reads the journal, does the next thing, records it, and goes on until it has made one model
//! call or one tool call, or the task must wait or has ended. So each model call and each tool
//! call is one activity, and its result is the journaled step: the workflow's history holds only
//! a small outcome, never the conversation (which stays in the store). When a worker dies inside
//! a step, Temporal runs the activity again elsewhere; the journal says what was recorded, so no
//! recorded model call or tool call is made twice.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use crate::work::engine::shared::{Shared, Step};
use crate::work::engine::turn::{replay_of, step};

/// How often a running step tells the server it is alive: a worker that dies is noticed within
/// the heartbeat timeout (a few of these), and a cancel reaches the step at its next heartbeat.
pub const HEARTBEAT_EVERY: Duration = Duration::from_millis(500);
/// Steps one activity may take without a model or tool call (state changes, drained messages)
/// before it hands back to the workflow: a bound, never reached by a task that works.
const MAX_QUIET_STEPS: usize = 64;

/// What the workflow does after a `step` activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepOutcome {
    /// Schedule the next step at once.
    Continue,
    /// Wait for a wake signal. With `children_open`, the task waits on children whose followers
    /// live in worker processes: the workflow looks again after a while, so that a follower lost
    /// with its process is started again by whichever worker takes the next step.
    Park {
        /// Whether children it waits on are open: then the workflow also looks again after a
        /// while.
        children_open: bool,
    },
    /// The task has ended.
    Stop,
}

/// The activities of every task workflow; what they work with is the engine's `Shared`.
pub struct TaskActivities {
    pub(super) shared: Arc<Shared>,
}

#[activities]
impl TaskActivities {
    /// The task's next steps, up to one model or tool call.
    #[activity(name = "tiny-harness.step")]
    pub async fn step(
        self: Arc<Self>,
        ctx: ActivityContext,
        task_id: String,
    ) -> Result<StepOutcome, ActivityError> {
        let work = take_steps(&self.shared, &task_id);
        tokio::pin!(work);
        let mut beat = tokio::time::interval(HEARTBEAT_EVERY);
        loop {
            tokio::select! {
                outcome = &mut work => {
                    // Retried by Temporal: a store error is a passing condition here.
                    return outcome.map_err(|err| ActivityError::from(std::io::Error::other(err)));
                }
                _ = ctx.cancelled() => return Err(ActivityError::cancelled()),
                _ = beat.tick() => {
                    // A heartbeat that cannot be sent is retried at the next tick.
                    let _ = ctx.record_heartbeat(()).await;
                }
            }
        }
    }

    /// Cancels each open child of a canceled task on its agent, with A2A `CancelTask`, and
    /// records how each ended.
    #[activity(name = "tiny-harness.cancel-children")]
    pub async fn cancel_children(
        self: Arc<Self>,
        _ctx: ActivityContext,
        task_id: String,
    ) -> Result<(), ActivityError> {
        if let Some(children) = &self.shared.children {
            children.cancel_open_and_wait(&task_id).await;
        }
        Ok(())
    }
}

/// Steps until a model or tool call is made, or the task parks or stops.
async fn take_steps(shared: &Shared, task_id: &str) -> Result<StepOutcome, String> {
    let mut replay = replay_of(shared, task_id).map_err(|err| err.to_string())?;
    let calls_before = replay.calls_made();
    for _ in 0..MAX_QUIET_STEPS {
        let next = step(shared, task_id, &mut replay)
            .await
            .map_err(|err| format!("store error: {err}"))?;
        match next {
            Step::Stop => return Ok(StepOutcome::Stop),
            Step::Park => {
                let children_open = follow_open_children(shared, task_id);
                return Ok(StepOutcome::Park { children_open });
            }
            Step::Continue if replay.calls_made() != calls_before => {
                // A call that ended the task (its final answer) needs no further step.
                let ended = shared
                    .hub
                    .store()
                    .task(task_id)
                    .map_err(|err| format!("store error: {err}"))?
                    .is_none_or(|record| record.state().is_terminal());
                return Ok(if ended {
                    StepOutcome::Stop
                } else {
                    StepOutcome::Continue
                });
            }
            Step::Continue => {}
        }
    }
    Ok(StepOutcome::Continue)
}

/// Makes sure this process follows every open child of the task (a follower is started once per
/// process); true when there is any.
fn follow_open_children(shared: &Shared, task_id: &str) -> bool {
    let Some(children) = &shared.children else {
        return false;
    };
    let Ok(Some(record)) = shared.hub.store().task(task_id) else {
        return false;
    };
    if record.state().is_terminal() {
        return false;
    }
    let mut open = false;
    for link in &record.ext.sub_tasks {
        if !link.has_ended() {
            open = true;
            children.follow(task_id, link);
        }
    }
    open
}
