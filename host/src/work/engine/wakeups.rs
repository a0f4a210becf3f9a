//! The queue by which news for a task reaches the engine from outside its loop: a child's
//! follower learns that a child ended and asks for its parent to be woken. The followers are
//! built before the engine (the engine's tools create children), so they get the sending end
//! and the engine, built last, the receiving one: no part is patched after it is built.

use tokio::sync::mpsc;

/// Asks for tasks to be woken; cheap to clone.
#[derive(Debug, Clone)]
pub struct WakeSender(mpsc::UnboundedSender<String>);

/// Where the engine reads which tasks to wake.
#[derive(Debug)]
pub struct WakeReceiver(pub(super) mpsc::UnboundedReceiver<String>);

/// A new queue: the sender for whoever has news, the receiver for the engine.
pub fn wake_queue() -> (WakeSender, WakeReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (WakeSender(tx), WakeReceiver(rx))
}

impl WakeSender {
    /// Asks for the task's loop to look at what arrived. After the engine has stopped, the
    /// request is dropped: the task resumes from the store at the next start.
    pub fn wake(&self, task_id: &str) {
        let _ = self.0.send(task_id.to_string());
    }
}
