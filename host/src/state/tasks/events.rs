//! The event channels of followed tasks: one broadcast channel per task that somebody follows,
//! each event built once and shared (`Arc`) by every follower, and the channel gone as soon as
//! its last follower goes. A task nobody follows has no channel, so a task waiting for input
//! costs no event buffer.
//!
//! A change that settles a task leaves its record beside the events (emptied by the next change
//! that sets the task going), so a blocking `SendMessage` answers from it and reads only the
//! history (`TaskService::settled_task`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::broadcast;
pub use tokio::sync::broadcast::error::RecvError;

use crate::base::protocol::types::StreamResponse;
use crate::state::records::record::TaskRecord;

/// Events buffered per task for slow followers; one that falls further behind resynchronises
/// from the task itself. The buffer holds pointers, so it costs 8 bytes a slot.
const EVENT_BUFFER: usize = 256;

/// One announced change of a task, shared by every follower.
pub type TaskEvent = Arc<StreamResponse>;

/// The record the task's newest announced change left, while that change left it settled
/// (terminal, input or auth required); empty after a change that did not. A follower woken by a
/// settling event answers from it instead of reading the store again.
type SettledSlot = Arc<Mutex<Option<Arc<TaskRecord>>>>;

/// A task's channel, with the number that tells it from an earlier channel of the same task.
struct Channel {
    sender: broadcast::Sender<TaskEvent>,
    generation: u64,
    settled: SettledSlot,
}

#[derive(Default)]
struct ChannelMap {
    channels: HashMap<String, Channel>,
    made: u64,
}

/// Every followed task's channel.
#[derive(Default)]
pub struct Channels {
    map: Arc<Mutex<ChannelMap>>,
}

impl Channels {
    /// A follower of the task's future events; the task's channel is made if it has none.
    pub fn subscribe(&self, task_id: &str) -> TaskEvents {
        let mut map = lock(&self.map);
        let ChannelMap { channels, made } = &mut *map;
        let channel = channels.entry(task_id.to_string()).or_insert_with(|| {
            *made += 1;
            Channel {
                sender: broadcast::channel(EVENT_BUFFER).0,
                generation: *made,
                settled: SettledSlot::default(),
            }
        });
        TaskEvents {
            receiver: channel.sender.subscribe(),
            settled: Some(channel.settled.clone()),
            owner: Some(Owner {
                map: Arc::downgrade(&self.map),
                task_id: task_id.to_string(),
                generation: channel.generation,
            }),
        }
    }

    /// Whether the task has a channel (someone follows it): news only followers would read
    /// need not be made otherwise.
    pub fn is_followed(&self, task_id: &str) -> bool {
        lock(&self.map).channels.contains_key(task_id)
    }

    /// Sends the events to the task's followers, if it has any. `last` ends every follower's
    /// stream after these events (the task is terminal): the channel goes.
    pub fn publish(&self, task_id: &str, events: Vec<StreamResponse>, last: bool) {
        self.send(task_id, events, last, None);
    }

    /// Sends the events of a change that left the task as `record` is: as
    /// [`Channels::publish`], and a follower woken by them finds the record with
    /// [`TaskEvents::settled_record`] while the task is settled.
    pub fn announce(&self, record: &Arc<TaskRecord>, events: Vec<StreamResponse>) {
        let settled = record.state().is_settled().then(|| record.clone());
        self.send(&record.id, events, record.state().is_terminal(), settled);
    }

    fn send(
        &self,
        task_id: &str,
        events: Vec<StreamResponse>,
        last: bool,
        settled: Option<Arc<TaskRecord>>,
    ) {
        let mut map = lock(&self.map);
        let Some(channel) = map.channels.get(task_id) else {
            return;
        };
        // Before the events go: a follower that wakes to them finds the record they announce
        // (or a newer one), never an older one.
        *lock_slot(&channel.settled) = settled;
        for event in events {
            // No receiver left is not an error: the last follower went a moment ago.
            let _ = channel.sender.send(Arc::new(event));
        }
        if last {
            map.channels.remove(task_id);
        }
    }

    /// How many tasks have a channel: the followed ones.
    pub fn len(&self) -> usize {
        lock(&self.map).channels.len()
    }

    /// Whether no task is followed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A follower's end of a task's channel. Dropping the last one removes the channel.
pub struct TaskEvents {
    receiver: broadcast::Receiver<TaskEvent>,
    /// The channel's settled record; `None` for a stream made elsewhere.
    settled: Option<SettledSlot>,
    /// Where the channel is kept; `None` for a stream that is over at once.
    owner: Option<Owner>,
}

struct Owner {
    map: Weak<Mutex<ChannelMap>>,
    task_id: String,
    generation: u64,
}

impl TaskEvents {
    /// A stream with no events: its first `recv` says it is closed.
    pub fn closed() -> TaskEvents {
        let (sender, receiver) = broadcast::channel(1);
        drop(sender);
        TaskEvents {
            receiver,
            settled: None,
            owner: None,
        }
    }

    /// A follower of a channel made elsewhere (tests of the stream's consumers).
    pub fn from_receiver(receiver: broadcast::Receiver<TaskEvent>) -> TaskEvents {
        TaskEvents {
            receiver,
            settled: None,
            owner: None,
        }
    }

