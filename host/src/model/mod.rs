//! Language-model providers behind one trait: OpenAI-compatible chat completions, Anthropic
//! messages, and `scripted` (a file of replies for tests and offline demos).
//!
//! The engine builds one [`ModelRequest`] per turn; a provider maps it to its wire format, sends
//! it (retrying 429, 5xx and timeouts with backoff) and maps the answer back to a [`ModelReply`].
//! Cancellation is the caller's: dropping the future aborts the HTTP request. A failed call is a
//! [`ModelError`] whose endpoint text is already cleaned for the log (the key masked, capped,
//! escaped) and whose [`ModelError::public_reason`] is all a task's reader is told.

pub mod anthropic;
pub mod conformance;
pub mod error;
pub mod http;
pub mod openai;
pub mod redact;
pub mod retry;
pub mod scripted;
pub mod unconfigured;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::a2a::types::{Artifact, TaskState};
use crate::config::{ModelConfig, Provider};

pub use anthropic::AnthropicModel;
pub use conformance::ConformanceModel;
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

/// What the engine knows about a turn beyond the request: the task, and the id of the newest
/// message from a participant, which the model answers. Chat models ignore both; the conformance
/// model keys its behaviour on the message id, as the A2A TCK's agents do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnContext<'a> {
    pub task_id: &'a str,
    pub message_id: Option<&'a str>,
}

/// The state a final reply leaves its task in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinishState {
    #[default]
    Completed,
    /// The reply is a question; the task waits for the requester's answer.
    InputRequired,
    /// The agent declines the task.
    Rejected,
}

impl FinishState {
    /// The A2A task state.
    pub fn task_state(self) -> TaskState {
        match self {
            FinishState::Completed => TaskState::Completed,
            FinishState::InputRequired => TaskState::InputRequired,
            FinishState::Rejected => TaskState::Rejected,
        }
    }
}

/// How a final reply (one without tool calls) ends its task, for models that say more than
/// "complete the task with this text". [`Finish::default`] is exactly that default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finish {
    pub state: FinishState,
    /// The artifacts the task gets instead of the default `answer` artifact holding the reply
    /// text; `None` keeps the default, `Some(vec![])` adds none.
    pub artifacts: Option<Vec<Artifact>>,
    /// The reply is itself the answer, a direct `Message` rather than a task's result: bindings
    /// that can (a blocking `SendMessage`) answer with the message instead of the task.
    pub direct_message: bool,
}

/// A turn's reply and, when the model chose one, how it ends the task.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnReply {
    pub reply: ModelReply,
    pub finish: Option<Finish>,
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

    /// Makes a task's turn call. The default is [`Model::complete`] with the default finish;
    /// a model that decides how its task ends, or needs the turn's context, overrides it.
    async fn complete_turn(
        &self,
        request: &ModelRequest,
        turn: &TurnContext<'_>,
    ) -> Result<TurnReply, ModelError> {
        let _ = turn;
        Ok(TurnReply {
            reply: self.complete(request).await?,
            finish: None,
        })
    }
}

/// Shows the model's description, so structs holding an `Arc<dyn Model>` can derive `Debug`.
impl std::fmt::Debug for dyn Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Why `[model]` could not be turned into a model. Each message starts with the setting to fix.
#[derive(Debug, thiserror::Error)]
pub enum ModelBuildError {
    #[error("model.api_key_env: environment variable {variable} is not set")]
    MissingKey { variable: String },
    #[error("model.model: is required for model.provider = \"{provider}\"")]
    MissingModel { provider: &'static str },
    #[error("model.base_url: `{url}` is not an http(s) URL")]
    InvalidBaseUrl { url: String },
    #[error("model.script: is required when model.provider = \"scripted\"")]
    MissingScript,
    #[error("model.script: {0}")]
    Script(#[from] ScriptError),
    #[error("model: the HTTP client could not start: {0}")]
    Client(String),
}

/// The model `[model]` describes.
///
/// `resolve` turns `model.script` into a path relative to the configuration file (usually
/// [`crate::config::Config::resolve`]); `env` reads environment variables, a parameter so tests
/// need not touch the process environment. A key is required only for the providers' own hosts:
/// a custom `base_url` (Ollama, vLLM, a proxy) may well run without one.
pub fn build_model(
    config: &ModelConfig,
    resolve: impl Fn(&Path) -> PathBuf,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ModelBuildError> {
    let provider = match config.provider {
        None => {
            return Ok(Arc::new(UnconfiguredModel::new(
                config.context_window_tokens,
            )));
        }
        Some(provider) => provider,
    };
    match provider {
        Provider::Scripted => {
            let script = config
                .script
                .as_deref()
                .ok_or(ModelBuildError::MissingScript)?;
            let model = ScriptedModel::load(&resolve(script))?
                .with_context_window(config.context_window_tokens);
            Ok(Arc::new(model))
        }
        Provider::Conformance => Ok(Arc::new(ConformanceModel::new())),
        Provider::Openai => {
            let settings = http_settings(
                config,
                provider,
                openai::OPENAI_DEFAULT_BASE_URL,
                Some(openai::OPENAI_DEFAULT_MODEL),
                "OPENAI_API_KEY",
                openai::OPENAI_HOST,
                env,
            )?;
            Ok(Arc::new(OpenAiModel::new(settings)?))
        }
        Provider::Anthropic => {
            let settings = http_settings(
                config,
                provider,
                anthropic::ANTHROPIC_DEFAULT_BASE_URL,
                None,
                "ANTHROPIC_API_KEY",
                anthropic::ANTHROPIC_HOST,
                env,
            )?;
            Ok(Arc::new(AnthropicModel::new(settings)?))
        }
    }
}

/// The settings of an HTTP provider: defaults filled in, the URL checked, the key read.
fn http_settings(
    config: &ModelConfig,
    provider: Provider,
    default_base_url: &str,
    default_model: Option<&str>,
    default_key_env: &str,
    official_host: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<HttpSettings, ModelBuildError> {
    let model = config
        .model
        .as_deref()
        .or(default_model)
        .ok_or(ModelBuildError::MissingModel {
            provider: provider.as_str(),
        })?;
    let base_url = config
        .base_url
        .as_deref()
        .unwrap_or(default_base_url)
        .trim_end_matches('/');
    let host = reqwest::Url::parse(base_url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .ok_or_else(|| ModelBuildError::InvalidBaseUrl {
            url: base_url.to_string(),
        })?;
    let variable = config.api_key_env.as_deref().unwrap_or(default_key_env);
    let api_key = env(variable).filter(|key| !key.trim().is_empty());
    if api_key.is_none() && host == official_host {
        return Err(ModelBuildError::MissingKey {
            variable: variable.to_string(),
        });
    }
    Ok(HttpSettings {
        base_url: base_url.to_string(),
        model: model.to_string(),
        api_key,
        timeout_secs: config.timeout,
        max_output_tokens: config.max_output_tokens,
        context_window: config.context_window_tokens,
        retry: RetryPolicy::new(config.max_retries),
    })
}
