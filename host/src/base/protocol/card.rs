//! The agent card: its A2A 1.0 types, and the card this harness serves at
//! `/.well-known/agent-card.json` (who it is, where it listens, which optional A2A capabilities
//! it has).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::Struct;
use crate::base::protocol::extension::{ENVELOPE_MEDIA_TYPE, EXTENSION_URI};
use crate::base::protocol::headers::LEGACY_VERSION;

/// The agent's name on the card.
pub const AGENT_NAME: &str = "tiny-harness";
/// The card's version: the harness's own, so a new release reads as a new card.
pub const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The preferred protocol binding, listed first on the card.
pub const PROTOCOL_BINDING: &str = "JSONRPC";
/// The `protocolBinding` of the HTTP+JSON (REST) binding on the card.
pub const REST_PROTOCOL_BINDING: &str = "HTTP+JSON";
/// The `protocolBinding` of the gRPC binding on the card (`server.grpc_bind`).
pub const GRPC_PROTOCOL_BINDING: &str = "GRPC";
/// The protocol version served, `Major.Minor` as §3.6 asks.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The path a card is published at, relative to an agent's base URL.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

const DESCRIPTION: &str = "An agent harness that takes tasks over A2A and works each one with a \
                           language model and tools, reporting progress as it goes.";
const EXTENSION_DESCRIPTION: &str = "Task name, goal, acceptance criteria, participants, plan and \
                                     links to parent and sub-tasks, carried in Task.metadata.";

/// The card for a harness reachable at `base_url`.
///
/// Every interface is served at the base URL: JSON-RPC 1.0 first (the preferred one, §8.3.1),
/// then HTTP+JSON 1.0, then JSON-RPC 0.3 (§3.6.2 lets an agent list one interface per version;
/// clients that speak 1.0 pick a 1.0 entry, as they must prefer it). Streaming is on; push
/// notifications and the extended card are off, so the server answers
/// those methods with the errors §3.3.4 prescribes. The task extension is optional: clients that
/// do not know it still get plain A2A tasks.
pub fn default_card(base_url: &str) -> AgentCard {
    AgentCard {
        name: AGENT_NAME.to_string(),
        description: DESCRIPTION.to_string(),
        supported_interfaces: [
            (PROTOCOL_BINDING, PROTOCOL_VERSION),
            (REST_PROTOCOL_BINDING, PROTOCOL_VERSION),
            (PROTOCOL_BINDING, LEGACY_VERSION),
        ]
        .into_iter()
        .map(|(binding, version)| AgentInterface {
            url: base_url.to_string(),
            protocol_binding: binding.to_string(),
            tenant: String::new(),
            protocol_version: version.to_string(),
        })
        .collect(),
        version: AGENT_VERSION.to_string(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: vec![AgentExtension {
                uri: EXTENSION_URI.to_string(),
                description: EXTENSION_DESCRIPTION.to_string(),
                required: false,
                params: None,
            }],
            extended_agent_card: None,
        },
        // What the engine reads: text, JSON data and task envelopes. A part of another media
        // type is refused with ContentTypeNotSupportedError rather than silently ignored.
        default_input_modes: vec![
            "text/plain".to_string(),
            "application/json".to_string(),
            ENVELOPE_MEDIA_TYPE.to_string(),
        ],
        default_output_modes: vec!["text/plain".to_string()],
        ..AgentCard::default()
    }
}

/// Lists the gRPC interface at `url` among the card's 1.0 interfaces, after the HTTP ones (the
/// preferred binding stays first) and before the 0.3 entry.
pub fn add_grpc_interface(card: &mut AgentCard, url: &str) {
    let interface = AgentInterface {
        url: url.to_string(),
        protocol_binding: GRPC_PROTOCOL_BINDING.to_string(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.to_string(),
    };
    let at = card
        .supported_interfaces
        .iter()
        .position(|existing| existing.protocol_version != PROTOCOL_VERSION)
        .unwrap_or(card.supported_interfaces.len());
    card.supported_interfaces.insert(at, interface);
}

/// One way to reach an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Where the interface is served; the harness serves every one at its base URL.
    pub url: String,
    /// The binding spoken there: `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    /// The tenant to name in requests at this interface; empty for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The A2A version spoken there (`1.0`, `0.3`); the client picks a JSON-RPC 1.0 entry.
    pub protocol_version: String,
}