    /// The task as the newest announced change left it, when that change settled it: what a
    /// follower woken by a settling event answers with, without reading the store. `None` when
    /// a later change set the task going again, or nothing settled it yet.
    pub fn settled_record(&self) -> Option<Arc<TaskRecord>> {
        self.settled
            .as_ref()
            .and_then(|slot| lock_slot(slot).clone())
    }

    /// The next event; `Lagged` when this follower fell more than the buffer behind, `Closed`
    /// once the task has ended.
    pub async fn recv(&mut self) -> Result<TaskEvent, RecvError> {
        self.receiver.recv().await
    }
}

impl Drop for TaskEvents {
    fn drop(&mut self) {
        let Some(owner) = self.owner.take() else {
            return;
        };
        let Some(map) = owner.map.upgrade() else {
            return;
        };
        let mut map = lock(&map);
        // This receiver still counts until the fields drop: one left means it was the last. A
        // channel made for the task after this one was closed is not this follower's to remove.
        if map.channels.get(&owner.task_id).is_some_and(|channel| {
            channel.generation == owner.generation && channel.sender.receiver_count() <= 1
        }) {
            map.channels.remove(&owner.task_id);
        }
    }
}

fn lock(map: &Mutex<ChannelMap>) -> MutexGuard<'_, ChannelMap> {
    // A panic while holding the lock leaves the map consistent (every change is one call).
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock_slot(slot: &SettledSlot) -> MutexGuard<'_, Option<Arc<TaskRecord>>> {
    // One assignment under the lock: a panic cannot leave it half made.
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};

    fn status(state: TaskState) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            metadata: None,
        })
    }

    fn record(state: TaskState) -> Arc<TaskRecord> {
        let ext = crate::state::records::extension::TaskExtension::from_text("goal");
        Arc::new(TaskRecord::for_test(ext, state, "o"))
    }

    #[tokio::test]
    async fn a_follower_woken_by_a_settling_change_finds_the_record_it_left() {
        let channels = Channels::default();
        let mut follower = channels.subscribe("t");
        assert!(follower.settled_record().is_none(), "nothing settled yet");
        channels.announce(
            &record(TaskState::Working),
            vec![status(TaskState::Working)],
        );
        follower.recv().await.unwrap();
        assert!(
            follower.settled_record().is_none(),
            "working is not settled"
        );
        let waiting = record(TaskState::InputRequired);
        channels.announce(&waiting, vec![status(TaskState::InputRequired)]);
        follower.recv().await.unwrap();
        assert!(Arc::ptr_eq(&follower.settled_record().unwrap(), &waiting));
        // Going again empties it: a late follower reads the store rather than an old record.
        channels.announce(
            &record(TaskState::Working),
            vec![status(TaskState::Working)],
        );
        assert!(follower.settled_record().is_none());
        // The last change ends the channel; its followers still find what it left.
        let done = record(TaskState::Completed);
        channels.announce(&done, vec![status(TaskState::Completed)]);
        assert!(channels.is_empty());
        assert!(Arc::ptr_eq(&follower.settled_record().unwrap(), &done));
        assert!(TaskEvents::closed().settled_record().is_none());
    }

    #[tokio::test]
    async fn every_follower_gets_the_same_event_once_built() {
        let channels = Channels::default();
        let mut first = channels.subscribe("t");
        let mut second = channels.subscribe("t");
        channels.publish("t", vec![status(TaskState::Working)], false);
        let (a, b) = (first.recv().await.unwrap(), second.recv().await.unwrap());
        assert!(Arc::ptr_eq(&a, &b), "one event, shared");
    }

    #[tokio::test]
    async fn the_channel_goes_with_its_last_follower() {
        let channels = Channels::default();
        let first = channels.subscribe("t");
        let second = channels.subscribe("t");
        assert_eq!(channels.len(), 1);
        drop(first);
        assert_eq!(channels.len(), 1, "a follower is left");
        drop(second);
        assert!(channels.is_empty(), "nobody follows the task");
        // Publishing to a task nobody follows makes no channel.
        channels.publish("t", vec![status(TaskState::Working)], false);
        assert!(channels.is_empty());
    }

    #[tokio::test]
    async fn a_terminal_event_closes_every_stream_after_it() {
        let channels = Channels::default();
        let mut follower = channels.subscribe("t");
        channels.publish("t", vec![status(TaskState::Completed)], true);
        assert!(follower.recv().await.is_ok());
        assert!(matches!(follower.recv().await, Err(RecvError::Closed)));
        assert!(channels.is_empty());
        drop(follower);
        assert!(channels.is_empty());
    }

    #[tokio::test]
    async fn a_follower_of_an_ended_channel_leaves_a_newer_one_alone() {
        let channels = Channels::default();
        let old = channels.subscribe("t");
        channels.publish("t", vec![status(TaskState::Completed)], true);
        let new = channels.subscribe("t");
        drop(old);
        assert_eq!(channels.len(), 1, "the newer follower keeps its channel");
        drop(new);
        assert!(channels.is_empty());
    }
}
