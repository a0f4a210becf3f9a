//! The event channels of followed tasks: one broadcast channel per task that somebody follows,
//! each event built once and shared (`Arc`) by every follower, and the channel gone as soon as
//! its last follower goes. A task nobody follows has no channel, so a task waiting for input
//! costs no event buffer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::broadcast;
pub use tokio::sync::broadcast::error::RecvError;

use crate::a2a::types::StreamResponse;

/// Events buffered per task for slow followers; one that falls further behind resynchronises
/// from the task itself. The buffer holds pointers, so it costs 8 bytes a slot.
const EVENT_BUFFER: usize = 256;

/// One announced change of a task, shared by every follower.
pub type TaskEvent = Arc<StreamResponse>;

/// A task's channel, with the number that tells it from an earlier channel of the same task.
struct Channel {
    sender: broadcast::Sender<TaskEvent>,
    generation: u64,
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
            }
        });
        TaskEvents {
            receiver: channel.sender.subscribe(),
            owner: Some(Owner {
                map: Arc::downgrade(&self.map),
                task_id: task_id.to_string(),
                generation: channel.generation,
            }),
        }
    }

    /// Sends the events to the task's followers, if it has any. `last` ends every follower's
    /// stream after these events (the task is terminal): the channel goes.
    pub fn publish(&self, task_id: &str, events: Vec<StreamResponse>, last: bool) {
        let mut map = lock(&self.map);
        let Some(channel) = map.channels.get(task_id) else {
            return;
        };
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
            owner: None,
        }
    }

    /// A follower of a channel made elsewhere (tests of the stream's consumers).
    pub fn from_receiver(receiver: broadcast::Receiver<TaskEvent>) -> TaskEvents {
        TaskEvents {
            receiver,
            owner: None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};

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
