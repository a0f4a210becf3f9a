//! The stand-in when no model is configured: the harness still starts, serves its card and
//! accepts tasks, and each task fails with a message that says what to set.

use async_trait::async_trait;

use super::{Model, ModelError, ModelReply, ModelRequest};

/// What a task's failure says when there is no model: the settings that would give it one.
pub const NO_MODEL_EXPLANATION: &str = "set [model] provider in config.toml, or OPENAI_API_KEY / \
     OPENAI_BASE_URL (and OPENAI_MODEL) in the environment";

/// A model that refuses every call with [`NO_MODEL_EXPLANATION`].
///
/// Starting without a model, rather than refusing to start, lets `harness serve` run from the
/// embedded default on a machine with no key and still explain itself to the first caller.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnconfiguredModel {
    context_window: Option<usize>,
}

impl UnconfiguredModel {
    /// A stand-in that reports `context_window` (`model.context_window_tokens`) if asked.
    pub fn new(context_window: Option<usize>) -> UnconfiguredModel {
        UnconfiguredModel { context_window }
    }
}

#[async_trait]
impl Model for UnconfiguredModel {
    fn describe(&self) -> String {
        "none (no model configured)".to_string()
    }

    fn context_window(&self) -> Option<usize> {
        self.context_window
    }

    async fn complete(&self, _request: &ModelRequest) -> Result<ModelReply, ModelError> {
        Err(ModelError::NotConfigured(NO_MODEL_EXPLANATION.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_call_explains_what_to_set() {
        let model = UnconfiguredModel::default();
        let request = ModelRequest {
            instructions: "".into(),
            messages: Vec::new(),
            tools: Vec::new().into(),
            max_output_tokens: None,
            purpose: Default::default(),
            ..ModelRequest::default()
        };
        let err = model.complete(&request).await.unwrap_err();
        assert!(matches!(err, ModelError::NotConfigured(_)));
        assert!(err.to_string().contains("OPENAI_API_KEY"));
        assert_eq!(model.describe(), "none (no model configured)");
    }
}
