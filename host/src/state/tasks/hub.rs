//! The task hub: every change to a task goes through here, so that it is written in one
//! transaction (with the pushes it owes the task's webhooks, when push is on), never applied to
//! a task that is already terminal, and announced to subscribers after it has landed.
//!
//! How it is fast: a write starts from the task's live record when the task's row is still at
//! the update sequence that record was written with (one number read instead of the whole
//! record parsed); any other write of the row (another process's, an earlier one in the same
//! transaction, one beside the hub) has moved the sequence on, and the row is read.

use std::sync::Arc;

use tokio::sync::Notify;

use super::events::{Channels, TaskEvents};
use super::live_records::LiveRecords;
use super::push_queue::{events_of, queue_pushes, status_event};
use crate::base::metrics::METRICS;
use crate::base::protocol::types::{
    Message, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent, timestamp_now,
};
use crate::base::text::log_field::escape_capped;

/// The key of a progress message's metadata (`true`): a client tells a note of what the work is
/// doing from a status message the task keeps.
pub const PROGRESS_METADATA_KEY: &str = "progress";
use crate::state::records::record::TaskRecord;
use crate::state::store::{Store, StoreError, Tx};

/// The most characters of a sender's id or `messageId` the line about a repeated message
/// carries: real ids are far shorter, and both come from the caller.
const MAX_LOGGED_ID_CHARS: usize = 128;

/// The outcome of [`TaskHub::change`].
#[derive(Debug)]
pub enum Change<T> {
    /// The change landed; here is the task as it now is (the same allocation the hub's live
    /// records keep, where they are kept: no copy made) and what the closure returned.
    Applied(Arc<TaskRecord>, T),
    /// The task had already reached a terminal state; nothing was written.
    Terminal(Arc<TaskRecord>),
    /// There is no such task.
    Missing,
}

/// The outcome of [`TaskHub::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created<T = ()> {
    /// The task was inserted, with what the caller's writes returned.
    New(T),
    /// The owner's message with this id had already created the task named; nothing was written.
    Existing(String),
}

/// The store plus one event channel per followed task, and the records of the tasks being
/// worked on as their last change left them.
pub struct TaskHub {
    store: Arc<Store>,
    channels: Channels,
    /// Told of each change as the change commits, by the committing thread.
    live: Arc<LiveRecords>,
    /// When push notifications are on: woken after a change queued a push (`push_queue`).
    outbox: Option<Arc<Notify>>,
}

impl TaskHub {
    /// A hub over a store that this process alone writes (the embedded engine's).
    pub fn new(store: Arc<Store>) -> TaskHub {
        TaskHub::with_live_records(store, LiveRecords::enabled())
    }

    /// A hub over a store that other processes write too (the Temporal engine's workers): every
    /// read goes to the store, and every write to its writer thread.
    pub fn over_shared_store(store: Arc<Store>) -> TaskHub {
        store.written_by_other_processes();
        TaskHub::with_live_records(store, LiveRecords::disabled())
    }

    fn with_live_records(store: Arc<Store>, live: LiveRecords) -> TaskHub {
        TaskHub {
            store,
            channels: Channels::default(),
            live: Arc::new(live),
            outbox: None,
        }
    }

    /// The hub with push notifications on: each change queues its events for the task's push
    /// configs in its own transaction, and `ready` is woken once it has landed.
    pub fn with_push_outbox(mut self, ready: Arc<Notify>) -> TaskHub {
        self.outbox = Some(ready);
        self
    }

    /// The underlying store, for reads.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The task as a loop working on it reads it: as its last change in this process left it
    /// when that is kept (`live_records`), else from the store.
    /// Reading it marks the loop as running, so that the record the task ends with is kept for
    /// the loop's last look, until [`TaskHub::loop_stopped`].
    pub fn task_for_loop(&self, id: &str) -> Result<Option<Arc<TaskRecord>>, StoreError> {
        self.live.claim(id);
        if let Some(record) = self.live.get(id) {
            return Ok(Some(record));
        }
        Ok(self.store.task(id)?.map(Arc::new))
    }

    /// The task's loop stopped: its record is read from the store by the next one.
    pub fn loop_stopped(&self, id: &str) {
        self.live.forget(id);
    }

