//! Start-up: everything `harness serve` builds from a configuration, in order (store, model,
//! agent registry and roster, skills, system prompt and static prefix, engine, task service,
//! server),
//! and the serve loop with its graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::app::push::Push;
use crate::app::server::health::Health;
use crate::app::server::identity::{BearerVerifier, Credentials};
use crate::app::server::router::{ConnectionLimits, ServerState};
use crate::base::config::{Config, ConfigError, EngineKind};
use crate::base::model::{Model, ModelBuildError, Models, build_model};
use crate::base::protocol::card::AgentCard;
use crate::state::store::{LockError, Store, StoreError, StoreLock};
use crate::state::tasks::Tasks;
use crate::state::tasks::creator::BriefRules;
use crate::state::tasks::hops::{HopRules, InstanceId};
use crate::state::tasks::hub::TaskHub;
use crate::work::agents::{LiveRegistry, Roster};
use crate::work::context::LivePrefix;
use crate::work::engine::children::Children;
use crate::work::engine::{Engine, EngineParts, EngineSettings, HostEffects, wake_queue};
use crate::work::plugins::{PluginError, PluginHost};
use crate::work::skills::{Catalog, SkillError};
use late_agents::LateAgents;

mod engine;
use engine::{lock_mode, start_engine};
mod environment;
mod grpc;
mod late_agents;
pub mod logging;
mod parts;
pub mod telemetry;

pub use environment::FromEnvironment;
use parts::{child_settings, log_callers, oidc_verifier};
pub use parts::{
    connect_tools, discover_agents, input_limits, load_config, load_skills, model_names,
    offline_prompt_context, plugin_settings, prompt_context, render_context, static_prefix,
};

