//! `build_model`: which model `[model]` gives, which settings it insists on, and how the result
//! describes itself.

use std::io::Write;
use std::path::{Path, PathBuf};

use tiny_harness::base::config::{ModelConfig, Provider};
use tiny_harness::base::model::{
    ModelBuildError, ModelError, ModelRequest, NO_MODEL_EXPLANATION, build_model,
};

fn config(provider: Option<Provider>) -> ModelConfig {
    ModelConfig {
        provider,
        base_url: None,
        model: None,
        api_key_env: None,
        timeout: 30,
        max_output_tokens: 1000,
        context_window_tokens: Some(64_000),
        max_retries: 0,
        script: None,
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn same(path: &Path) -> PathBuf {
    path.to_path_buf()
}

fn request() -> ModelRequest {
    ModelRequest {
        instructions: "".into(),
        messages: Vec::new(),
        tools: Vec::new().into(),
        max_output_tokens: None,
        purpose: Default::default(),
        ..ModelRequest::default()
    }
}

mod build_model {
    use super::*;

    #[tokio::test]
    async fn no_provider_gives_a_model_that_explains_what_to_set() {
        let model = build_model(&config(None), same, no_env).unwrap();
        assert_eq!(model.describe(), "none (no model configured)");
        match model.complete(&request()).await.unwrap_err() {
            ModelError::NotConfigured(why) => assert_eq!(why, NO_MODEL_EXPLANATION),
            other => panic!("expected NotConfigured, got {other:?}"),
        }
    }

    #[test]
    fn openai_itself_without_a_key_names_the_variable() {
        let err = build_model(&config(Some(Provider::Openai)), same, no_env).unwrap_err();
        assert!(matches!(err, ModelBuildError::MissingKey { .. }));
        assert_eq!(
            err.to_string(),
            "model.api_key_env: environment variable OPENAI_API_KEY is not set"
        );
    }

    #[test]
    fn anthropic_itself_without_a_key_names_the_configured_variable() {
        let mut anthropic = config(Some(Provider::Anthropic));
        anthropic.model = Some("claude-test".to_string());
        anthropic.api_key_env = Some("MY_CLAUDE_KEY".to_string());
        let err = build_model(&anthropic, same, no_env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "model.api_key_env: environment variable MY_CLAUDE_KEY is not set"
        );
    }

    #[test]
    fn anthropic_needs_a_model_name() {
        let err = build_model(&config(Some(Provider::Anthropic)), same, |_| {
            Some("key".to_string())
        })
        .unwrap_err();
        assert!(err.to_string().starts_with("model.model:"), "{err}");
    }

    #[test]
    fn a_custom_base_url_runs_without_a_key() {
        let mut local = config(Some(Provider::Openai));
        local.base_url = Some("http://127.0.0.1:1234/v1/".to_string());
        let model = build_model(&local, same, no_env).unwrap();
        assert_eq!(
            model.describe(),
            "openai gpt-4o-mini at http://127.0.0.1:1234/v1"
        );
        assert_eq!(model.context_window(), Some(64_000));
    }

    #[test]
    fn a_key_in_the_environment_is_enough_for_openai_itself() {
        let mut openai = config(Some(Provider::Openai));
        openai.model = Some("gpt-test".to_string());
        let model = build_model(&openai, same, |name| {
            (name == "OPENAI_API_KEY").then(|| "sk-test".to_string())
        })
        .unwrap();
        assert_eq!(
            model.describe(),
            "openai gpt-test at https://api.openai.com/v1"
        );
        assert!(!model.describe().contains("sk-test"));
    }

    #[test]
    fn a_base_url_that_is_not_http_is_refused() {
        let mut odd = config(Some(Provider::Openai));
        odd.base_url = Some("ftp://example.com/v1".to_string());
        let err = build_model(&odd, same, no_env).unwrap_err();
        assert!(err.to_string().starts_with("model.base_url:"), "{err}");
    }

    #[tokio::test]
    async fn the_script_is_found_relative_to_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = std::fs::File::create(dir.path().join("script.toml")).unwrap();
        file.write_all(b"[[reply]]\ntext = \"hello\"\n").unwrap();
        let mut scripted = config(Some(Provider::Scripted));
        scripted.script = Some(PathBuf::from("script.toml"));
        let model = build_model(&scripted, |path| dir.path().join(path), no_env).unwrap();
        assert!(
            model.describe().starts_with("scripted "),
            "{}",
            model.describe()
        );
        assert!(model.describe().ends_with("script.toml"));
        assert_eq!(model.context_window(), Some(64_000));
        assert_eq!(model.complete(&request()).await.unwrap().text, "hello");
    }

    #[test]
    fn a_broken_script_is_reported_under_model_script() {
        let mut scripted = config(Some(Provider::Scripted));
        scripted.script = Some(PathBuf::from("/no/such/script.toml"));
        let err = build_model(&scripted, same, no_env).unwrap_err();
        assert!(err.to_string().starts_with("model.script:"), "{err}");
        assert!(err.to_string().contains("/no/such/script.toml"), "{err}");
    }
}
