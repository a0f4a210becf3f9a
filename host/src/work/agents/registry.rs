//! The registry: every agent a sub-task may be sent to. `self` (this harness, from its own card)
//! and each configured agent whose card was fetched and passed [`check_card`] at start-up.
//!
//! An agent that fails is not registered: one warning names it and the reason, and start-up goes
//! on without it (fail closed). The registry keeps each agent's card, interface URL and the kinds
//! of credentials its calls present ([`AgentAuth`]: names, never secrets) for the client that will
//! call it; none of these reaches the roster or the context.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::base::config::AgentConfig;
use crate::base::protocol::card::AgentCard;

use super::card_check::{CardProblem, check_card, quote};
use super::card_fetch::{CardFetcher, FetchError};
use super::own_url::is_own_url;
use super::security::{AgentAuth, SecurityProblem, plan_security};
use super::unknown::UnknownAgent;

/// The id that names this harness itself; `spawn_subtask` with no agent means it too.
pub const SELF_ID: &str = crate::base::config::SELF_AGENT_ID;

/// An agent the harness may delegate to.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredAgent {
    /// The configured id (`self` for this harness): what the model names.
    pub id: String,
    /// The card as fetched (for `self`, as served).
    pub card: AgentCard,
    interface_url: String,
    auth: AgentAuth,
}

impl RegisteredAgent {
    /// Where the agent's A2A JSON-RPC 1.0 interface is. For the client only: never rendered.
    pub fn interface_url(&self) -> &str {
        &self.interface_url
    }

    /// Which credentials calls to the agent present, as its card asks. For the client only.
    pub fn auth(&self) -> &AgentAuth {
        &self.auth
    }
}

/// Why a configured agent was not registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    /// The card could not be fetched.
    Fetch(#[from] FetchError),
    #[error(transparent)]
    /// The card was fetched but refused.
    Card(#[from] CardProblem),
    #[error(transparent)]
    /// The card asks for credentials that are not configured.
    Security(#[from] SecurityProblem),
    /// The agent is this harness: `agents[].url`, or its card's interface URL, is this
    /// harness's own base URL.
    #[error(
        "{what} {url} is this harness's own base URL: the agent would be `self` under another id, and delegating to it would loop back here; give sub-tasks to self instead"
    )]
    OwnUrl {
        /// Which URL: the configured one or the card's interface.
        what: &'static str,
        /// The URL, as configured or as the card gave it.
        url: String,
    },
}

/// A configured agent that is not registered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedAgent {
    /// The agent's id in `[[agents]]`.
    pub id: String,
    /// Why it was left out.
    pub reason: Refusal,
}

/// What start-up discovered: the registry, and the agents left out of it.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// `self` and every agent whose card passed.
    pub registry: Registry,
    /// In configuration order.
    pub refused: Vec<RefusedAgent>,
}

/// `self` and the registered remote agents.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    own: RegisteredAgent,
    remote: BTreeMap<String, RegisteredAgent>,
}

impl Registry {
    /// A registry holding only this harness, whose card is `own_card`, reachable at `base_url`.
    pub fn new(own_card: AgentCard, base_url: &str) -> Registry {
        Registry {
            own: RegisteredAgent {
                id: SELF_ID.to_string(),
                card: own_card,
                interface_url: base_url.to_string(),
                auth: AgentAuth::default(),
            },
            remote: BTreeMap::new(),
        }
    }

    /// Fetches every configured agent's card at once, each within `timeout`, and registers
    /// those that pass. Start-up takes about as long as the slowest fetch, never the sum.
    /// Each refused agent is logged once at WARNING.
    pub async fn discover(
        own_card: AgentCard,
        base_url: &str,
        agents: &[AgentConfig],
        timeout: Duration,
    ) -> Discovery {
        let mut registry = Registry::new(own_card, base_url);
        if agents.is_empty() {
            return Discovery {
                registry,
                refused: Vec::new(),
            };
        }
        let outcomes: Vec<Result<RegisteredAgent, Refusal>> = match CardFetcher::new(timeout) {
            Ok(fetcher) => {
                let registering = agents
                    .iter()
                    .enumerate()
                    .map(|(index, agent)| register(&fetcher, index, agent, base_url));
                futures::future::join_all(registering).await
            }
            Err(err) => agents.iter().map(|_| Err(err.clone().into())).collect(),
        };
        let mut refused = Vec::new();
        for (agent, outcome) in agents.iter().zip(outcomes) {
            match outcome {
                Ok(registered) => {
                    registry.remote.insert(registered.id.clone(), registered);
                }
                Err(reason) => {
                    tracing::warn!(
                        agent = %agent.id,
                        "agents: not registered: {}",
                        crate::base::text::log_field::escape(&reason.to_string())
                    );
                    refused.push(RefusedAgent {
                        id: agent.id.clone(),
                        reason,
                    });
                }
            }
        }
        Discovery { registry, refused }
    }

