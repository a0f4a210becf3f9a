//! Language-model providers behind one trait: OpenAI-compatible chat completions, Anthropic
//! messages, and `scripted` (a file of replies for tests and offline demos).
//!
//! The engine builds one [`ModelRequest`] per turn; a provider maps it to its wire format, sends
//! it (retrying 429, 5xx and timeouts with backoff) and maps the answer back to a [`ModelReply`].
//! Cancellation is the caller's: dropping the future aborts the HTTP request.

pub mod http;
pub mod retry;
pub mod scripted;
pub mod unconfigured;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use http::HttpSettings;
pub use retry::RetryPolicy;
pub use scripted::{ScriptError, ScriptedModel};
pub use unconfigured::{NO_MODEL_EXPLANATION, UnconfiguredModel};

/// A tool the model may call, as sent beside the instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema object.
    pub parameters: Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, echoed back with its result.
    pub id: String,
    pub name: String,
    /// The arguments as JSON text, exactly as the model wrote them.
    pub arguments: String,
}

/// One message of the conversation sent to the model, after the instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        call_id: String,
        name: String,
        content: String,
    },
}

/// Why a request is made: a turn of the task, or a summary for compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    #[default]
    Turn,
    Summary,
}

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The static, cached prefix: sent as the system prompt / instructions.
    pub instructions: String,
    /// The first user message (per-task sections) and then the history.
    pub messages: Vec<ChatMessage>,
    /// Sorted by name.
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: Option<u32>,
    /// How many turn calls this task has already recorded; the scripted model plays its script
    /// from this position, so a resumed task continues where it stopped.
    pub call_index: usize,
    pub purpose: Purpose,
}

/// Tokens a call used, as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ModelReply {
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Usage,
}

/// Why a model call failed. The message is shown as the task's failure reason.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("no model is configured: {0}")]
    NotConfigured(String),
    #[error("model endpoint answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("model call timed out after {0} s")]
    Timeout(u64),
    #[error("could not reach the model endpoint: {0}")]
    Transport(String),
    #[error("the model's answer could not be read: {0}")]
    InvalidResponse(String),
    #[error("the scripted model has no reply {index} (the script has {len})")]
    ScriptExhausted { index: usize, len: usize },
}

impl ModelError {
    /// Whether a retry may succeed: rate limits, server errors, timeouts and broken connections.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => *status == 429 || *status >= 500,
            ModelError::Timeout(_) | ModelError::Transport(_) => true,
            _ => false,
        }
    }
}

/// A language model the engine can call.
#[async_trait]
pub trait Model: Send + Sync {
    /// A short description for logs and `harness check` (`openai gpt-4o-mini at …`).
    fn describe(&self) -> String;
    /// The model's context window in tokens, where known; the turn budget never exceeds it.
    fn context_window(&self) -> Option<usize>;
    /// Makes one call, with the provider's retries.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;
}
