//! Why a model could not be built from its table: below the providers and the builder, since
//! both return it (a provider's HTTP client that cannot start is a build error too).

use super::scripted::ScriptError;

/// Why `[model]` (or a `[models.NAME]`) could not be turned into a model. Each message starts
/// with the setting to fix; `table` is `model` or `models.NAME`.
#[derive(Debug, thiserror::Error)]
pub enum ModelBuildError {
    #[error("{table}.api_key_env: environment variable {variable} is not set")]
    MissingKey { table: String, variable: String },
    #[error("{table}.model: is required for {table}.provider = \"{provider}\"")]
    MissingModel {
        table: String,
        provider: &'static str,
    },
    #[error("{table}.base_url: `{url}` is not an http(s) URL")]
    InvalidBaseUrl { table: String, url: String },
    #[error("{table}.script: is required when {table}.provider = \"scripted\"")]
    MissingScript { table: String },
    #[error("{table}.script: {source}")]
    Script { table: String, source: ScriptError },
    /// Not a setting's fault: the TLS backend or the system's resolver failed.
    #[error("model: the HTTP client could not start: {0}")]
    Client(String),
    #[error("{table}.provider: is required; use \"openai\", \"anthropic\" or \"scripted\"")]
    MissingProvider { table: String },
}
