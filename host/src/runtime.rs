//! Start-up: everything `harness serve` builds from a configuration, in order (store, model,
//! agent registry and roster, system prompt and static prefix, engine, task service, server),
//! and the serve loop with its graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::a2a::server::{ServerState, router, serve};
use crate::a2a::types::AgentCard;
use crate::agents::{Registry, Roster, build_roster, own_card, render_agents};
use crate::config::{Config, ConfigError};
use crate::context::{DefaultPrompt, PromptSource, StaticPrefix};
use crate::engine::intrinsics::Intrinsics;
use crate::engine::{EmbeddedEngine, EngineSettings};
use crate::model::{Model, ModelBuildError, build_model};
use crate::store::{Store, StoreError};
use crate::tasks::Tasks;
use crate::tasks::hub::TaskHub;

/// Why the harness could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Model(#[from] ModelBuildError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source} (set server.bind to a free address)")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

/// A harness, built and ready to serve.
pub struct Runtime {
    pub config: Config,
    pub store: Arc<Store>,
    pub tasks: Arc<Tasks>,
    pub engine: Arc<EmbeddedEngine>,
    pub model: Arc<dyn Model>,
    pub prefix: StaticPrefix,
    /// `self` and the remote agents whose cards passed at start-up.
    pub registry: Registry,
    /// What the model knows of each registered agent, as rendered in the `agents` section.
    pub roster: Roster,
}

impl Runtime {
    /// Builds the harness from its configuration, the model from `[model]`. Fetches the remote
    /// agents' cards, so it takes as long as the slowest (at most `roster.card_timeout_secs`).
    pub async fn build(config: Config) -> Result<Runtime, StartError> {
        let model = build_model(
            &config.model,
            |path| config.resolve(path),
            |name| std::env::var(name).ok(),
        )?;
        Runtime::build_with_model(config, model).await
    }

    /// Builds the harness around a given model (tests and benchmarks).
    pub async fn build_with_model(
        config: Config,
        model: Arc<dyn Model>,
    ) -> Result<Runtime, StartError> {
        if config.model.provider.is_none() {
            tracing::warn!(
                "no model is configured: every task will fail until one is. {}",
                crate::model::unconfigured::NO_MODEL_EXPLANATION
            );
        }
        let store = Arc::new(Store::open(&config.resolve(&config.store.path))?);
        let hub = Arc::new(TaskHub::new(store.clone()));
        let base_url = config.server.effective_base_url();
        let registry = Registry::discover(
            own_card(&config.card, &base_url),
            &base_url,
            &config.agents,
            config.roster.card_timeout(),
        )
        .await
        .registry;
        let roster = build_roster(&registry, config.roster.caps());
        let system_prompt = DefaultPrompt.render();
        let prefix = StaticPrefix::build(
            &system_prompt,
            &config.participants,
            &[],
            &render_agents(&roster),
        );
        let settings = EngineSettings {
            max_turns: config.limits.max_turns,
            turn_budget_tokens: config.context.turn_budget_tokens,
            compaction_fraction: config.context.compaction_fraction,
            max_output_tokens: Some(config.model.max_output_tokens),
        };
        let engine = EmbeddedEngine::new(
            hub.clone(),
            model.clone(),
            Arc::new(Intrinsics),
            prefix.clone(),
            settings,
        );
        let tasks = Arc::new(Tasks::new(hub));
        tasks.set_engine(engine.clone());
        Ok(Runtime {
            config,
            store,
            tasks,
            engine,
            model,
            prefix,
            registry,
            roster,
        })
    }

    /// Binds `server.bind`.
    pub async fn bind(&self) -> Result<TcpListener, StartError> {
        let addr = &self.config.server.bind;
        TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: addr.clone(),
                source,
            })
    }

    /// The card this harness serves, reachable at `base_url`: the default card with `[card]`
    /// laid on top.
    pub fn card(&self, base_url: &str) -> AgentCard {
        own_card(&self.config.card, base_url)
    }

    /// Resumes every open task, then serves on `listener` until `shutdown` resolves; in-flight
    /// requests finish, task loops stop (to resume at the next start), and the store is closed.
    pub async fn serve(
        mut self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let local = listener.local_addr().map_err(StartError::Serve)?;
        let base_url = self.base_url(local);
        self.registry.set_own_url(&base_url);
        let resumed = self.engine.resume_open()?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed open tasks from the journal");
        }
        let state = ServerState {
            service: self.tasks.clone(),
            card: self.card(&base_url),
            max_request_bytes: self.config.server.max_request_bytes,
            rate_limit_per_minute: self.config.server.rate_limit_per_minute,
        };
        tracing::info!(
            "tiny-harness {} listening on http://{local} (base URL {base_url}); model: {}",
            env!("CARGO_PKG_VERSION"),
            self.model.describe()
        );
        let result = serve(listener, router(state), shutdown).await;
        self.engine.shutdown().await;
        tracing::info!("stopped");
        result.map_err(StartError::Serve)
    }

    fn base_url(&self, local: SocketAddr) -> String {
        match &self.config.server.base_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{local}"),
        }
    }
}

/// The configuration `serve` and `check` use: the file given, else `./config.toml` if present,
/// else the embedded default.
pub fn load_config(explicit: Option<&Path>) -> Result<Config, ConfigError> {
    match explicit {
        Some(path) => Config::load(path),
        None if Path::new("config.toml").exists() => Config::load(Path::new("config.toml")),
        None => Ok(crate::config::embedded_default()),
    }
}