/// Why the harness could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    /// The configuration is invalid.
    Config(#[from] ConfigError),
    #[error(transparent)]
    /// A `[model]` or `[models.*]` could not be built.
    Model(#[from] ModelBuildError),
    #[error(transparent)]
    /// The store could not be opened or read.
    Store(#[from] StoreError),
    /// Another process holds the store (`store.path`): see [`crate::state::store::StoreLock`].
    #[error(transparent)]
    StoreInUse(#[from] LockError),
    #[error(transparent)]
    /// A plugin could not be loaded.
    Plugin(#[from] PluginError),
    #[error(transparent)]
    /// A required `[[mcp]]` server could not be reached, or its tools cannot be offered.
    Mcp(#[from] crate::work::mcp::McpError),
    #[error(transparent)]
    /// A skill could not be read.
    Skill(#[from] SkillError),
    #[error("cannot listen on {addr}: {source} (set {setting} to a free address)")]
    /// `server.bind` (or `server.grpc_bind`) could not be bound.
    Bind {
        /// The setting: `server.bind` or `server.grpc_bind`.
        setting: &'static str,
        /// The address, as configured.
        addr: String,
        /// Why the bind failed.
        source: std::io::Error,
    },
    #[error(transparent)]
    /// Traces could not be set up (`[telemetry] otlp_endpoint`).
    Telemetry(#[from] telemetry::TelemetryError),
    #[error("server error: {0}")]
    /// The server stopped on an I/O error.
    Serve(std::io::Error),
    /// The Temporal engine could not start (`[engine] kind = "temporal"`).
    #[cfg(feature = "temporal")]
    #[error(transparent)]
    Temporal(#[from] crate::work::engine::temporal::TemporalError),
}

/// A harness, built and ready to serve.
pub struct Runtime {
    /// The configuration the harness was built from.
    pub config: Config,
    /// `server.bind`, bound first so that every part knows the base URL.
    listener: TcpListener,
    /// `server.base_url`, else `http://{the bound address}`.
    base_url: String,
    /// `server.grpc_bind`, bound beside `listener`, when set.
    grpc: Option<grpc::GrpcListener>,
    /// The store (`store.path`).
    pub store: Arc<Store>,
    /// The task service every binding serves.
    pub tasks: Arc<Tasks>,
    /// The embedded engine, or the Temporal one (`[engine] kind`).
    pub engine: Arc<dyn Engine>,
    /// `[model]`, the default.
    pub model: Arc<dyn Model>,
    /// The default and every `[models.NAME]`.
    pub models: Models,
    /// The builtin plugin and the operator's, loaded.
    pub plugins: PluginHost,
    /// The tools the model may call: the plugins' and the `[[mcp]]` servers'.
    pub tools: Arc<crate::work::mcp::Tools>,
    /// The static prefix every model call starts with, built here, and rebuilt once for each
    /// agent that joins the roster later.
    pub prefix: LivePrefix,
    /// `self` and the remote agents whose cards passed (at start-up, or later for an agent
    /// that was unreachable then).
    pub registry: Arc<LiveRegistry>,
    /// What the model knows of each agent registered at start-up, as rendered in the `agents`
    /// section.
    pub roster: Roster,
    /// The skills the model may load, read and checked at start-up.
    pub skills: Arc<Catalog>,
    /// Creates, follows and cancels child tasks over A2A.
    pub children: Arc<Children>,
    /// Who may shape a new task's brief: `self` (this process's secret) and
    /// `[[server.trusted_delegators]]`, and the token callers of `[[server.callers]]`.
    pub credentials: Arc<Credentials>,
    /// Verifies the bearer JWTs of `[server.oidc]`, when it is configured.
    pub verifier: Option<Arc<dyn BearerVerifier>>,
    /// Indices in `config.agents` of the agents whose card could not be fetched at start-up:
    /// tried again while serving ([`late_agents`]).
    unreachable: Vec<usize>,
    /// Push notifications, when `[push]` offers them.
    push: Option<Push>,
    /// This process's hold on `store.path`, kept until the runtime is dropped (after serving
    /// has stopped and the engine with it).
    _store_lock: StoreLock,
}

impl Runtime {
    /// Builds the harness from its configuration, the model from `[model]`. Fetches the remote
    /// agents' cards, so it takes as long as the slowest (at most `roster.card_timeout_secs`).
    pub async fn build(config: Config) -> Result<Runtime, StartError> {
        Runtime::build_with_env(config, |name| std::env::var(name).ok()).await
    }

    /// [`Runtime::build`], every environment variable (keys, tokens) read with `env`, so tests
    /// can build a whole harness without touching the process environment.
    pub async fn build_with_env(
        config: Config,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Runtime, StartError> {
        let model = build_model(&config.model, |path| config.resolve(path), &env)?;
        Runtime::build_with_model_and_env(config, model, env).await
    }

    /// Builds the harness around a given model (tests and benchmarks), the delegators' tokens
    /// read from the process environment.
    pub async fn build_with_model(
        config: Config,
        model: Arc<dyn Model>,
    ) -> Result<Runtime, StartError> {
        Runtime::build_with_model_and_env(config, model, |name| std::env::var(name).ok()).await
    }

    /// Builds the harness around a given default model (the named ones still from
    /// `[models.*]`), reading keys and the delegators' tokens with `env`, so tests can give them
    /// without touching the process environment. A token that is missing is a configuration
    /// error: a harness must not serve with a delegator it cannot recognise.
    pub async fn build_with_model_and_env(
        config: Config,
        model: Arc<dyn Model>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Runtime, StartError> {
        // Every variable first, as `harness check` reads them: check fails where this would.
        let FromEnvironment {
            models,
            credentials,
            agent_tokens,
            agent_secrets,
        } = FromEnvironment::read_around(&config, model.clone(), &env)?;
        let verifier = oidc_verifier(&config).await;
        if config.model.provider.is_none() {
            tracing::warn!(
                "no model is configured: every task will fail until one is. {}",
                crate::base::model::unconfigured::NO_MODEL_EXPLANATION
            );
        }
        // Before anything else that touches the store or the address: a second process on the
        // same store is told so, not that its port is taken.
        let store_path = config.resolve(&config.store.path);
        let store_lock = StoreLock::acquire(&store_path, lock_mode(config.engine.kind))?;
        // Bound next: the base URL (port 0 picks one) is what children on `self` are sent to
        // and what the card says, so every part below is built knowing it.
        let listener = bind(&config.server).await?;
        let local = listener.local_addr().map_err(StartError::Serve)?;
        let base_url = base_url(&config, local);
        let grpc = grpc::bind(&config.server).await?;
        let store = Arc::new(Store::open(&store_path)?);
        let hub = match config.engine.kind {
            // Every loop of the store's tasks runs here: records may be kept between steps.
            EngineKind::Embedded => TaskHub::new(store.clone()),
            // Steps run on whichever worker takes them, on a store others write too.
            EngineKind::Temporal => TaskHub::over_shared_store(store.clone()),
        };
        let (hub, push) = Push::attach(hub, &config.push);
        let (discovery, roster) = discover_agents(&config, &base_url).await;
        let unreachable = LateAgents::unreachable(&discovery, &config);
        let registry = Arc::new(LiveRegistry::new(discovery.registry));
        let skills = Arc::new(load_skills(&config)?);
        let (wake_sender, wake_receiver) = wake_queue();
        // This process in delegation chains: what its children carry and what a new task's
        // chain is checked against.
        let hops = HopRules {
            instance: InstanceId::generate(),
            max_hops: config.limits.max_delegation_hops,
        };
        tracing::info!(
            instance = hops.instance.as_str(),
            max_delegation_hops = hops.max_hops,
            "delegation chains name this harness by its instance id"
        );
        let children = Arc::new(Children::new(
            hub.clone(),
            registry.clone(),
            child_settings(
                &config,
                credentials.self_secret(),
                agent_tokens,
                agent_secrets,
                &hops,
            ),
            &base_url,
            wake_sender,
        ));
        let effects = Arc::new(HostEffects::new(
            registry.clone(),
            children.clone(),
            skills.clone(),
        ));
        let context = prompt_context(&config, &roster, &skills);
        let plugins = PluginHost::load(&plugin_settings(&config), &context, effects).await?;
        let tools = connect_tools(&config, &plugins, &env).await?;
        let prefix = LivePrefix::new(static_prefix(&config, &plugins, &roster, &skills));
        let settings = EngineSettings {
            max_turns: config.limits.max_turns,
            turn_budget_tokens: config.context.turn_budget_tokens,
            compaction_fraction: config.context.compaction_fraction,
            // Each model's own `max_output_tokens` applies: its provider fills it in.
            max_output_tokens: None,
            task_token_budget: config.limits.task_token_budget,
        };
        let parts = EngineParts {
            hub: hub.clone(),
            models: models.clone(),
            tools: tools.clone(),
            prefix: prefix.clone(),
            settings,
            children: Some((children.clone(), wake_receiver)),
            skills: skills.clone(),
        };
        let engine = start_engine(&config, parts).await?;
        let rules = BriefRules {
            models: model_names(&config),
            task_token_budget: config.limits.task_token_budget,
            hops,
        };
        let tasks = Arc::new(
            Tasks::with_rules(hub, engine.clone(), rules)
                .with_input_limits(input_limits(&config, &models)),
        );
        Ok(Runtime {
            config,
            listener,
            base_url,
            grpc,
            store,
            tasks,
            engine,
            model,
            models,
            plugins,
            tools,
            prefix,
            registry,
            roster,
            skills,
            children,
            credentials,
            verifier,
            unreachable,
            push,
            _store_lock: store_lock,
        })
    }

    /// Where this harness listens (`server.bind`, bound when it was built).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has a local address")
    }

    /// The URL other agents reach this harness at: `server.base_url`, else the bound address.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The card this harness serves, reachable at `base_url`: the default card with `[card]`
    /// laid on top, and the security `[server]` configures.
    pub fn card(&self, base_url: &str) -> AgentCard {
        grpc::cards(&self.config, base_url, self.grpc.as_ref()).0
    }

    /// Resumes every open task, then serves until `shutdown` resolves; in-flight
    /// requests finish, task loops stop (to resume at the next start), and the store is closed.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let local = self.local_addr();
        let base_url = self.base_url.clone();
        let resumed = self.engine.resume_open()?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed open tasks from the journal");
        }
        let followed = self.children.resume()?;
        if followed > 0 {
            tracing::info!(followed, "following open sub-tasks again");
        }
        let (mut card, extended_card) = grpc::cards(&self.config, &base_url, self.grpc.as_ref());
        card.capabilities.push_notifications = Some(self.push.is_some());
        let _push_worker = self.push.as_ref().map(|p| p.start(self.store.clone()));
        let traces =
            telemetry::Traces::start(&self.config, &card.name, |name| std::env::var(name).ok())?;
        let state = ServerState {
            service: self.tasks.clone(),
            card,
            extended_card,
            credentials: self.credentials.clone(),
            verifier: self.verifier.clone(),
            allow_anonymous: self.config.server.anonymous_allowed(),
            max_request_bytes: self.config.server.max_request_bytes,
            rate_limit_per_minute: self.config.server.rate_limit_per_minute,
            stream_keep_alive: std::time::Duration::from_secs(
                self.config.server.stream_keep_alive_secs,
            ),
            health: Arc::new(Health::new(self.store.clone(), self.engine.clone())),
            metrics: self.config.metrics_served(),
            push: self.push.as_ref().map(|push| push.configs.clone()),
        };
        log_callers(&self.credentials, state.allow_anonymous);
        let store_path = self.config.resolve(&self.config.store.path);
        let plugins_dir = plugin_settings(&self.config).dir.unwrap_or_default();
        // Scripts and tests read the address after `listening on `: it stays first.
        tracing::info!(
            "tiny-harness {} listening on http://{local} (base URL {base_url}); store: {}; plugins folder: {}{}; model: {}",
            env!("CARGO_PKG_VERSION"),
            store_path.display(),
            plugins_dir.display(),
            if plugins_dir.is_dir() {
                ""
            } else {
                " (absent: builtin plugin only)"
            },
            self.model.describe()
        );
        for (name, model) in self.models.describe_named() {
            tracing::info!("models.{name}: {model}");
        }
        let limits = ConnectionLimits::from_config(&self.config.server);
        let stop_late = tokio_util::sync::CancellationToken::new();
        LateAgents::new(
            self.config.clone(),
            base_url.clone(),
            self.plugins.prompt().render(),
            self.skills.clone(),
            self.registry.clone(),
            self.prefix.clone(),
            self.unreachable.clone(),
        )
        .start(&stop_late);
        self.tools.start_late(&stop_late);
        let result = grpc::serve_all(self.listener, self.grpc, state, limits, shutdown).await;
        stop_late.cancel();
        self.engine.shutdown().await;
        self.children.shutdown().await;
        traces.shutdown().await;
        tracing::info!("stopped");
        result.map_err(StartError::Serve)
    }
}

/// Binds `server.bind`, `localhost:PORT` as the loopback address the configuration's checks
/// took it for (not whatever a resolver answers).
async fn bind(server: &crate::base::config::ServerConfig) -> Result<TcpListener, StartError> {
    let refused = |source| StartError::Bind {
        setting: "server.bind",
        addr: server.bind.clone(),
        source,
    };
    let addr = server.bind_addr().ok_or_else(|| {
        refused(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a socket address",
        ))
    })?;
    TcpListener::bind(addr).await.map_err(refused)
}

/// `server.base_url`, else `http://{local}`: where other agents, and this harness's own
/// children, reach it.
fn base_url(config: &Config, local: SocketAddr) -> String {
    match &config.server.base_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => format!("http://{local}"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::parts::{agent_secrets, agent_tokens};
    use super::*;
    use crate::state::tasks::input_limit::InputLimit;
    use crate::work::agents::{Registry, build_roster, own_card};

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("config.toml")).unwrap()
    }

    #[test]
    fn each_model_gets_a_quarter_of_its_own_turn_budget_for_one_message() {
        let window = |tokens: Option<usize>| -> Arc<dyn Model> {
            Arc::new(crate::base::model::UnconfiguredModel::new(tokens))
        };
        let models = Models::new(
            window(None),
            std::collections::BTreeMap::from([
                ("small".to_string(), window(Some(2_000))),
                ("large".to_string(), window(Some(200_000))),
            ]),
        );
        let limits = input_limits(&config("[context]\nturn_budget_tokens = 16000\n"), &models);
        let limit = |budget_tokens: usize, max_tokens: usize| InputLimit {
            budget_tokens,
            max_tokens,
            bytes_per_token: 4,
        };
        assert_eq!(limits.default, Some(limit(16_000, 4_000)));
        assert_eq!(
            limits.named["small"],
            limit(2_000, 500),
            "its window is smaller"
        );
        assert_eq!(
            limits.named["large"],
            limit(16_000, 4_000),
            "the setting is smaller"
        );
    }

    #[test]
    fn plugins_read_the_skills_index_in_their_prompt_context() {
        let skill = |name: &str, description: &str| crate::work::skills::Skill {
            name: name.into(),
            description: description.into(),
            body: "body".into(),
            file: format!("/skills/{name}/SKILL.md").into(),
        };
        let skills = Catalog::from_skills([
            skill("style", "How replies are written."),
            skill("bookkeeping", "The ledger's rules."),
        ]);
        let config = config("");
        let base_url = config.server.effective_base_url();
        let registry = Registry::new(own_card(&config.card, &base_url), &base_url);
        let context = prompt_context(
            &config,
            &build_roster(&registry, config.roster.caps()),
            &skills,
        );
        let listed: Vec<(String, String)> = context
            .skills
            .into_iter()
            .map(|s| (s.name, s.description))
            .collect();
        assert_eq!(
            listed,
            [
                ("bookkeeping".into(), "The ledger's rules.".into()),
                ("style".into(), "How replies are written.".into())
            ]
        );
        assert!(offline_prompt_context(&config).skills.is_empty());
    }

    #[test]
    fn an_agent_token_comes_from_its_variable() {
        let config = config(
            "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:1\"\ntoken_env = \"LEDGER_TOKEN\"\n",
        );
        let tokens = agent_tokens(&config, &|name| {
            (name == "LEDGER_TOKEN").then(|| "t".repeat(32))
        })
        .unwrap();
        assert_eq!(tokens["ledger"], "t".repeat(32));
    }

    #[test]
    fn a_missing_agent_token_names_the_setting_and_the_variable_golden() {
        let config = config(
            "[[agents]]\nid = \"a\"\nurl = \"http://127.0.0.1:1\"\n[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:2\"\ntoken_env = \"LEDGER_TOKEN\"\n",
        );
        let err = agent_tokens(&config, &|_| None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "agents[1].token_env: environment variable LEDGER_TOKEN is not set or is empty; export the bearer token agent `ledger` knows this harness by"
        );
    }

    #[test]
    fn a_missing_api_key_or_client_secret_names_the_setting_and_the_variable_golden() {
        let api_key = config(
            "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:1\"\napi_key_env = \"LEDGER_KEY\"\n",
        );
        assert_eq!(
            agent_secrets(&api_key, &|_| None).unwrap_err().to_string(),
            "agents[0].api_key_env: environment variable LEDGER_KEY is not set or is empty; export the API key agent `ledger` knows this harness by"
        );
        let oauth2 = config(
            "[[agents]]\nid = \"ledger\"\nurl = \"http://127.0.0.1:1\"\n[agents.oauth2]\ntoken_url = \"http://127.0.0.1:2/t\"\nclient_id = \"desk\"\nclient_secret_env = \"LEDGER_SECRET\"\n",
        );
        assert_eq!(
            agent_secrets(&oauth2, &|_| Some(String::new()))
                .unwrap_err()
                .to_string(),
            "agents[0].oauth2.client_secret_env: environment variable LEDGER_SECRET is not set or is empty; export the client secret of client `desk`"
        );
    }

    #[test]
    fn the_children_settings_print_no_secret() {
        let config = config(
            "[[agents]]\nid = \"a\"\nurl = \"http://127.0.0.1:1\"\ntoken_env = \"A\"\n[[agents]]\nid = \"b\"\nurl = \"http://127.0.0.1:2\"\napi_key_env = \"B\"\n[[agents]]\nid = \"c\"\nurl = \"http://127.0.0.1:3\"\n[agents.oauth2]\ntoken_url = \"http://127.0.0.1:4/t\"\nclient_id = \"desk\"\nclient_secret_env = \"C\"\n",
        );
        let env = |name: &str| Some(format!("secret-of-{name}-0123456789"));
        let hops = HopRules {
            instance: InstanceId::generate(),
            max_hops: 4,
        };
        let settings = child_settings(
            &config,
            "self-secret-0123456789",
            agent_tokens(&config, &env).unwrap(),
            agent_secrets(&config, &env).unwrap(),
            &hops,
        );
        let text = format!("{settings:?}");
        assert!(!text.contains("secret-of"), "{text}");
        assert!(!text.contains("self-secret"), "{text}");
        assert!(text.contains("client_id: \"desk\""), "{text}");
    }
}
