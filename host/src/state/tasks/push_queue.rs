//! What a task change tells its followers and its webhooks: the events of one change, and the
//! pushes they become, queued in the store in the change's own transaction so that a change
//! that landed has its pushes landed too (`store::push`).

use crate::base::protocol::types::{
    StreamResponse, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};
use crate::state::records::record::TaskRecord;
use crate::state::store::{StoreError, Tx};

/// The events a change from `before` to `after` makes: each new artifact, then the status when
/// its state or message changed.
pub fn events_of(before: &TaskRecord, after: &TaskRecord) -> Vec<StreamResponse> {
    let mut events = Vec::new();
    for artifact in after.artifacts.iter().skip(before.artifacts.len()) {
        events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: after.id.clone(),
            context_id: after.context_id.clone(),
            artifact: artifact.clone(),
            append: false,
            last_chunk: true,
            metadata: None,
        }));
    }
    if after.status.state != before.status.state || after.status.message != before.status.message {
        events.push(status_event(after, after.status.clone()));
    }
    events
}

/// A status update of the task.
pub fn status_event(record: &TaskRecord, status: TaskStatus) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: record.id.clone(),
        context_id: record.context_id.clone(),
        status,
        metadata: None,
    })
}

/// Queues each event for every push config the task has, in order; whether any was queued.
/// A task without a config costs one indexed lookup and serialises nothing.
pub fn queue_pushes(
    tx: &mut Tx<'_>,
    task_id: &str,
    events: &[StreamResponse],
) -> Result<bool, StoreError> {
    if events.is_empty() || !tx.has_push_configs(task_id)? {
        return Ok(false);
    }
    let now = now_millis();
    let mut queued = 0;
    for event in events {
        queued += tx.enqueue_push(task_id, &serde_json::to_string(event)?, now)?;
    }
    Ok(queued > 0)
}

/// Milliseconds since the epoch: the outbox's clock.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
