//! Why a model could not be built from its table: below the providers and the builder, since
//! both return it (a provider's HTTP client that cannot start is a build error too).

use super::scripted::ScriptError;

/// Why `[model]` (or a `[models.NAME]`) could not be turned into a model. Each message starts
/// with the setting to fix; `table` is `model` or `models.NAME`.
#[derive(Debug, thiserror::Error)]
pub enum ModelBuildError {
    /// The provider's own host needs a key and the environment variable naming it is unset:
    /// refused at start-up rather than at the first task's 401.
    #[error("{table}.api_key_env: environment variable {variable} is not set")]
    MissingKey {
        /// `model` or `models.NAME`.
        table: String,
        /// The variable read (`api_key_env`, or the provider's default).
        variable: String,
    },
    /// The provider has no default model (Anthropic) and the table names none.
    #[error("{table}.model: is required for {table}.provider = \"{provider}\"")]
    MissingModel {
        /// `model` or `models.NAME`.
        table: String,
        /// The provider as the configuration writes it.
        provider: &'static str,
    },
    /// `base_url` is not an http(s) URL with a host.
    #[error("{table}.base_url: `{url}` is not an http(s) URL")]
    InvalidBaseUrl {
        /// `model` or `models.NAME`.
        table: String,
        /// The URL as configured, trailing slashes removed.
        url: String,
    },
    /// A scripted model needs its script file.
    #[error("{table}.script: is required when {table}.provider = \"scripted\"")]
    MissingScript {
        /// `model` or `models.NAME`.
        table: String,
    },
    /// The script file could not be read or is not a valid script.
    #[error("{table}.script: {source}")]
    Script {
        /// `model` or `models.NAME`.
        table: String,
        /// What is wrong with the script, naming its line or reply.
        source: ScriptError,
    },
    /// Not a setting's fault: the TLS backend or the system's resolver failed.
    #[error("model: the HTTP client could not start: {0}")]
    Client(String),
    /// A `[models.NAME]` table has no provider: unlike `[model]`, it has no "no model yet" state
    /// to fall back to.
    #[error("{table}.provider: is required; use \"openai\", \"anthropic\" or \"scripted\"")]
    MissingProvider {
        /// `models.NAME`.
        table: String,
    },
}