    /// The agent a sub-task names: `None` (or `self`) is this harness. Anything else must be a
    /// registered id, exactly; otherwise the error lists the valid ids. Never contacts anything.
    pub fn resolve(&self, id: Option<&str>) -> Result<&RegisteredAgent, UnknownAgent> {
        match id {
            None => Ok(&self.own),
            Some(id) if id == SELF_ID => Ok(&self.own),
            Some(id) => self
                .remote
                .get(id)
                .ok_or_else(|| UnknownAgent::new(id, self.ids())),
        }
    }

    /// Every valid id: `self` first, then the remote agents by id.
    pub fn ids(&self) -> Vec<String> {
        self.agents().map(|agent| agent.id.clone()).collect()
    }

    /// Every agent: `self` first, then the remote agents by id.
    pub fn agents(&self) -> impl Iterator<Item = &RegisteredAgent> {
        std::iter::once(&self.own).chain(self.remote.values())
    }

    /// This registry with `agent` added (an agent that answered after start-up, `late`).
    pub fn with_agent(&self, agent: RegisteredAgent) -> Registry {
        let mut registry = self.clone();
        registry.remote.insert(agent.id.clone(), agent);
        registry
    }

    /// Adds an agent whose card is already known to pass (tests and benchmarks).
    pub fn insert_checked(&mut self, id: &str, card: AgentCard) -> Result<(), CardProblem> {
        let interface_url = check_card(&card)?;
        self.remote.insert(
            id.to_string(),
            RegisteredAgent {
                id: id.to_string(),
                card,
                interface_url,
                auth: AgentAuth::default(),
            },
        );
        Ok(())
    }
}

/// Fetches and checks one agent's card. An agent at this harness's own base URL is refused
/// without a fetch (this harness serves nothing until start-up is done, so the fetch would only
/// time out), and so is one whose card sends its calls there, or asks for credentials that
/// `agents[index]` does not configure.
pub(super) async fn register(
    fetcher: &CardFetcher,
    index: usize,
    agent: &AgentConfig,
    base_url: &str,
) -> Result<RegisteredAgent, Refusal> {
    if is_own_url(&agent.url, base_url) {
        return Err(Refusal::OwnUrl {
            what: "the agent's url",
            url: quote(&agent.url),
        });
    }
    let mut card = fetcher.fetch(&agent.url).await?;
    let interface_url = check_card(&card)?;
    let plan = plan_security(&card, index, agent)?;
    if is_own_url(&interface_url, base_url) {
        return Err(Refusal::OwnUrl {
            what: "its card's interface URL",
            url: quote(&interface_url),
        });
    }
    if !plan.unusable_skills.is_empty() {
        card.skills
            .retain(|skill| !plan.unusable_skills.contains(&skill.id));
        tracing::warn!(
            agent = %agent.id,
            "agents: {} skill(s) left out: their securityRequirements need credentials agents[{index}] does not configure",
            plan.unusable_skills.len()
        );
    }
    Ok(RegisteredAgent {
        id: agent.id.clone(),
        card,
        interface_url,
        auth: plan.auth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::card::default_card;

    fn registry(remote: &[&str]) -> Registry {
        let mut registry = Registry::new(default_card("http://me"), "http://me");
        for id in remote {
            let mut card = default_card(&format!("http://{id}.example"));
            card.name = id.to_uppercase();
            registry.insert_checked(id, card).unwrap();
        }
        registry
    }

    #[test]
    fn no_agent_and_self_both_mean_this_harness() {
        let registry = registry(&["ledger"]);
        assert_eq!(registry.resolve(None).unwrap().id, "self");
        assert_eq!(registry.resolve(Some("self")).unwrap().id, "self");
        assert_eq!(
            registry.resolve(Some("ledger")).unwrap().card.name,
            "LEDGER"
        );
    }

    #[test]
    fn ids_are_self_first_then_sorted() {
        assert_eq!(
            registry(&["zeta", "alpha", "mid"]).ids(),
            ["self", "alpha", "mid", "zeta"]
        );
    }

    #[test]
    fn unknown_id_golden() {
        let err = registry(&["search", "ledger"])
            .resolve(Some("ledgr"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"[agent.unknown] no registered agent "ledgr"; valid ids: self, ledger, search"#
        );
        assert_eq!(err.rejected_id, "ledgr");
        assert_eq!(err.valid_ids, ["self", "ledger", "search"]);
    }

    #[test]
    fn a_url_as_id_is_refused_not_fetched_golden() {
        let err = registry(&["ledger"])
            .resolve(Some("http://ledger.example/"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"[agent.unknown] no registered agent "http://ledger.example/"; valid ids: self, ledger"#
        );
    }

    #[test]
    fn an_empty_id_is_refused_golden() {
        let err = registry(&[]).resolve(Some("")).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"[agent.unknown] no registered agent ""; valid ids: self"#
        );
    }

    #[test]
    fn ids_match_exactly() {
        let registry = registry(&["ledger"]);
        for near in ["Ledger", " ledger", "ledger ", "SELF", "ledger\n"] {
            assert!(registry.resolve(Some(near)).is_err(), "{near:?}");
        }
    }
}
