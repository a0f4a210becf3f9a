//! The one tool port the engine calls: the plugins' tools and the MCP servers' tools side by
//! side, so a call of either kind is journaled the same way (a recorded call is never repeated
//! after a restart). Their list is live: an MCP server that was down at start-up joins it later
//! (`late`).

use std::sync::Arc;

use async_trait::async_trait;

use super::{McpError, McpTools};
use crate::base::model::{ToolCall, ToolSpec};
use crate::work::plugins::Toolbox;
use crate::work::tools::{LiveToolSpecs, ToolContext, ToolHost, ToolOutcome};

/// The plugins' tools and the MCP tools. Names never clash: start-up refuses a clash, and a
/// server joining late is refused one.
pub struct Tools {
    plugins: Arc<Toolbox>,
    mcp: Arc<McpTools>,
    specs: LiveToolSpecs,
    /// Held while a late server joins: two joining at once join in turn.
    pub(super) joining: tokio::sync::Mutex<()>,
}

impl Tools {
    /// Both sources; an MCP tool named like a plugin tool is refused with both names.
    pub fn new(plugins: Arc<Toolbox>, mcp: Arc<McpTools>) -> Result<Tools, McpError> {
        let mut specs = plugins.definitions();
        for spec in mcp.definitions() {
            if let Some(provider) = plugins.provider(&spec.name) {
                let (index, name) = mcp.entry_of(&spec.name).unwrap_or_default();
                return Err(McpError::Server {
                    index,
                    name,
                    reason: format!(
                        "tool `{}` is defined by plugin {provider} too; leave it out with `tools`",
                        spec.name
                    ),
                });
            }
            specs.push(spec);
        }
        Ok(Tools {
            plugins,
            mcp,
            specs: LiveToolSpecs::new(specs),
            joining: tokio::sync::Mutex::new(()),
        })
    }

    /// The MCP servers.
    pub fn mcp(&self) -> &McpTools {
        &self.mcp
    }

    /// The plugin that defines tool `name`, if one does.
    pub(super) fn plugin_provider(&self, name: &str) -> Option<String> {
        self.plugins.provider(name).map(|p| p.to_string())
    }

    /// Reads both sources again into the list the turns offer.
    pub(super) fn rebuild_specs(&self) {
        let mut specs = self.plugins.definitions();
        specs.extend(self.mcp.definitions());
        self.specs.replace(specs);
    }
}

#[async_trait]
impl ToolHost for Tools {
    fn definitions(&self) -> Vec<ToolSpec> {
        self.specs.current().to_vec()
    }

    fn live_definitions(&self) -> Option<LiveToolSpecs> {
        Some(self.specs.clone())
    }

    async fn invoke(&self, context: &ToolContext<'_>, call: &ToolCall) -> ToolOutcome {
        if self.mcp.claims(&call.name) {
            return self.mcp.invoke(&call.name, &call.arguments).await;
        }
        self.plugins.invoke(context, call).await
    }

    /// A plugin call may run before its model call is journaled; an MCP call reaches outside
    /// the process (its server may change the world), so it never does: it runs once the
    /// reply that asks for it is journaled, and its result is journaled before the task goes on.
    async fn invoke_in_process(
        &self,
        context: &ToolContext<'_>,
        call: &ToolCall,
    ) -> Option<ToolOutcome> {
        if self.mcp.claims(&call.name) {
            return None;
        }
        self.plugins.invoke_in_process(context, call).await
    }
}
