//! The task hub: every change to a task goes through here, so that it is written in one
//! transaction, never applied to a task that is already terminal, and announced to subscribers
//! after it has landed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::record::TaskRecord;
use crate::a2a::types::{
    StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent,
};
use crate::store::{Store, StoreError, Tx};

/// Events buffered per task for slow subscribers; one that falls further behind resynchronises
/// from the task itself.
const EVENT_BUFFER: usize = 256;

/// The outcome of [`TaskHub::change`].
#[derive(Debug)]
pub enum Change<T> {
    /// The change landed; here is the task as it now is and what the closure returned.
    Applied(TaskRecord, T),
    /// The task had already reached a terminal state; nothing was written.
    Terminal(TaskRecord),
    /// There is no such task.
    Missing,
}

/// The outcome of [`TaskHub::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// The task was inserted.
    New,
    /// The owner's message with this id had already created the task named; nothing was written.
    Existing(String),
}

/// The store plus one event channel per followed task.
pub struct TaskHub {
    store: Arc<Store>,
    channels: Mutex<HashMap<String, broadcast::Sender<StreamResponse>>>,
}

impl TaskHub {
    /// A hub over a store.
    pub fn new(store: Arc<Store>) -> TaskHub {
        TaskHub {
            store,
            channels: Mutex::new(HashMap::new()),
        }
    }

    /// The underlying store, for reads.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A receiver of the task's future events. Call before reading the snapshot, so that nothing
    /// between the two is missed.
    pub fn subscribe(&self, task_id: &str) -> broadcast::Receiver<StreamResponse> {
        let mut channels = self.lock();
        channels
            .entry(task_id.to_string())
            .or_insert_with(|| broadcast::channel(EVENT_BUFFER).0)
            .subscribe()
    }

    /// Inserts a new task with whatever else `f` writes, and records that the owner's message
    /// `message_id` created it, all in one transaction. When that message already created a
    /// task, nothing is written and that task is named instead: a client that resends a message
    /// it got no answer to gets its task, not a twin. The check and the insert share the
    /// transaction, so two resends racing each other still make one task.
    pub fn create(
        &self,
        record: &TaskRecord,
        message_id: &str,
        f: impl FnOnce(&mut Tx<'_>) -> Result<(), StoreError>,
    ) -> Result<Created, StoreError> {
        self.store.write(|tx| {
            if message_id.is_empty() {
                tx.insert_task(record)?;
                f(tx)?;
                return Ok(Created::New);
            }
            if let Some(existing) = tx.task_created_by(&record.owner, message_id)? {
                return Ok(Created::Existing(existing));
            }
            tx.insert_task(record)?;
            tx.record_creation(&record.owner, message_id, &record.id)?;
            f(tx)?;
            Ok(Created::New)
        })
    }

    /// Applies `f` to the task and writes the result in one transaction, with whatever else `f`
    /// writes (journal entries, messages). A terminal task is left untouched. Status and artifact
    /// changes are published once the transaction has committed.
    pub fn change<T>(
        &self,
        task_id: &str,
        f: impl FnOnce(&mut TaskRecord, &mut Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<Change<T>, StoreError> {
        let outcome = self.store.write(|tx| {
            let Some(before) = tx.task(task_id)? else {
                return Ok(None);
            };
            if before.state().is_terminal() {
                return Ok(Some(Err(before)));
            }
            let mut after = before.clone();
            let value = f(&mut after, tx)?;
            if after != before {
                tx.update_task(&after)?;
            }
            Ok(Some(Ok((before, after, value))))
        })?;
        Ok(match outcome {
            Some(Ok((before, after, value))) => {
                self.publish(&before, &after);
                Change::Applied(after, value)
            }
            Some(Err(record)) => Change::Terminal(record),
            None => Change::Missing,
        })
    }

    /// Records where a child of a terminal task ended: sets the state of the task's sub-task row
    /// `child`, when the row is not terminal yet. This is the one write a terminal task takes,
    /// so that a canceled or failed parent still says how each child it canceled ended; its
    /// status, history, artifacts and journal never change, and nothing is announced. Returns
    /// whether the row changed. On a task still running, use [`TaskHub::change`].
    pub fn settle_subtask_row(
        &self,
        task_id: &str,
        child: &str,
        state: TaskState,
    ) -> Result<bool, StoreError> {
        self.store.write(|tx| {
            let Some(mut record) = tx.task(task_id)? else {
                return Ok(false);
            };
            if !record.state().is_terminal() {
                return Ok(false);
            }
            let Some(link) = record.ext.sub_tasks.iter_mut().find(|l| l.task_id == child) else {
                return Ok(false);
            };
            let known = link.state.as_deref().and_then(TaskState::from_wire);
            if known.is_some_and(TaskState::is_terminal) || known == Some(state) {
                return Ok(false);
            }
            link.state = Some(state.wire_name().to_string());
            tx.update_task(&record)?;
            Ok(true)
        })
    }

    fn publish(&self, before: &TaskRecord, after: &TaskRecord) {
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
        if after.status.state != before.status.state
            || after.status.message != before.status.message
        {
            events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: after.id.clone(),
                context_id: after.context_id.clone(),
                status: after.status.clone(),
                metadata: None,
            }));
        }
        if events.is_empty() {
            return;
        }
        let mut channels = self.lock();
        if let Some(sender) = channels.get(&after.id) {
            for event in events {
                // No receiver left is not an error: nobody is following the task.
                let _ = sender.send(event);
            }
            if after.state().is_terminal() {
                // Dropping the sender ends every stream after its last event.
                channels.remove(&after.id);
            }
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, broadcast::Sender<StreamResponse>>> {
        self.channels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
