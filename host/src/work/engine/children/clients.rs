//! The A2A clients children are reached through, one per agent with the credentials it trusts,
//! and the error the model reads when an agent cannot be reached (never a URL nor a token).

use std::sync::Arc;

use super::{ChildSettings, Children, lock};
use crate::state::records::extension::EXTENSION_URI;
use crate::work::agents::SELF_ID;
use crate::work::agents::client::{A2aClient, ClientError};
use crate::work::tools::ToolError;

impl Children {
    /// A failed call to an agent, as the model reads it: what failed and why, never the URL
    /// nor a token this harness sent.
    pub(super) fn unreachable_error(
        &self,
        agent: &str,
        doing: &str,
        err: &ClientError,
    ) -> ToolError {
        let detail = self.redactor.mask_only(&err.to_string());
        tracing::warn!(%agent, "could not {doing}: {detail}");
        let why = match err {
            ClientError::Rpc { message, .. } => format!("{agent} refused: {message}"),
            ClientError::Status { status, .. } => format!("{agent} answered HTTP {status}"),
            ClientError::Transport { .. } => format!("{agent} could not be reached"),
            ClientError::InvalidResponse { .. } => format!("{agent} sent an invalid response"),
            ClientError::Build(_) | ClientError::Unsupported(_) => {
                format!("{agent} cannot be called from here")
            }
        };
        ToolError::new(
            "subtask.failed",
            self.redactor
                .mask_only(&format!("could not {doing}: {why}")),
        )
    }

    pub(super) fn is_trusted_by(&self, agent: &str) -> bool {
        agent == SELF_ID || self.settings.tokens.contains_key(agent)
    }

    /// The client for an agent, made once: with this process's secret for `self`, the
    /// configured token for an agent that trusts this harness, a plain participant id otherwise.
    pub(super) fn client(&self, agent: &str) -> Result<Arc<A2aClient>, ToolError> {
        if let Some(client) = lock(&self.clients).get(agent) {
            return Ok(client.clone());
        }
        let registered = self
            .registry
            .resolve(Some(agent))
            .map_err(|unknown| ToolError::new(unknown.code(), unknown.message()))?;
        let url = if agent == SELF_ID {
            self.own_url.clone()
        } else {
            registered.interface_url().to_string()
        };
        let client = A2aClient::new(url).map_err(|err| {
            tracing::error!("cannot build the A2A client: {err}");
            ToolError::new("subtask.unavailable", "the A2A client could not be built")
        })?;
        let client = if agent == SELF_ID {
            client.with_bearer(self.settings.self_secret.clone())
        } else if let Some(token) = self.settings.tokens.get(agent) {
            client.with_bearer(token.clone())
        } else {
            client.with_participant(self.settings.participant_id.clone())
        };
        let client = Arc::new(client.with_extensions(vec![EXTENSION_URI.to_string()]));
        lock(&self.clients).insert(agent.to_string(), client.clone());
        Ok(client)
    }
}

impl ChildSettings {
    /// The id the agent knows this harness by: `self` on itself, the participant id elsewhere.
    pub(super) fn participant_id_for(&self, agent: &str) -> String {
        if agent == SELF_ID {
            SELF_ID.to_string()
        } else {
            self.participant_id.clone()
        }
    }
}