    /// How many records the hub keeps for loops.
    pub fn live_records(&self) -> usize {
        self.live.len()
    }

    /// A receiver of the task's future events. Call before reading the snapshot, so that nothing
    /// between the two is missed.
    pub fn subscribe(&self, task_id: &str) -> TaskEvents {
        self.channels.subscribe(task_id)
    }

    /// How many tasks somebody follows (each has an event channel while followed).
    pub fn followed_tasks(&self) -> usize {
        self.channels.len()
    }

    /// Inserts a new task with whatever else `f` writes, and records that the owner's message
    /// `message_id` created it, all in one transaction. When that message already created a
    /// task, nothing is written and that task is named instead: a client that resends a message
    /// it got no answer to gets its task, not a twin. The check and the insert share the
    /// transaction, so two resends racing each other still make one task.
    pub async fn create<T: Send + 'static>(
        &self,
        record: TaskRecord,
        message_id: String,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<Created<T>, StoreError> {
        let stamper = self.live.stamper();
        let live = self.live.clone();
        let pushes = self.outbox.is_some();
        let (owner, repeated) = (record.owner.clone(), message_id.clone());
        let (created, _) = self
            .store
            .write_queued_then(
                move |tx| {
                    if !message_id.is_empty()
                        && let Some(existing) = tx.task_created_by(&record.owner, &message_id)?
                    {
                        return Ok((Created::Existing(existing), None));
                    }
                    let update_seq = tx.insert_task(&record)?;
                    if !message_id.is_empty() {
                        tx.record_creation(&record.owner, &message_id, &record.id)?;
                    }
                    let value = f(tx)?;
                    // A config the creating message set gets the status the task starts in.
                    let first = [status_event(&record, record.status.clone())];
                    let pushed = pushes && queue_pushes(tx, &record.id, &first)?;
                    Ok((
                        Created::New((value, pushed)),
                        Some((stamper.stamp(), Arc::new(record), update_seq)),
                    ))
                },
                move |(_, landed)| {
                    if let Some((version, record, update_seq)) = landed {
                        live.landed_shared(*version, record, *update_seq);
                    }
                },
            )
            .await?;
        let created = match created {
            Created::New((value, pushed)) => {
                self.pushed(pushed);
                Created::New(value)
            }
            Created::Existing(existing) => Created::Existing(existing),
        };
        if let Created::Existing(existing) = &created {
            let field = |text: &str| escape_capped(text, MAX_LOGGED_ID_CHARS);
            tracing::info!(
                task = %existing,
                sender = %field(&owner),
                message_id = %field(&repeated),
                "this sender's messageId already created a task: that task is returned and no \
                 new one is created (a retry is safe; a new request needs a fresh messageId)"
            );
        }
        Ok(created)
    }

