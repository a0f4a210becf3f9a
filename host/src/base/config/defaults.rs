//! Default values of every setting, and the embedded configuration `harness serve` runs when no
//! file is given: SQLite under `./.tiny-harness/`, the default card, the model from the environment.

use std::path::PathBuf;

use super::{Config, ModelConfig, Provider};

pub(super) fn bind() -> String {
    "127.0.0.1:8080".to_string()
}

pub(super) fn max_request_bytes() -> usize {
    1024 * 1024
}

pub(super) fn rate_limit_per_minute() -> u32 {
    600
}

pub(super) fn header_read_timeout_secs() -> u64 {
    10
}

pub(super) fn body_read_timeout_secs() -> u64 {
    30
}

pub(super) fn idle_timeout_secs() -> u64 {
    60
}

/// Half the usual default limit of 1,024 open files per process, so the harness's own files and
/// outgoing connections (the model, other agents) still fit when every connection is taken.
pub(super) fn max_connections() -> usize {
    512
}

/// The default share of `max_connections` one caller may hold: a quarter, so that one client
/// (or one peer harness's followers) at its limit leaves three quarters to everyone else.
pub(super) const CALLER_SHARE_DIVISOR: usize = 4;
/// The smallest default share: a client's pool of a few connections plus a few streams, so a
/// small `max_connections` does not cut an ordinary client down to one or two.
pub(super) const MIN_DEFAULT_CONNECTIONS_PER_CALLER: usize = 8;

/// Often enough for proxies and clients with a read timeout of 30 s or more, and for the server
/// to notice a client that went away while its task is quiet (the write fails).
pub(super) fn stream_keep_alive_secs() -> u64 {
    15
}

pub(super) fn model_timeout() -> u64 {
    120
}

pub(super) fn max_output_tokens() -> u32 {
    4096
}

pub(super) fn max_retries() -> u32 {
    3
}

pub(super) fn store_path() -> PathBuf {
    PathBuf::from(".tiny-harness/harness.db")
}

pub(super) fn turn_budget_tokens() -> usize {
    12_000
}

pub(super) fn compaction_fraction() -> f64 {
    0.75
}

pub(super) fn max_turns() -> u32 {
    50
}

pub(super) fn max_subtask_depth() -> u32 {
    4
}

pub(super) fn max_children_per_task() -> u32 {
    32
}

pub(super) fn max_parallel_children() -> u32 {
    8
}

/// Four hops: a front desk, a specialist, and two more behind it is as far as an honest
/// delegation goes; a loop between harnesses is caught sooner by the chain itself.
pub(super) fn max_delegation_hops() -> u32 {
    4
}

pub(super) fn subtask_unreachable_secs() -> u64 {
    300
}

pub(super) fn subtask_deadline_secs() -> u64 {
    3600
}

pub(super) fn plugin_memory_mb() -> u32 {
    64
}

pub(super) fn plugin_call_timeout_ms() -> u64 {
    1000
}

pub(super) fn plugin_cache_dir() -> PathBuf {
    PathBuf::from(".tiny-harness/cache")
}

pub(super) fn plugin_threads() -> usize {
    2
}

pub(super) fn plugin_max_concurrent_calls() -> usize {
    16
}

/// The model used by the embedded default: OpenAI-compatible when `OPENAI_API_KEY` or
/// `OPENAI_BASE_URL` is set (which covers Ollama, vLLM and llama.cpp server too), otherwise none.
/// `OPENAI_MODEL` names the model; it defaults to `gpt-4o-mini`.
pub fn model_from_env(lookup: impl Fn(&str) -> Option<String>) -> ModelConfig {
    let key = lookup("OPENAI_API_KEY").filter(|v| !v.is_empty());
    let base_url = lookup("OPENAI_BASE_URL").filter(|v| !v.is_empty());
    if key.is_none() && base_url.is_none() {
        return ModelConfig::default();
    }
    ModelConfig {
        provider: Some(Provider::Openai),
        base_url,
        model: lookup("OPENAI_MODEL").filter(|v| !v.is_empty()),
        api_key_env: Some("OPENAI_API_KEY".to_string()),
        ..ModelConfig::default()
    }
}

/// The configuration `harness serve` runs with no file: every default, the model from the
/// environment.
pub fn embedded_default() -> Config {
    Config {
        model: model_from_env(|name| std::env::var(name).ok()),
        ..Config::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_model_in_the_environment_means_no_provider() {
        let model = model_from_env(|_| None);
        assert!(model.provider.is_none());
    }

    #[test]
    fn a_base_url_alone_selects_an_openai_compatible_server() {
        let model = model_from_env(|name| {
            (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:11434/v1".to_string())
        });
        assert_eq!(model.provider, Some(Provider::Openai));
        assert_eq!(model.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
    }
}
