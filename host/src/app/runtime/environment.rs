//! What start-up reads from the process environment (model keys, the delegators' and callers'
//! tokens, the agents' tokens, API keys and OAuth2 secrets), read and checked in one place:
//! `harness serve` builds with it and `harness check` calls it too, so check fails exactly
//! where serve would.

use std::collections::HashMap;
use std::sync::Arc;

use super::StartError;
use super::parts::{agent_secrets, agent_tokens};
use crate::app::server::identity::Credentials;
use crate::base::config::Config;
use crate::base::model::{Model, Models, build_model, build_models};
use crate::work::agents::client::AgentSecrets;

/// Everything start-up takes from the environment, each variable present and well-formed.
pub struct FromEnvironment {
    /// The default model (`[model]`) and every `[models.NAME]`.
    pub models: Models,
    /// `self`'s secret, the trusted delegators' and the token callers' tokens.
    pub credentials: Arc<Credentials>,
    /// The bearer token presented to each agent with `token_env`.
    pub(super) agent_tokens: HashMap<String, String>,
    /// The API key or OAuth2 client secret of each agent configured with one.
    pub(super) agent_secrets: HashMap<String, AgentSecrets>,
}

impl FromEnvironment {
    /// Builds `[model]` with the keys `env` gives, then [`FromEnvironment::read_around`].
    pub fn read(
        config: &Config,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<FromEnvironment, StartError> {
        let model = build_model(&config.model, |path| config.resolve(path), env)?;
        FromEnvironment::read_around(config, model, env)
    }

    /// Reads every variable the configuration names with `env`, `model` standing for
    /// `[model]` (tests and benchmarks give their own). The first variable that is unset or
    /// refused is a [`StartError::Config`] or [`StartError::Model`] naming its setting, in
    /// the order start-up has always checked them: named models, delegators and callers,
    /// agents' tokens, agents' secrets.
    pub fn read_around(
        config: &Config,
        model: Arc<dyn Model>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<FromEnvironment, StartError> {
        let models = build_models(model, &config.models, |path| config.resolve(path), env)?;
        let credentials = Arc::new(Credentials::from_config(&config.server, env)?);
        let agent_tokens = agent_tokens(config, env)?;
        let agent_secrets = agent_secrets(config, env)?;
        Ok(FromEnvironment {
            models,
            credentials,
            agent_tokens,
            agent_secrets,
        })
    }
}
