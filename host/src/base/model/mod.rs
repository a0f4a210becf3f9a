//! Language-model providers behind one trait: OpenAI-compatible chat completions, Anthropic
//! messages, and `scripted` (a file of replies for tests and offline demos). `[model]` is the
//! default and each `[models.NAME]` another ([`Models`]); a task runs on the one its brief names,
//! at the reasoning [`Effort`] its brief sets, which each provider is told its own way.
//!
//! The engine builds one [`ModelRequest`] per turn; a provider maps it to its wire format, sends
//! it (retrying 429, 5xx and timeouts with backoff) and maps the answer back to a [`ModelReply`].
//! Cancellation is the caller's: dropping the future aborts the HTTP request. A failed call is a
//! [`ModelError`] whose endpoint text is already cleaned for the log (the key masked, capped,
//! escaped) and whose [`ModelError::public_reason`] is all a task's reader is told.

pub mod anthropic;
pub mod build;
pub mod build_error;
pub mod catalog;
pub mod conformance;
pub mod effort;
pub mod error;
pub mod http;
pub mod openai;
pub mod redact;
pub mod retry;
pub mod scripted;
pub(crate) mod shared_json;
pub mod unconfigured;

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::protocol::types::{Artifact, TaskState};

pub use anthropic::AnthropicModel;
pub use build::{build_model, build_models};
pub use build_error::ModelBuildError;
pub use catalog::{Models, UNKNOWN_MODEL_CODE, UnknownModel};
pub use conformance::ConformanceModel;
pub use effort::Effort;
pub use error::ModelError;
pub use http::HttpSettings;
pub use openai::OpenAiModel;
pub use redact::{REDACTED, Redactor};
pub use retry::RetryPolicy;
pub use scripted::{ScriptError, ScriptedModel};
pub use unconfigured::{NO_MODEL_EXPLANATION, UnconfiguredModel};

/// A tool the model may call, as sent beside the instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does and when to use it: all the model knows of it.
    pub description: String,
    /// A JSON Schema object.
    pub parameters: Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, echoed back with its result.
    pub id: String,
    /// The tool called, as the model wrote it (checked against the tools by the engine).
    pub name: String,
    /// The arguments as JSON text, exactly as the model wrote them.
    pub arguments: String,
}

/// One message of the conversation sent to the model, after the instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// What the model is asked: the per-task sections, a participant's message, a note.
    User {
        /// The text, untrusted parts already cleaned by the context.
        content: String,
    },
    /// What the model said on an earlier call, sent back so it sees its own history.
    Assistant {
        /// The reply text.
        content: String,
        /// The calls the reply made, each answered by a [`ChatMessage::Tool`] after it.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The [`ToolCall::id`] it answers.
        call_id: String,
        /// The tool that ran (some providers want it beside the id).
        name: String,
        /// The result or the tool error, as the model reads it.
        content: String,
    },
}

/// Why a request is made: a turn of the task, or a summary for compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A turn of the task: the reply may call tools or finish the task.
    #[default]
    Turn,
    /// A summary of older history for compaction: text only, never shown to a participant.
    Summary,
}

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModelRequest {
    /// The static, cached prefix: sent as the system prompt / instructions. Shared, not copied:
    /// every turn of every task sends the same text.
    pub instructions: Arc<str>,
    /// The first user message (per-task sections) and then the history.
    pub messages: Vec<ChatMessage>,
    /// Sorted by name; shared by every turn, not copied into each request.
    pub tools: Arc<[ToolSpec]>,
    /// The most tokens the reply may hold, when the configuration caps it
    /// (`model.max_output_tokens`).
    pub max_output_tokens: Option<u32>,
    /// Why the call is made. The chat providers send both alike; the scripted and conformance
    /// models answer a summary with a fixed text instead of playing a reply.
    pub purpose: Purpose,
    /// How hard to reason, when the task's trusted creator chose it; each chat provider is told
    /// it its own way, and a model with no such setting answers as without it.
    #[serde(default)]
    pub effort: Option<Effort>,
    /// The task turn the call is made for.
    #[serde(default)]
    pub origin: Origin,
}

/// The task turn a call is made for. Every provider names its calls by it: the chat providers
/// open their call's log span with it (so a retry's log line, or a trace, ties the call to its
/// task, to the participant message it answers and to its turn); the scripted model plays its
/// script from `turn`, so a resumed task continues at the right reply; the conformance model
/// keys its scenario on `message_id`, as the A2A TCK's agents do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Origin {
    /// The task the call belongs to; empty for a call made for no task (`harness check`).
    #[serde(default)]
    pub task_id: String,
    /// The id of the newest message from a participant, the one the turn answers; `None` when
    /// the newest message the turn drained is not a participant's.
    #[serde(default)]
    pub message_id: Option<String>,
    /// How many turn calls the task had recorded before this one.
    #[serde(default)]
    pub turn: usize,
}

/// Tokens a call used, as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    /// Tokens the request held (instructions, history, tools).
    pub input_tokens: u64,
    /// Tokens the reply held, thinking included where the provider counts it there.
    pub output_tokens: u64,
}

impl Usage {
    /// Input and output together: what a token budget counts.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// This usage and `other`'s, summed (saturating: a hostile endpoint's huge counts cannot
    /// wrap a task's total back to small).
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
        }
    }
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModelReply {
    /// The reply text: the answer, when there are no tool calls.
    pub text: String,
    /// The tools the model asked to run, in its order; none ends the turn loop.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// What the call cost, counted against the task's token budget.
    #[serde(default)]
    pub usage: Usage,
    /// How a final reply (one without tool calls) ends its task. Not journaled: it is applied
    /// in the step that records the reply, or not at all (news that arrived during the call
    /// sends the task round again).
    #[serde(skip)]
    pub finish: Finish,
}

/// The state a final reply leaves its task in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinishState {
    /// The task is done; the reply is its answer.
    #[default]
    Completed,
    /// The task is done, and the reply is itself the answer, a direct `Message` rather than a
    /// task's result: bindings that can (a blocking `SendMessage`) answer with the message
    /// instead of the task.
    DirectMessage,
    /// The reply is a question; the task waits for the requester's answer.
    InputRequired,
    /// The agent declines the task: a chat provider's refusal, or the conformance scenario.
    Rejected,
}

impl FinishState {
    /// The A2A task state.
    pub fn task_state(self) -> TaskState {
        match self {
            FinishState::Completed | FinishState::DirectMessage => TaskState::Completed,
            FinishState::InputRequired => TaskState::InputRequired,
            FinishState::Rejected => TaskState::Rejected,
        }
    }
}

/// How a final reply ends its task. [`Finish::default`], what a chat model's answer gets, is
/// "completed, with an `answer` artifact holding the text"; a refusal is rejected; the
/// conformance model plays every other ending A2A has, so the TCK drives the engine's whole
/// ending path.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finish {
    /// The state the task ends in.
    pub state: FinishState,
    /// The artifacts the task gets instead of the default `answer` artifact holding the reply
    /// text; `None` keeps the default, `Some(vec![])` adds none.
    pub artifacts: Option<Vec<Artifact>>,
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

/// Shows the model's description, so structs holding an `Arc<dyn Model>` can derive `Debug`.
impl std::fmt::Debug for dyn Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}
