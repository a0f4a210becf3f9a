//! The parts start-up builds from a configuration, one function each (the agents and their
//! roster, the children's settings, the static prefix, skills, plugins, input limits): what
//! [`super::Runtime::start`], `harness check` and `harness context` share.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::app::server::identity::BearerVerifier;
use crate::app::server::oidc::Oidc;
use crate::base::config::{Config, ConfigError};
use crate::base::model::{Model, Models};
use crate::state::tasks::hops::HopRules;
use crate::state::tasks::input_limit::{InputLimit, InputLimits};
use crate::work::agents::client::AgentSecrets;
use crate::work::agents::client::oauth2::{OAuth2Client, TokenSource};
use crate::work::agents::{
    Discovery, Registry, Roster, RosterEntry, build_roster, own_card, render_agents_with_models,
};
use crate::work::context::StaticPrefix;
use crate::work::context::budget::{BYTES_PER_TOKEN, max_input_tokens, turn_budget};
use crate::work::engine::children::ChildSettings;
use crate::work::mcp::{McpError, McpTools, Tools};
use crate::work::plugins::{
    AgentEntry, CallLimits, PluginHost, PluginParticipant, PluginSettings, PluginSkill,
    PromptContext, SkillSummary,
};
use crate::work::skills::{Catalog, SkillError};

/// Fetches and checks every configured agent's card (all at once) and builds the roster the
/// model and the plugins see; this harness (`self`) is reached at `base_url`. The refused
/// agents are in the discovery: those whose card could not be fetched are tried again later.
pub async fn discover_agents(config: &Config, base_url: &str) -> (Discovery, Roster) {
    let discovery = Registry::discover(
        own_card(&config.card, base_url),
        base_url,
        &config.agents,
        config.roster.card_timeout(),
    )
    .await;
    let roster = build_roster(&discovery.registry, config.roster.caps());
    (discovery, roster)
}

/// How children are created and followed, from `[limits]`, `agents` and the card.
pub(super) fn child_settings(
    config: &Config,
    self_secret: &str,
    tokens: HashMap<String, String>,
    secrets: HashMap<String, AgentSecrets>,
    hops: &HopRules,
) -> ChildSettings {
    ChildSettings {
        self_secret: self_secret.to_string(),
        tokens,
        delegator_of: config
            .agents
            .iter()
            .filter(|agent| agent.is_delegator())
            .map(|agent| agent.id.clone())
            .collect(),
        secrets,
        participant_id: own_card(&config.card, &config.server.effective_base_url()).name,
        max_depth: config.limits.max_subtask_depth,
        max_children: config.limits.max_children_per_task,
        max_parallel: config.limits.max_parallel_children,
        hops: hops.clone(),
        models: model_names(config),
        unreachable_after: std::time::Duration::from_secs(config.limits.subtask_unreachable_secs),
        deadline: std::time::Duration::from_secs(config.limits.subtask_deadline_secs),
    }
}