    /// Applies `f` to the task and writes the result in one transaction, with whatever else `f`
    /// writes (journal entries, messages). A terminal task is left untouched. Status and artifact
    /// changes are published once the transaction has committed.
    pub async fn change<T, F>(&self, task_id: &str, f: F) -> Result<Change<T>, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut TaskRecord, &mut Tx<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let id = task_id.to_string();
        let stamper = self.live.stamper();
        let live = self.live.clone();
        let live_before = self.live.clone();
        let pushes = self.outbox.is_some();
        let started = std::time::Instant::now();
        let outcome = self
            .store
            .write_queued_then(
                move |tx| {
                    let Some((before, update_seq)) = current(tx, &live_before, &id)? else {
                        return Ok(None);
                    };
                    if before.state().is_terminal() {
                        return Ok(Some(Err(before)));
                    }
                    let mut after = TaskRecord::clone(&before);
                    let value = f(&mut after, tx)?;
                    let update_seq = if after != *before {
                        tx.write_change(Some(&before), &after)?
                    } else {
                        update_seq
                    };
                    // With push on, the events are queued for the task's webhooks here, in the
                    // change's transaction; without, they are made after the commit, off the
                    // writer's path.
                    let events = pushes.then(|| events_of(&before, &after));
                    let pushed = match &events {
                        Some(events) => queue_pushes(tx, &after.id, events)?,
                        None => false,
                    };
                    Ok(Some(Ok((
                        before,
                        Arc::new(after),
                        (value, events, pushed),
                        stamper.stamp(),
                        update_seq,
                    ))))
                },
                // On the committing thread, in commit order: a task's changes reach the live
                // records in the order they were written, however their callers are scheduled.
                move |outcome| {
                    if let Some(Ok((_, after, _, version, update_seq))) = outcome {
                        live.landed_shared(*version, after, *update_seq);
                    }
                },
            )
            .await?;
        METRICS.store_write(started.elapsed());
        Ok(match outcome {
            Some(Ok((before, after, (value, events, pushed), _, _))) => {
                self.pushed(pushed);
                count_endings(&before, &after);
                let events = events.unwrap_or_else(|| events_of(&before, &after));
                if !events.is_empty() {
                    // A terminal task's channel goes: every stream ends after its last event.
                    self.channels.announce(&after, events);
                }
                Change::Applied(after, value)
            }
            Some(Err(record)) => Change::Terminal(record),
            None => Change::Missing,
        })
    }

    /// Records where a child of a terminal task ended: sets the state of the task's sub-task row
    /// for `child` on `agent`, and what the child reported spending (`spent`, when it said),
    /// when the row is not terminal yet. This is the one write a terminal task takes,
    /// so that a canceled or failed parent still says how each child it canceled ended; its
    /// status, history, artifacts and journal never change, and nothing is announced. Returns
    /// whether the row changed. On a task still running, use [`TaskHub::change`].
    pub async fn settle_subtask_row(
        &self,
        task_id: &str,
        agent: &str,
        child: &str,
        state: TaskState,
        spent: Option<u64>,
    ) -> Result<bool, StoreError> {
        let counted = agent.to_string();
        let (task_id, agent, child) = (task_id.to_string(), agent.to_string(), child.to_string());
        self.store
            .write_queued(move |tx| {
                let Some(mut record) = tx.task(&task_id)? else {
                    return Ok(false);
                };
                if !record.state().is_terminal() {
                    return Ok(false);
                }
                let Some(at) = record
                    .ext
                    .sub_tasks
                    .iter()
                    .position(|l| l.is(&agent, &child))
                else {
                    return Ok(false);
                };
                let known = record.ext.sub_tasks[at]
                    .state
                    .as_deref()
                    .and_then(TaskState::from_wire);
                if known.is_some_and(TaskState::is_terminal) || known == Some(state) {
                    return Ok(false);
                }
                let before = record.clone();
                record.ext.sub_tasks[at].state = Some(state.wire_name().to_string());
                if spent.is_some() {
                    record.ext.sub_tasks[at].spent = spent;
                }
                tx.write_change(Some(&before), &record)?;
                Ok(true)
            })
            .await
            .inspect(|changed| {
                if *changed && state.is_terminal() {
                    METRICS.subtask(&counted, state.wire_name());
                }
            })
    }

    /// Announces the status of a task that was created working (its first message journaled
    /// with it): its followers, given the task as submitted, then see it being worked, as if a
    /// change of its own had set it working.
    pub fn announce_status(&self, task_id: &str, context_id: &str, status: TaskStatus) {
        let last = status.state.is_terminal();
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task_id.to_string(),
            context_id: context_id.to_string(),
            status,
            metadata: None,
        });
        self.channels.publish(task_id, vec![event], last);
    }

    /// Tells the task's followers what its work is doing now (`text`: calling the model,
    /// running a tool, waiting on a sub-task) as a WORKING status update whose message says it.
    /// Nothing is written: the task's stored status and its journal are unchanged, and a task
    /// nobody follows costs a map lookup.
    pub fn announce_progress(&self, task_id: &str, context_id: &str, text: String) {
        if !self.channels.is_followed(task_id) {
            return;
        }
        let mut message = Message::agent_text(task_id, context_id, text);
        message.metadata = Some(
            [(
                PROGRESS_METADATA_KEY.to_string(),
                serde_json::Value::Bool(true),
            )]
            .into_iter()
            .collect(),
        );
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task_id.to_string(),
            context_id: context_id.to_string(),
            status: TaskStatus {
                state: TaskState::Working,
                message: Some(message),
                timestamp: Some(timestamp_now()),
            },
            metadata: None,
        });
        self.channels.publish(task_id, vec![event], false);
    }

    /// Wakes the push worker when a write queued a push.
    fn pushed(&self, pushed: bool) {
        if pushed && let Some(ready) = &self.outbox {
            ready.notify_one();
        }
    }
}

