//! Optional MCP servers that could not be reached at start-up: connected again with backoff
//! until they answer, then their tools join the ones the model is offered. The tool list is
//! rebuilt once for the join, and the join logged, as for a remote agent joining late
//! (`agents::late`).

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::connect::{Client, ConnectContext, connect};
use super::server::Server;
use super::{McpSummary, Tools, list_tools, lock};
use crate::base::config::McpServerConfig;
use crate::base::text::log_field::escape;

/// The wait before the first retry: a server started beside this harness is usually up within
/// a second or two.
pub const LATE_RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two tries: the wait doubles up to this, so a server that is down
/// for hours costs one connection attempt a minute, and joins within a minute of coming back.
pub const LATE_RETRY_MAX: Duration = Duration::from_secs(60);

/// An optional server not reached at start-up, and what connecting to it needs.
pub(super) struct Late {
    pub index: usize,
    pub config: McpServerConfig,
    pub context: ConnectContext,
    pub server: Arc<Server>,
}

/// The wait before try `tries` (0 for the first): doubling from [`LATE_RETRY_FIRST`] up to
/// [`LATE_RETRY_MAX`].
fn retry_wait(tries: u32) -> Duration {
    LATE_RETRY_FIRST
        .saturating_mul(1u32 << tries.min(16))
        .min(LATE_RETRY_MAX)
}

impl Tools {
    /// Tries each optional server that was down at start-up again, on a task of its own, until
    /// it answers and its tools join, what it offers is refused (logged at WARNING, once: a
    /// server that offers the wrong thing will not be retried into shape), `stop` is cancelled,
    /// or these tools are dropped. Call once; later calls find nothing left to try.
    pub fn start_late(self: &Arc<Tools>, stop: &CancellationToken) {
        let pending = std::mem::take(&mut *lock(&self.mcp().late));
        for late in pending {
            tracing::info!(
                mcp = %late.config.name,
                entry = late.index,
                "optional MCP server unreachable at start-up; trying again in {} s, then at most every {} s",
                LATE_RETRY_FIRST.as_secs(),
                LATE_RETRY_MAX.as_secs()
            );
            tokio::spawn(retry(Arc::downgrade(self), late, stop.clone()));
        }
    }

    /// Admits `late`'s tools, answered on `client`: all of them or none, checked as at start-up
    /// and against every tool offered so far; then rebuilds the tool list once.
    async fn join(&self, late: Late, client: Client) -> Result<usize, String> {
        let listed = list_tools(&client).await?;
        let _in_turn = self.joining.lock().await;
        let mut next = self.mcp().catalog().clone();
        // Its summary while it was down, which `admit` replaces: the transport stays.
        let summary = next
            .summaries
            .iter()
            .find(|s| s.name == late.config.name)
            .cloned()
            .unwrap_or_else(|| McpSummary {
                name: late.config.name.clone(),
                transport: String::new(),
                connected: false,
                protocol: None,
                tools: Vec::new(),
            });
        next.admit(&late.server, &late.config, summary, &client, listed)?;
        for spec in &next.specs {
            if let Some(provider) = self.plugin_provider(&spec.name) {
                return Err(format!(
                    "tool `{}` is defined by plugin {provider} too; leave it out with `tools`",
                    spec.name
                ));
            }
        }
        let joined = next
            .summaries
            .iter()
            .find(|s| s.name == late.config.name)
            .map_or(0, |s| s.tools.len());
        *self
            .mcp()
            .catalog
            .write()
            .unwrap_or_else(|p| p.into_inner()) = next;
        self.mcp()
            .supervise(late.server, late.config, late.context, client);
        self.rebuild_specs();
        Ok(joined)
    }
}

/// Connects to `late` with [`retry_wait`] between tries until it answers, then joins it.
async fn retry(tools: Weak<Tools>, late: Late, stop: CancellationToken) {
    let name = late.config.name.clone();
    let index = late.index;
    let mut tries: u32 = 0;
    let client = loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(retry_wait(tries)) => {}
        }
        tries = tries.saturating_add(1);
        if tools.strong_count() == 0 {
            return;
        }
        match connect(index, &late.config, &late.context).await {
            Ok(client) => break client,
            Err(err) => tracing::debug!(
                mcp = %name,
                entry = index,
                tries,
                next_in_secs = retry_wait(tries).as_secs(),
                "optional MCP server still unreachable: {}",
                escape(&err)
            ),
        }
    };
    let Some(tools) = tools.upgrade() else { return };
    match tools.join(late, client).await {
        Ok(joined) => tracing::info!(
            mcp = %name,
            entry = index,
            tries,
            tools = joined,
            "optional MCP server `{name}` answered; its tools join and the tool list is rebuilt"
        ),
        Err(reason) => tracing::warn!(
            mcp = %name,
            entry = index,
            "optional MCP server answered, but its tools cannot join: {}",
            escape(&reason)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_wait_doubles_from_the_first_up_to_the_cap() {
        assert_eq!(retry_wait(0), LATE_RETRY_FIRST);
        assert_eq!(retry_wait(1), LATE_RETRY_FIRST * 2);
        assert_eq!(retry_wait(5), LATE_RETRY_FIRST * 32);
        assert_eq!(retry_wait(6), LATE_RETRY_MAX);
        assert_eq!(retry_wait(40), LATE_RETRY_MAX);
    }
}
