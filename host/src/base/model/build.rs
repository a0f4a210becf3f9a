//! Turning `[model]` and each `[models.NAME]` into a model: defaults filled in, the URL checked,
//! the key read from the environment, every error naming the table and key to fix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    AnthropicModel, ConformanceModel, HttpSettings, Model, ModelBuildError, Models, OpenAiModel,
    RetryPolicy, ScriptedModel, UnconfiguredModel, anthropic, openai,
};
use crate::base::config::{ModelConfig, Provider};

/// The model `[model]` describes.
///
/// `resolve` turns `model.script` into a path relative to the configuration file (usually
/// [`crate::base::config::Config::resolve`]); `env` reads environment variables, a parameter so tests
/// need not touch the process environment. A key is required only for the providers' own hosts:
/// a custom `base_url` (Ollama, vLLM, a proxy) may well run without one.
pub fn build_model(
    config: &ModelConfig,
    resolve: impl Fn(&Path) -> PathBuf,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ModelBuildError> {
    build_in_table("model", config, &resolve, &env)
}

/// The default model and one model per `[models.NAME]`, each built as [`build_model`] builds
/// `[model]`; an error names `models.NAME.key`. A named entry needs a provider: unlike the
/// default, it has no "no model yet" state to fall back to.
pub fn build_models(
    default: Arc<dyn Model>,
    named: &BTreeMap<String, ModelConfig>,
    resolve: impl Fn(&Path) -> PathBuf,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Models, ModelBuildError> {
    let mut built = BTreeMap::new();
    for (name, config) in named {
        let table = format!("models.{name}");
        if config.provider.is_none() {
            return Err(ModelBuildError::MissingProvider { table });
        }
        built.insert(
            name.clone(),
            build_in_table(&table, config, &resolve, &env)?,
        );
    }
    Ok(Models::new(default, built))
}

/// The model one table describes; errors start with `{table}.`.
fn build_in_table(
    table: &str,
    config: &ModelConfig,
    resolve: &impl Fn(&Path) -> PathBuf,
    env: &impl Fn(&str) -> Option<String>,
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
            let script =
                config
                    .script
                    .as_deref()
                    .ok_or_else(|| ModelBuildError::MissingScript {
                        table: table.to_string(),
                    })?;
            let model = ScriptedModel::load(&resolve(script))
                .map_err(|source| ModelBuildError::Script {
                    table: table.to_string(),
                    source,
                })?
                .with_context_window(config.context_window_tokens);
            Ok(Arc::new(model))
        }
        Provider::Conformance => Ok(Arc::new(ConformanceModel::new())),
        Provider::Openai => {
            let settings = http_settings(table, config, &OPENAI, env)?;
            Ok(Arc::new(OpenAiModel::new(settings)?))
        }
        Provider::Anthropic => {
            let settings = http_settings(table, config, &ANTHROPIC, env)?;
            Ok(Arc::new(AnthropicModel::new(settings)?))
        }
    }
}

/// What an HTTP provider assumes when its table leaves a setting out.
struct ProviderDefaults {
    provider: Provider,
    base_url: &'static str,
    model: Option<&'static str>,
    key_env: &'static str,
    /// The provider's own host: the only one where a missing key is certain to fail.
    official_host: &'static str,
}

const OPENAI: ProviderDefaults = ProviderDefaults {
    provider: Provider::Openai,
    base_url: openai::OPENAI_DEFAULT_BASE_URL,
    model: Some(openai::OPENAI_DEFAULT_MODEL),
    key_env: "OPENAI_API_KEY",
    official_host: openai::OPENAI_HOST,
};

const ANTHROPIC: ProviderDefaults = ProviderDefaults {
    provider: Provider::Anthropic,
    base_url: anthropic::ANTHROPIC_DEFAULT_BASE_URL,
    model: None,
    key_env: "ANTHROPIC_API_KEY",
    official_host: anthropic::ANTHROPIC_HOST,
};

/// The settings of an HTTP provider: defaults filled in, the URL checked, the key read.
fn http_settings(
    table: &str,
    config: &ModelConfig,
    defaults: &ProviderDefaults,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<HttpSettings, ModelBuildError> {
    let model = config.model.as_deref().or(defaults.model).ok_or_else(|| {
        ModelBuildError::MissingModel {
            table: table.to_string(),
            provider: defaults.provider.as_str(),
        }
    })?;
    let base_url = config
        .base_url
        .as_deref()
        .unwrap_or(defaults.base_url)
        .trim_end_matches('/');
    let host = reqwest::Url::parse(base_url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .ok_or_else(|| ModelBuildError::InvalidBaseUrl {
            table: table.to_string(),
            url: base_url.to_string(),
        })?;
    let variable = config.api_key_env.as_deref().unwrap_or(defaults.key_env);
    let api_key = env(variable).filter(|key| !key.trim().is_empty());
    if api_key.is_none() && host == defaults.official_host {
        return Err(ModelBuildError::MissingKey {
            table: table.to_string(),
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