/// Counts in the metrics a task that this change ended, and each of its sub-tasks whose row
/// it ended.
fn count_endings(before: &TaskRecord, after: &TaskRecord) {
    if after.state().is_terminal() && !before.state().is_terminal() {
        METRICS.task_ended(after.state().wire_name());
    }
    for row in &after.ext.sub_tasks {
        if !row.has_ended() {
            continue;
        }
        let was_open = before
            .ext
            .sub_tasks
            .iter()
            .find(|b| b.task_id == row.task_id && b.agent_id() == row.agent_id())
            .is_none_or(|b| !b.has_ended());
        if was_open {
            METRICS.subtask(row.agent_id(), row.state.as_deref().unwrap_or("unknown"));
        }
    }
}

/// The task as the write `tx` finds it, with its row's update sequence. The record the task's
/// last change in this process left (`live`) is the row's content when the row is still at the
/// update sequence it was written with, and is taken as it is: a change then reads one number
/// instead of reading and parsing the whole record. Any other write of the row (another
/// process's, one earlier in the same transaction, one that did not go through the hub) has
/// moved the sequence on, and the row is read.
fn current(
    tx: &Tx<'_>,
    live: &LiveRecords,
    id: &str,
) -> Result<Option<(Arc<TaskRecord>, i64)>, StoreError> {
    if let Some((record, update_seq)) = live.get_with_update_seq(id)
        && tx.task_update_seq(id)? == Some(update_seq)
    {
        return Ok(Some((record, update_seq)));
    }
    Ok(tx
        .task_with_update_seq(id)?
        .map(|(record, update_seq)| (Arc::new(record), update_seq)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::records::extension::TaskExtension;

    fn note(record: &TaskRecord) -> &str {
        record.metadata["note"].as_str().unwrap_or_default()
    }

    /// A hub whose task `t` has had one change, so its record is kept in memory.
    async fn hub_with_a_kept_task() -> TaskHub {
        let hub = TaskHub::new(Arc::new(Store::open_in_memory().expect("store")));
        let record =
            TaskRecord::for_test(TaskExtension::from_text("goal"), TaskState::Working, "o");
        hub.create(record, String::new(), |_| Ok(()))
            .await
            .expect("created");
        hub.change("t", |rec, _| {
            rec.metadata.insert("note".into(), "kept".into());
            Ok(())
        })
        .await
        .expect("changed");
        assert_eq!(hub.live_records(), 1);
        hub
    }

    #[tokio::test]
    async fn a_change_builds_on_a_write_made_beside_the_hub_not_on_the_kept_record() {
        let hub = hub_with_a_kept_task().await;
        let mut beside = hub.store().task("t").unwrap().unwrap();
        beside
            .metadata
            .insert("note".into(), "written beside".into());
        hub.store()
            .write(|tx| tx.update_task(&beside))
            .expect("written");

        let Change::Applied(after, seen) = hub
            .change("t", |rec, _| Ok(note(rec).to_string()))
            .await
            .unwrap()
        else {
            panic!("applied")
        };
        assert_eq!(seen, "written beside");
        assert_eq!(note(&after), "written beside");
    }

    #[tokio::test]
    async fn a_write_sees_what_an_earlier_write_of_its_own_transaction_left() {
        let hub = hub_with_a_kept_task().await;
        let live = hub.live.clone();
        let seen = hub
            .store()
            .write(move |tx| {
                let (kept, _) = current(tx, &live, "t")?.expect("task");
                assert_eq!(note(&kept), "kept", "the kept record is the row's content");
                let mut changed = TaskRecord::clone(&kept);
                changed
                    .metadata
                    .insert("note".into(), "earlier in this one".into());
                tx.write_change(Some(&kept), &changed)?;
                let (now, _) = current(tx, &live, "t")?.expect("task");
                Ok(note(&now).to_string())
            })
            .expect("written");
        assert_eq!(seen, "earlier in this one");
    }
}
