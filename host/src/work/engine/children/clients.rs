//! The A2A clients children are reached through, one per agent with the credentials it trusts,
//! and the error the model reads when an agent cannot be reached (never a URL nor a token).

use std::sync::Arc;

use super::{ChildSettings, Children, lock};
use crate::state::records::extension::EXTENSION_URI;
use crate::state::tasks::creator::DELEGATORS_ONLY;
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
        let detail = self.mask(&err.to_string());
        tracing::warn!(%agent, "could not {doing}: {detail}");
        if matches!(err, ClientError::Rpc { message, .. } if message.contains(DELEGATORS_ONLY)) {
            tracing::warn!(
                %agent,
                "the agent does not know this harness as a trusted delegator: set `delegator = false` on its [[agents]] entry, or list this harness in its server.trusted_delegators"
            );
        }
        let why = match err {
            ClientError::Rpc { message, .. } => format!("{agent} refused: {message}"),
            ClientError::Status { status, .. } => format!("{agent} answered HTTP {status}"),
            ClientError::Transport { .. } => format!("{agent} could not be reached"),
            ClientError::InvalidResponse { .. } => format!("{agent} sent an invalid response"),
            ClientError::Build(_) | ClientError::Unsupported(_) => {
                format!("{agent} cannot be called from here")
            }
            ClientError::Credentials(_) => {
                format!("{agent} could not be authenticated: no access token")
            }
        };
        ToolError::new(
            "subtask.failed",
            self.mask(&format!("could not {doing}: {why}")),
        )
    }

    pub(super) fn is_trusted_by(&self, agent: &str) -> bool {
        agent == SELF_ID || self.settings.delegator_of.contains(agent)
    }

    /// `text` with every secret sent to an agent masked: this process's secret, the agents'
    /// tokens, API keys and client secrets, and every OAuth2 access token issued so far.
    pub(super) fn mask(&self, text: &str) -> String {
        let mut text = self.redactor.mask_only(text);
        for source in self
            .settings
            .secrets
            .values()
            .filter_map(|s| s.oauth2.as_ref())
        {
            text = source.mask(&text);
        }
        text
    }

    /// The client for an agent, made once: with this process's secret for `self`, the
    /// configured token for an agent that trusts this harness, and the API key or OAuth2
    /// access token its card asks for. An agent that knows this harness by none of these is
    /// told its participant id; one that authenticates it is not, as the credential says who
    /// is calling.
    pub(super) fn client(&self, agent: &str) -> Result<Arc<A2aClient>, ToolError> {
        if let Some(client) = lock(&self.clients).get(agent) {
            return Ok(client.clone());
        }
        let registry = self.registry.current();
        let registered = registry
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
        let auth = registered.auth();
        let authenticated = auth.api_key_header.is_some() || auth.oauth2;
        let client = if agent == SELF_ID {
            client.with_bearer(self.settings.self_secret.clone())
        } else if let Some(token) = self.settings.tokens.get(agent) {
            client.with_bearer(token.clone())
        } else if authenticated {
            client
        } else {
            client.with_participant(self.settings.participant_id.clone())
        };
        let client = self.with_card_credentials(agent, client)?;
        let client = Arc::new(client.with_extensions(vec![EXTENSION_URI.to_string()]));
        lock(&self.clients).insert(agent.to_string(), client.clone());
        Ok(client)
    }
}

impl Children {
    /// `client` with the API key and OAuth2 token source the agent's card asks for. Both were
    /// read at start-up for every agent configured with them, so one missing here is a fault
    /// of the harness, reported without naming a secret.
    fn with_card_credentials(
        &self,
        agent: &str,
        mut client: A2aClient,
    ) -> Result<A2aClient, ToolError> {
        let registry = self.registry.current();
        let Ok(registered) = registry.resolve(Some(agent)) else {
            return Ok(client);
        };
        let auth = registered.auth();
        let secrets = self.settings.secrets.get(agent);
        let unavailable = || {
            tracing::error!(%agent, "agents: the credentials the agent's card asks for were not loaded");
            ToolError::new(
                "subtask.unavailable",
                format!("{agent} cannot be authenticated from here"),
            )
        };
        if let Some(header) = &auth.api_key_header {
            let key = secrets
                .and_then(|s| s.api_key.as_deref())
                .ok_or_else(unavailable)?;
            client = client
                .with_api_key(header, key)
                .map_err(|_| unavailable())?;
        }
        if auth.oauth2 {
            let source = secrets
                .and_then(|s| s.oauth2.clone())
                .ok_or_else(unavailable)?;
            client = client.with_oauth2(source);
        }
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