/// An extension an agent supports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The extension's identifier; the task extension is [`EXTENSION_URI`].
    pub uri: String,
    /// What the extension adds, for people reading the card.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether a client must use the extension; a remote agent requiring one the harness lacks is not used.
    #[serde(default)]
    pub required: bool,
    /// Settings of the extension, as it defines them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Struct>,
}

/// What an agent can do beyond the core operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Whether the agent streams (`SendStreamingMessage`, `SubscribeToTask`); the server refuses both when not `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Whether the agent pushes updates to a webhook; `false` here, so push configs are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// The extensions the agent supports; a remote agent listing the task extension gets briefs as envelopes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// Whether an authenticated client may fetch a fuller card; the server answers that method by this flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// One thing an agent is good at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// The skill's id, unique on the card.
    pub id: String,
    /// A short label; the roster shows it, capped, to the model.
    pub name: String,
    /// What the skill does; the roster shows it, capped, to the model.
    #[serde(default)]
    pub description: String,
    /// Keywords for the skill.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Sample requests for the skill.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Media types the skill takes, when they differ from the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Media types the skill answers in, when they differ from the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// Security requirements of this skill alone; a remote card with any is not used, as the client sends no credentials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<Value>,
}

/// Who runs an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's website.
    pub url: String,
    /// The organisation that runs the agent.
    pub organization: String,
}

/// The self-description an agent serves at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// A human-readable name; the roster shows it, capped, to the model.
    pub name: String,
    /// What the agent does; the roster shows it, capped, to the model.
    #[serde(default)]
    pub description: String,
    /// How to reach the agent, the preferred interface first.
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version (not the protocol's).
    #[serde(default)]
    pub version: String,
    /// Where the agent's documentation is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// The optional features the agent offers.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// The authentication schemes the agent accepts, by name; a remote card declaring any is not used.
    #[serde(default, skip_serializing_if = "Struct::is_empty")]
    pub security_schemes: Struct,
    /// Which schemes a client must use; a remote card declaring any is not used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<Value>,
    /// Media types the agent takes in; the server refuses a part of any other.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Media types the agent answers in.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// What the agent is good at; the roster lists the first few, capped.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// JSON Web Signatures over the card; kept, not verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<Value>,
    /// An icon for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn card_declares_jsonrpc_then_http_json_then_jsonrpc_0_3_at_the_base_url() {
        let card = serde_json::to_value(default_card("http://127.0.0.1:8080")).unwrap();
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url":"http://127.0.0.1:8080","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
                {"url":"http://127.0.0.1:8080","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
                {"url":"http://127.0.0.1:8080","protocolBinding":"JSONRPC","protocolVersion":"0.3"}
            ])
        );
        assert_eq!(card["name"], "tiny-harness");
        assert_eq!(card["version"], "0.1.0");
        assert_eq!(card["skills"], json!([]));
    }

    #[test]
    fn card_offers_streaming_and_the_optional_task_extension_but_not_push() {
        let card = serde_json::to_value(default_card("http://x")).unwrap();
        let capabilities = &card["capabilities"];
        assert_eq!(capabilities["streaming"], true);
        assert_eq!(capabilities["pushNotifications"], false);
        assert_eq!(capabilities["extensions"][0]["uri"], EXTENSION_URI);
        assert_eq!(capabilities["extensions"][0]["required"], false);
        assert!(card.get("securitySchemes").is_none());
    }
}
