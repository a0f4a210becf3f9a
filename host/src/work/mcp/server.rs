//! One MCP server as the harness holds it: its live session (or why there is none), the calls
//! made on it with their deadline, and the supervisor that reconnects it with backoff when it
//! exits or drops.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject};
use rmcp::service::{Peer, RoleClient, ServiceError};

use super::connect::{Client, ConnectContext, connect};
use crate::base::config::McpServerConfig;
use crate::base::text::log_field::escape;

/// The wait before the first reconnection of a server that exited: long enough not to spin on a
/// program that dies at once, short enough that a crash costs the model few calls.
pub const RESTART_BACKOFF_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between reconnections: a server that keeps failing is tried twice a minute.
pub const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A session that lasted this long was healthy: its exit starts the backoff again from the
/// first wait.
pub const RESTART_BACKOFF_RESET: Duration = Duration::from_secs(60);

/// Why a call on a server did not return a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    /// The server is not connected (exited and not yet back, or never reached).
    Unavailable,
    /// No answer within the deadline; the request was cancelled.
    Timeout(Duration),
    /// The server answered with a protocol error, or with something the harness does not take.
    Refused(String),
}

enum Link {
    Up(Peer<RoleClient>),
    Down,
}

/// One `[[mcp]]` entry while the harness runs.
pub struct Server {
    /// Its index in `[[mcp]]`, for errors and logs (`mcp[N]`).
    pub index: usize,
    /// Its namespace.
    pub name: String,
    /// The deadline of each call.
    pub timeout: Duration,
    link: RwLock<Link>,
}

impl Server {
    /// A server not (yet) connected.
    pub fn new(index: usize, config: &McpServerConfig) -> Server {
        Server {
            index,
            name: config.name.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            link: RwLock::new(Link::Down),
        }
    }

    /// Whether a session is live now.
    pub fn is_up(&self) -> bool {
        matches!(
            *self.link.read().unwrap_or_else(|p| p.into_inner()),
            Link::Up(_)
        )
    }

    fn set(&self, link: Link) {
        *self.link.write().unwrap_or_else(|p| p.into_inner()) = link;
    }

    /// Marks the session live.
    pub fn attach(&self, client: &Client) {
        self.set(Link::Up(client.peer().clone()));
    }

    /// Calls `tool` with `arguments` within the server's deadline. Past it the request is
    /// dropped, which sends the MCP cancellation notification, and the call is a timeout.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, CallFailure> {
        let peer = match &*self.link.read().unwrap_or_else(|p| p.into_inner()) {
            Link::Up(peer) => peer.clone(),
            Link::Down => return Err(CallFailure::Unavailable),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match tokio::time::timeout(self.timeout, peer.call_tool_once(params)).await {
            Err(_) => Err(CallFailure::Timeout(self.timeout)),
            Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
            Ok(Ok(_)) => Err(CallFailure::Refused(
                "the server asked for more input or started a long-running task, which this harness does not take".to_string(),
            )),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(CallFailure::Unavailable)
            }
            Ok(Err(ServiceError::McpError(error))) => Err(CallFailure::Refused(format!(
                "the server refused the call ({}): {}",
                error.code.0, error.message
            ))),
            Ok(Err(other)) => Err(CallFailure::Refused(format!("the call failed: {other}"))),
        }
    }
}

/// The wait before reconnection attempt `failures` (0 for the first): doubling from
/// [`RESTART_BACKOFF_FIRST`] up to [`RESTART_BACKOFF_MAX`].
pub fn backoff(failures: u32) -> Duration {
    RESTART_BACKOFF_FIRST
        .saturating_mul(1u32 << failures.min(16))
        .min(RESTART_BACKOFF_MAX)
}

/// Holds `client` until its session ends (the program exited, the connection dropped), then
/// reconnects with [`backoff`], for as long as the harness runs. Meanwhile the server's calls
/// answer unavailable.
pub async fn supervise(
    server: Arc<Server>,
    config: McpServerConfig,
    context: ConnectContext,
    mut client: Client,
) {
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        let reason = client.waiting().await;
        server.set(Link::Down);
        if started.elapsed() >= RESTART_BACKOFF_RESET {
            failures = 0;
        }
        tracing::warn!(
            mcp = %server.name,
            entry = server.index,
            "MCP server stopped ({}); reconnecting",
            escape(&format!("{reason:?}"))
        );
        client = loop {
            tokio::time::sleep(backoff(failures)).await;
            failures = failures.saturating_add(1);
            match connect(server.index, &config, &context).await {
                Ok(client) => break client,
                Err(err) => tracing::warn!(
                    mcp = %server.name,
                    entry = server.index,
                    "MCP server did not come back: {}",
                    escape(&err)
                ),
            }
        };
        server.attach(&client);
        tracing::info!(mcp = %server.name, entry = server.index, "MCP server reconnected");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_first_wait_up_to_the_cap() {
        assert_eq!(backoff(0), RESTART_BACKOFF_FIRST);
        assert_eq!(backoff(1), RESTART_BACKOFF_FIRST * 2);
        assert_eq!(backoff(3), RESTART_BACKOFF_FIRST * 8);
        assert_eq!(backoff(40), RESTART_BACKOFF_MAX);
    }
}
