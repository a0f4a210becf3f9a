//! Agents whose card could not be fetched at start-up, tried again while the harness serves:
//! each one that answers joins the registry, and the roster and the static prefix are rebuilt
//! once for it. Nothing else changes the roster after start-up.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::parts::static_prefix_from;
use crate::base::config::Config;
use crate::work::agents::late::{FIRST_RETRY, MAX_RETRY};
use crate::work::agents::{
    Discovery, LiveRegistry, Refusal, RegisteredAgent, build_roster, register_when_reachable,
};
use crate::work::context::LivePrefix;
use crate::work::skills::Catalog;

/// What a late agent's joining rebuilds, and the agents to try again.
pub(super) struct LateAgents {
    pub(super) config: Config,
    /// Where this harness is reached (an agent there is refused, as at start-up).
    pub(super) base_url: String,
    /// The plugins' system prompt as composed at start-up: a join changes only the `agents`
    /// section (plugins rendered their sections once, with the start-up roster).
    pub(super) system_prompt: String,
    pub(super) skills: Arc<Catalog>,
    pub(super) registry: Arc<LiveRegistry>,
    pub(super) prefix: LivePrefix,
    /// Indices in `config.agents` of the agents whose card could not be fetched.
    pub(super) unreachable: Vec<usize>,
    /// Held while one join rebuilds: two agents answering at once rebuild in turn, the second
    /// from the registry holding both.
    joining: Mutex<()>,
}

impl LateAgents {
    /// The agents of `discovery` that were refused because their card could not be fetched;
    /// an agent refused for what its card said is not tried again.
    pub(super) fn unreachable(discovery: &Discovery, config: &Config) -> Vec<usize> {
        discovery
            .refused
            .iter()
            .filter(|refused| matches!(refused.reason, Refusal::Fetch(_)))
            .filter_map(|refused| config.agents.iter().position(|a| a.id == refused.id))
            .collect()
    }

    /// Everything a join needs.
    pub(super) fn new(
        config: Config,
        base_url: String,
        system_prompt: String,
        skills: Arc<Catalog>,
        registry: Arc<LiveRegistry>,
        prefix: LivePrefix,
        unreachable: Vec<usize>,
    ) -> LateAgents {
        LateAgents {
            config,
            base_url,
            system_prompt,
            skills,
            registry,
            prefix,
            unreachable,
            joining: Mutex::new(()),
        }
    }

    /// Tries each unreachable agent again on a task of its own until it answers or `stop`.
    pub(super) fn start(self, stop: &CancellationToken) {
        if self.unreachable.is_empty() {
            return;
        }
        let late = Arc::new(self);
        for &index in &late.unreachable {
            let (late, stop) = (late.clone(), stop.clone());
            tokio::spawn(async move {
                let agent = &late.config.agents[index];
                tracing::info!(
                    agent = %agent.id,
                    "agents: unreachable at start-up; trying again in {} s, then at most every {} s",
                    FIRST_RETRY.as_secs(),
                    MAX_RETRY.as_secs()
                );
                let timeout = late.config.roster.card_timeout();
                if let Some(registered) =
                    register_when_reachable(index, agent, &late.base_url, timeout, &stop).await
                {
                    late.join(registered);
                }
            });
        }
    }

    /// Adds `agent` to the registry, then rebuilds the roster and the static prefix once.
    fn join(&self, agent: RegisteredAgent) {
        let _in_turn = self
            .joining
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let id = agent.id.clone();
        let registry = self.registry.join(agent);
        let roster = build_roster(&registry, self.config.roster.caps());
        self.prefix.replace(static_prefix_from(
            &self.config,
            &self.system_prompt,
            &roster,
            &self.skills,
        ));
        tracing::info!(
            agent = %id,
            agents = roster.entries().len(),
            "agents: `{id}` answered and joins the roster; the static prefix is rebuilt"
        );
    }
}
