//! Agents that could not be reached at start-up: their cards fetched again with backoff until
//! they answer, and the registry they then join, replaced whole so that a reader sees the
//! registry before the join or after it, never half of it.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::card_fetch::CardFetcher;
use super::registry::{Refusal, RegisteredAgent, Registry, register};
use crate::base::config::AgentConfig;
use crate::base::text::log_field::escape;

/// The wait before the first retry: an agent started beside this harness is usually up within
/// a second or two.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two tries: the wait doubles up to this, so an agent that is down
/// for hours costs one card request a minute, and joins within a minute of coming back.
pub const MAX_RETRY: Duration = Duration::from_secs(60);

/// The registry every reader shares: `self` and the agents registered so far.
#[derive(Debug)]
pub struct LiveRegistry {
    current: RwLock<Arc<Registry>>,
}

impl LiveRegistry {
    /// A live registry starting as `registry`.
    pub fn new(registry: Registry) -> LiveRegistry {
        LiveRegistry {
            current: RwLock::new(Arc::new(registry)),
        }
    }

    /// The registry as it is now: a reader keeps it for as long as it needs, unchanged.
    pub fn current(&self) -> Arc<Registry> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Adds `agent`; returns the registry with it, which readers now get.
    pub fn join(&self, agent: RegisteredAgent) -> Arc<Registry> {
        let mut current = match self.current.write() {
            Ok(current) => current,
            Err(poisoned) => poisoned.into_inner(),
        };
        let joined = Arc::new(current.with_agent(agent));
        *current = joined.clone();
        joined
    }
}

/// Fetches `agents[index]`'s card again, waiting [`FIRST_RETRY`] and doubling up to
/// [`MAX_RETRY`], until it is registered: `Some` once its card answers and passes the same
/// checks as at start-up. `None` when `stop` is cancelled, or when the card answers but is
/// refused (a card that says the wrong thing will not be fetched into shape; the refusal is
/// logged at WARNING, once).
pub async fn register_when_reachable(
    index: usize,
    agent: &AgentConfig,
    base_url: &str,
    timeout: Duration,
    stop: &CancellationToken,
) -> Option<RegisteredAgent> {
    let fetcher = CardFetcher::new(timeout).ok()?;
    let mut wait = FIRST_RETRY;
    let mut tries: u32 = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tokio::time::sleep(wait) => {}
        }
        tries += 1;
        match register(&fetcher, index, agent, base_url).await {
            Ok(registered) => {
                tracing::debug!(agent = %agent.id, tries, "agents: the card answered");
                return Some(registered);
            }
            Err(Refusal::Fetch(err)) => {
                tracing::debug!(
                    agent = %agent.id,
                    tries,
                    next_in_secs = (wait * 2).min(MAX_RETRY).as_secs(),
                    "agents: still unreachable: {}",
                    escape(&err.to_string())
                );
            }
            Err(refusal) => {
                tracing::warn!(
                    agent = %agent.id,
                    "agents: answered, but not registered: {}",
                    escape(&refusal.to_string())
                );
                return None;
            }
        }
        wait = (wait * 2).min(MAX_RETRY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::card::AgentCard;

    fn card(name: &str, url: &str) -> AgentCard {
        let mut card = crate::work::agents::own_card(&Default::default(), url);
        card.name = name.to_string();
        card
    }

    #[test]
    fn a_reader_keeps_the_registry_it_read_and_later_readers_see_the_joined_agent() {
        let live = LiveRegistry::new(Registry::new(
            card("me", "http://127.0.0.1:1"),
            "http://127.0.0.1:1",
        ));
        let before = live.current();
        let mut other = Registry::new(card("me", "http://127.0.0.1:1"), "http://127.0.0.1:1");
        other
            .insert_checked("ledger", card("Ledger", "http://127.0.0.1:2"))
            .unwrap();
        let ledger = other.resolve(Some("ledger")).unwrap().clone();
        let after = live.join(ledger);
        assert_eq!(before.ids(), ["self"]);
        assert_eq!(after.ids(), ["self", "ledger"]);
        assert_eq!(live.current().ids(), ["self", "ledger"]);
    }
}
