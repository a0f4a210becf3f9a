//! Configuration: `config.toml` loaded with serde, unknown keys refused, every error naming the
//! dotted setting it is about (`server.base_url`, `agents[1].url`). Secrets are never read from
//! the file: only the names of the environment variables that hold them.

pub mod agent_auth;
pub mod card;
mod card_extended;
mod defaults;
mod engine;
pub mod grants;
mod grpc;
mod log;
mod mcp;
pub mod oidc;
#[cfg(test)]
mod properties;
pub mod push;
mod server;
mod server_auth;
mod skills;
mod syntax;
mod telemetry;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use agent_auth::OAuth2Config;
pub use card::{CardConfig, CardSkillConfig, ExtendedCardConfig, RosterConfig};
pub use defaults::embedded_default;
pub use engine::{EngineConfig, EngineKind, TemporalConfig};
pub use grants::{HostMatch, HostPattern, PluginGrant, SecretGrant};
pub use log::{LogConfig, LogFormat};
pub use mcp::{
    DEFAULT_MCP_TIMEOUT_SECS, MAX_MCP_NAME_CHARS, MAX_MCP_SERVERS, MAX_MCP_TIMEOUT_SECS,
    McpServerConfig,
};
pub use oidc::OidcConfig;
pub use server::{CallerConfig, ServerConfig, TrustedDelegatorConfig, has_caller_auth};
pub use server_auth::ANONYMOUS_PARTICIPANT_ID;
pub use skills::{DEFAULT_SKILLS_DIR, MAX_SKILL_DIRS, SkillFolder, SkillsConfig};
pub use telemetry::{TelemetryConfig, TraceExport};
pub use validate::{MAX_DELEGATION_HOPS, SELF_AGENT_ID};

/// Why configuration could not be used. `setting` is the dotted path of the offending key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file as given on the command line.
        path: PathBuf,
        /// Why the read failed.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{}{}: TOML syntax error: {message}", path.display(), syntax::at(*at))]
    Syntax {
        /// The file as given on the command line.
        path: PathBuf,
        /// The line and column (from 1, columns in characters) the parser stopped at.
        at: Option<(usize, usize)>,
        /// The TOML parser's message.
        message: String,
    },
    /// A key is unknown, a value has the wrong type, or it breaks a rule of its setting.
    #[error("{setting}: {message}")]
    Invalid {
        /// The dotted setting at fault (`agents[1].url`).
        setting: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

impl ConfigError {
    /// An error about one setting.
    pub fn invalid(setting: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            setting: setting.into(),
            message: message.into(),
        }
    }
}

/// The whole configuration, after defaults and validation.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[server]`: where the harness listens and who may call it.
    #[serde(default)]
    pub server: ServerConfig,
    /// `[model]`: the model every task runs on unless a brief names one of `models`.
    #[serde(default)]
    pub model: ModelConfig,
    /// Further models by name (`[models.NAME]`, the same keys as `[model]`), which a trusted
    /// delegator's brief (or `spawn_subtask` on self) may choose for a task.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// `[store]`: the SQLite file.
    #[serde(default)]
    pub store: StoreConfig,
    /// `[context]`: how large each model call's context may grow.
    #[serde(default)]
    pub context: ContextConfig,
    /// `[limits]`: bounds on one task.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// `[plugins]`: the WebAssembly plugins and their sandbox limits.
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// People and agents the harness knows, listed in every context's `participants` section.
    #[serde(default)]
    pub participants: Vec<ParticipantConfig>,
    /// Remote A2A agents the model may delegate to.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    /// What this harness says about itself on its own agent card.
    #[serde(default)]
    pub card: CardConfig,
    /// How remote cards are fetched and capped for the model.
    #[serde(default)]
    pub roster: RosterConfig,
    /// Where the skills the model may load are read from.
    #[serde(default)]
    pub skills: SkillsConfig,
    /// Which engine works the tasks: embedded (default) or Temporal.
    #[serde(default)]
    pub engine: EngineConfig,
    /// `[[mcp]]`: MCP tool servers whose tools join the plugins' tools.
    #[serde(default)]
    pub mcp: Vec<McpServerConfig>,
    /// `[log]`: the log's format.
    #[serde(default)]
    pub log: LogConfig,
    /// `[telemetry]`: metrics.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// `[push]`: which hosts push-notification webhooks may name.
    #[serde(default)]
    pub push: push::PushConfig,
    /// Where the file was read from, for resolving relative paths; `None` for the embedded default.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// Which model API to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// The OpenAI chat completions API, or any server that speaks it.
    Openai,
    /// The Anthropic messages API.
    Anthropic,
    /// Replies read from a script file, for tests and demos without a model.
    Scripted,
    /// Plays the A2A TCK's scenarios, keyed by `messageId` prefix; see
    /// [`crate::base::model::conformance`].
    Conformance,
}