/// The bearer token this harness presents to each agent with `token_env`, read with `env`. A
/// variable that is not set is a configuration error naming the setting: the operator meant
/// this harness to be trusted there, and it would not be.
pub(super) fn agent_tokens(
    config: &Config,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<HashMap<String, String>, ConfigError> {
    let mut tokens = HashMap::new();
    for (index, agent) in config.agents.iter().enumerate() {
        let Some(variable) = &agent.token_env else {
            continue;
        };
        match env(variable).filter(|token| !token.is_empty()) {
            Some(token) => {
                tokens.insert(agent.id.clone(), token);
            }
            None => {
                return Err(ConfigError::invalid(
                    format!("agents[{index}].token_env"),
                    format!(
                        "environment variable {variable} is not set or is empty; export the bearer token agent `{}` knows this harness by",
                        agent.id
                    ),
                ));
            }
        }
    }
    Ok(tokens)
}

/// The API key and OAuth2 client secret of each agent configured with them, read with `env`.
/// A variable that is not set is a configuration error naming the setting, as for `token_env`.
/// Tokens are not fetched here: the token endpoint is asked on the first call to the agent.
pub(super) fn agent_secrets(
    config: &Config,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<HashMap<String, AgentSecrets>, ConfigError> {
    let read = |setting: String, variable: &str, what: &str| {
        env(variable)
            .filter(|value| !value.is_empty())
            .ok_or_else(|| {
                ConfigError::invalid(
                    setting,
                    format!(
                        "environment variable {variable} is not set or is empty; export {what}"
                    ),
                )
            })
    };
    let mut secrets = HashMap::new();
    for (index, agent) in config.agents.iter().enumerate() {
        let mut found = AgentSecrets::default();
        if let Some(variable) = &agent.api_key_env {
            let what = format!("the API key agent `{}` knows this harness by", agent.id);
            found.api_key = Some(read(
                format!("agents[{index}].api_key_env"),
                variable,
                &what,
            )?);
        }
        if let Some(oauth2) = &agent.oauth2 {
            let setting = format!("agents[{index}].oauth2.client_secret_env");
            let what = format!("the client secret of client `{}`", oauth2.client_id);
            let client_secret = read(setting, &oauth2.client_secret_env, &what)?;
            let source = TokenSource::new(OAuth2Client {
                token_url: oauth2.token_url.clone(),
                client_id: oauth2.client_id.clone(),
                client_secret,
                scopes: oauth2.scopes.clone(),
            })
            .map_err(|err| {
                ConfigError::invalid(format!("agents[{index}].oauth2"), err.to_string())
            })?;
            found.oauth2 = Some(Arc::new(source));
        }
        if found.api_key.is_some() || found.oauth2.is_some() {
            secrets.insert(agent.id.clone(), found);
        }
    }
    Ok(secrets)
}

/// The static prefix every model call of this harness starts with.
pub fn static_prefix(
    config: &Config,
    plugins: &PluginHost,
    roster: &Roster,
    skills: &Catalog,
) -> StaticPrefix {
    static_prefix_from(config, &plugins.prompt().render(), roster, skills)
}

/// [`static_prefix`] from the plugins' composed system prompt, already rendered (an agent
/// joining late rebuilds the prefix with the prompt composed at start-up).
pub fn static_prefix_from(
    config: &Config,
    system_prompt: &str,
    roster: &Roster,
    skills: &Catalog,
) -> StaticPrefix {
    StaticPrefix::build(
        system_prompt,
        &config.participants,
        &skills.entries(),
        &render_agents_with_models(roster, &model_names(config)),
    )
}

/// The names of `[models.*]`, sorted: what a brief or `spawn_subtask` may name as `model`.
pub fn model_names(config: &Config) -> Vec<String> {
    config.models.keys().cloned().collect()
}

/// What one message may bring to the tasks of each model: a share of the model's turn budget
/// (`context::budget`), checked when the message arrives.
pub fn input_limits(config: &Config, models: &Models) -> InputLimits {
    let limit = |model: &Arc<dyn Model>| {
        let budget = turn_budget(config.context.turn_budget_tokens, model.context_window());
        InputLimit {
            budget_tokens: budget,
            max_tokens: max_input_tokens(budget),
            bytes_per_token: BYTES_PER_TOKEN,
        }
    };
    InputLimits {
        default: Some(limit(models.default_model())),
        named: models
            .names()
            .into_iter()
            .filter_map(|name| {
                let model = models.resolve(Some(&name)).ok()?;
                Some((name, limit(model)))
            })
            .collect(),
    }
}

/// Reads and checks every skill of `[skills] dirs` (by default `skills` beside the
/// configuration file, if it exists).
pub fn load_skills(config: &Config) -> Result<Catalog, SkillError> {
    Catalog::load(&config.skills.folders(|path| config.resolve(path)))
}

/// What `harness context` prints: the static prefix exactly as the model receives it, then each
/// tool definition as the JSON sent beside it, sorted by name.
pub fn render_context(
    config: &Config,
    plugins: &PluginHost,
    tools: &Tools,
    roster: &Roster,
    skills: &Catalog,
) -> Result<String, serde_json::Error> {
    use crate::work::tools::ToolHost;
    let prefix = static_prefix(config, plugins, roster, skills);
    let mut out = String::new();
    out.push_str("=== static prefix (instructions) ===\n");
    out.push_str(prefix.as_str());
    out.push_str("\n\n=== tools ===\n");
    for tool in tools.definitions() {
        out.push_str(&serde_json::to_string_pretty(&tool)?);
        out.push('\n');
    }
    Ok(out)
}

/// Connects to the `[[mcp]]` servers and puts their tools beside the plugins' (headers read with
/// `env`). A required server that cannot be reached stops start-up naming its entry.
pub async fn connect_tools(
    config: &Config,
    plugins: &PluginHost,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<Tools>, McpError> {
    let mcp = McpTools::connect(&config.mcp, |path| config.resolve(path), env).await?;
    Ok(Arc::new(Tools::new(plugins.toolbox(), Arc::new(mcp))?))
}

/// The plugin folder, cache and limits from `[plugins]`.
pub fn plugin_settings(config: &Config) -> PluginSettings {
    let plugins = &config.plugins;
    let (dir, dir_required) = match &plugins.dir {
        Some(dir) => (config.resolve(dir), true),
        None => (config.resolve(std::path::Path::new("plugins")), false),
    };
    PluginSettings {
        dir: Some(dir),
        dir_required,
        cache_dir: Some(config.resolve(&plugins.cache_dir)),
        limits: CallLimits {
            memory_bytes: plugins.memory_mb as usize * 1024 * 1024,
            deadline: std::time::Duration::from_millis(plugins.call_timeout_ms),
        },
        threads: plugins.threads,
        max_concurrent_calls: plugins.max_concurrent_calls,
        grants: plugins.grants.clone(),
        ..PluginSettings::default()
    }
}

/// What plugins may know when they render: this harness's card, the roster, the standing
/// participants and the skills index, all cleaned and capped by the host. Never URLs or
/// configuration.
pub fn prompt_context(config: &Config, roster: &Roster, skills: &Catalog) -> PromptContext {
    let entry = |e: &RosterEntry| AgentEntry {
        id: e.id.clone(),
        name: e.name.clone(),
        description: e.description.clone(),
        skills: e
            .skills
            .iter()
            .map(|s| SkillSummary {
                name: s.name.clone(),
                description: s.description.clone(),
            })
            .collect(),
    };
    PromptContext {
        self_card: entry(roster.self_entry()),
        agents: roster.remote().iter().map(entry).collect(),
        participants: config
            .participants
            .iter()
            .map(|p| PluginParticipant {
                id: p.id.clone(),
                kind: p.kind.as_str().to_string(),
                role: p.role.as_str().to_string(),
                display_name: p.display_name.clone(),
            })
            .collect(),
        skills: skills
            .skills()
            .map(|s| PluginSkill {
                name: s.name.clone(),
                description: s.description.clone(),
            })
            .collect(),
    }
}

/// The prompt context of a harness with no remote agents and no skills: its own card only. For
/// tests and benchmarks, which must not reach the network or depend on the working directory.
pub fn offline_prompt_context(config: &Config) -> PromptContext {
    let base_url = config.server.effective_base_url();
    let registry = Registry::new(own_card(&config.card, &base_url), &base_url);
    let roster = build_roster(&registry, config.roster.caps());
    prompt_context(config, &roster, &Catalog::default())
}

/// The configuration `serve` and `check` use: the file given, else `./config.toml` if present,
/// else the embedded default.
pub fn load_config(explicit: Option<&Path>) -> Result<Config, ConfigError> {
    match explicit {
        Some(path) => Config::load(path),
        None if Path::new("config.toml").exists() => Config::load(Path::new("config.toml")),
        None => Ok(crate::base::config::embedded_default()),
    }
}

/// The verifier of `[server.oidc]`, its keys fetched (or, when the issuer cannot be reached,
/// a warning logged and every JWT refused until a later fetch succeeds). Its client follows no
/// redirect: keys are read only from the URL configured or discovered.
pub(super) async fn oidc_verifier(config: &Config) -> Option<Arc<dyn BearerVerifier>> {
    let oidc = config.server.oidc.as_ref()?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default();
    Some(Arc::new(Oidc::start(oidc, client).await))
}

/// Logs who may call: the trusted delegators and token callers by id, and whether anonymous
/// callers are served.
pub(super) fn log_callers(
    credentials: &crate::app::server::identity::Credentials,
    allow_anonymous: bool,
) {
    let trusted: Vec<&str> = credentials.configured_ids().collect();
    if !trusted.is_empty() {
        tracing::info!(delegators = %trusted.join(", "), "trusted delegators");
    }
    let callers: Vec<&str> = credentials.caller_ids().collect();
    tracing::info!(
        callers = %callers.join(", "),
        anonymous = allow_anonymous,
        "callers known by their tokens; anonymous callers {}",
        if allow_anonymous { "served" } else { "refused" }
    );
}
