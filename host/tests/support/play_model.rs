//! A model double for tests: plays `replies[turn]`, answers summary requests with a fixed
//! summary, and records every request it receives.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tiny_harness::base::model::{Model, ModelError, ModelReply, ModelRequest, Purpose, ToolCall};

/// Plays `replies[turn]` (the task's recorded turn count); a summary request gets a fixed
/// summary.
pub struct PlayModel {
    replies: Vec<ModelReply>,
    delay: Duration,
    /// Past the last reply, wait forever instead of failing (a call in flight at a crash).
    hang_past_end: bool,
    /// When set, each call waits for a permit the test gives ([`PlayModel::release`]), so a
    /// test can act while a call is in flight, for as long as it needs.
    gate: Option<tokio::sync::Semaphore>,
    requests: Mutex<Vec<ModelRequest>>,
    /// The turn each turn request was made at.
    turns: Mutex<Vec<usize>>,
    /// The message each turn request answered.
    message_ids: Mutex<Vec<Option<String>>>,
}

impl PlayModel {
    pub fn new(replies: Vec<ModelReply>) -> Arc<PlayModel> {
        PlayModel::with(replies, Duration::ZERO, false)
    }

    pub fn hanging_after(replies: Vec<ModelReply>) -> Arc<PlayModel> {
        PlayModel::with(replies, Duration::ZERO, true)
    }

    pub fn slow(replies: Vec<ModelReply>, delay: Duration) -> Arc<PlayModel> {
        PlayModel::with(replies, delay, false)
    }

    /// Each call takes `delay`; past the replies, a call hangs.
    pub fn slow_then_hanging(replies: Vec<ModelReply>, delay: Duration) -> Arc<PlayModel> {
        PlayModel::with(replies, delay, true)
    }

    /// Each call answers only once the test has released it ([`PlayModel::release`]); past the
    /// replies, a released call hangs when `hang_past_end`, else fails.
    pub fn gated(replies: Vec<ModelReply>, hang_past_end: bool) -> Arc<PlayModel> {
        let mut model = PlayModel::build(replies, Duration::ZERO, hang_past_end);
        model.gate = Some(tokio::sync::Semaphore::new(0));
        Arc::new(model)
    }

    /// Lets `calls` more calls of a gated model answer.
    pub fn release(&self, calls: usize) {
        self.gate
            .as_ref()
            .expect("a gated model")
            .add_permits(calls);
    }

    fn with(replies: Vec<ModelReply>, delay: Duration, hang_past_end: bool) -> Arc<PlayModel> {
        Arc::new(PlayModel::build(replies, delay, hang_past_end))
    }

    fn build(replies: Vec<ModelReply>, delay: Duration, hang_past_end: bool) -> PlayModel {
        PlayModel {
            replies,
            delay,
            hang_past_end,
            gate: None,
            requests: Mutex::new(Vec::new()),
            turns: Mutex::new(Vec::new()),
            message_ids: Mutex::new(Vec::new()),
        }
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The turn each turn call was made at, in order.
    pub fn turns(&self) -> Vec<usize> {
        self.turns.lock().unwrap().clone()
    }

    /// The participant message each turn call answered (`Origin::message_id`), in order.
    pub fn message_ids(&self) -> Vec<Option<String>> {
        self.message_ids.lock().unwrap().clone()
    }
}

#[async_trait]
impl Model for PlayModel {
    fn describe(&self) -> String {
        "play".into()
    }
    fn context_window(&self) -> Option<usize> {
        None
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if request.purpose == Purpose::Turn {
            self.turns.lock().unwrap().push(request.origin.turn);
            self.message_ids
                .lock()
                .unwrap()
                .push(request.origin.message_id.clone());
        }
        self.play(request, request.origin.turn).await
    }
}

impl PlayModel {
    async fn play(&self, request: &ModelRequest, index: usize) -> Result<ModelReply, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        tokio::time::sleep(self.delay).await;
        if let Some(gate) = &self.gate {
            gate.acquire().await.expect("the gate stays open").forget();
        }
        if request.purpose == Purpose::Summary {
            return Ok(reply("SUMMARY-OF-EARLIER-WORK"));
        }
        if self.hang_past_end && index >= self.replies.len() {
            std::future::pending::<()>().await;
        }
        self.replies
            .get(index)
            .cloned()
            .ok_or(ModelError::ScriptExhausted {
                index,
                len: self.replies.len(),
            })
    }
}

pub fn reply(text: &str) -> ModelReply {
    ModelReply {
        text: text.into(),
        ..ModelReply::default()
    }
}

pub fn tool_reply(name: &str, args: serde_json::Value) -> ModelReply {
    ModelReply {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: format!("call-{name}"),
            name: name.into(),
            arguments: args.to_string(),
        }],
        usage: Default::default(),
        ..ModelReply::default()
    }
}