impl Provider {
    /// The name as written in `model.provider`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Scripted => "scripted",
            Provider::Conformance => "conformance",
        }
    }
}

/// `[model]`: the language model every task runs on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// `None` only for the embedded default when the environment names no model.
    #[serde(default)]
    pub provider: Option<Provider>,
    /// The API root as OpenAI clients take it (`…/v1`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model name sent with each request.
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable that holds the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Seconds one HTTP call may take.
    #[serde(default = "defaults::model_timeout")]
    pub timeout: u64,
    /// The most tokens one reply may hold.
    #[serde(default = "defaults::max_output_tokens")]
    pub max_output_tokens: u32,
    /// The model's context window; the turn budget never exceeds it.
    #[serde(default)]
    pub context_window_tokens: Option<usize>,
    /// Retries after a 429, a 5xx or a timeout, with exponential backoff.
    #[serde(default = "defaults::max_retries")]
    pub max_retries: u32,
    /// For `scripted`: the script file, relative to the configuration file.
    #[serde(default)]
    pub script: Option<PathBuf>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            provider: None,
            base_url: None,
            model: None,
            api_key_env: None,
            timeout: defaults::model_timeout(),
            max_output_tokens: defaults::max_output_tokens(),
            context_window_tokens: None,
            max_retries: defaults::max_retries(),
            script: None,
        }
    }
}

/// `[store]`: where tasks and the journal live.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// The SQLite file, relative to the configuration file.
    #[serde(default = "defaults::store_path")]
    pub path: PathBuf,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            path: defaults::store_path(),
        }
    }
}

/// `[context]`: the size of each model call's context.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    /// Tokens one model call's context may hold, prefix and history included.
    #[serde(default = "defaults::turn_budget_tokens")]
    pub turn_budget_tokens: usize,
    /// Compaction starts when the estimate passes this fraction of the budget.
    #[serde(default = "defaults::compaction_fraction")]
    pub compaction_fraction: f64,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            turn_budget_tokens: defaults::turn_budget_tokens(),
            compaction_fraction: defaults::compaction_fraction(),
        }
    }
}

/// `[limits]`: bounds on one task.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Model calls one task may make before it fails.
    #[serde(default = "defaults::max_turns")]
    pub max_turns: u32,
    /// How deep a chain of sub-tasks may go (a task's child is depth 1), so that a harness
    /// delegating to itself cannot recurse without end.
    #[serde(default = "defaults::max_subtask_depth")]
    pub max_subtask_depth: u32,
    /// How many hops from harness to harness a delegated task may have come (a task a person
    /// created has 0), so that harnesses delegating to each other end at a bound; a new task
    /// past it is refused, and a child that would be is not sent.
    #[serde(default = "defaults::max_delegation_hops")]
    pub max_delegation_hops: u32,
    /// Seconds a sub-task's agent may stay unreachable before the parent is told the sub-task
    /// failed, so that a dead agent does not hold its parent open for ever.
    #[serde(default = "defaults::subtask_unreachable_secs")]
    pub subtask_unreachable_secs: u64,
    /// Seconds a sub-task may take from its creation before it is canceled on its agent and the
    /// parent is told it failed, so that an agent that answers WORKING for ever cannot hold its
    /// parent open.
    #[serde(default = "defaults::subtask_deadline_secs")]
    pub subtask_deadline_secs: u64,
    /// Tokens (input and output of every model call, summaries included) one task may use
    /// before it fails; its sub-tasks on this harness get at most what it has left. Off when
    /// absent.
    #[serde(default)]
    pub task_token_budget: Option<u64>,
    /// Sub-tasks one task may create in all, so that a model that keeps delegating cannot
    /// fan out without end.
    #[serde(default = "defaults::max_children_per_task")]
    pub max_children_per_task: u32,
    /// Sub-tasks of one task that may be open at once: each holds a follower, connections on
    /// its agent, and a share of the task's token budget.
    #[serde(default = "defaults::max_parallel_children")]
    pub max_parallel_children: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_turns: defaults::max_turns(),
            max_subtask_depth: defaults::max_subtask_depth(),
            max_delegation_hops: defaults::max_delegation_hops(),
            subtask_unreachable_secs: defaults::subtask_unreachable_secs(),
            subtask_deadline_secs: defaults::subtask_deadline_secs(),
            task_token_budget: None,
            max_children_per_task: defaults::max_children_per_task(),
            max_parallel_children: defaults::max_parallel_children(),
        }
    }
}

