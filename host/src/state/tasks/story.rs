//! The log lines of a task's life that the task service writes: its creation (counted in the
//! metrics too) and a participant's cancel. The engine tells the rest (`engine::progress` in the work layer). Ids a client
//! chose are escaped; no message text is logged.

use super::ids;
use crate::base::metrics::METRICS;
use crate::base::protocol::types::TaskState;
use crate::base::text::log_field;

/// INFO `task created`: the task, its context and the participant that created it.
pub(super) fn created(task: &str, context: &str, creator: &str) {
    METRICS.task_created();
    tracing::info!(
        task,
        context = %log_field::escape(context),
        creator = %log_field::escape(creator),
        "task created"
    );
}

/// INFO `task ended` for a task a participant canceled: who, and how long the task lived.
pub(super) fn canceled(task: &str, by: &str) {
    tracing::info!(
        task,
        by = %log_field::escape(by),
        state = TaskState::Canceled.wire_name(),
        duration_ms = ids::age_of(task).map(|d| d.as_millis() as u64),
        "task ended"
    );
}