/// `[plugins]`: where plugins come from and the sandbox they run in.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// The plugins folder, relative to the configuration file. When not set, `plugins` is used
    /// if it exists.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Memory one plugin call may use.
    #[serde(default = "defaults::plugin_memory_mb")]
    pub memory_mb: u32,
    /// CPU time one plugin call may take.
    #[serde(default = "defaults::plugin_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Where compiled plugins are cached, relative to the configuration file.
    #[serde(default = "defaults::plugin_cache_dir")]
    pub cache_dir: PathBuf,
    /// Threads guest code runs on, apart from the threads that serve HTTP and drive tasks.
    #[serde(default = "defaults::plugin_threads")]
    pub threads: usize,
    /// Tool calls that may be inside plugins at once; more wait their turn. Bounds the memory
    /// plugins may hold together (`max_concurrent_calls` × `memory_mb`).
    #[serde(default = "defaults::plugin_max_concurrent_calls")]
    pub max_concurrent_calls: usize,
    /// `[plugins.grants.<plugin>]`: hosts, settings and secrets each plugin may use, by the
    /// plugin's file name without `.wasm`. A plugin not listed gets none.
    #[serde(default)]
    pub grants: BTreeMap<String, PluginGrant>,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            dir: None,
            memory_mb: defaults::plugin_memory_mb(),
            call_timeout_ms: defaults::plugin_call_timeout_ms(),
            cache_dir: defaults::plugin_cache_dir(),
            threads: defaults::plugin_threads(),
            max_concurrent_calls: defaults::plugin_max_concurrent_calls(),
            grants: BTreeMap::new(),
        }
    }
}

/// `[[participants]]`: one standing participant.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParticipantConfig {
    /// The participant's id, unique among participants.
    pub id: String,
    /// Whether the participant is a person or an agent.
    pub kind: crate::base::protocol::extension::ParticipantKind,
    /// What the participant does on the task (assignee, reporter, watcher or admin).
    pub role: crate::base::protocol::extension::Role,
    /// The name shown to the model instead of the id.
    #[serde(default)]
    pub display_name: Option<String>,
}

/// `[[agents]]`: one remote A2A agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The id the model names in `spawn_subtask`; `self` is reserved.
    pub id: String,
    /// The agent's base URL; its card is at `{url}/.well-known/agent-card.json`.
    pub url: String,
    /// The version the operator expects of the agent; kept for the operator, not checked against the card.
    #[serde(default)]
    pub version: Option<String>,
    /// The environment variable holding the bearer token this harness presents to the agent.
    /// Without it, calls carry no token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// Whether the agent knows this harness's token as a trusted delegator's
    /// (`[[server.trusted_delegators]]` there), so that a child's brief may name its parent task,
    /// its participants and who works it. Default: `true` when `token_env` is set. Set `false`
    /// when the token makes this harness a plain caller there (`[[server.callers]]`), which
    /// would refuse a brief carrying those fields.
    #[serde(default)]
    pub delegator: Option<bool>,
    /// The environment variable holding the API key this harness presents in the header the
    /// agent's card names (an `apiKeySecurityScheme` in a header).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// `[agents.oauth2]`: OAuth2 client credentials, for a card with an OAuth2 scheme that has a
    /// client-credentials flow.
    #[serde(default)]
    pub oauth2: Option<OAuth2Config>,
}

impl Config {
    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config = Config::parse(&text, path)?;
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parses and validates configuration text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let deserializer =
            toml::Deserializer::parse(text).map_err(|err| syntax::error(text, path, &err))?;
        let config: Config = serde_path_to_error::deserialize(deserializer)
            .map_err(|err| validate::from_serde_error(&err))?;
        validate::validate(&config)?;
        agent_auth::validate_agents(&config.agents)?;
        server_auth::validate(&config.server)?;
        grants::validate_grants(&config.plugins.grants)?;
        oidc::validate_oidc(config.server.oidc.as_ref())?;
        card_extended::validate_extended_card(&config.card, &config.server)?;
        mcp::validate_mcp(&config.mcp)?;
        push::validate_push(&config.push)?;
        Ok(config)
    }

    /// A path from the configuration, resolved against the configuration file's folder.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        match (&self.source, path.is_absolute()) {
            (Some(source), false) => source
                .parent()
                .map(|dir| dir.join(path))
                .unwrap_or_else(|| path.to_path_buf()),
            _ => path.to_path_buf(),
        }
    }
}

/// What the configuration's test modules share.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use super::Config;

    /// Why a configuration file holding `text` is refused, as start-up says it.
    pub fn error_of(text: &str) -> String {
        Config::parse(text, Path::new("config.toml"))
            .unwrap_err()
            .to_string()
    }
}
